//! Messages and bytes in and out by message type, per shard: a slot per
//! type the messenger was given a name for (Options::message_types) and
//! one for the rest, found through a table indexed by type, so that
//! counting is two loads and two uncontended additions per message.
//! `messenger dump` shows the types a messenger has seen
//! (Messenger::traffic_by_type).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::MessageTypes;

/// What went through for one message type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Messages received (counted before dispatch).
    pub recv_messages: u64,
    /// Their payload bytes.
    pub recv_bytes: u64,
    /// Messages sent (counted when queued).
    pub send_messages: u64,
    /// Their payload bytes.
    pub send_bytes: u64,
}

/// Each named type's slot, for types up to the largest named one; the
/// slot after the named ones holds the rest (`other`).
pub(crate) struct Slots {
    types: MessageTypes,
    /// Indexed by type: its slot, or `u8::MAX` for an unnamed type.
    table: Box<[u8]>,
}

impl Slots {
    /// The slots of `types`' names; past 254 names, the rest count as
    /// `other` (a slot index is a u8).
    pub fn new(types: MessageTypes) -> Arc<Slots> {
        let names = types.names();
        let last = names
            .iter()
            .map(|&(t, _)| usize::from(t))
            .max()
            .unwrap_or(0);
        let mut table = vec![u8::MAX; last.saturating_add(1)];
        for (i, &(ty, _)) in names.iter().enumerate() {
            if let (Some(s), Ok(i @ 0..=253)) = (table.get_mut(usize::from(ty)), u8::try_from(i)) {
                *s = i;
            }
        }
        Arc::new(Slots {
            types,
            table: table.into_boxed_slice(),
        })
    }

    /// The slot of types without a name.
    fn other(&self) -> usize {
        self.types.names().len().min(usize::from(u8::MAX))
    }

    fn count(&self) -> usize {
        self.other().saturating_add(1)
    }

    fn slot(&self, msg_type: u16) -> usize {
        match self.table.get(usize::from(msg_type)) {
            Some(&s) if s != u8::MAX => usize::from(s),
            _ => self.other(),
        }
    }

    fn name(&self, slot: usize) -> &'static str {
        match self.types.names().get(slot) {
            Some(&(_, n)) if slot < self.other() => n,
            _ => "other",
        }
    }
}

/// One shard's counts: received messages, received bytes, sent messages,
/// sent bytes, for each slot.
pub(crate) struct ByType {
    slots: Arc<Slots>,
    counts: Box<[AtomicU64]>,
}

impl ByType {
    pub fn new(slots: Arc<Slots>) -> ByType {
        let counts = (0..slots.count().saturating_mul(4))
            .map(|_| AtomicU64::new(0))
            .collect();
        ByType { slots, counts }
    }

    fn add(&self, msg_type: u16, at: usize, bytes: usize) {
        let base = self
            .slots
            .slot(msg_type)
            .saturating_mul(4)
            .saturating_add(at);
        let add = |i: usize, n: u64| {
            if let Some(c) = self.counts.get(i) {
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
        let get = |i: usize| self.counts.get(i).map_or(0, |c| c.load(Ordering::Relaxed));
        for (s, t) in into.iter_mut().enumerate() {
            let b = s.saturating_mul(4);
            t.recv_messages = t.recv_messages.wrapping_add(get(b));
            t.recv_bytes = t.recv_bytes.wrapping_add(get(b.saturating_add(1)));
            t.send_messages = t.send_messages.wrapping_add(get(b.saturating_add(2)));
            t.send_bytes = t.send_bytes.wrapping_add(get(b.saturating_add(3)));
        }
    }
}

/// The shards' counts summed, for the types seen: the name of each
/// (`CEPH_MSG_OSD_OP`), or `other` for types without one.
pub(crate) fn summed<'a>(
    slots: &Slots,
    shards: impl Iterator<Item = &'a ByType>,
) -> Vec<(&'static str, Traffic)> {
    let mut all = vec![Traffic::default(); slots.count()];
    for s in shards {
        s.sum_into(&mut all);
    }
    all.into_iter()
        .enumerate()
        .filter(|(_, t)| *t != Traffic::default())
        .map(|(i, t)| (slots.name(i), t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_named_type_has_its_slot_and_the_rest_share_one() {
        let slots = Slots::new(MessageTypes::new(
            &[
                (2, "CEPH_MSG_PING"),
                (42, "CEPH_MSG_OSD_OP"),
                (43, "CEPH_MSG_OSD_OPREPLY"),
            ],
            &[],
        ));
        let b = ByType::new(slots.clone());
        b.recv(42, 100); // CEPH_MSG_OSD_OP
        b.recv(42, 50);
        b.send(43, 10); // CEPH_MSG_OSD_OPREPLY
        b.send(9999, 7);
        b.recv(3, 1); // not a type Ceph names
        let got = summed(&slots, [b, ByType::new(slots.clone())].iter());
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
