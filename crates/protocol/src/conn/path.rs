//! Whether the path to the peer still works: a READY connection with
//! something outstanding that hears nothing from its peer asks its
//! transport what became of the bytes it sent (Timeouts::stall), and a
//! connection whose path failed is retried every Timeouts::probe rather
//! than after the doubling backoff, so that traffic flows again as soon as
//! a partition heals, however long it lasted.
//!
//! A lossy connection is closed by a stalled path, and its user dials
//! again: [`FailedPaths`] remembers the peer, so that the new connection
//! probes from its first connect.
//!
//! A path is not dead while another connection to the same host reads:
//! on a congested link (a shaped uplink shared by a thousand flows) some
//! flows lose retransmission after retransmission while the rest go on,
//! and TCP recovers them; a cut path (a pulled cable, a dead host)
//! silences every connection to the host. [`HostsHeard`] tells them
//! apart.
//!
//! TCP alone recovers slowly: each retransmission of unacknowledged data
//! waits twice as long as the one before, so after a partition of a
//! minute the next retry can come a minute after the path returns, and a
//! connect's SYN is retried at 1, 3, 7, 15 s. A peer that is slow to read
//! (its dispatch throttle full) still has its host acknowledge what
//! arrives (or answer zero-window probes): that is not a stall.

use std::collections::HashMap;
use std::net::IpAddr;

use super::*;
use crate::registry::PeerKey;

/// What a transport knows of the bytes a connection sent (for TCP, from
/// TCP_INFO).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathProgress {
    /// Bytes are in flight: sent and not yet acknowledged by the peer's
    /// host, or held by its zero window (and probed).
    pub in_flight: bool,
    /// Retransmissions (or zero-window probes) in a row that nothing
    /// acknowledged.
    pub unanswered: u8,
    /// Since the peer's host last acknowledged anything.
    pub since_ack: Duration,
    /// Since another connection to the peer's host last read anything
    /// ([`HostsHeard::since`]; `None`: none has, or the driver cannot
    /// tell).
    pub host_heard: Option<Duration>,
}

impl PathProgress {
    /// Unanswered retransmissions in a row that say the path is gone
    /// rather than lossy: at TCP's smallest retransmission timeout
    /// (200 ms, doubling) three take 1.4 s, and a path that delivers
    /// anything at all answers one of them.
    pub const STALLED_AFTER: u8 = 3;

    /// How many stall checks a lossy session waits before its path is
    /// dead: its fault drops what it sent (its user resends on a new
    /// connection), so a flow starved on a congested link, whose
    /// retransmissions are dropped several in a row and then get through,
    /// must not be taken for a cut one (BENCHMARKS.md, "1000 connections
    /// on 1 Gbit/s"). A lossless session's fault loses nothing: it resumes
    /// on a new socket after one check.
    pub const LOSSY_CHECKS: u32 = 3;

    /// Whether the path is dead after `silence` (a multiple of
    /// Timeouts::stall): bytes in flight (with none, the retransmissions
    /// counted are of bytes acknowledged since, and a keepalive tells
    /// whether the path still works), nothing acknowledged through
    /// [`Self::STALLED_AFTER`] retransmissions, and for most of `silence`
    /// (the first check comes `stall` after the last bytes we read; the
    /// kernel's clock of the acknowledgement that came with them runs a
    /// little ahead of ours, so half a stall is allowed), while no other
    /// connection to the host read anything within `stall` (then the link
    /// is congested, not cut, and TCP's retransmissions get through in
    /// time).
    pub fn stalled(&self, stall: Duration, silence: Duration) -> bool {
        self.in_flight
            && self.unanswered >= Self::STALLED_AFTER
            && self.since_ack >= silence.saturating_sub(stall.div_f64(2.0))
            && self.host_heard.is_none_or(|d| d >= stall)
    }
}

impl Conn {
    /// Whether the connection waits on its peer: messages sent that it
    /// has not acknowledged, or queued that it has not taken, or (lossy,
    /// where nothing is acknowledged) written with nothing read since.
    /// (Bytes the socket has not taken yet are not counted by themselves:
    /// on a dead path, TCP holds earlier bytes in flight too; on a working
    /// one, an acknowledgement of ours waiting to be written waits on
    /// nobody.)
    pub(crate) fn outstanding(&self) -> bool {
        self.owed() || self.session.queued().0 > 0
    }

    /// Whether the peer owes us something: acknowledgements of messages
    /// sent, or a lossy connector's answer to what it wrote.
    fn owed(&self) -> bool {
        self.session.unacked() > 0 || self.awaiting_answer
    }

    /// The peer's host, as the registry keys the peer
    /// ([`HostsHeard`]'s key).
    pub fn peer_host(&self) -> Option<IpAddr> {
        PeerKey::of(&self.peer().addrs).map(|k| k.addr.ip())
    }

    /// The path to this peer failed recently (for another connection to
    /// it, [`FailedPaths::recent`]): connects are bounded by
    /// Timeouts::probe from the first, the one already asked for too.
    pub fn start_probing(&mut self) {
        self.probing = true;
        let probe = self.config.timeouts.probe;
        for e in self.events.iter_mut() {
            if let Event::Connect { timeout, .. } = e {
                *timeout = (*timeout).min(probe);
            }
        }
    }

    /// When a READY connection with something outstanding, silent since
    /// `last_active` (or since its last check), has its path checked.
    pub(crate) fn path_deadline(&self) -> Option<Instant> {
        if !matches!(self.state, State::Ready) || !self.outstanding() {
            return None;
        }
        let since = self
            .path_checked
            .map_or(self.last_active, |c| c.max(self.last_active));
        Some(later(since, self.config.timeouts.stall))
    }

    /// The path check is due: ask the driver what its transport knows.
    pub(crate) fn check_path(&mut self, now: Instant) {
        self.path_checked = Some(now);
        if let Some(link) = self.link_id() {
            self.events.push_back(Event::CheckPath { link });
        }
    }

    /// What the transport knows of link `link`'s path, after
    /// [`Event::CheckPath`] (`None`: it cannot tell, as in-memory pipes).
    /// A stalled path faults the connection (its policy decides what
    /// follows: a lossless session resumes on a new socket). A path with
    /// nothing in flight while the peer owes us acknowledgements or an
    /// answer gets a keepalive (stamped `stamp`), so that the next check
    /// sees whether the peer's host still answers.
    pub fn handle_path(
        &mut self,
        link: LinkId,
        path: Option<PathProgress>,
        stamp: UTime,
        now: Instant,
    ) {
        if self.link_id() != Some(link) || !matches!(self.state, State::Ready) {
            return;
        }
        let Some(p) = path else { return };
        let stall = self.config.timeouts.stall;
        let silence = match self.peer.policy.lossy {
            true => stall.saturating_mul(PathProgress::LOSSY_CHECKS),
            false => stall,
        };
        if p.stalled(stall, silence) {
            let e = ProtocolError::PathStalled {
                since_ack: p.since_ack,
                unanswered: p.unanswered,
            };
            return self.fault(e, now);
        }
        if !p.in_flight && self.owed() && self.session.keepalive_pending.is_none() {
            self.send_keepalive(stamp, now);
        }
    }

    /// The wait before the next connect after a failed path (a connect
    /// that timed out, an unreachable network or host, a stalled path):
    /// attempts start once every Timeouts::probe, not after the doubling
    /// `backoff` a refusing peer gets.
    pub(crate) fn path_backoff(&self, backoff: Duration, now: Instant) -> Duration {
        // A handshake that failed on the path has used its time already.
        let since = match self.state {
            State::NeedSocket { since } => now.saturating_duration_since(since),
            _ => Duration::MAX,
        };
        backoff.min(self.config.timeouts.probe.saturating_sub(since))
    }
}

/// Peers whose connection failed on its path, recently: a user that dials
/// one again (a lossy client after the reset) gets a connection that
/// probes from its first connect ([`Conn::start_probing`]) instead of
/// waiting out a whole connect timeout on a path that may have healed.
/// Noted at the fault, before the reset that makes the user dial again;
/// forgotten when a connection to the peer is established. Bounded: the
/// oldest is forgotten first.
#[derive(Debug, Default)]
pub struct FailedPaths {
    recent: VecDeque<(PeerKey, Instant)>,
}

impl FailedPaths {
    /// Peers remembered at most.
    pub const CAPACITY: usize = 64;
    /// How long a failed path is remembered: a peer dialled again later
    /// gets the whole connect timeout.
    pub const REMEMBERED: Duration = Duration::from_secs(60);

    /// The path to `key` failed at `now`.
    pub fn note(&mut self, key: PeerKey, now: Instant) {
        self.forget(&key);
        if self.recent.len() >= Self::CAPACITY {
            self.recent.pop_front();
        }
        self.recent.push_back((key, now));
    }

    /// A connection to `key` was established.
    pub fn forget(&mut self, key: &PeerKey) {
        self.recent.retain(|(k, _)| k != key);
    }

    /// Whether the path to `key` failed within [`Self::REMEMBERED`].
    pub fn recent(&self, key: &PeerKey, now: Instant) -> bool {
        self.recent
            .iter()
            .any(|(k, t)| k == key && now.saturating_duration_since(*t) < Self::REMEMBERED)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.recent.is_empty()
    }
}

/// When connections last read from each peer host: the evidence that a
/// silent connection's host is reachable ([`PathProgress::host_heard`]).
/// A driver notes a connection's reads at most every `stall / 4`
/// ([`Self::NOTE_EVERY`]), so that a busy host costs one entry's update a
/// few times a second, not one per message. Bounded: when it is full,
/// hosts not heard for a while are forgotten, and a new host is not noted
/// until one is (a host missing here only loses the evidence: its
/// stalled paths fail as they would without it).
#[derive(Debug, Default)]
pub struct HostsHeard {
    heard: HashMap<IpAddr, Instant>,
    /// When full, the last time stale hosts were looked for.
    pruned: Option<Instant>,
}

impl HostsHeard {
    /// Hosts remembered at most.
    pub const CAPACITY: usize = 4096;
    /// Hosts not heard for this long are forgotten when the table is
    /// full.
    pub const FORGOTTEN: Duration = Duration::from_secs(30);
    /// How often one connection's reads are noted: a fraction of `stall`,
    /// so that the evidence is at most that old.
    pub const NOTE_EVERY: u32 = 4;

    /// How often a connection notes its reads, for Timeouts::stall
    /// `stall`.
    pub fn note_every(stall: Duration) -> Duration {
        stall.checked_div(Self::NOTE_EVERY).unwrap_or(stall)
    }

    /// A connection to `host` read something at `now`.
    pub fn note(&mut self, host: IpAddr, now: Instant) {
        if let Some(t) = self.heard.get_mut(&host) {
            *t = (*t).max(now);
            return;
        }
        if self.heard.len() >= Self::CAPACITY {
            // At most once a second: a full table of live hosts would
            // otherwise be scanned for every new one.
            if self
                .pruned
                .is_some_and(|p| now.saturating_duration_since(p) < Duration::from_secs(1))
            {
                return;
            }
            self.pruned = Some(now);
            self.heard
                .retain(|_, t| now.saturating_duration_since(*t) < Self::FORGOTTEN);
            if self.heard.len() >= Self::CAPACITY {
                return;
            }
        }
        self.heard.insert(host, now);
    }

    /// Since a connection to `host` last read anything, if one did.
    pub fn since(&self, host: IpAddr, now: Instant) -> Option<Duration> {
        self.heard
            .get(&host)
            .map(|t| now.saturating_duration_since(*t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_heard_stays_bounded_and_forgets_the_stale_first() {
        let start = Instant::now();
        let mut h = HostsHeard::default();
        let host = |i: usize| IpAddr::from([10, (i >> 16) as u8, (i >> 8) as u8, i as u8]);
        for i in 0..HostsHeard::CAPACITY {
            h.note(host(i), start);
        }
        // Full of live hosts: a new one is not noted.
        let later = start + Duration::from_secs(1);
        h.note(host(HostsHeard::CAPACITY), later);
        assert_eq!(h.since(host(HostsHeard::CAPACITY), later), None);
        assert_eq!(h.heard.len(), HostsHeard::CAPACITY);
        // Once they are stale, it is, and they are gone.
        let stale = start + HostsHeard::FORGOTTEN + Duration::from_secs(1);
        h.note(host(0), stale);
        h.note(host(HostsHeard::CAPACITY), stale);
        assert_eq!(
            h.since(host(HostsHeard::CAPACITY), stale),
            Some(Duration::ZERO)
        );
        assert_eq!(h.since(host(1), stale), None);
        assert_eq!(h.heard.len(), 2);
    }

    #[test]
    fn a_stalled_path_to_a_host_heard_from_is_congested_not_dead() {
        let stall = Duration::from_secs(2);
        let mut p = PathProgress {
            in_flight: true,
            unanswered: PathProgress::STALLED_AFTER,
            since_ack: stall,
            host_heard: None,
        };
        assert!(p.stalled(stall, stall));
        p.host_heard = Some(stall / 2);
        assert!(!p.stalled(stall, stall));
        p.host_heard = Some(stall);
        assert!(p.stalled(stall, stall));
        // Nothing in flight: the retransmissions counted were answered.
        p.in_flight = false;
        assert!(!p.stalled(stall, stall));
        // A lossy session's longer silence.
        p.in_flight = true;
        assert!(!p.stalled(stall, stall * 3));
        p.since_ack = stall * 3;
        assert!(p.stalled(stall, stall * 3));
    }
}
