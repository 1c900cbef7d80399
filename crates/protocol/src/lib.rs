//! The msgr2 protocol, sans-IO.
//!
//! [`Conn`] is one connection to a peer: the connector and acceptor
//! handshakes of the msgr2 document (banner, HELLO, auth, AUTH_SIGNATURE,
//! compression, idents, reconnects), the session that numbers, acknowledges
//! and replays messages, and Ceph's fault handling per [`Policy`]. The
//! [`decide`] functions are the acceptor's rules for an ident that meets an
//! existing connection (races, resets, retries). Nothing here does I/O or
//! reads a clock: drivers feed bytes and time in and take bytes and
//! [`Event`]s out.
#![forbid(unsafe_code)]

pub mod config;
mod conn;
pub mod decide;
mod error;
pub mod features;
mod handshake;
// The test interceptor's breakpoints and actions are public only with the
// `interceptor` feature; without it the hooks stay inert.
#[cfg(feature = "interceptor")]
pub mod intercept;
#[cfg(not(feature = "interceptor"))]
#[allow(dead_code)]
mod intercept;
mod link;
mod link1;
mod message;
mod peer;
pub mod policy;
pub mod registry;
mod session;

use std::net::SocketAddr;

pub use config::{
    later, CompressionConfig, Config, GlobalSeq, Policies, PolicySet, QueueLimits, Timeouts,
};
pub use conn::{Conn, ConnState, ConnStats, Reuse, Side};
pub use decide::{Decision, ExistingInfo, Owner, Protocol};
pub use error::{Claim, ProtocolError, Wire};
pub use handshake::{IdentRequest, MAX_AUTH_ROUNDS};
pub use link::{LinkId, MAX_PRE_AUTH};
pub use message::Message;
pub use peer::{target_addr, MyAddrs, PeerInfo};
pub use policy::{Policy, PolicyName, ThrottleLimits};
pub use session::Session;

use msgr_encoding::EntityAddr;

/// What a connection asks of its driver or tells its dispatcher.
#[derive(Debug)]
pub enum Event {
    /// Open a socket to `addr`, then call `socket_connected` or
    /// `socket_failed`.
    Connect { addr: SocketAddr },
    /// Close the socket of link `link`, if the driver still holds it.
    CloseSocket { link: LinkId },
    /// Write `last`, then what the connection still has for link `link`,
    /// then shut its socket down without telling the connection (an
    /// interceptor's STALL, which freezes the connection mid-handshake, or
    /// its write FAULT, which failed one frame but not those before).
    ShutdownSocket {
        link: LinkId,
        last: msgr_frames::WireQueue,
    },
    /// An accepted client identified itself: the messenger decides, with
    /// the connection registered for the same peer ([`registry`]).
    IdentReceived(IdentRequest),
    /// We learned our own address from a peer (ours was blank).
    LearnedAddr(EntityAddr),
    /// A fault happened (the connection handles it per its policy; this is
    /// for logs and counters).
    Fault(ProtocolError),
    /// ms_handle_connect: our connection became READY.
    Connected,
    /// ms_handle_accept: an accepted connection became READY.
    Accepted,
    /// A message arrived, in order (boxed: the event queue moves a
    /// pointer, not the message).
    Message(Box<Message>),
    /// ms_handle_reset: the connection closed by fault; queued messages lost.
    Reset,
    /// ms_handle_remote_reset: the peer reset the session; ours was reset.
    RemoteReset,
    /// ms_handle_refused: the connect was refused.
    Refused,
    /// A KEEPALIVE2_ACK arrived, echoing our stamp.
    KeepaliveAck(msgr_encoding::UTime),
    /// The connection is closed for good.
    Closed,
}
