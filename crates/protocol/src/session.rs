//! The state a session keeps across sockets: the queue of messages to send,
//! the ones sent but not yet acknowledged, sequence numbers and cookies
//! (ProtocolV2's out_queue, sent, out_seq, in_seq, ack_left; §4 of
//! docs/research/protocol-v2-sessions.md).
//!
//! Rules:
//! - a message gets its sequence number when it is written
//!   (`out_seq + 1`) and carries `ack_seq = in_seq`;
//! - a lossless session keeps written messages until an ack covers them;
//!   on a fault they go back to the head of the queue, in order, and are
//!   written again with the same numbers, minus those the peer says it got;
//! - received messages at or below `in_seq` are duplicates and dropped; a
//!   jump past `in_seq + 1` is a protocol error, except as the first message
//!   of a new session (classic Ceph may go on numbering from its previous
//!   session there);
//! - an ACK frame goes out only when there is no message to carry the ack.

use std::collections::VecDeque;

use msgr_encoding::UTime;

use crate::error::ProtocolError;
use crate::link::Link;
use crate::message::Message;

mod lists;
use lists::Lists;

/// Priority of requeued messages: they go before everything else.
const REQUEUE_PRIORITY: u16 = u16::MAX;

/// The most a message's frame adds to its payload on the wire: msgr2.1
/// secure's first block (the preamble, the header carried inline, its
/// tag), each payload segment's padding to the AES block, and the
/// epilogue with its tag. The other msgr2 framings add less (crc: a
/// preamble, the header and at most 17 bytes of crcs), as does msgr1 (a
/// tag, its header and footer).
const FRAME_OVERHEAD: usize = {
    use msgr_frames::layout::{CRYPTO_BLOCK_LEN, EPILOGUE_SECURE_LEN, GCM_TAG_LEN, INLINE_LEN};
    use msgr_frames::preamble::{MAX_SEGMENTS, PREAMBLE_LEN};
    PREAMBLE_LEN
        + INLINE_LEN
        + GCM_TAG_LEN
        + (MAX_SEGMENTS - 1) * (CRYPTO_BLOCK_LEN - 1)
        + EPILOGUE_SECURE_LEN
        + GCM_TAG_LEN
};
const _: () = {
    use msgr_frames::v1::{Footer, MsgHeader};
    assert!(msgr_frames::MsgHeader2::LEN <= msgr_frames::layout::INLINE_LEN);
    assert!(1 + MsgHeader::LEN + Footer::LEN <= FRAME_OVERHEAD);
};

struct Queued {
    /// Boxed from the sender's hands to the peer's acknowledgement: the
    /// session's queues move pointers, and a message's 150 bytes are
    /// written once, where they were made, not into each queue in turn
    /// (per-connection memory that is cold when connections are many).
    msg: Box<Message>,
    /// Sent before a fault; its `seq` is the number it was sent with.
    requeued: bool,
}

impl Session {
    /// What holding a message costs beyond its payload, counted with it
    /// wherever a peer can make us hold messages (the queue limits, on
    /// what is queued and unacknowledged; the receive budget, on what
    /// waits for dispatch and what the user holds): an empty message costs
    /// hundreds of bytes, and a flood of them must meet the limits as a
    /// flood of large ones does. It is the message (boxed while held), its
    /// slot in the session's queue (the sent list's, a box alone, is
    /// smaller) and its frame at the largest framing (FRAME_OVERHEAD),
    /// which also leaves room for the allocator's rounding of the box.
    pub const MESSAGE_OVERHEAD: usize =
        std::mem::size_of::<Message>() + std::mem::size_of::<Queued>() + FRAME_OVERHEAD;

    /// The bytes a message of `payload` bytes (front, middle and data)
    /// counts for against those limits: one function for every charge
    /// and every release, so that what is released is what was charged.
    #[inline]
    pub const fn cost(payload: usize) -> usize {
        payload.saturating_add(Self::MESSAGE_OVERHEAD)
    }

    #[inline]
    fn charge(msg: &Message) -> usize {
        Self::cost(msg.payload_len())
    }
}

/// The output window (Config::output_window) and what the runtime's
/// unwritten bytes leave of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Room {
    pub window: usize,
    pub left: usize,
}

/// What became of a received message's sequence number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// In order: deliver it.
    Deliver,
    /// Already delivered (`seq <= in_seq`): drop it.
    Duplicate,
}

/// `repr(C)`: what moves per message (queues, sequence numbers, the ack
/// owed) first; what changes with handshakes (cookies, connect and global
/// sequences) last (Conn).
#[derive(Default)]
#[repr(C)]
pub struct Session {
    /// Messages by priority, highest first, FIFO within a priority. Lists
    /// stay once created (few priorities are ever used), so queueing does
    /// not allocate in the steady state, until the connection is idle
    /// (Session::trim).
    queue: Lists<Queued>,
    queued_messages: usize,
    /// What the queued messages cost (Session::cost).
    queued_bytes: usize,
    /// Written, not yet acknowledged (lossless only), oldest first.
    sent: VecDeque<Box<Message>>,
    /// What they cost (Session::cost).
    sent_bytes: usize,
    pub(crate) out_seq: u64,
    pub(crate) in_seq: u64,
    /// Messages received since our last ack went out.
    pub(crate) ack_left: u64,
    pub(crate) keepalive_pending: Option<UTime>,
    pub(crate) keepalive_ack_pending: Option<UTime>,
    pub(crate) client_cookie: u64,
    pub(crate) server_cookie: u64,
    pub(crate) connect_seq: u64,
    /// Ours, for the current connection attempt.
    pub(crate) global_seq: u64,
    /// The last the peer presented.
    pub(crate) peer_global_seq: u64,
}

/// The session's numbers, as the peer and we know them.
impl Session {
    /// The sequence number of the last message we numbered.
    pub fn out_seq(&self) -> u64 {
        self.out_seq
    }

    /// The sequence number of the last message delivered to us.
    pub fn in_seq(&self) -> u64 {
        self.in_seq
    }

    /// The session's cookies: (client's, server's); 0 until set.
    pub fn cookies(&self) -> (u64, u64) {
        (self.client_cookie, self.server_cookie)
    }

    /// How many times the session was reconnected (Ceph's connect_seq): the
    /// count a reconnect must carry forward.
    pub fn connect_seq(&self) -> u64 {
        self.connect_seq
    }
}

impl Session {
    /// Whether an empty queue still holds a buffer: what [`Session::trim`]
    /// lets go.
    pub(crate) fn holds_spare(&self) -> bool {
        self.queue.holds_spare() || msgr_frames::holds_spare(&self.sent)
    }

    /// Lets go of empty queues' capacity (an idle connection's).
    pub(crate) fn trim(&mut self) {
        self.queue.trim();
        if self.sent.is_empty() {
            self.sent = VecDeque::new();
        }
    }

    pub(crate) fn enqueue(&mut self, msg: Box<Message>) {
        self.push(
            msg.priority,
            Queued {
                msg,
                requeued: false,
            },
            false,
        );
    }

    fn push(&mut self, priority: u16, q: Queued, front: bool) {
        // Counts of what is queued: bounded by memory (QueueLimits).
        self.queued_messages = self.queued_messages.saturating_add(1);
        self.queued_bytes = self.queued_bytes.saturating_add(Self::charge(&q.msg));
        let list = self.queue.list(priority);
        if front {
            list.push_front(q);
        } else {
            list.push_back(q);
        }
    }

    fn pop(&mut self) -> Option<Queued> {
        if self.queued_messages == 0 {
            return None;
        }
        let q = self.queue.pop_front()?;
        self.queued_messages = self.queued_messages.saturating_sub(1);
        self.queued_bytes = self.queued_bytes.saturating_sub(Self::charge(&q.msg));
        Some(q)
    }

    /// Messages waiting to be written (requeued ones included): how many,
    /// and what they cost (Session::cost).
    pub fn queued(&self) -> (usize, usize) {
        (self.queued_messages, self.queued_bytes)
    }

    /// Messages written and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.sent.len()
    }

    /// What the messages the session holds for the peer cost
    /// (Session::cost): queued, and written but not yet acknowledged.
    pub fn held_bytes(&self) -> usize {
        self.queued_bytes.saturating_add(self.sent_bytes)
    }

    pub(crate) fn has_output(&self) -> bool {
        self.queued_messages > 0
            || self.keepalive_pending.is_some()
            || self.keepalive_ack_pending.is_some()
    }

    /// Writes what is pending to `link`: keepalive, keepalive ack, an ACK
    /// if one is owed and no message will carry it (msgr1's messages carry
    /// none: there, whenever one is owed; ProtocolV1::write_event), then
    /// the messages in priority order
    /// (IOHandler::sweep_out_pending_msgs_to_sent), all of them or, with a
    /// `room` in bytes, while the link's output is shorter than that.
    pub(crate) fn write_pending(
        &mut self,
        link: &mut Link,
        lossy: bool,
        room: Option<Room>,
    ) -> Result<usize, ProtocolError> {
        if let Some(stamp) = self.keepalive_pending.take() {
            link.write_keepalive(stamp)?;
        }
        if let Some(stamp) = self.keepalive_ack_pending.take() {
            link.write_keepalive_ack(stamp)?;
        }
        let carried = self.queued_messages > 0 && link.messages_carry_acks();
        if self.ack_left > 0 && !lossy && !carried {
            link.write_ack(self.in_seq)?;
            self.ack_left = 0;
        }
        self.write_messages(link, lossy, room)
    }

    /// Numbers and writes queued messages, in priority order,
    /// all of them or, with a `room` in bytes, while the next one's payload
    /// fits in what the link's output leaves of it. One that does not fit (a
    /// message larger than the room) is framed only once nothing is
    /// unwritten (the link's output empty and the runtime's too, whose
    /// room is then the whole window): a message queued meanwhile at a
    /// higher priority goes before it, instead of waiting behind a large
    /// frame framed while the last one was still being written. Returns
    /// how many were written.
    fn write_messages(
        &mut self,
        link: &mut Link,
        lossy: bool,
        room: Option<Room>,
    ) -> Result<usize, ProtocolError> {
        let mut n: usize = 0;
        while self.queued_messages > 0 {
            if let Some(r) = room {
                let out = link.output_len();
                let next = self.queue.front().map_or(0, |q| q.msg.payload_len());
                let fits = out.checked_add(next).is_some_and(|end| end <= r.left) && out < r.left;
                let nothing_unwritten = r.left == r.window && out == 0;
                if !(fits || nothing_unwritten) {
                    break;
                }
            }
            // A peer may have raised out_seq (SESSION_RECONNECT's msg_seq):
            // at its limit the session ends, the message stays queued.
            self.out_seq = self
                .out_seq
                .checked_add(1)
                .ok_or(ProtocolError::CounterOverflow { counter: "out_seq" })?;
            let Some(Queued { mut msg, .. }) = self.pop() else {
                break;
            };
            msg.seq = self.out_seq;
            let written = link.write_message(&msg, self.in_seq);
            // Numbered and (for a lossless session) kept for replay even if
            // the write failed: the fault that follows requeues it.
            if !lossy {
                self.sent_bytes = self.sent_bytes.saturating_add(Self::charge(&msg));
                self.sent.push_back(msg);
            }
            written?;
            self.ack_left = 0;
            n = n.saturating_add(1);
        }
        Ok(n)
    }

    /// The peer received everything up to `seq` (ACK frame or a message's
    /// ack_seq): forget those messages.
    pub(crate) fn acked(&mut self, seq: u64) {
        while self.sent.front().is_some_and(|m| m.seq <= seq) {
            if let Some(m) = self.sent.pop_front() {
                self.sent_bytes = self.sent_bytes.saturating_sub(Self::charge(&m));
            }
        }
        msgr_frames::let_go_if_small(&mut self.sent);
    }

    /// Classifies a received message's sequence number and, if it is to be
    /// delivered, makes it the new `in_seq`.
    pub(crate) fn arrived(&mut self, seq: u64, lossy: bool) -> Result<Arrival, ProtocolError> {
        if seq <= self.in_seq {
            return Ok(Arrival::Duplicate);
        }
        // in_seq < seq here, so in_seq + 1 cannot overflow.
        let expected = self.in_seq.saturating_add(1);
        if seq > expected && self.in_seq != 0 {
            return Err(ProtocolError::SequenceGap { expected, got: seq });
        }
        self.in_seq = seq;
        if !lossy {
            self.ack_left = self.ack_left.saturating_add(1);
        }
        Ok(Arrival::Deliver)
    }

    /// After a fault: written but unacknowledged messages go back to the
    /// head of the queue, in their order, keeping their numbers
    /// (ProtocolV2::requeue_sent).
    pub(crate) fn requeue_sent(&mut self) {
        // Sent messages are numbered up to out_seq, one each.
        self.out_seq = self.out_seq.saturating_sub(self.sent.len() as u64);
        self.sent_bytes = 0;
        while let Some(msg) = self.sent.pop_back() {
            self.push(
                REQUEUE_PRIORITY,
                Queued {
                    msg,
                    requeued: true,
                },
                true,
            );
        }
    }

    /// Whether this session ever numbered or received a message: in_seq,
    /// out_seq, and requeued messages (they keep their numbers though
    /// requeue_sent took out_seq back below them).
    pub(crate) fn carried_messages(&self) -> bool {
        self.in_seq > 0
            || self.out_seq > 0
            || self
                .queue
                .iter()
                .any(|list| list.iter().any(|q| q.requeued))
    }

    /// On resuming the session: the peer received up to `peer_in_seq`;
    /// requeued messages it has are dropped, the rest are written again with
    /// their old numbers (discard_requeued_up_to / requeue_out_sent_up_to).
    pub(crate) fn resume_from(&mut self, peer_in_seq: u64) {
        let mut dropped_bytes: usize = 0;
        let mut dropped: usize = 0;
        // Looked up, not made: an empty requeue list ahead of the others
        // would be one more line each message touches.
        if let Some(list) = self.queue.get_mut(REQUEUE_PRIORITY) {
            while list
                .front()
                .is_some_and(|q| q.requeued && q.msg.seq <= peer_in_seq)
            {
                if let Some(q) = list.pop_front() {
                    dropped = dropped.saturating_add(1);
                    dropped_bytes = dropped_bytes.saturating_add(Self::charge(&q.msg));
                }
            }
        }
        self.queued_messages = self.queued_messages.saturating_sub(dropped);
        self.queued_bytes = self.queued_bytes.saturating_sub(dropped_bytes);
        self.out_seq = self.out_seq.max(peer_in_seq);
    }

    /// A new session with the peer (SERVER_IDENT): numbering restarts in
    /// both directions; unacknowledged messages are sent again as new ones
    /// (crimson's reset_peer_state; classic Ceph keeps its old `out_seq`).
    pub(crate) fn restart_numbering(&mut self) {
        self.requeue_sent();
        for q in self.queue.get_mut(REQUEUE_PRIORITY).into_iter().flatten() {
            q.requeued = false;
        }
        self.out_seq = 0;
        self.in_seq = 0;
        self.ack_left = 0;
    }

    /// A full reset (reset_session): everything queued or unacknowledged is
    /// dropped, cookies and counters start over.
    pub(crate) fn reset(&mut self) {
        // ProtocolV2::reset_session clears sequences, cookies and queues but
        // not global_seq: the CLIENT_IDENT that follows a reset must still
        // carry our latest global_seq, or the peer's existing session (whose
        // peer_global_seq is higher) takes it for stale.
        let keep_keepalive = self.keepalive_pending;
        let global_seq = self.global_seq;
        *self = Session::default();
        self.keepalive_pending = keep_keepalive;
        self.global_seq = global_seq;
    }

    /// A lossy session's end: drop everything queued (discard_out_queue).
    pub(crate) fn discard_queue(&mut self) {
        self.queue.clear();
        self.sent.clear();
        self.sent_bytes = 0;
        self.queued_messages = 0;
        self.queued_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use msgr_frames::banner::Banner;
    use msgr_frames::{FrameLimits, MessageFrame, Tag};

    fn msg(tid: u64, prio: u16) -> Box<Message> {
        let mut m = Message::new(42, Bytes::from(vec![tid as u8; 10]));
        m.tid = tid;
        m.priority = prio;
        Box::new(m)
    }

    use crate::input::Input;
    use crate::v2::link as link2;

    /// A link whose banner exchange is done, so frames can be written.
    fn link() -> Link {
        let mut l = Link::v2(
            1,
            Banner::DEFAULT,
            FrameLimits::default(),
            Default::default(),
        );
        l.send_banner().unwrap();
        let mut input = bytes::BytesMut::from(&Banner::DEFAULT.encode()[..]);
        l.poll_input(&mut input).unwrap();
        l.stop_recording();
        l
    }

    /// The (seq, tid, ack_seq) of every MESSAGE written to `l`.
    fn written(l: &mut Link) -> Vec<(u64, u64, u64)> {
        messages_in(&l.output.take_all()[26..]) // skip our banner
    }

    /// The (seq, tid, ack_seq) of every MESSAGE frame in `bytes`.
    fn messages_in(bytes: &[u8]) -> Vec<(u64, u64, u64)> {
        let mut peer = link();
        let mut input = bytes::BytesMut::from(bytes);
        let mut out = Vec::new();
        while let Some(Input::V2(link2::Input::Frame(f))) = peer.poll_input(&mut input).unwrap() {
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
        s.write_pending(&mut l, false, None).unwrap();
        let w = written(&mut l);
        assert_eq!(w.iter().map(|x| x.1).collect::<Vec<_>>(), vec![2, 1, 3]);
        assert_eq!(w.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2, 3]);
    }

    /// The (seq, tid) of the messages in the link's output, its banner
    /// taken out of it before.
    fn written_after_banner(l: &mut Link) -> Vec<(u64, u64)> {
        let m = messages_in(&l.output.take_all());
        m.into_iter().map(|(seq, tid, _)| (seq, tid)).collect()
    }

    #[test]
    fn room_limits_what_is_framed_and_the_rest_waits_its_turn() {
        let mut s = Session::default();
        for t in 1..=5 {
            s.enqueue(msg(t, 127));
        }
        let mut l = link();
        // One such frame's size on the wire.
        let frame = {
            let mut one = Session::default();
            one.enqueue(msg(9, 127));
            let mut l = link();
            l.output.take_all();
            one.write_pending(&mut l, false, None).unwrap();
            l.output_len()
        };
        // The runtime holds all but 1 byte of the window: nothing fits.
        let window = 2 * frame;
        let full = Room { window, left: 1 };
        assert_eq!(s.write_pending(&mut l, false, Some(full)).unwrap(), 0);
        // Room for two: two are framed, in order, numbered in turn.
        let room = Room {
            window,
            left: window,
        };
        l.output.take_all();
        assert_eq!(s.write_pending(&mut l, false, Some(room)).unwrap(), 2);
        assert_eq!(s.queued().0, 3);
        s.write_pending(&mut l, false, None).unwrap();
        let w = written_after_banner(&mut l);
        assert_eq!(w, (1..=5).map(|t| (t, t)).collect::<Vec<_>>());
    }

    #[test]
    fn a_message_larger_than_the_room_waits_until_nothing_is_unwritten() {
        let mut s = Session::default();
        let mut big = Message::new(42, Bytes::from(vec![1u8; 4096]));
        big.tid = 1;
        big.priority = 127;
        s.enqueue(Box::new(big));
        let mut l = link();
        l.output.take_all();
        let window = 1024;
        // The runtime still holds bytes: the large one waits.
        let held = Room {
            window,
            left: window - 1,
        };
        assert_eq!(s.write_pending(&mut l, false, Some(held)).unwrap(), 0);
        // A small one queued meanwhile at a higher priority goes first.
        s.enqueue(msg(2, 196));
        assert_eq!(s.write_pending(&mut l, false, Some(held)).unwrap(), 1);
        // The link's output is not empty: still waiting.
        let room = Room {
            window,
            left: window,
        };
        assert_eq!(s.write_pending(&mut l, false, Some(room)).unwrap(), 0);
        // Nothing unwritten: it is framed, alone.
        let w = written_after_banner(&mut l);
        assert_eq!(w, vec![(1, 2)]);
        assert_eq!(s.write_pending(&mut l, false, Some(room)).unwrap(), 1);
        assert_eq!(written_after_banner(&mut l), vec![(2, 1)]);
    }

    #[test]
    fn replay_after_fault_keeps_numbers_and_skips_what_arrived() {
        let mut s = Session::default();
        for t in 1..=5 {
            s.enqueue(msg(t, 127));
        }
        let mut l = link();
        s.write_pending(&mut l, false, None).unwrap();
        s.acked(2);
        assert_eq!(s.unacked(), 3);
        // Fault: 3, 4, 5 go back to the head, before a newer message.
        s.requeue_sent();
        s.enqueue(msg(6, 196));
        assert_eq!(s.out_seq, 2);
        // The peer had received up to 4.
        s.resume_from(4);
        let mut l = link();
        s.write_pending(&mut l, false, None).unwrap();
        let w = written(&mut l);
        assert_eq!(w, vec![(5, 5, 0), (6, 6, 0)]);
    }

    #[test]
    fn carried_messages_survives_requeue() {
        let mut s = Session::default();
        s.enqueue(msg(1, 127));
        // Queued, never written: nothing carried yet.
        assert!(!s.carried_messages());
        let mut l = link();
        s.write_pending(&mut l, false, None).unwrap();
        assert!(s.carried_messages());
        // A fault takes out_seq back to 0; the requeued message keeps its
        // number, and the session has still carried it.
        s.requeue_sent();
        assert_eq!(s.out_seq, 0);
        assert!(s.carried_messages());
        let mut received = Session::default();
        received.arrived(1, false).unwrap();
        assert!(received.carried_messages());
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
        s.write_pending(&mut l, false, None).unwrap();
        assert_eq!(s.ack_left, 0);
        let bytes = l.output.take_all();
        assert!(bytes.len() > 26, "an ACK frame was written");
        // With a message to send, the message carries the ack.
        s.arrived(2, false).unwrap();
        s.enqueue(msg(9, 127));
        let mut l = link();
        s.write_pending(&mut l, false, None).unwrap();
        assert_eq!(written(&mut l), vec![(1, 9, 2)]);
    }

    #[test]
    fn new_session_renumbers_from_one() {
        let mut s = Session::default();
        s.enqueue(msg(1, 127));
        s.enqueue(msg(2, 127));
        let mut l = link();
        s.write_pending(&mut l, false, None).unwrap();
        s.arrived(1, false).unwrap();
        s.restart_numbering();
        let mut l = link();
        s.write_pending(&mut l, false, None).unwrap();
        assert_eq!(written(&mut l), vec![(1, 1, 0), (2, 2, 0)]);
    }

    /// ProtocolV2::reset_session keeps global_seq: a CLIENT_IDENT after a
    /// reset with global_seq 0 would be refused as stale.
    #[test]
    fn a_reset_keeps_global_seq() {
        let mut s = Session {
            global_seq: 41,
            client_cookie: 5,
            in_seq: 3,
            ..Session::default()
        };
        s.reset();
        assert_eq!(s.global_seq, 41);
        assert_eq!((s.client_cookie, s.in_seq), (0, 0));
    }

    /// Every message counts for its payload and the fixed overhead (an
    /// empty one too), and what is released is what was charged: queued,
    /// written, acknowledged, requeued after a fault, dropped on resuming,
    /// written by a lossy session, discarded.
    #[test]
    fn held_bytes_count_what_messages_cost_and_return_to_zero() {
        let empty = || Box::new(Message::new(2, Bytes::new()));
        let (e, ten) = (Session::cost(0), Session::cost(10));
        assert!(e >= std::mem::size_of::<Message>() + 100, "{e}");
        let mut s = Session::default();
        for _ in 0..3 {
            s.enqueue(empty());
        }
        s.enqueue(msg(4, 127));
        assert_eq!(s.queued(), (4, 3 * e + ten));
        assert_eq!(s.held_bytes(), 3 * e + ten);
        let mut l = link();
        s.write_pending(&mut l, false, None).unwrap();
        assert_eq!(s.queued(), (0, 0));
        assert_eq!(s.held_bytes(), 3 * e + ten, "unacknowledged");
        s.acked(1);
        assert_eq!(s.held_bytes(), 2 * e + ten);
        s.requeue_sent();
        assert_eq!(s.queued(), (3, 2 * e + ten));
        assert_eq!(s.held_bytes(), 2 * e + ten);
        s.resume_from(2);
        assert_eq!(s.queued(), (2, e + ten));
        // Written by a lossy session: nothing is kept.
        s.write_pending(&mut l, true, None).unwrap();
        assert_eq!((s.queued(), s.held_bytes()), ((0, 0), 0));
        // Queued and unacknowledged, then discarded.
        s.enqueue(empty());
        s.write_pending(&mut l, false, None).unwrap();
        s.enqueue(empty());
        assert_eq!(s.held_bytes(), 2 * e);
        s.discard_queue();
        assert_eq!((s.queued(), s.held_bytes()), ((0, 0), 0));
    }

    /// A peer can set out_seq (SESSION_RECONNECT's msg_seq); at its limit
    /// the write is a typed error and the message stays queued.
    #[test]
    fn counters_a_peer_sets_never_wrap() {
        let mut s = Session::default();
        s.enqueue(msg(1, 127));
        s.resume_from(u64::MAX);
        let mut l = link();
        assert_eq!(
            s.write_pending(&mut l, false, None),
            Err(ProtocolError::CounterOverflow { counter: "out_seq" })
        );
        assert_eq!(s.queued().0, 1);
        assert_eq!(s.out_seq, u64::MAX);
        // A message numbered u64::MAX is delivered; after it, every number
        // is a duplicate (none is beyond).
        let mut r = Session::default();
        assert_eq!(r.arrived(u64::MAX, false), Ok(Arrival::Deliver));
        assert_eq!(r.arrived(u64::MAX, false), Ok(Arrival::Duplicate));
    }
}
