//! A connection's handshake phase, in the protocol its socket speaks:
//! msgr2's ([`crate::v2`]) or msgr1's ([`crate::v1`]). Each phase consumes
//! itself on the next input and returns the next phase (or the
//! handshake's end); an input the phase does not accept, including one of
//! the other protocol, is a typed error.

use msgr_encoding::EntityAddr;

use crate::cx::Cx;
use crate::decide::Protocol;
use crate::error::{ProtocolError, Wire};
use crate::ident::IdentRequest;
use crate::input::Input;
use crate::v1::handshake as v1;
use crate::v2::{accept as v2_accept, connect as v2_connect};

/// The connector's phase.
pub(crate) enum Connecting {
    V2(v2_connect::Connecting),
    V1(v1::Connecting),
}

/// Where a connector phase leads.
pub(crate) enum ConnectStep {
    Next(Connecting),
    /// SERVER_IDENT or SESSION_RECONNECT_OK (msgr1: READY or SEQ): the
    /// session is READY.
    Ready {
        reconnected: bool,
    },
    /// WAIT: the peer's connection to us will win; back off.
    Wait,
}

/// The acceptor's phase.
pub(crate) enum Accepting {
    V2(v2_accept::Accepting),
    V1(v1::Accepting),
}

pub(crate) enum AcceptStep {
    Next(Accepting),
    /// An ident for the messenger to decide on.
    Ident(IdentRequest),
    /// msgr1: the connector's in_seq after SEQ; the session is open.
    Ready,
}

/// `got` where `state` accepts only `expected`.
fn unexpected(state: &'static str, got: Wire) -> ProtocolError {
    ProtocolError::UnexpectedFrame {
        state,
        expected: &[],
        got,
    }
}

impl Connecting {
    /// The first phase of a connector's socket.
    pub fn start(protocol: Protocol) -> Connecting {
        match protocol {
            Protocol::V2 => Connecting::V2(v2_connect::Connecting::Banner),
            Protocol::V1 => Connecting::V1(v1::Connecting::Hello),
        }
    }

    /// The phase as Ceph names it.
    pub fn name(&self) -> &'static str {
        match self {
            Connecting::V2(p) => p.name(),
            Connecting::V1(p) => p.name(),
        }
    }

    /// Whether a CLIENT_IDENT (msgr2) just went out.
    pub fn sent_ident(&self) -> bool {
        matches!(self, Connecting::V2(v2_connect::Connecting::Ident))
    }

    /// Whether a SESSION_RECONNECT (msgr2) just went out.
    pub fn sent_reconnect(&self) -> bool {
        matches!(self, Connecting::V2(v2_connect::Connecting::Reconnect))
    }

    pub fn on_input(self, input: Input, cx: &mut Cx<'_>) -> Result<ConnectStep, ProtocolError> {
        match (self, input) {
            (Connecting::V2(p), Input::V2(i)) => Ok(match p.on_input(i, cx)? {
                v2_connect::ConnectStep::Next(n) => ConnectStep::Next(Connecting::V2(n)),
                v2_connect::ConnectStep::Ready { reconnected } => {
                    ConnectStep::Ready { reconnected }
                }
                v2_connect::ConnectStep::Wait => ConnectStep::Wait,
            }),
            (Connecting::V1(p), Input::V1(i)) => Ok(match p.on_input(i, cx)? {
                v1::ConnectStep::Next(n) => ConnectStep::Next(Connecting::V1(n)),
                v1::ConnectStep::Ready { reconnected } => ConnectStep::Ready { reconnected },
                v1::ConnectStep::Wait => ConnectStep::Wait,
            }),
            (p, other) => Err(unexpected(p.name(), other.wire())),
        }
    }
}

impl Accepting {
    /// The first phase of an accepted socket.
    pub fn start(protocol: Protocol) -> Accepting {
        match protocol {
            Protocol::V2 => Accepting::V2(v2_accept::Accepting::Banner),
            Protocol::V1 => Accepting::V1(v1::Accepting::Hello),
        }
    }

    /// The phase as Ceph names it.
    pub fn name(&self) -> &'static str {
        match self {
            Accepting::V2(p) => p.name(),
            Accepting::V1(p) => p.name(),
        }
    }

    /// Whether the session was opened here and awaits the connector's
    /// confirmation (msgr1: SEQ went out, its in_seq is awaited): a fault
    /// now is an established session's, not a refused socket's
    /// (ProtocolV1::fault closes only up to ACCEPTING_WAIT_CONNECT_MSG_AUTH).
    pub fn session_opened(&self) -> bool {
        matches!(self, Accepting::V1(v1::Accepting::Seq))
    }

    /// `peer_socket`: the peer's address as our socket sees it.
    pub fn on_input(
        self,
        input: Input,
        cx: &mut Cx<'_>,
        peer_socket: EntityAddr,
    ) -> Result<AcceptStep, ProtocolError> {
        match (self, input) {
            (Accepting::V2(p), Input::V2(i)) => Ok(match p.on_input(i, cx, peer_socket)? {
                v2_accept::AcceptStep::Next(n) => AcceptStep::Next(Accepting::V2(n)),
                v2_accept::AcceptStep::Ident(r) => AcceptStep::Ident(r),
            }),
            (Accepting::V1(p), Input::V1(i)) => Ok(match p.on_input(i, cx, peer_socket)? {
                v1::AcceptStep::Next(n) => AcceptStep::Next(Accepting::V1(n)),
                v1::AcceptStep::Ident(r) => AcceptStep::Ident(IdentRequest::V1(r)),
                v1::AcceptStep::Ready => AcceptStep::Ready,
            }),
            (p, other) => Err(unexpected(p.name(), other.wire())),
        }
    }
}
