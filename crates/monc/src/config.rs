//! What a monitor client is set up with: the monitors, how it
//! authenticates, the hunt's pace and the subscriptions.

use std::sync::Arc;
use std::time::Duration;

use msgr_auth::cephx::CephxClient;
use msgr_encoding::{EntityAddrvec, EntityType};

/// How the client authenticates.
#[derive(Clone)]
pub enum MonAuth {
    /// Auth none, offering these modes (crc only makes sense).
    None,
    /// cephx, with the tickets kept in this client.
    Cephx(Arc<CephxClient>),
}

/// What a monitor client is set up with.
#[derive(Clone)]
pub struct MonClientConfig {
    /// The monitors to hunt among (mon_host), one address vector each.
    pub mons: Vec<EntityAddrvec>,
    /// How the client authenticates to the monitors.
    pub auth: MonAuth,
    /// `mon_client_hunt_parallel`.
    pub hunt_parallel: usize,
    /// `mon_client_hunt_interval`.
    pub hunt_interval: Duration,
    /// Give up connecting after this long.
    pub connect_timeout: Duration,
    /// Offer msgr2.1 (false: msgr2.0 only).
    pub rev1: bool,
    /// Sent in MMonSubscribe (the mon shows it as the client's host).
    pub hostname: String,
    /// Other maps to subscribe to (`osdmap`, `mgrmap`), besides monmap and config.
    pub subscribe: Vec<(String, u8)>,
    /// With cephx: fall back to auth none when a monitor allows only that
    /// (`auth_client_required = cephx, none`).
    pub none_fallback: bool,
    /// Dial monitors' msgr2 addresses (ms_bind_msgr2); false: their msgr1
    /// ones, authenticating with MAuth messages.
    pub msgr2: bool,
    /// Who we say we are to a monitor over msgr1 with auth none (cephx
    /// names its client's entity).
    pub name: msgr_encoding::AuthName,
    /// The messenger's timers (ceph.conf's ms_* options: see
    /// [`crate::Identity::timeouts`]).
    pub timeouts: msgr_protocol::Timeouts,
}

impl MonClientConfig {
    /// Settings for `mons` with Ceph's defaults for the rest.
    pub fn new(mons: Vec<EntityAddrvec>, auth: MonAuth) -> MonClientConfig {
        MonClientConfig {
            mons,
            auth,
            hunt_parallel: 3,
            hunt_interval: Duration::from_secs(3),
            connect_timeout: Duration::from_secs(30),
            rev1: true,
            hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default(),
            subscribe: Vec::new(),
            none_fallback: false,
            msgr2: true,
            name: msgr_encoding::AuthName::new(EntityType::CLIENT, "admin"),
            timeouts: msgr_protocol::Timeouts::default(),
        }
    }
}
