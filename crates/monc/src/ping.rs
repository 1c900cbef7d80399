//! Pinging a monitor (librados's `rados_ping_monitor`, MonClient's
//! `ping_monitor`): MPing to the monitor, which answers with an MPing
//! whose payload is a string, its health and `mon_status` as JSON
//! (Monitor::handle_ping). Sent on the session (librados opens a
//! connection of its own to the monitor named; the monitor answers the
//! same on either). Part of the sans-IO [`MonCore`].

use std::time::Duration;

use bytes::Bytes;
use msgr_encoding::{Decode, Decoder};
use msgr_messages::{MPing, TypedMessage};
use msgr_protocol::Message;
use msgr_transport::Transport;

use super::MonCore;
use crate::error::MonError;
use crate::{deadline_after, MonClient};

/// `CEPH_MSG_PING`.
pub const MSG_PING: u16 = 2;

/// What the session's pings brought.
#[derive(Debug, Default)]
pub(super) struct Pings {
    /// Pings sent and not answered yet.
    waiting: u64,
    /// The newest answer's payload.
    reply: Option<Bytes>,
}

impl MonCore {
    /// An MPing from the session: its payload is kept while a ping waits.
    pub(super) fn handle_ping(&mut self, m: &Message) {
        if self.pings.waiting > 0 {
            self.pings.reply = Some(m.front.clone());
        }
    }
}

/// The string an MPing reply carries (an encoded `std::string`; empty
/// payload: "").
pub fn ping_payload(front: &[u8]) -> Result<String, MonError> {
    if front.is_empty() {
        return Ok(String::new());
    }
    let mut d = Decoder::new(front);
    String::decode(&mut d).map_err(|e| MonError::BadReply(format!("MPing payload: {e}")))
}

impl<T: Transport> MonClient<T> {
    /// Pings the monitor of the session and returns what it answers (its
    /// health and status as JSON), waiting up to `timeout`.
    pub async fn ping(&self, timeout: Duration) -> Result<String, MonError> {
        let deadline = deadline_after(timeout)?;
        let conn = self.session().ok_or(MonError::NoMonitors)?;
        self.shared.with(|core| {
            core.pings.waiting = core.pings.waiting.saturating_add(1);
            core.pings.reply = None;
        });
        conn.send_nowait(MPing.to_message(conn.features()));
        let got = self
            .shared
            .wait_for(deadline, |core| match core.pings.reply.take() {
                Some(r) => Some(Ok(r)),
                None if core.is_shut_down() => Some(Err(MonError::Shutdown)),
                None => None,
            })
            .await;
        self.shared
            .with(|core| core.pings.waiting = core.pings.waiting.saturating_sub(1));
        match got {
            Some(Ok(front)) => ping_payload(&front),
            Some(Err(e)) => Err(e),
            None => Err(MonError::Timeout(format!(
                "no MPing reply from the monitor within {timeout:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use msgr_encoding::Encode;

    #[test]
    fn the_payload_is_a_string() {
        let mut out = Vec::new();
        "{\"health\": {}}".to_string().encode(&mut out);
        assert_eq!(ping_payload(&out).unwrap(), "{\"health\": {}}");
        assert_eq!(ping_payload(&[]).unwrap(), "");
        assert!(ping_payload(&[9, 0, 0, 0, b'x']).is_err());
    }
}
