//! Messages and bytes in and out by message type, per shard: a slot per
//! type Ceph names (msgr_messages::MESSAGE_TYPES) and one for the rest,
//! found through a table indexed by type, so that counting is a load and
//! two uncontended additions per message. `messenger dump` shows the
//! types a messenger has seen (Messenger::traffic_by_type).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use msgr_messages::MESSAGE_TYPES;

/// What went through for one message type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub recv_messages: u64,
    pub recv_bytes: u64,
    pub send_messages: u64,
    pub send_bytes: u64,
}

/// The slot of the types Ceph does not name.
const OTHER: usize = MESSAGE_TYPES.len();
const SLOTS: usize = OTHER + 1;

/// Each type's slot, for types up to the largest Ceph names.
fn slot(msg_type: u16) -> usize {
    static SLOT: OnceLock<Box<[u8]>> = OnceLock::new();
    let table = SLOT.get_or_init(|| {
        let last = MESSAGE_TYPES.last().map_or(0, |&(t, _)| usize::from(t));
        let mut t = vec![u8::MAX; last.saturating_add(1)];
        for (i, &(ty, _)) in MESSAGE_TYPES.iter().enumerate() {
            if let (Some(s), Ok(i)) = (t.get_mut(usize::from(ty)), u8::try_from(i)) {
                *s = i;
            }
        }
        t.into_boxed_slice()
    });
    match table.get(usize::from(msg_type)) {
        Some(&s) if s != u8::MAX => usize::from(s),
        _ => OTHER,
    }
}

/// One shard's counts: received messages, received bytes, sent messages,
/// sent bytes, for each slot.
pub(crate) struct ByType(Box<[AtomicU64]>);

impl ByType {
    pub fn new() -> ByType {
        // A slot per named type fits the table's u8 (checked in a test).
        ByType(
            (0..SLOTS.saturating_mul(4))
                .map(|_| AtomicU64::new(0))
                .collect(),
        )
    }

    fn add(&self, msg_type: u16, at: usize, bytes: usize) {
        let base = slot(msg_type).saturating_mul(4).saturating_add(at);
        let add = |i: usize, n: u64| {
            if let Some(c) = self.0.get(i) {
                c.fetch_add(n, Ordering::Relaxed);
            }
        };
        add(base, 1);
        add(base.saturating_add(1), bytes as u64);
    }

    /// A message of `msg_type` with `bytes` of payload was received.
    pub fn recv(&self, msg_type: u16, bytes: usize) {
        self.add(msg_type, 0, bytes);
    }

    /// A message of `msg_type` with `bytes` of payload was queued to send.
    pub fn send(&self, msg_type: u16, bytes: usize) {
        self.add(msg_type, 2, bytes);
    }

    /// Adds this shard's counts to `into`, by slot.
    fn sum_into(&self, into: &mut [Traffic]) {
        let get = |i: usize| self.0.get(i).map_or(0, |c| c.load(Ordering::Relaxed));
        for (s, t) in into.iter_mut().enumerate() {
            let b = s.saturating_mul(4);
            t.recv_messages = t.recv_messages.wrapping_add(get(b));
            t.recv_bytes = t.recv_bytes.wrapping_add(get(b.saturating_add(1)));
            t.send_messages = t.send_messages.wrapping_add(get(b.saturating_add(2)));
            t.send_bytes = t.send_bytes.wrapping_add(get(b.saturating_add(3)));
        }
    }
}

/// The shards' counts summed, for the types seen: Ceph's name of each
/// (`CEPH_MSG_OSD_OP`), or `other` for types it does not name.
pub(crate) fn summed<'a>(shards: impl Iterator<Item = &'a ByType>) -> Vec<(&'static str, Traffic)> {
    let mut all = vec![Traffic::default(); SLOTS];
    for s in shards {
        s.sum_into(&mut all);
    }
    all.into_iter()
        .enumerate()
        .filter(|(_, t)| *t != Traffic::default())
        .map(|(i, t)| (MESSAGE_TYPES.get(i).map_or("other", |&(_, n)| n), t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_named_type_has_its_slot_and_the_rest_share_one() {
        assert!(MESSAGE_TYPES.len() < usize::from(u8::MAX), "slots fit a u8");
        let b = ByType::new();
        b.recv(42, 100); // CEPH_MSG_OSD_OP
        b.recv(42, 50);
        b.send(43, 10); // CEPH_MSG_OSD_OPREPLY
        b.send(9999, 7);
        b.recv(3, 1); // not a type Ceph names
        let got = summed([b, ByType::new()].iter());
        let find = |n: &str| got.iter().find(|(m, _)| *m == n).map(|(_, t)| *t);
        let op = find("CEPH_MSG_OSD_OP").unwrap();
        assert_eq!(
            (op.recv_messages, op.recv_bytes, op.send_messages),
            (2, 150, 0)
        );
        assert_eq!(find("CEPH_MSG_OSD_OPREPLY").unwrap().send_bytes, 10);
        let other = find("other").unwrap();
        assert_eq!((other.recv_messages, other.send_messages), (1, 1));
        assert_eq!(got.len(), 3);
    }
}
