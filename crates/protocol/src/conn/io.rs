//! The runtime's side of a connection: the bytes of its current socket,
//! read into [`Conn::input`] and written from [`Conn::output`] (or
//! [`Conn::fill_output`], which frames queued messages just in time).

use std::time::Instant;

use bytes::BytesMut;
use msgr_frames::{Tag, WireQueue};

use super::Conn;

impl Conn {
    /// Where the driver appends what it read from the current socket.
    pub fn input(&mut self) -> Option<&mut BytesMut> {
        self.link.as_mut().map(|l| &mut l.input)
    }

    /// What the driver writes to the current socket.
    pub fn output(&mut self) -> Option<&mut WireQueue> {
        self.link.as_mut().map(|l| l.writable())
    }

    /// Moves what is ready to write into the runtime's queue `out`, framing
    /// queued messages first while `out` leaves room in the output window
    /// (Config::output_window). Returns whether that raised events (a
    /// fault) the runtime must handle before it waits.
    pub fn fill_output(&mut self, out: &mut WireQueue, now: Instant) -> bool {
        self.writer_backlog = out.len();
        if self.session.queued().0 > 0 {
            if let Err(e) = self.flush() {
                self.fault(e, now);
            }
        }
        if let Some(q) = self.output() {
            out.append(q);
        }
        self.writer_backlog = out.len();
        !self.events.is_empty()
    }

    /// How many more bytes the next step of reading needs.
    pub fn want(&self) -> usize {
        self.link.as_ref().map_or(0, |l| l.want())
    }

    /// The payload size (front, middle and data, as the preamble gives
    /// them: compressed, if the frame is) of the MESSAGE being read, once
    /// its preamble is in: a driver takes receive budget for it before
    /// reading the rest.
    pub fn pending_message_len(&self) -> Option<usize> {
        let head = self.link.as_ref()?.pending_head()?;
        if head.tag() != Tag::MESSAGE {
            return None;
        }
        // Segment 0 is the header, which the budget does not count.
        let payload: u64 = head
            .preamble
            .used()
            .iter()
            .skip(1)
            .map(|s| s.len as u64)
            .sum();
        Some(usize::try_from(payload).unwrap_or(usize::MAX))
    }
}
