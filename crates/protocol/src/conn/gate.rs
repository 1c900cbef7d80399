//! The connection's side of the test interceptor (crate::intercept): its
//! id, the connect and accept breakpoints, and unblocking.

use super::*;
use crate::intercept::{Action, Breakpoint, CustomPoint, Tap};

impl Conn {
    /// The id the runtime gave this connection (the interceptor's name
    /// for it).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A hook for a new link.
    pub(crate) fn tap(&self) -> Tap {
        #[allow(unused_mut)]
        let mut tap = Tap::new(self.id);
        #[cfg(feature = "interceptor")]
        {
            tap.interceptor = self.config.interceptor.clone();
        }
        tap
    }

    /// SOCKET_CONNECTING: whether to connect now.
    pub(crate) fn intercept_connect(&mut self, now: Instant) -> bool {
        match self
            .tap()
            .hit(Breakpoint::Custom(CustomPoint::SocketConnecting))
        {
            Action::Fault => {
                self.fault(ProtocolError::Injected, now);
                false
            }
            Action::Block => {
                self.connect_held = true;
                false
            }
            // STALL makes no sense before a socket exists: go on.
            Action::Continue | Action::Stall => true,
        }
    }

    /// SOCKET_ACCEPTED, a notification.
    pub(crate) fn notify_accepted(&mut self) {
        let _ = self
            .tap()
            .hit(Breakpoint::Custom(CustomPoint::SocketAccepted));
    }

    /// Whether an interceptor holds this connection's socket (a runtime
    /// stops reading it).
    pub fn link_held(&self) -> bool {
        self.link.as_ref().is_some_and(|l| l.tap.held())
    }

    /// The socket of a held link failed: remembered for the unblock, not
    /// acted on (the frozen handshake does not see it).
    pub(crate) fn held_link_died(&mut self) -> bool {
        match self.link.as_mut() {
            Some(l) if l.tap.held() => {
                l.tap.dead = true;
                true
            }
            _ => false,
        }
    }

    /// A stalled socket's shutdown, once.
    pub(crate) fn poll_gate_event(&mut self) -> Option<Event> {
        let l = self.link.as_mut()?;
        l.tap.take_shutdown().then(|| Event::ShutdownSocket {
            link: l.id,
            last: WireQueue::new(),
        })
    }

    /// Releases what an interceptor held (BLOCK or STALL): the held connect
    /// goes out; a held socket gets its held input handled and its held
    /// output released, and a socket that died meanwhile (or was stalled)
    /// fails now, at the handshake's next use of it. `input` is the
    /// driver's read buffer, as for [`Conn::handle_input`].
    #[cfg(feature = "interceptor")]
    pub fn unblock(&mut self, input: &mut bytes::BytesMut, now: Instant) {
        if std::mem::take(&mut self.connect_held) {
            if matches!(self.state, State::NeedSocket { .. }) {
                self.emit_connect();
            }
            return;
        }
        let Some(link) = self.link.as_mut() else {
            return;
        };
        let dead = link.tap.dead;
        let (held, stalled) = link.open_gate();
        let id = link.id;
        if let Some(held) = held {
            if let Err(e) = self.on_input(held, now) {
                return self.fault(e, now);
            }
        }
        if (dead || stalled) && self.link_id() == Some(id) {
            let why = "socket shut down while an interceptor held it";
            let e = ProtocolError::Transport {
                kind: std::io::ErrorKind::ConnectionAborted,
                message: why.into(),
            };
            return self.fault(e, now);
        }
        self.handle_input(input, now);
        self.flush_acks(now);
    }

    /// Lets the link go: its socket closes (after what was written before
    /// an interceptor's write FAULT, if that is why).
    pub(crate) fn drop_link(&mut self) {
        if let Some(mut l) = self.link.take() {
            let event = match l.tap.flush_on_close || l.linger {
                // An interceptor failed a write, or a refusal was written:
                // what was written before goes out (each frame before it
                // was flushed).
                true => Event::ShutdownSocket {
                    link: l.id,
                    last: std::mem::take(l.writable()),
                },
                false => Event::CloseSocket { link: l.id },
            };
            self.events.push_back(event);
        }
    }

    pub(crate) fn emit_connect(&mut self) {
        if let Some(addr) = self.peer.target_addr.addr {
            let t = &self.config.timeouts;
            let timeout = if self.probing { t.probe } else { t.connect };
            self.events.push_back(Event::Connect { addr, timeout });
        }
    }
}
