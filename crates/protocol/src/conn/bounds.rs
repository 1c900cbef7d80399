//! What a peer can make a connection hold, and for how long: the timers
//! (handshake, idle, a frame's deadline, a standby session's expiry), the
//! receive budget a message must fit, and the queue limits on what is held
//! for a peer that does not read.

use super::*;

impl Conn {
    /// When the driver must call [`Conn::handle_timeout`] next: the earliest
    /// of the backoff's end and the handshake, frame, idle, unread, path
    /// check, trim and standby deadlines that apply in the current state; None when no timer
    /// runs.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.poll_timeout_holding(false)
    }

    /// [`Conn::poll_timeout`] for a runtime that says whether queues of its
    /// own hold spare buffers (emptied, kept): an idle READY connection's
    /// trim deadline counts them too, and the runtime lets go of them when
    /// the timer fires.
    pub fn poll_timeout_holding(&self, runtime_spare: bool) -> Option<Instant> {
        let t = &self.config.timeouts;
        match self.state {
            State::Backoff { until } => Some(until),
            State::Ready => {
                let idle = later(self.last_active, t.idle);
                let trim = self.trim_deadline(runtime_spare);
                let idle = trim.map_or(idle, |d| d.min(idle));
                let idle = self.unread_deadline().map_or(idle, |d| d.min(idle));
                let idle = self.path_deadline().map_or(idle, |d| d.min(idle));
                Some(self.frame_deadline().map_or(idle, |f| f.min(idle)))
            }
            State::Standby => Some(later(self.last_active, t.standby)),
            State::Connecting(_) | State::Accepting(_) | State::ServerWait => {
                self.handshake_deadline
            }
            _ => None,
        }
    }

    /// When a peer that takes nothing of what we hold for it, while reading
    /// is paused on its account, is marked down (Timeouts::unread).
    pub(crate) fn unread_deadline(&self) -> Option<Instant> {
        self.unread_since
            .filter(|_| self.reading_paused())
            .map(|since| later(since, self.config.timeouts.unread))
    }

    /// Starts the unread clock if reading is paused on the peer's account
    /// and the clock is not running.
    pub(crate) fn note_unread(&mut self, now: Instant) {
        if self.unread_since.is_none() && self.reading_paused() {
            self.unread_since = Some(now);
        }
    }

    /// When the frame being read must be complete (READY only: the
    /// handshake has its own deadline).
    pub(crate) fn frame_deadline(&self) -> Option<Instant> {
        self.partial_since
            .map(|p| later(p, self.config.timeouts.frame))
    }

    /// When an idle READY connection trims its queues: once per idle
    /// spell, and only if an emptied queue kept its buffer. Small ones let
    /// go of theirs as they empty (msgr_frames::let_go_if_small), so a
    /// connection with a message or a few at a time has nothing to trim
    /// and no timer firing each `trim` while it is busy (with thousands of
    /// connections, thousands of wake-ups a second, each touching a
    /// connection's cold state).
    pub(crate) fn trim_deadline(&self, runtime_spare: bool) -> Option<Instant> {
        (self.trimmed != Some(self.last_active) && (runtime_spare || self.holds_spare()))
            .then(|| later(self.last_active, self.config.timeouts.trim))
    }

    /// Whether an empty queue (events, the session's, the socket's output)
    /// still holds a buffer: what [`Conn::trim`] lets go.
    pub(crate) fn holds_spare(&self) -> bool {
        msgr_frames::holds_spare(&self.events)
            || self.session.holds_spare()
            || self.link.as_ref().is_some_and(|l| l.output.holds_spare())
    }

    /// Lets go of the capacity the queues grew to while busy.
    pub(crate) fn trim(&mut self) {
        self.trimmed = Some(self.last_active);
        if self.events.is_empty() {
            self.events = std::collections::VecDeque::new();
        }
        self.session.trim();
        if let Some(l) = self.link.as_mut() {
            l.output.trim();
        }
    }

    /// Acts on the timers due at `now`: reconnects after a backoff, faults a
    /// handshake, frame or idle connection that timed out, marks down a peer
    /// that left its queue unread too long, asks for a silent connection's
    /// path to be checked (Timeouts::stall), trims idle queues, forgets an
    /// expired STANDBY session. Nothing happens before a deadline.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.link_held() {
            return; // frozen by an interceptor: no handshake timeout
        }
        let t = self.config.timeouts;
        match self.state {
            State::Backoff { until } if now >= until => self.request_socket(now),
            State::Ready if self.frame_deadline().is_some_and(|d| now >= d) => {
                self.fault(ProtocolError::Timeout("frame"), now)
            }
            State::Ready if now >= later(self.last_active, t.idle) => {
                self.fault(ProtocolError::Timeout("idle connection"), now)
            }
            State::Ready if self.unread_deadline().is_some_and(|d| now >= d) => {
                let held = self.held_bytes();
                let max = self.config.queue_limits.soft;
                self.fail_closed(ProtocolError::QueueOverflow { held, max })
            }
            State::Ready if self.path_deadline().is_some_and(|d| now >= d) => self.check_path(now),
            State::Ready if self.trim_deadline(false).is_some_and(|d| now >= d) => self.trim(),
            State::Standby if now >= later(self.last_active, t.standby) => {
                self.fail_closed(ProtocolError::Timeout("standby session"))
            }
            State::Connecting(_) | State::Accepting(_) | State::ServerWait
                if self.handshake_deadline.is_some_and(|d| now >= d) =>
            {
                self.fault(ProtocolError::Timeout("handshake"), now)
            }
            _ => {}
        }
    }

    /// Bytes held for the peer: messages queued and unacknowledged at what
    /// they cost (Session::cost: an empty message counts too), and the
    /// bytes framed but not yet written by the runtime.
    pub fn held_bytes(&self) -> usize {
        self.session
            .held_bytes()
            .saturating_add(self.writer_backlog)
    }

    /// Whether the connection holds so much for the peer that senders
    /// should wait (QueueLimits::soft), counting what waits for the peer's
    /// acknowledgement.
    pub fn over_queue_limit(&self) -> bool {
        self.held_bytes() >= self.config.queue_limits.soft
    }

    /// Bytes the peer has not taken yet: messages queued (at their cost),
    /// framed and not yet taken by the runtime, and taken but not yet
    /// written.
    pub(crate) fn untaken_bytes(&self) -> usize {
        let framed = self.link.as_ref().map_or(0, |l| l.output_len());
        self.session
            .queued()
            .1
            .saturating_add(framed)
            .saturating_add(self.writer_backlog)
    }

    /// Whether the runtime should stop reading from the peer: back
    /// pressure on a peer that sends requests and does not read the
    /// replies (QueueLimits::soft), so only once READY (before, what is
    /// queued waits for the handshake, which needs reading). Only what the
    /// peer has not taken counts: what it took and has yet to acknowledge
    /// is released by reading (acknowledgements come in what we read).
    pub fn reading_paused(&self) -> bool {
        matches!(self.state, State::Ready) && self.untaken_bytes() >= self.config.queue_limits.soft
    }

    /// The runtime reads again after a pause of its own (waiting for
    /// receive budget or for the queue to drain): the frame being read
    /// gets its full time from now.
    pub fn resume_reading(&mut self, now: Instant) {
        if self.partial_since.is_some() {
            self.partial_since = Some(now);
        }
    }

    /// Since when a READY connection has seen no traffic (for a runtime
    /// that evicts idle sessions).
    pub fn idle_since(&self) -> Option<Instant> {
        matches!(self.state, State::Ready).then_some(self.last_active)
    }

    /// Closes the socket of an idle connection to make room for another:
    /// a fault, which its policy handles (a stateful server's session
    /// stands by, a lossy one resets).
    pub fn evict_idle(&mut self, now: Instant) {
        if matches!(self.state, State::Ready) {
            let e = ProtocolError::Timeout("idle connection, evicted at the connection limit");
            self.fault(e, now);
        }
    }

    /// The most a received message may hold: the messenger's receive
    /// budget, lowered by the peer's policy throttle.
    pub(crate) fn budget(&self) -> Option<u64> {
        let policy = self.peer.policy.throttle.map(|t| t.bytes);
        match (self.config.receive_budget, policy) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A message of `len` payload bytes (announced by its preamble, or
    /// arrived whole in one read) must fit the receive budget.
    pub(crate) fn check_budget(&self, len: u64) -> Result<(), ProtocolError> {
        match self.budget() {
            Some(budget) if len > budget => Err(ProtocolError::OverBudget { len, budget }),
            _ => Ok(()),
        }
    }

    /// What is left in the input once the complete frames are handled: a
    /// partial frame starts (or keeps) its deadline, and a MESSAGE whose
    /// preamble announces more than the receive budget is refused before
    /// its bytes are read.
    pub(crate) fn after_input(&mut self, input: &[u8], progressed: bool, now: Instant) {
        let partial = self.link.as_ref().is_some_and(|l| l.has_partial(input));
        self.partial_since = match (matches!(self.state, State::Ready) && partial, progressed) {
            (false, _) => None,
            (true, true) => Some(now),
            (true, false) => Some(self.partial_since.unwrap_or(now)),
        };
        let announced = self.pending_message_len().map(|l| l as u64);
        if let Err(e) = announced.map_or(Ok(()), |len| self.check_budget(len)) {
            self.fault(e, now);
        }
    }
}
