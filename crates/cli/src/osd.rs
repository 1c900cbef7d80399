//! `msgr osd map POOL OBJ [NSPACE]`: where an object lives, computed here
//! from the OSD map the monitors send (not asked of them), printed as
//! `ceph osd map` prints it. `--objects FILE` places many objects against
//! one map: a line each, `NAME`, or `NSPACE<TAB>NAME` for one in a
//! namespace.

use std::time::Duration;

use msgr_monc::MonClient;
use msgr_osdmap::{OsdMap, Placement};

use crate::identity::{ClusterOpts, Identity};
use crate::json::{Object, Value};

/// How to print (`-f` / `--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Plain,
    Json,
    JsonPretty,
}

impl Format {
    pub fn parse(s: &str) -> Result<Format, String> {
        match s {
            "plain" => Ok(Format::Plain),
            "json" => Ok(Format::Json),
            "json-pretty" => Ok(Format::JsonPretty),
            other => Err(format!(
                "unknown format {other}: plain, json or json-pretty"
            )),
        }
    }
}

/// One object to place: its namespace (may be empty) and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectName {
    pub nspace: String,
    pub name: String,
}

/// The lines of an `--objects` file.
pub fn parse_objects(text: &str) -> Vec<ObjectName> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| match l.split_once('\t') {
            Some((ns, name)) => ObjectName {
                nspace: ns.to_string(),
                name: name.to_string(),
            },
            None => ObjectName {
                nspace: String::new(),
                name: l.to_string(),
            },
        })
        .collect()
}

/// `ceph osd map`'s JSON object (`osd_map`), keys in its order.
fn json(map: &OsdMap, pool: &str, pool_id: i64, o: &ObjectName, p: &Placement) -> Value {
    let objname = match o.nspace.is_empty() {
        true => o.name.clone(),
        false => format!("{}/{}", o.nspace, o.name),
    };
    let mut j = Object::new();
    j.set("epoch", map.epoch)
        .set("pool", pool)
        .set("pool_id", pool_id)
        .set("objname", objname)
        .set("raw_pgid", p.raw_pg.to_string())
        .set("pgid", p.pg.to_string())
        .set("up", p.osds.up.clone())
        .set("up_primary", p.osds.up_primary)
        .set("acting", p.osds.acting.clone())
        .set("acting_primary", p.osds.acting_primary);
    j.into_value()
}

/// Places `objects` of `pool` in `map`, a line (or JSON object) each.
pub fn render(
    map: &OsdMap,
    pool: &str,
    objects: &[ObjectName],
    format: Format,
) -> Result<String, String> {
    let pool_id = map
        .pool_id(pool)
        .ok_or_else(|| format!("pool {pool} does not exist"))?;
    let mut out = String::new();
    for o in objects {
        let p = map
            .place(pool_id, o.name.as_bytes(), o.nspace.as_bytes())
            .ok_or_else(|| format!("pool {pool} does not exist"))?;
        let line = match format {
            Format::Plain => p.ceph_line(map.epoch, pool, &o.name, &o.nspace),
            Format::Json => json(map, pool, pool_id, o, &p).to_string(),
            Format::JsonPretty => crate::json::pretty(&json(map, pool, pool_id, o, &p)),
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    Ok(out)
}

/// Connects to the monitors, takes the newest OSD map, and places.
pub async fn map(
    opts: &ClusterOpts,
    pool: &str,
    objects: &[ObjectName],
    format: Format,
) -> Result<String, String> {
    let id = Identity::load(opts)?;
    let mut cfg = id.mon_client_config();
    cfg.connect_timeout = Duration::from_secs(20);
    let mc = MonClient::connect(cfg).await.map_err(|e| e.to_string())?;
    let map = mc.wait_osdmap(0, Duration::from_secs(20)).await;
    mc.shutdown().await;
    let map = map.map_err(|e| e.to_string())?;
    render(&map, pool, objects, format)
}
