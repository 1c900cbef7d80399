//! A throttle on messages and bytes held (Ceph's Throttle, used as the
//! policy throttlers and the dispatch throttle): taking budget waits while
//! the throttle is full, and a connection that waits stops reading its
//! socket, which pushes back on the sender. Taking and releasing are
//! lock-free; only a full throttle involves a wake-up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Limits on messages and bytes in flight.
#[derive(Debug)]
pub struct Throttle {
    max_messages: u64,
    max_bytes: u64,
    messages: AtomicU64,
    bytes: AtomicU64,
    waiters: AtomicU64,
    released: Notify,
}

impl Throttle {
    pub fn new(max_messages: u64, max_bytes: u64) -> Arc<Throttle> {
        Arc::new(Throttle {
            max_messages,
            max_bytes,
            messages: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            waiters: AtomicU64::new(0),
            released: Notify::new(),
        })
    }

    /// What is held now: (messages, bytes).
    pub fn current(&self) -> (u64, u64) {
        (
            self.messages.load(Ordering::Acquire),
            self.bytes.load(Ordering::Acquire),
        )
    }

    fn try_take(&self, bytes: u64) -> bool {
        // Messages first, then bytes; undo the first if the second fails.
        let fits_msgs = self
            .messages
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
                (m < self.max_messages).then_some(m + 1)
            })
            .is_ok();
        if !fits_msgs {
            return false;
        }
        // A message larger than the whole budget passes alone, as in Ceph.
        let fits_bytes = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |b| {
                (b + bytes <= self.max_bytes || b == 0).then_some(b + bytes)
            })
            .is_ok();
        if !fits_bytes {
            self.messages.fetch_sub(1, Ordering::AcqRel);
        }
        fits_bytes
    }

    /// Takes one message of `bytes`, waiting while the throttle is full.
    pub async fn take(self: &Arc<Self>, bytes: u64) -> Permit {
        if !self.try_take(bytes) {
            self.waiters.fetch_add(1, Ordering::AcqRel);
            loop {
                let notified = self.released.notified();
                if self.try_take(bytes) {
                    break;
                }
                notified.await;
            }
            self.waiters.fetch_sub(1, Ordering::AcqRel);
        }
        Permit {
            throttle: Some(self.clone()),
            bytes,
        }
    }

    fn release(&self, bytes: u64) {
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        self.messages.fetch_sub(1, Ordering::AcqRel);
        if self.waiters.load(Ordering::Acquire) > 0 {
            self.released.notify_waiters();
        }
    }
}

/// Budget held until dropped.
#[derive(Debug, Default)]
pub struct Permit {
    throttle: Option<Arc<Throttle>>,
    bytes: u64,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(t) = self.throttle.take() {
            t.release(self.bytes);
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use msgr_frames::banner::Banner;
    use msgr_frames::{FrameLimits, MessageFrame, Tag};

    fn msg(tid: u64, prio: u16) -> Message {
        let mut m = Message::new(42, Bytes::from(vec![tid as u8; 10]));
        m.tid = tid;
        m.priority = prio;
        m
    }

    /// A link whose banner exchange is done, so frames can be written.
    fn link() -> Link {
        let mut l = Link::new(1, Banner::DEFAULT, FrameLimits::default());
        l.input.extend_from_slice(&Banner::DEFAULT.encode());
        l.poll_input().unwrap();
        l.stop_recording();
        l
    }

    /// The (seq, tid, ack_seq) of every MESSAGE written to `l`.
    fn written(l: &mut Link) -> Vec<(u64, u64, u64)> {
        let bytes = l.output.take_all();
        let mut peer = link();
        peer.input.extend_from_slice(&bytes[26..]); // skip our banner
        let mut out = Vec::new();
        while let Some(crate::link::Input::Frame(f)) = peer.poll_input().unwrap() {
            if f.tag == Tag::MESSAGE {
                let m = MessageFrame::from_received(&f).unwrap();
                out.push((m.header.seq, m.header.tid, m.header.ack_seq));
            }
        }
        out
    }

    #[test]
    fn priority_then_fifo() {
        let mut s = Session::default();
        s.enqueue(msg(1, 127));
        s.enqueue(msg(2, 196));
        s.enqueue(msg(3, 127));
        let mut l = link();
        s.write_pending(&mut l, false).unwrap();
        let w = written(&mut l);
        assert_eq!(w.iter().map(|x| x.1).collect::<Vec<_>>(), vec![2, 1, 3]);
        assert_eq!(w.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    #[test]
    fn replay_after_fault_keeps_numbers_and_skips_what_arrived() {
        let mut s = Session::default();
        for t in 1..=5 {
            s.enqueue(msg(t, 127));
        }
        let mut l = link();
        s.write_pending(&mut l, false).unwrap();
        s.acked(2);
        assert_eq!(s.unacked(), 3);
        // Fault: 3, 4, 5 go back to the head, before a newer message.
        s.requeue_sent();
        s.enqueue(msg(6, 196));
        assert_eq!(s.out_seq, 2);
        // The peer had received up to 4.
        s.resume_from(4);
        let mut l = link();
        s.write_pending(&mut l, false).unwrap();
        let w = written(&mut l);
        assert_eq!(w, vec![(5, 5, 0), (6, 6, 0)]);
    }

    #[test]
    fn duplicates_dropped_gaps_refused() {
        let mut s = Session::default();
        assert_eq!(s.arrived(1, false), Ok(Arrival::Deliver));
        assert_eq!(s.arrived(1, false), Ok(Arrival::Duplicate));
        assert_eq!(s.arrived(2, false), Ok(Arrival::Deliver));
        assert_eq!(s.ack_left, 2);
        assert_eq!(
            s.arrived(4, false),
            Err(ProtocolError::SequenceGap {
                expected: 3,
                got: 4
            })
        );
        // A new session may start numbering anywhere (classic Ceph).
        let mut fresh = Session::default();
        assert_eq!(fresh.arrived(7, false), Ok(Arrival::Deliver));
    }

    #[test]
    fn ack_frame_only_without_messages() {
        let mut s = Session::default();
        s.arrived(1, false).unwrap();
        let mut l = link();
        s.write_pending(&mut l, false).unwrap();
        assert_eq!(s.ack_left, 0);
        let bytes = l.output.take_all();
        assert!(bytes.len() > 26, "an ACK frame was written");
        // With a message to send, the message carries the ack.
        s.arrived(2, false).unwrap();
        s.enqueue(msg(9, 127));
        let mut l = link();
        s.write_pending(&mut l, false).unwrap();
        assert_eq!(written(&mut l), vec![(1, 9, 2)]);
    }

    #[test]
    fn new_session_renumbers_from_one() {
        let mut s = Session::default();
        s.enqueue(msg(1, 127));
        s.enqueue(msg(2, 127));
        let mut l = link();
        s.write_pending(&mut l, false).unwrap();
        s.arrived(1, false).unwrap();
        s.restart_numbering();
        let mut l = link();
        s.write_pending(&mut l, false).unwrap();
        assert_eq!(written(&mut l), vec![(1, 1, 0), (2, 2, 0)]);
    }
}
