//! Connection policies (src/msg/Policy.h): how a connection to a given
//! kind of peer behaves on faults, races and resets.

use std::fmt;
use std::str::FromStr;

use crate::features;

/// Byte and message limits of a policy's throttlers (`throttler_bytes`,
/// `throttler_messages`): how much received but not yet released data
/// connections of this policy may hold before they stop reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThrottleLimits {
    /// The most received messages held (`throttler_messages`).
    pub messages: u64,
    /// The most received bytes held (`throttler_bytes`).
    pub bytes: u64,
}

/// Ceph's `Messenger::Policy`.
///
/// ```
/// use msgr_encoding::EntityType;
/// use msgr_protocol::{Policy, PolicyName, PolicySet};
///
/// // An OSD's: lossless to its peers, stateless to clients, whose
/// // received messages may hold 100 MiB before it stops reading them.
/// let policies = PolicySet::new(Policy::stateless_server().with_throttle(u64::MAX, 100 << 20))
///     .with(EntityType::OSD, Policy::lossless_peer())
///     .with(EntityType::MON, Policy::lossy_client());
/// assert!(policies.get(EntityType::CLIENT).server);
/// assert!(!policies.get(EntityType::OSD).lossy);
/// assert_eq!(PolicyName::of(&policies.get(EntityType::MON)), Some(PolicyName::LossyClient));
/// assert_eq!("lossless-peer".parse::<PolicyName>().unwrap().policy(), Policy::lossless_peer());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Faults close the connection; messages may be lost, never duplicated
    /// or reordered; no acks, no replay, no reconnect.
    pub lossy: bool,
    /// Never initiate a (re)connection; wait in standby for the peer.
    pub server: bool,
    /// After a fault with nothing to send, wait for new messages instead
    /// of reconnecting at once.
    pub standby: bool,
    /// Detect a peer that lost its session, and reset ours to match
    /// (ms_handle_remote_reset).
    pub resetcheck: bool,
    /// A lossy server registers its clients' connections (so a new one from
    /// the same address replaces the old), instead of keeping them anonymous.
    pub register_lossy_clients: bool,
    /// Features we offer in our ident.
    pub features_supported: u64,
    /// Features the peer must offer (IDENT_MISSING_FEATURES otherwise).
    pub features_required: u64,
    /// Receive throttle for connections of this policy; `None`: unlimited
    /// by policy (the messenger's dispatch throttle still applies).
    pub throttle: Option<ThrottleLimits>,
}

/// The seven named policies, as spelled on our command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PolicyName {
    /// [`Policy::lossy_client`].
    LossyClient,
    /// [`Policy::lossless_client`].
    LosslessClient,
    /// [`Policy::stateless_server`].
    StatelessServer,
    /// [`Policy::stateless_registered_server`].
    StatelessRegisteredServer,
    /// [`Policy::stateful_server`].
    StatefulServer,
    /// [`Policy::lossless_peer`].
    LosslessPeer,
    /// [`Policy::lossless_peer_reuse`].
    LosslessPeerReuse,
}

impl PolicyName {
    /// Every named policy, in the order the CLI lists them.
    pub const ALL: [PolicyName; 7] = [
        PolicyName::LossyClient,
        PolicyName::LosslessClient,
        PolicyName::StatelessServer,
        PolicyName::StatelessRegisteredServer,
        PolicyName::StatefulServer,
        PolicyName::LosslessPeer,
        PolicyName::LosslessPeerReuse,
    ];

    /// The name as spelled on our command line (`lossy-client`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyName::LossyClient => "lossy-client",
            PolicyName::LosslessClient => "lossless-client",
            PolicyName::StatelessServer => "stateless-server",
            PolicyName::StatelessRegisteredServer => "stateless-registered-server",
            PolicyName::StatefulServer => "stateful-server",
            PolicyName::LosslessPeer => "lossless-peer",
            PolicyName::LosslessPeerReuse => "lossless-peer-reuse",
        }
    }

    /// The policy this name stands for, with default features and no
    /// throttle.
    pub fn policy(self) -> Policy {
        match self {
            PolicyName::LossyClient => Policy::lossy_client(),
            PolicyName::LosslessClient => Policy::lossless_client(),
            PolicyName::StatelessServer => Policy::stateless_server(),
            PolicyName::StatelessRegisteredServer => Policy::stateless_registered_server(),
            PolicyName::StatefulServer => Policy::stateful_server(),
            PolicyName::LosslessPeer => Policy::lossless_peer(),
            PolicyName::LosslessPeerReuse => Policy::lossless_peer_reuse(),
        }
    }
}

impl fmt::Display for PolicyName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PolicyName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let norm = s.replace('_', "-");
        PolicyName::ALL
            .into_iter()
            .find(|p| p.as_str() == norm)
            .ok_or_else(|| {
                let all: Vec<_> = PolicyName::ALL.iter().map(|p| p.as_str()).collect();
                format!("unknown policy {s:?}; one of: {}", all.join(", "))
            })
    }
}

impl PolicyName {
    /// Which of Ceph's policies `p` is, by its flags (throttles and
    /// features aside).
    pub fn of(p: &Policy) -> Option<PolicyName> {
        let flags = |q: &Policy| {
            (
                q.lossy,
                q.server,
                q.standby,
                q.resetcheck,
                q.register_lossy_clients,
            )
        };
        PolicyName::ALL
            .into_iter()
            .find(|n| flags(&n.policy()) == flags(p))
    }
}

impl Policy {
    const fn base(
        lossy: bool,
        server: bool,
        standby: bool,
        resetcheck: bool,
        register: bool,
    ) -> Policy {
        Policy {
            lossy,
            server,
            standby,
            resetcheck,
            register_lossy_clients: register,
            features_supported: features::SUPPORTED_DEFAULT,
            features_required: 0,
            throttle: None,
        }
    }

    /// A lossless server: keeps its clients' sessions across faults (in
    /// standby, never reconnecting itself) and resets them when a client lost
    /// its own (Ceph's MDS to its clients).
    pub const fn stateful_server() -> Policy {
        Policy::base(false, true, true, true, true)
    }
    /// A lossy server that registers its clients' connections, so that a new
    /// one from the same address replaces the old.
    pub const fn stateless_registered_server() -> Policy {
        Policy::base(true, true, false, false, true)
    }
    /// A lossy server with anonymous connections: a fault ends the session
    /// and the client reconnects.
    pub const fn stateless_server() -> Policy {
        Policy::base(true, true, false, false, false)
    }
    /// Lossless between peers that both dial: sessions survive faults, in
    /// standby while there is nothing to send, with no remote-reset check.
    pub const fn lossless_peer() -> Policy {
        Policy::base(false, false, true, false, true)
    }
    /// [`Policy::lossless_peer`] with the remote-reset check: a peer that lost
    /// its session has ours reset to match.
    pub const fn lossless_peer_reuse() -> Policy {
        Policy::base(false, false, true, true, true)
    }
    /// A lossy client: a fault ends the session and the user decides what to
    /// resend (Ceph's clients to monitors and OSDs).
    pub const fn lossy_client() -> Policy {
        Policy::base(true, false, false, false, true)
    }
    /// A lossless client: reconnects at once after a fault and replays what
    /// the server has not acknowledged, resetting when the server lost the
    /// session (Ceph's clients to MDSs).
    pub const fn lossless_client() -> Policy {
        Policy::base(false, false, false, true, true)
    }

    /// The policy with a receive throttle of `messages` messages and `bytes`
    /// bytes ([`Policy::throttle`]).
    pub fn with_throttle(mut self, messages: u64, bytes: u64) -> Policy {
        self.throttle = Some(ThrottleLimits { messages, bytes });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_match_policy_h() {
        let p = |n: &str| n.parse::<PolicyName>().unwrap().policy();
        let flags = |p: Policy| {
            (
                p.lossy,
                p.server,
                p.standby,
                p.resetcheck,
                p.register_lossy_clients,
            )
        };
        assert_eq!(flags(p("stateful-server")), (false, true, true, true, true));
        assert_eq!(
            flags(p("stateless-registered-server")),
            (true, true, false, false, true)
        );
        assert_eq!(
            flags(p("stateless_server")),
            (true, true, false, false, false)
        );
        assert_eq!(flags(p("lossless-peer")), (false, false, true, false, true));
        assert_eq!(
            flags(p("lossless-peer-reuse")),
            (false, false, true, true, true)
        );
        assert_eq!(flags(p("lossy-client")), (true, false, false, false, true));
        assert_eq!(
            flags(p("lossless-client")),
            (false, false, false, true, true)
        );
        assert!("lossy".parse::<PolicyName>().is_err());
    }
}
