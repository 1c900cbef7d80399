//! The runtime's side of a connection: the bytes of its current socket,
//! read into the driver's buffer (which [`Conn::handle_input`] takes
//! frames from) and written from the driver's queue (which
//! [`Conn::fill_output`] fills, framing queued messages just in time).

use std::time::Instant;

use msgr_frames::WireQueue;

use super::Conn;

impl Conn {
    /// What is framed for the current socket and may be written now.
    pub(crate) fn output(&mut self) -> Option<&mut WireQueue> {
        self.link.as_mut().map(|l| l.writable())
    }

    /// Moves what is ready to write into the runtime's queue `out`, framing
    /// queued messages first while `out` leaves room in the output window
    /// (Config::output_window). Returns whether that raised events (a
    /// fault) the runtime must handle before it waits.
    pub fn fill_output(&mut self, out: &mut WireQueue, now: Instant) -> bool {
        // The peer took some of what the runtime held: the unread clock
        // starts again, if reading is still paused (Timeouts::unread).
        if self.unread_since.is_some() && out.len() < self.writer_backlog {
            self.unread_since = None;
            self.note_unread(now);
        }
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

    /// How many more bytes the next step of reading needs, `input` holding
    /// what was read and not yet taken.
    pub fn want(&self, input: &[u8]) -> usize {
        self.link.as_ref().map_or(0, |l| l.want(input))
    }

    /// The payload size (front, middle and data, as the preamble gives
    /// them: compressed, if the frame is) of the MESSAGE being read, once
    /// its preamble is in: a driver takes receive budget for it before
    /// reading the rest.
    pub fn pending_message_len(&self) -> Option<usize> {
        self.link.as_ref()?.pending_payload_len()
    }
}
