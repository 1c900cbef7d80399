//! What the messenger logs, through `tracing` (target `msgr`), at the
//! levels Ceph's `debug_ms` would show it (a program maps `debug_ms` N to
//! a level: 0 warnings, 1–4 info, 5–14 debug, 15–20 trace):
//! - each connection has a span (`conn`: its id, shard, and once known
//!   its peer's address and entity and its policy), entered whenever its
//!   task runs, so everything below carries them;
//! - info: every message received and queued (as Ceph's `debug_ms = 1`
//!   prints them), faults with their typed error, resets, refusals,
//!   sessions resumed after a fault;
//! - debug: state changes, handshake steps (socket connected, ident
//!   received, the acceptor's verdict), sessions established, reading
//!   paused for receive budget;
//! - warn: a dispatch batch slower than `SLOW_DISPATCH`.
//!
//! Nothing here runs on the per-message path unless its level is enabled:
//! a disabled event is one check of tracing's global level.

use std::time::Duration;

use msgr_encoding::EntityAddrvec;
use msgr_protocol::{ConnState, Policy};

/// A dispatch batch taking longer is logged as a warning.
pub(crate) const SLOW_DISPATCH: Duration = Duration::from_secs(1);

/// The span of connection `id`, starting on `shard`.
pub(crate) fn conn_span(id: u64, shard: usize) -> tracing::Span {
    tracing::debug_span!(
        target: "msgr",
        "conn",
        id,
        shard,
        peer = tracing::field::Empty,
        entity = tracing::field::Empty,
        policy = tracing::field::Empty,
    )
}

/// Records what is known of the peer in `span`.
pub(crate) fn record_peer(
    span: &tracing::Span,
    addrs: &EntityAddrvec,
    entity: Option<msgr_encoding::EntityName>,
    policy: Policy,
) {
    if span.is_disabled() {
        return;
    }
    span.record("peer", tracing::field::display(addrs));
    if let Some(e) = entity {
        span.record("entity", tracing::field::display(e));
    }
    if let Some(name) = msgr_protocol::PolicyName::of(&policy) {
        span.record("policy", name.as_str());
    }
}

pub(crate) fn state_change(from: Option<ConnState>, to: ConnState) {
    tracing::debug!(target: "msgr", ?from, ?to, "state");
}
