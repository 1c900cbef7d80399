//! What the peer sent next on a socket, in the framing the socket speaks.

use crate::error::Wire;
use crate::v1::link as v1;
use crate::v2::link as v2;

/// What the peer sent next.
#[derive(Debug)]
pub enum Input {
    /// On an msgr2 socket: its banner, or a frame.
    V2(v2::Input),
    /// On an msgr1 socket: its hello, a CONNECT or reply, or an item of
    /// the open stream.
    V1(v1::Input),
}

impl Input {
    /// What arrived, for errors that say what was expected against it.
    pub fn wire(&self) -> Wire {
        match self {
            Input::V2(i) => i.wire(),
            Input::V1(i) => i.wire(),
        }
    }
}
