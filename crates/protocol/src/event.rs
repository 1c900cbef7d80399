//! What a connection asks of its driver or tells its dispatcher.

use std::net::SocketAddr;

use msgr_encoding::EntityAddr;

use crate::error::ProtocolError;
use crate::ident::IdentRequest;
use crate::link::LinkId;
use crate::message::Message;

/// What a connection asks of its driver or tells its dispatcher.
#[derive(Debug)]
pub enum Event {
    /// Open a socket to `addr`, then call `socket_connected` or
    /// `socket_failed` (with a `TimedOut` error if it takes longer than
    /// `timeout`).
    Connect {
        /// The peer's socket address, from its msgr2 or msgr1 address.
        addr: SocketAddr,
        /// How long the connect may take: Timeouts::connect, or
        /// Timeouts::probe while the path is failing.
        timeout: std::time::Duration,
    },
    /// Tell `handle_path` what the transport knows of link `link`'s
    /// path (the connection has had something outstanding and heard
    /// nothing from its peer for Timeouts::stall).
    CheckPath {
        /// The link whose path is checked.
        link: LinkId,
    },
    /// Close the socket of link `link`, if the driver still holds it.
    CloseSocket {
        /// The link whose socket closes.
        link: LinkId,
    },
    /// Write `last`, then what the connection still has for link `link`,
    /// then shut its socket down without telling the connection (an
    /// interceptor's STALL, which freezes the connection mid-handshake, or
    /// its write FAULT, which failed one frame but not those before).
    ShutdownSocket {
        /// The link whose socket shuts down.
        link: LinkId,
        /// Bytes to write before the rest: what was framed before the
        /// interceptor's breakpoint, or the refusal.
        last: msgr_frames::WireQueue,
    },
    /// An accepted client identified itself: the messenger decides, with
    /// the connection registered for the same peer ([`registry`](crate::registry)).
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
