//! Protocol errors. Each says who was at fault; a fault on a connection
//! then runs Ceph's fault handling (reconnect, standby or close, by policy).

use std::fmt;

use msgr_auth::{AuthError, Identity};
use msgr_encoding::{EntityName, EntityType};
use msgr_frames::{Fault, FrameError, Tag};

use crate::decide::Owner;

/// What arrives on a socket: the banner, then frames; on an msgr1
/// socket, its handshake's parts, then tagged items.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// msgr2's banner (`ceph v2` and its feature words).
    Banner,
    /// An msgr2 frame with this tag.
    Frame(Tag),
    /// msgr1: the banner and address(es) of the exchange that opens a socket.
    Hello1,
    /// msgr1: a CONNECT.
    Connect1,
    /// msgr1: a CONNECT_REPLY with this tag.
    Reply1(msgr_frames::v1::Tag),
    /// msgr1: the connector's in_seq after SEQ.
    Seq1,
    /// msgr1: an item of an open session's stream.
    Item1(msgr_frames::v1::Tag),
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wire::Banner => f.write_str("banner"),
            Wire::Frame(t) => write!(f, "{t}"),
            Wire::Hello1 => f.write_str("msgr1 banner"),
            Wire::Connect1 => f.write_str("CONNECT"),
            Wire::Reply1(t) => write!(f, "CONNECT_REPLY {t}"),
            Wire::Seq1 => f.write_str("in_seq"),
            Wire::Item1(t) => write!(f, "{t}"),
        }
    }
}

/// What a peer claimed about itself besides its authentication.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The entity type of its HELLO.
    HelloType(EntityType),
    /// The gid (`entity_name_t` number) of its CLIENT_IDENT.
    IdentGid(i64),
    /// The host type of its msgr1 CONNECT.
    ConnectType(EntityType),
    /// The sender an msgr1 message header names.
    MessageSource(EntityName),
}

/// Why a connection failed: a protocol violation, a refusal, a local
/// limit or the transport. Each variant's [`fault`](ProtocolError::fault)
/// says whose fault it was, which picks Ceph's fault handling (reconnect,
/// standby or close, by policy); the Display says what was expected and
/// what arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// Framing failed (bad crc, failed decryption, bad banner, ...).
    Frame(FrameError),
    /// Something the current state does not accept: what it expected and
    /// what arrived.
    UnexpectedFrame {
        /// The connection state the input arrived in, named as Ceph's
        /// ProtocolV2 states are (e.g. `HELLO_CONNECTING`).
        state: &'static str,
        /// What that state accepts.
        expected: &'static [Wire],
        /// What the peer sent instead.
        got: Wire,
    },
    /// The peer's HELLO names another entity type than we connected to.
    PeerTypeMismatch {
        /// The entity type (`CEPH_ENTITY_TYPE_*`) we connected to.
        expected: u8,
        /// The entity type the peer's HELLO names.
        got: u8,
    },
    /// Authentication failed on our side (bad credentials, no method).
    Auth(AuthError),
    /// The peer's AUTH_SIGNATURE does not match what we sent.
    BadSignature,
    /// SERVER_IDENT does not list the address we connected to.
    WrongServer,
    /// CLIENT_IDENT targets an address that is not ours, or has none.
    BadClientIdent(&'static str),
    /// The peer lacks features our policy requires (`features_required`).
    MissingFeatures {
        /// The required feature bits the peer did not announce.
        missing: u64,
    },
    /// The peer requires features we do not offer (IDENT_MISSING_FEATURES,
    /// msgr1's FEATURES reply).
    FeaturesRefused {
        /// The feature bits the peer requires that we do not support.
        missing: u64,
    },
    /// The server chose a connection mode or compression method we did not
    /// offer.
    NotOffered {
        /// Which choice: a connection mode or a compression method.
        what: &'static str,
        /// What we offered, as the wire's numbers.
        offered: Vec<u32>,
        /// What the server chose.
        got: u32,
    },
    /// The peer claimed to be another entity than the one it authenticated
    /// as.
    Impersonation {
        /// Who the peer proved to be in the auth exchange.
        authenticated: Box<Identity>,
        /// What it claimed afterwards that does not fit.
        claim: Claim,
    },
    /// The session at the address the peer claims belongs to another
    /// entity; it was left alone. (Boxed, as the identity above: errors
    /// travel in every Result of the hot path and stay small.)
    NotSessionOwner {
        /// The entity that holds the session at that address.
        owner: Box<Owner>,
        /// The peer that claimed it.
        newcomer: Box<Owner>,
    },
    /// A message sequence number skipped ahead (messages were lost).
    SequenceGap {
        /// The sequence number that comes next (our in_seq plus one).
        expected: u64,
        /// The sequence number the peer's message carries.
        got: u64,
    },
    /// A peer's RETRY_GLOBAL would push our messenger-wide global_seq
    /// further than a peer may (see [`crate::config::GlobalSeq::raise`]);
    /// the counter was left alone.
    PeerGlobalSeq {
        /// The global_seq the peer's RETRY_GLOBAL shows and asks us past.
        shown: u64,
        /// Our global_seq when it arrived.
        ours: u64,
        /// How far this peer has already pushed ours.
        pushed: u32,
    },
    /// A counter the peer set (connect_seq, global_seq, a message
    /// sequence) would overflow: never wrapped.
    CounterOverflow {
        /// The counter's name as Ceph calls it (e.g. `connect_seq`).
        counter: &'static str,
    },
    /// The peer announced a message larger than all the receive budget we
    /// may hold (see Config::receive_budget).
    OverBudget {
        /// The message's length in bytes, as its header announces it.
        len: u64,
        /// All the bytes we may hold for received messages.
        budget: u64,
    },
    /// We hold this much for a peer that does not read it: marked down.
    QueueOverflow {
        /// Bytes held for the peer ([`crate::Conn::held_bytes`]): messages
        /// queued or not yet acknowledged, and bytes framed but unwritten.
        held: usize,
        /// The queue limit they passed (the soft one after the peer left
        /// them unread too long, the hard one when a send would pass it).
        max: usize,
    },
    /// The handshake before AUTH_DONE (what AUTH_SIGNATURE signs) grew
    /// beyond what any real one does.
    HandshakeTooLong {
        /// The most bytes a handshake may take before AUTH_DONE.
        max: usize,
    },
    /// More auth rounds (requests, AUTH_BAD_METHOD retries) than any
    /// method needs.
    TooManyAuthRounds {
        /// The most rounds allowed ([`crate::MAX_AUTH_ROUNDS`]).
        max: u32,
    },
    /// No progress for too long (ms_connection_ready_timeout /
    /// ms_connection_idle_timeout).
    Timeout(&'static str),
    /// The peer's host acknowledged nothing of what we sent, through
    /// `unanswered` retransmissions and for `since_ack` (Timeouts::stall):
    /// the path is down (a partition, a host gone without closing).
    PathStalled {
        /// Since the peer's host last acknowledged anything.
        since_ack: std::time::Duration,
        /// Retransmissions (or zero-window probes) in a row unanswered.
        unanswered: u8,
    },
    /// The socket failed or was closed: the I/O error's kind and text.
    Transport {
        /// The I/O error's kind.
        kind: std::io::ErrorKind,
        /// The I/O error's text.
        message: String,
    },
    /// The peer closed the socket during our handshake, in `phase`: a
    /// refusal the protocol gives no reason for (see the Display).
    ClosedInHandshake {
        /// The handshake state the close came in, as Ceph names it
        /// (e.g. `AUTH_CONNECTING`); the Display reads it as a reason.
        phase: &'static str,
        /// The I/O error's kind the close arrived as.
        kind: std::io::ErrorKind,
    },
    /// The peer said WAIT: its own connection to us wins the race.
    Wait,
    /// A fault injected for testing.
    Injected,
    /// msgr1 framing failed (bad crc, a tag out of place, ...).
    Msgr1(msgr_frames::v1::WireError),
    /// msgr1: the two sides' protocol versions for this pair of entity
    /// types differ (BADPROTOVER).
    ProtocolVersion {
        /// The protocol version we speak for this pair of entity types.
        ours: u32,
        /// The version the peer's CONNECT or reply names.
        theirs: u32,
    },
    /// msgr1: RETRY_SESSION with a connect_seq that does not move ours
    /// forward (Ceph's connector asserts it does).
    RetryBackwards {
        /// Our connect_seq when the reply arrived.
        ours: u64,
        /// The connect_seq the RETRY_SESSION carries.
        got: u64,
    },
    /// msgr1: a message on a signing session whose cephx signature does
    /// not match it (or that has none).
    MessageSignature {
        /// The message's sequence number.
        seq: u64,
    },
}

impl ProtocolError {
    /// Whose fault the error is ([`Fault`]): the peer's misbehaviour, an
    /// incompatibility between the two sides, or the transport and local
    /// events. Counters and fault handling read it.
    pub fn fault(&self) -> Fault {
        match self {
            ProtocolError::Frame(e) => e.fault(),
            ProtocolError::PeerTypeMismatch { .. }
            | ProtocolError::WrongServer
            | ProtocolError::MissingFeatures { .. }
            | ProtocolError::FeaturesRefused { .. } => Fault::PeerIncompatible,
            ProtocolError::NotOffered { .. } => Fault::PeerMisbehaved,
            ProtocolError::Auth(_) => Fault::PeerIncompatible,
            ProtocolError::UnexpectedFrame { .. }
            | ProtocolError::BadSignature
            | ProtocolError::BadClientIdent(_)
            | ProtocolError::Impersonation { .. }
            | ProtocolError::NotSessionOwner { .. }
            | ProtocolError::SequenceGap { .. }
            | ProtocolError::CounterOverflow { .. }
            | ProtocolError::PeerGlobalSeq { .. }
            | ProtocolError::OverBudget { .. }
            | ProtocolError::QueueOverflow { .. }
            | ProtocolError::HandshakeTooLong { .. }
            | ProtocolError::TooManyAuthRounds { .. } => Fault::PeerMisbehaved,
            ProtocolError::Msgr1(e) => e.fault(),
            ProtocolError::ProtocolVersion { .. } => Fault::PeerIncompatible,
            ProtocolError::RetryBackwards { .. } | ProtocolError::MessageSignature { .. } => {
                Fault::PeerMisbehaved
            }
            ProtocolError::Timeout(_)
            | ProtocolError::PathStalled { .. }
            | ProtocolError::Transport { .. }
            | ProtocolError::ClosedInHandshake { .. }
            | ProtocolError::Wait
            | ProtocolError::Injected => Fault::Io,
        }
    }
}

impl ProtocolError {
    /// Whether this says the network path failed rather than the peer: a
    /// connect that timed out, an unreachable network or host, a stalled
    /// path. Such a peer is tried again every Timeouts::probe.
    pub fn is_path_failure(&self) -> bool {
        use std::io::ErrorKind::{HostUnreachable, NetworkDown, NetworkUnreachable, TimedOut};
        match self {
            ProtocolError::PathStalled { .. } => true,
            ProtocolError::Transport { kind, .. } => {
                matches!(
                    kind,
                    TimedOut | NetworkUnreachable | HostUnreachable | NetworkDown
                )
            }
            _ => false,
        }
    }

    /// A socket's I/O error, kind kept.
    pub fn transport(e: &std::io::Error) -> ProtocolError {
        ProtocolError::Transport {
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// The peer will not talk to us this way, and the same handshake again
    /// cannot change that: a refused authentication, features one side
    /// lacks, another server at the address, a choice we did not offer, a
    /// signature that does not match. (A close during the handshake says
    /// nothing for sure: a peer restarting closes too. Tools count those.)
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ProtocolError::Auth(_)
                | ProtocolError::MissingFeatures { .. }
                | ProtocolError::FeaturesRefused { .. }
                | ProtocolError::WrongServer
                | ProtocolError::PeerTypeMismatch { .. }
                | ProtocolError::NotOffered { .. }
                | ProtocolError::BadSignature
                | ProtocolError::ProtocolVersion { .. }
        )
    }
}

impl From<FrameError> for ProtocolError {
    fn from(e: FrameError) -> Self {
        ProtocolError::Frame(e)
    }
}

impl From<msgr_frames::v1::WireError> for ProtocolError {
    fn from(e: msgr_frames::v1::WireError) -> Self {
        ProtocolError::Msgr1(e)
    }
}

impl From<AuthError> for ProtocolError {
    fn from(e: AuthError) -> Self {
        ProtocolError::Auth(e)
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProtocolError::Frame(e) => write!(f, "{e}"),
            ProtocolError::UnexpectedFrame {
                state,
                expected,
                got,
            } => {
                write!(f, "in state {state} the peer sent {got}; expected ")?;
                match expected {
                    [] => f.write_str("nothing"),
                    [one] => write!(f, "{one}"),
                    [first @ .., last] => {
                        for w in first {
                            write!(f, "{w}, ")?;
                        }
                        write!(f, "or {last}")
                    }
                }
            }
            ProtocolError::PeerTypeMismatch { expected, got } => write!(
                f,
                "peer is a {} but we connected to a {}",
                msgr_encoding::EntityType(*got),
                msgr_encoding::EntityType(*expected)
            ),
            ProtocolError::Auth(e) => write!(f, "{e}"),
            ProtocolError::BadSignature => {
                f.write_str("peer's AUTH_SIGNATURE does not match what we sent")
            }
            ProtocolError::WrongServer => {
                f.write_str("SERVER_IDENT does not list the address we connected to")
            }
            ProtocolError::BadClientIdent(why) => write!(f, "bad CLIENT_IDENT: {why}"),
            ProtocolError::MissingFeatures { missing } => write!(
                f,
                "the peer lacks features {missing:#x} that our policy requires \
                 (features_required): an older release, or features it turned off"
            ),
            ProtocolError::FeaturesRefused { missing } => write!(
                f,
                "the peer requires features {missing:#x} that we do not offer \
                 (our policy's features_supported): a newer release, or features we turned off"
            ),
            ProtocolError::NotOffered { what, offered, got } => write!(
                f,
                "the server chose {what} {got}, which we did not offer (we offered {offered:?})"
            ),
            ProtocolError::Impersonation {
                authenticated,
                claim: Claim::HelloType(t),
            } => write!(
                f,
                "refused: the peer authenticated as {authenticated} but says HELLO as {t}"
            ),
            ProtocolError::Impersonation {
                authenticated,
                claim: Claim::IdentGid(gid),
            } => write!(
                f,
                "refused: the peer authenticated as {authenticated} but its CLIENT_IDENT names gid {gid}"
            ),
            ProtocolError::Impersonation {
                authenticated,
                claim: Claim::ConnectType(t),
            } => write!(
                f,
                "refused: the peer authenticated as {authenticated} but its CONNECT says host type {t}"
            ),
            ProtocolError::Impersonation {
                authenticated,
                claim: Claim::MessageSource(src),
            } => write!(
                f,
                "refused: the peer authenticated as {authenticated} but a message's header names {src} as its sender"
            ),
            ProtocolError::PeerGlobalSeq {
                shown,
                ours,
                pushed,
            } => write!(
                f,
                "the peer asks us past global_seq {shown} (RETRY_GLOBAL); ours is {ours} and it \
                 pushed ours {pushed} before, where a peer may push it at most {step} in all and \
                 never past {limit}: a peer replaying another messenger's numbers, or pushing ours \
                 to its end",
                step = crate::seq::PEER_GLOBAL_SEQ_STEP,
                limit = crate::seq::PEER_GLOBAL_SEQ_LIMIT,
            ),
            ProtocolError::NotSessionOwner { owner, newcomer } => write!(
                f,
                "refused: {newcomer} claims the address of a session that belongs to {owner}"
            ),
            ProtocolError::SequenceGap { expected, got } => {
                write!(f, "message sequence gap: expected {expected}, got {got}")
            }
            ProtocolError::OverBudget { len, budget } => write!(
                f,
                "the peer announced a message of {len} bytes, more than all we may hold ({budget})"
            ),
            ProtocolError::QueueOverflow { held, max } => write!(
                f,
                "{held} bytes held for a peer that does not read them (limit {max}): marked down"
            ),
            ProtocolError::HandshakeTooLong { max } => {
                write!(f, "the handshake before AUTH_DONE passed {max} bytes")
            }
            ProtocolError::TooManyAuthRounds { max } => {
                write!(f, "more than {max} auth rounds")
            }
            ProtocolError::CounterOverflow { counter } => {
                write!(f, "the peer took {counter} to its limit (it would overflow)")
            }
            ProtocolError::Timeout(what) => write!(f, "{what} timed out"),
            ProtocolError::PathStalled {
                since_ack,
                unanswered,
            } => write!(
                f,
                "the path to the peer is down: its host acknowledged nothing for {:.1} s \
                 ({unanswered} retransmissions unanswered); reconnecting once the path works",
                since_ack.as_secs_f64()
            ),
            ProtocolError::Transport { message, .. } => write!(f, "transport: {message}"),
            ProtocolError::ClosedInHandshake { phase, .. } => {
                write!(f, "the peer closed the connection in {phase}")?;
                f.write_str(match *phase {
                    "BANNER_CONNECTING" | "HELLO_CONNECTING" => {
                        " (before HELLO: not a msgr2 peer, or our banner's features are not its)"
                    }
                    "AUTH_CONNECTING" => ": it refused our authentication",
                    "AUTH_CONNECTING_SIGN" => {
                        ": our AUTH_SIGNATURE did not match (keys that differ, or a man in the middle)"
                    }
                    "SESSION_CONNECTING" => {
                        ": it refused our CLIENT_IDENT (an address it does not own, a session \
                         that belongs to another entity, or a gid that is not ours)"
                    }
                    "SESSION_RECONNECTING" => ": it refused our SESSION_RECONNECT",
                    _ => "",
                })
            }
            ProtocolError::Wait => {
                f.write_str("the peer said WAIT (its own connection to us wins the race)")
            }
            ProtocolError::Injected => f.write_str("injected fault"),
            ProtocolError::Msgr1(e) => write!(f, "{e}"),
            ProtocolError::ProtocolVersion { ours, theirs } => write!(
                f,
                "msgr1 protocol versions differ: ours {ours}, the peer's {theirs} (BADPROTOVER)"
            ),
            ProtocolError::MessageSignature { seq } => write!(
                f,
                "message {seq} fails its cephx signature check (altered, or signed with another key)"
            ),
            ProtocolError::RetryBackwards { ours, got } => write!(
                f,
                "RETRY_SESSION with connect_seq {got}, not past ours ({ours})"
            ),
        }
    }
}

impl std::error::Error for ProtocolError {}
