//! `msgr mon mgr JSON` and `msgr mon tell mgr.NAME JSON`: a command to the
//! active mgr, as `ceph` sends its mgr commands (`ceph balancer status`)
//! and `ceph tell mgr.x` its tells, through the RADOS client's
//! `mgr_command` / `mgr_command_target` (librados's `rados_mgr_command`).
//! Printed as `msgr mon command` prints a monitor's reply: the output on
//! stdout, the status on stderr, the errno as the exit code.

use bytes::Bytes;
use msgr_rados::{Limits, Rados};

use crate::identity::{ClusterOpts, Identity};
use crate::json;
use crate::mon::MonOutput;

/// Sends `cmd` (JSON) to the mgr named `target`, or to the active mgr.
pub async fn run(opts: &ClusterOpts, target: Option<&str>, cmd: &str) -> Result<MonOutput, String> {
    json::parse(cmd).map_err(|e| format!("the command is not JSON: {e}"))?;
    let name = match target {
        None => None,
        Some(t) => Some(
            t.strip_prefix("mgr.")
                .ok_or_else(|| format!("{t}: expected mgr.NAME"))?,
        ),
    };
    let id = Identity::load(opts)?;
    let rados = Rados::connect(&id, Limits::default())
        .await
        .map_err(|e| e.to_string())?;
    let r = match name {
        None => rados.mgr_command(cmd, Bytes::new()).await,
        Some(n) => rados.mgr_command_target(n, cmd, Bytes::new()).await,
    };
    rados.shutdown().await;
    let r = r.map_err(|e| e.to_string())?;
    Ok(MonOutput::of_reply(r.r, &r.rs, &r.output))
}
