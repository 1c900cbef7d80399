//! What a messenger tells each of its connections: who we are, how we
//! authenticate, which policy applies to which peer, timeouts, limits and
//! compression (Ceph's ms_* options).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use msgr_auth::AuthProvider;
use msgr_encoding::{EntityName, EntityType};
use msgr_frames::banner::{features, Banner};
use msgr_frames::compression::Algorithm;
use msgr_frames::FrameLimits;

use crate::policy::Policy;

/// Timers of a connection (ms_connection_ready_timeout,
/// ms_connection_idle_timeout, ms_initial_backoff, ms_max_backoff, and some
/// of our own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// A handshake that is not READY after this long faults.
    pub connect: Duration,
    /// A READY connection with no traffic either way for this long faults.
    pub idle: Duration,
    /// First reconnect delay after a fault; doubles up to `backoff_max`.
    pub backoff_initial: Duration,
    /// The longest reconnect delay the doubling reaches (ms_max_backoff).
    pub backoff_max: Duration,
    /// A frame must arrive within this long of the one before it (or of
    /// its first byte, or of the end of a wait for receive budget): a peer
    /// trickling a large frame a byte at a time is cut off rather than
    /// holding its buffer and budget. Ceph has no such limit.
    pub frame: Duration,
    /// A STANDBY session (a server's, whose client went away; a lossless
    /// client's with nothing to send) is forgotten after this long, with a
    /// reset: sessions of peers that vanished do not pile up. Ceph keeps
    /// them until the peer comes back or is marked down.
    pub standby: Duration,
    /// A READY connection with no traffic for this long lets go of the
    /// capacity its queues grew to (they grow again when traffic resumes),
    /// so that idle connections stay small.
    pub trim: Duration,
    /// A READY connection that stopped reading its peer because it holds
    /// `QueueLimits::soft` the peer has not taken, and whose peer then
    /// takes none of it for this long, is marked down (with a reset): a
    /// peer that sends and never reads holds its share of our memory no
    /// longer than this. Ceph has no such limit.
    pub unread: Duration,
    /// A READY connection with something outstanding (messages the peer
    /// has not acknowledged, bytes not yet written) that has heard nothing
    /// from its peer for this long asks its transport whether the path
    /// still works: a connection whose bytes the peer's host has
    /// acknowledged nothing of for this long, through several
    /// retransmissions, is a dead path, and faults (a lossless session
    /// resumes on a new socket; TCP's own retransmission backoff would wait
    /// up to minutes after the path heals). A peer that acknowledges at the
    /// TCP level but does not read (its throttle is full) is alive and
    /// kept. Ceph has no such check: it waits on TCP.
    pub stall: Duration,
    /// How often a peer whose path failed (a connect that timed out, an
    /// unreachable network or host, a stalled path) is tried, each connect
    /// bounded by it (a SYN the path lost is sent again at once, not after
    /// TCP's doubling 1, 2, 4 s):
    /// a path that heals carries traffic again within about this long,
    /// however long it was down. Must exceed the path's round trip. A peer
    /// that refuses (its host is up, its daemon is not) is retried with the
    /// backoff above, as Ceph does.
    pub probe: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            idle: Duration::from_secs(900),
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_secs(15),
            frame: Duration::from_secs(60),
            standby: Duration::from_secs(900),
            trim: Duration::from_secs(1),
            unread: Duration::from_secs(60),
            stall: Duration::from_secs(2),
            probe: Duration::from_secs(1),
        }
    }
}

/// The instant `d` after `now`: a duration too long for the clock (a
/// timeout configured as "forever") is a year.
pub fn later(now: Instant, d: Duration) -> Instant {
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    now.checked_add(d)
        .or_else(|| now.checked_add(YEAR))
        .unwrap_or(now)
}

/// How much a connection holds for a peer that does not read: unsent
/// messages, messages sent and not yet acknowledged, bytes framed and not
/// yet written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    /// Past this the connection stops reading from the peer (back
    /// pressure: a peer that sends requests and never reads our replies
    /// gets no more of them answered), and `Connection::send` waits.
    pub soft: usize,
    /// Past this the connection is marked down (a reset): what it would
    /// take to hold more is refused, `send_nowait`'s included.
    pub hard: usize,
}

impl Default for QueueLimits {
    fn default() -> Self {
        QueueLimits {
            soft: 64 << 20,
            hard: 128 << 20,
        }
    }
}

/// On-wire compression settings (ms_osd_compress_mode,
/// ms_osd_compression_algorithm, ms_osd_compress_min_size,
/// ms_compress_secure). As in Ceph, compression is only considered with
/// peers that are OSDs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompressionConfig {
    /// `force`: ask for (or grant) compression with OSD peers.
    pub force: bool,
    /// Acceptable algorithms, preferred first.
    pub algorithms: Vec<Algorithm>,
    /// Messages smaller than this many bytes go uncompressed
    /// (ms_osd_compress_min_size).
    pub min_size: usize,
    /// Allow compression in secure mode too.
    pub secure: bool,
    /// Compress with peers of every type, not only OSDs (Ceph applies its
    /// `ms_osd_compress_mode` to OSD peers only; a test server may want to
    /// grant what any client asks).
    pub all_peers: bool,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig {
            force: false,
            algorithms: vec![Algorithm::Snappy],
            min_size: 1024,
            secure: false,
            all_peers: false,
        }
    }
}

impl CompressionConfig {
    /// Whether to compress with a peer of `peer_type` (CompressorRegistry::
    /// get_mode).
    pub fn wanted(&self, peer_type: EntityType, secure: bool) -> bool {
        self.force && (self.all_peers || peer_type == EntityType::OSD) && (!secure || self.secure)
    }

    /// The server's pick: the first of the client's methods we allow
    /// (CompressorRegistry::pick_method).
    pub fn pick(&self, client_methods: &[u32]) -> Option<Algorithm> {
        client_methods
            .iter()
            .filter_map(|&m| Algorithm::from_wire(m))
            .find(|a| *a != Algorithm::None && self.algorithms.contains(a))
    }
}

/// The messenger-wide global sequence (AsyncMessenger::get_global_seq):
/// strictly increasing, and raised past what a peer shows us within
/// bounds ([`GlobalSeq::raise`]), so that no peer can push it past the 32
/// bits msgr1 carries, nor walk it there.
#[derive(Debug, Default)]
pub struct GlobalSeq(AtomicU64);

impl GlobalSeq {
    /// The largest global_seq a peer may make us exceed: the next value
    /// must fit msgr1's 32-bit field. msgr2's frames carry 64 bits, but
    /// Ceph's messengers count in 32 (get_global_seq takes and returns a
    /// uint32_t), so no Ceph peer shows more; one limit for both protocols
    /// keeps an msgr2 peer from breaking our msgr1 connections.
    pub const PEER_LIMIT: u64 = crate::seq::PEER_GLOBAL_SEQ_LIMIT;
    /// How far past ours one peer may push the counter over a
    /// connection's life. A RETRY_GLOBAL shows our own global_seq as the
    /// peer last saw it, so an honest one is behind ours, or ahead only by
    /// what a previous incarnation at the same address and nonce used;
    /// bounding each peer keeps any one from walking the counter to its
    /// limit (it would take 65536 peers we chose to dial).
    pub const PEER_STEP: u64 = crate::seq::PEER_GLOBAL_SEQ_STEP;

    /// The next value.
    pub fn next(&self) -> Result<u64, crate::ProtocolError> {
        self.bump(0)
    }

    /// The next value past `shown`, a value a peer asked us to exceed
    /// (RETRY_GLOBAL); `pushed` is how far this peer has pushed ours
    /// before. A value past [`GlobalSeq::PEER_LIMIT`], or one that would
    /// take the peer's pushes past [`GlobalSeq::PEER_STEP`], is that
    /// connection's fault: the counter is left alone.
    pub fn raise(&self, shown: u64, pushed: &mut u32) -> Result<u64, crate::ProtocolError> {
        let ours = self.0.load(Ordering::Relaxed);
        let step = shown.saturating_sub(ours);
        let room = Self::PEER_STEP.saturating_sub(u64::from(*pushed));
        if shown > Self::PEER_LIMIT || step > room {
            return Err(crate::ProtocolError::PeerGlobalSeq {
                shown,
                ours,
                pushed: *pushed,
            });
        }
        // At most PEER_STEP in all: it fits.
        *pushed = u32::try_from(u64::from(*pushed).saturating_add(step)).unwrap_or(u32::MAX);
        self.bump(shown)
    }

    /// The next value, greater than `at_least`.
    fn bump(&self, at_least: u64) -> Result<u64, crate::ProtocolError> {
        let mut cur = self.0.load(Ordering::Relaxed);
        loop {
            let next =
                cur.max(at_least)
                    .checked_add(1)
                    .ok_or(crate::ProtocolError::CounterOverflow {
                        counter: "global_seq",
                    })?;
            match self
                .0
                .compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return Ok(next),
                Err(seen) => cur = seen,
            }
        }
    }
}

/// Policies by peer type, with a default (Messenger::set_policy /
/// set_default_policy).
#[derive(Debug, Clone)]
pub struct PolicySet {
    /// The policy of peers whose type has none of its own.
    pub default: Policy,
    /// Each peer type's own policy.
    pub by_type: HashMap<EntityType, Policy>,
}

impl PolicySet {
    /// A set where every peer type takes `default`.
    pub fn new(default: Policy) -> Self {
        PolicySet {
            default,
            by_type: HashMap::new(),
        }
    }

    /// The set with peers of `peer_type` taking `policy` (builder style).
    pub fn with(mut self, peer_type: EntityType, policy: Policy) -> Self {
        self.by_type.insert(peer_type, policy);
        self
    }

    /// The policy of a peer of `peer_type`: its own, else the default.
    pub fn get(&self, peer_type: EntityType) -> Policy {
        self.by_type
            .get(&peer_type)
            .copied()
            .unwrap_or(self.default)
    }
}

/// The policies a messenger's connections take, changeable while it runs
/// (Messenger::set_policy). A connection takes its policy once, when it
/// learns its peer's type (at connect, or from the peer's HELLO or
/// connect message) and keeps it: as Ceph says of `set_policy`, a change
/// applies to connections made after it, not to those that exist. Read at
/// handshakes only, never per message.
#[derive(Debug, Clone)]
pub struct Policies(Arc<std::sync::RwLock<PolicySet>>);

impl Policies {
    /// Shared, changeable policies starting as `set`.
    pub fn new(set: PolicySet) -> Self {
        Policies(Arc::new(std::sync::RwLock::new(set)))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, PolicySet> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, PolicySet> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The policy a connection to a peer of `peer_type` takes now.
    pub fn get(&self, peer_type: EntityType) -> Policy {
        self.read().get(peer_type)
    }

    /// The policy of peers whose type has none of its own (and of an
    /// accepted connection before its peer names its type).
    pub fn default_policy(&self) -> Policy {
        self.read().default
    }

    /// Gives peers of `peer_type` their own policy.
    pub fn set(&self, peer_type: EntityType, policy: Policy) {
        self.write().by_type.insert(peer_type, policy);
    }

    /// Replaces the default policy.
    pub fn set_default(&self, policy: Policy) {
        self.write().default = policy;
    }

    /// The table as it is now.
    pub fn snapshot(&self) -> PolicySet {
        self.read().clone()
    }
}

/// The largest frame before a peer is authenticated (16 KiB: thirteen
/// times Ceph's largest).
pub const HANDSHAKE_FRAME_MAX: u32 = 16 << 10;

/// Everything a connection needs to know about its messenger.
#[derive(Clone)]
pub struct Config {
    /// Our entity name (type and id), as HELLO, CLIENT_IDENT and msgr1's
    /// CONNECT announce it.
    pub my_name: EntityName,
    /// The msgr2 features our banner announces (clear REVISION_1 to speak
    /// msgr2.0 only).
    pub banner: Banner,
    /// How we authenticate to peers and authenticate them (cephx, none, ...).
    pub auth: Arc<dyn AuthProvider>,
    /// The policy each peer type's connections take.
    pub policies: Policies,
    /// A connection's timers.
    pub timeouts: Timeouts,
    /// Caps on frames once a session is READY.
    pub frame_limits: FrameLimits,
    /// Caps on frames during the handshake (before the peer authenticated).
    pub handshake_limits: FrameLimits,
    /// The most a received message may hold: the receive budget it must
    /// take before its bytes are read (the messenger's dispatch throttle;
    /// a policy's throttle lowers it for its peers). A message announced
    /// larger is refused. None: frame limits only.
    pub receive_budget: Option<u64>,
    /// How much a connection may hold for a peer that does not read.
    pub queue_limits: QueueLimits,
    /// On-wire compression: when to ask for it, which algorithms.
    pub compression: CompressionConfig,
    /// Take our own IP from the peer's HELLO when we do not know it
    /// (ms_learn_addr_from_peer).
    pub learn_addr_from_peer: bool,
    /// Dial peers' msgr2 addresses (ms_bind_msgr2; false: msgr1 only, as
    /// a Ceph messenger bound without msgr2 drops them).
    pub msgr2: bool,
    /// msgr1: sign messages with the cephx session key and check the
    /// peer's (cephx_sign_messages; both sides must agree, as in Ceph).
    pub sign_messages: bool,
    /// msgr1: an acceptor requires MSG_AUTH (signatures) of every peer
    /// that authenticates with a keyed method, cephx
    /// (cephx_require_signatures).
    pub require_signatures: bool,
    /// msgr1: the cephx version a keyed peer's signatures must have
    /// (cephx_require_version, 2 as in Ceph). At 2, a peer that presents
    /// a cephx authorizer must offer MSG_AUTH and CEPHX_V2 (while we sign
    /// messages), so that an on-path attacker cannot strip either bit from
    /// the unauthenticated CONNECT to get unsigned or v1-signed messages;
    /// 1 lets such a peer choose.
    pub cephx_require_version: u32,
    /// The messenger-wide global_seq, shared by all its connections.
    pub global_seq: Arc<GlobalSeq>,
    /// Frame queued messages only while fewer than this many bytes wait to
    /// be written (the link's queue plus what the runtime holds, which it
    /// reports through [`crate::Conn::fill_output`]), so that each frame is
    /// built, and in secure mode encrypted, just before the socket takes
    /// it, while its bytes are still in cache. None: frame every message as
    /// it is sent.
    pub output_window: Option<usize>,
    /// Where session cookies come from: the system's random source
    /// (cookies name sessions; one guessed is a session resumed by
    /// whoever guessed it). Deterministic tests give a seeded one.
    pub random: Arc<dyn msgr_auth::Random>,
    /// Failover tests' breakpoints (crate::intercept).
    #[cfg(feature = "interceptor")]
    pub interceptor: Option<Arc<dyn crate::intercept::Interceptor>>,
}

impl Config {
    /// A session cookie: random and never zero (Ceph's are
    /// generate_random_number(1, 2^64-1)).
    pub(crate) fn new_cookie(&self) -> u64 {
        self.random.u64().max(1)
    }

    /// A configuration for `my_name` authenticating with `auth` under
    /// `policies`, everything else at its default: the msgr2 banner with
    /// all its features, the default timeouts, frame and queue limits, no
    /// compression, msgr1 messages signed (cephx version 2) but signatures
    /// not required of peers, no receive budget, the system's random source.
    pub fn new(my_name: EntityName, auth: Arc<dyn AuthProvider>, policies: PolicySet) -> Self {
        Config {
            my_name,
            banner: Banner::DEFAULT,
            auth,
            policies: Policies::new(policies),
            timeouts: Timeouts::default(),
            frame_limits: FrameLimits::default(),
            // Before the peer authenticated: Ceph's largest handshake
            // frame is a monitor's AUTH_DONE with its tickets, 1.2 KiB in
            // our captures of Ceph 16 and 20.
            handshake_limits: FrameLimits {
                max_segment_len: HANDSHAKE_FRAME_MAX,
                max_frame_len: HANDSHAKE_FRAME_MAX as u64,
                max_decompressed_len: HANDSHAKE_FRAME_MAX as usize,
            },
            receive_budget: None,
            queue_limits: QueueLimits::default(),
            compression: CompressionConfig::default(),
            learn_addr_from_peer: true,
            msgr2: true,
            sign_messages: true,
            require_signatures: false,
            cephx_require_version: 2,
            global_seq: Arc::new(GlobalSeq::default()),
            output_window: None,
            random: Arc::new(msgr_auth::SystemRandom),
            #[cfg(feature = "interceptor")]
            interceptor: None,
        }
    }

    /// Speak msgr2.0 only (do not announce REVISION_1).
    pub fn rev0_only(mut self) -> Self {
        self.banner.supported &= !features::REVISION_1;
        self
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("my_name", &self.my_name)
            .field("banner", &self.banner)
            .field("timeouts", &self.timeouts)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_seq_rises_past_what_it_is_shown() {
        let g = GlobalSeq::default();
        let mut pushed = 0;
        assert_eq!(g.next(), Ok(1));
        assert_eq!(g.next(), Ok(2));
        assert_eq!(g.raise(10, &mut pushed), Ok(11));
        assert_eq!(g.raise(3, &mut pushed), Ok(12));
        assert_eq!(pushed, 8);
        // One peer pushes it PEER_STEP ahead in all, and is refused
        // beyond, the counter left alone; another peer has its own room.
        let far = 12 + GlobalSeq::PEER_STEP - 8 + 1;
        let refused = Err(crate::ProtocolError::PeerGlobalSeq {
            shown: far,
            ours: 12,
            pushed: 8,
        });
        assert_eq!(g.raise(far, &mut pushed), refused);
        assert_eq!(g.raise(far - 1, &mut pushed), Ok(far), "within its room");
        assert_eq!(u64::from(pushed), GlobalSeq::PEER_STEP);
        assert!(g.raise(far + 1, &mut pushed).is_err());
        assert_eq!(g.raise(far, &mut pushed), Ok(far + 1), "behind ours");
        assert_eq!(g.raise(far + 5, &mut 0), Ok(far + 6));
    }

    /// A value whose successor does not fit msgr1's 32 bits (RETRY_GLOBAL
    /// u32::MAX) is that connection's fault, whatever room the peer has:
    /// the shared counter, which numbers every msgr1 CONNECT, is not
    /// touched.
    #[test]
    fn global_seq_stays_within_32_bits() {
        let g = GlobalSeq::default();
        g.bump(GlobalSeq::PEER_LIMIT - 10).unwrap();
        for shown in [u64::from(u32::MAX), u64::MAX] {
            assert!(g.raise(shown, &mut 0).is_err());
        }
        assert_eq!(g.next(), Ok(GlobalSeq::PEER_LIMIT - 8));
        assert_eq!(
            g.raise(GlobalSeq::PEER_LIMIT, &mut 0),
            Ok(u64::from(u32::MAX))
        );
    }

    #[test]
    fn compression_only_towards_osds() {
        let c = CompressionConfig {
            force: true,
            algorithms: vec![Algorithm::Zstd, Algorithm::Snappy],
            ..Default::default()
        };
        assert!(c.wanted(EntityType::OSD, false));
        assert!(!c.wanted(EntityType::CLIENT, false));
        assert!(!c.wanted(EntityType::OSD, true));
        assert_eq!(
            c.pick(&[1, 3]),
            Some(Algorithm::Snappy),
            "the client's order wins"
        );
        assert_eq!(c.pick(&[2]), None);
        let any = CompressionConfig {
            force: true,
            all_peers: true,
            ..Default::default()
        };
        assert!(any.wanted(EntityType::CLIENT, false));
    }

    /// Cookies come from the system's random source unless a test seeds
    /// them: two messengers built alike draw different ones.
    #[test]
    fn cookies_are_random_unless_seeded() {
        let config = || {
            Config::new(
                "osd.0".parse().unwrap(),
                Arc::new(msgr_auth::NoneProvider),
                PolicySet::new(crate::Policy::lossless_peer()),
            )
        };
        let (a, b) = (config(), config());
        let draws = |c: &Config| (0..4).map(|_| c.random.u64()).collect::<Vec<_>>();
        assert_ne!(draws(&a), draws(&b));
        let seeded = |seed| Config {
            random: Arc::new(msgr_auth::SeededRandom::new(seed)),
            ..config()
        };
        assert_eq!(draws(&seeded(7)), draws(&seeded(7)));
    }
}
