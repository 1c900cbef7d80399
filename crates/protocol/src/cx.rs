//! What a handshake phase works with, either protocol's: the connection's
//! parts it may read and change while the phase consumes an input.

use std::collections::VecDeque;

use crate::config::Config;
use crate::error::ProtocolError;
use crate::event::Event;
use crate::link::Link;
use crate::peer::{MyAddrs, PeerInfo};
use crate::session::Session;

/// What a phase works with.
pub(crate) struct Cx<'a> {
    pub config: &'a Config,
    pub link: &'a mut Link,
    pub session: &'a mut Session,
    pub peer: &'a mut PeerInfo,
    pub me: &'a mut MyAddrs,
    pub events: &'a mut VecDeque<Event>,
}

/// The most auth frames a peer may send on one socket (AUTH_REQUEST and
/// AUTH_REQUEST_MORE to an acceptor, AUTH_REPLY_MORE and AUTH_BAD_METHOD
/// to a connector; msgr1's CONNECTs to an acceptor and its replies to a
/// connector). cephx takes two, and a method fallback or an msgr1 retry
/// one or two more; a peer bouncing refusals is cut off. (Ceph counts
/// none; its handshake timeout alone ends such a loop.)
pub const MAX_AUTH_ROUNDS: u32 = 8;

/// Counts one auth frame from the peer.
pub(crate) fn auth_round(cx: &mut Cx<'_>) -> Result<(), ProtocolError> {
    cx.link.auth_rounds = cx.link.auth_rounds.saturating_add(1);
    if cx.link.auth_rounds > MAX_AUTH_ROUNDS {
        return Err(ProtocolError::TooManyAuthRounds {
            max: MAX_AUTH_ROUNDS,
        });
    }
    Ok(())
}
