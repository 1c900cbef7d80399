//! A client of a real cluster: reads who it is as the `ceph` CLI does
//! (ceph.conf, CEPH_ARGS, the keyring), opens a monitor session, finds an
//! OSD in the OSD map, connects to it with a cephx authorizer, times a
//! keepalive round trip, and asks the OSD its version with an MCommand:
//!
//!     cargo run -p msgr --example cluster_ping -- -c /etc/ceph/ceph.conf [-n client.admin] [-k KEYRING] [--mode crc|secure] [OSD_ID]
// An example's own arithmetic on what it measured.
#![allow(clippy::arithmetic_side_effects)]

use std::time::Duration;

use msgr::messages::{MCommand, MCommandReply, TypedMessage};
use msgr::monc::identity::{ClusterOpts, Identity};
use msgr::monc::MonClient;
use msgr::transport::Tcp;
use msgr::{dispatch, EntityType, Messenger, Policy, PolicySet};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Errors say what happened (their Display), as a user reads them.
    if let Err(e) = run().await {
        eprintln!("cluster_ping: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    // The `ceph` CLI's options (-c, -n, -k, -m, --mode, `--ms_bind_msgr2
    // false` or `--ms_bind_msgr2=false`), then an OSD's id.
    let mut cluster = ClusterOpts::default();
    let mut osd_id = 0;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (flag, mut inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let value = || {
            inline
                .take()
                .or_else(|| args.next())
                .ok_or(format!("{flag} needs a value"))
        };
        if !cluster.take(&flag, value)? {
            osd_id = a.parse().map_err(|_| format!("{a}: not an OSD id"))?;
        }
    }
    let id = Identity::load(&cluster)?;

    // A monitor session: cephx with the monitors, the monmap, service
    // tickets for the OSDs.
    let mon = MonClient::connect(id.mon_client_config()).await?;
    let mode = match mon.is_msgr1() {
        true => "msgr1".to_string(),
        false => mon.con_mode().map(|m| m.to_string()).unwrap_or_default(),
    };
    println!("cluster {} (monitor session: {mode})", mon.monmap().fsid);
    let addrs = mon.osd_addrs(osd_id, Duration::from_secs(20)).await?;

    // A lossy client's messenger named and authenticated as librados's.
    let (dispatcher, _events) = dispatch::events();
    let client = Messenger::new(
        Tcp::default(),
        id.client_options(PolicySet::new(Policy::lossy_client())),
        dispatcher,
    );
    let osd = client.connect(&addrs, EntityType::OSD);
    osd.ready().await?;
    let rtt = osd
        .keepalive_roundtrip(Duration::from_secs(10))
        .await
        .ok_or("no keepalive ack")?;
    println!(
        "osd.{osd_id} at {addrs}: keepalive round trip {:.3} ms",
        rtt.as_secs_f64() * 1e3
    );
    let version = MCommand {
        tid: 0,
        fsid: mon.monmap().fsid,
        cmd: vec![r#"{"prefix": "version"}"#.into()],
        input: Default::default(),
    };
    let reply = osd
        .call(version.to_message(osd.features()), Duration::from_secs(20))
        .await?;
    let reply = MCommandReply::from_message(&reply)?;
    if reply.r != 0 {
        return Err(format!("version: error {}: {}", reply.r, reply.rs).into());
    }
    println!(
        "osd.{osd_id} says: {}",
        String::from_utf8_lossy(&reply.output).trim()
    );
    client.shutdown().await;
    mon.shutdown().await;
    Ok(())
}
