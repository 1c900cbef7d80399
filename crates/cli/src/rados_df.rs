//! `msgr rados df [-p POOL] [-f json]`: each pool's usage and the
//! cluster's, printed as Ceph's `rados df` prints them (src/tools/rados/
//! rados.cc: a TextTable of the pools the monitors have stats for, sorted
//! by name, then the totals; or its JSON document). The numbers come from
//! the mgr's reports: without a mgr, no pools and zero totals, as `rados
//! df` shows then.

use std::collections::BTreeMap;

use msgr_rados::{ClusterStat, PoolStats, Rados};
use msgr_uring::TcpOrUring;

use crate::identity::ClusterOpts;

/// `byte_u_t`'s `operator<<` (src/common/types.cc): bytes with an IEC
/// unit, with no fraction for exact multiples, else the most precision
/// (2, 1, 0 places) that fits in 7 characters.
pub fn byte_u(v: u64) -> String {
    const UNITS: [&str; 7] = [" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"];
    let mut n = v;
    let mut index = 0usize;
    while n >= 1024 && index < 6 {
        n /= 1024;
        index += 1;
    }
    let unit = UNITS[index];
    let mult = 1u64 << (10 * index);
    if index == 0 || v % mult == 0 {
        return format!("{n}{unit}");
    }
    let x = v as f64 / mult as f64;
    let mut out = String::new();
    for places in (0..=2).rev() {
        out = format!("{x:.places$}{unit}");
        if out.len() <= 7 {
            break;
        }
    }
    out
}

/// The table, as TextTable prints it: the first column left-aligned, the
/// others right-aligned, two spaces between, each as wide as its widest
/// cell.
fn table(rows: &[Vec<String>]) -> String {
    let heads = [
        "POOL_NAME",
        "USED",
        "OBJECTS",
        "CLONES",
        "COPIES",
        "MISSING_ON_PRIMARY",
        "UNFOUND",
        "DEGRADED",
        "RD_OPS",
        "RD",
        "WR_OPS",
        "WR",
        "USED COMPR",
        "UNDER COMPR",
    ];
    let widths: Vec<usize> = heads
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .chain([h.len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut o = String::new();
        for (i, (c, w)) in cells.zip(&widths).enumerate() {
            if i > 0 {
                o.push_str("  ");
            }
            match i {
                0 => o.push_str(&format!("{c:<w$}")),
                _ => o.push_str(&format!("{c:>w$}")),
            }
        }
        o.push('\n');
        o
    };
    let mut out = line(&mut heads.iter().copied());
    for r in rows {
        out.push_str(&line(&mut r.iter().map(String::as_str)));
    }
    out
}

/// What `rados df` prints for these stats (`ids`: each pool's id, for
/// the JSON).
pub fn render(
    pools: &BTreeMap<String, PoolStats>,
    ids: &BTreeMap<String, i64>,
    total: &ClusterStat,
    json: bool,
) -> String {
    if json {
        let mut o = String::from("{\"pools\":[");
        for (i, (name, s)) in pools.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let name_json = msgr_admin::json::Value::String(name.clone()).to_string();
            o.push_str(&format!("{{\"name\":{name_json},"));
            if let Some(id) = ids.get(name) {
                o.push_str(&format!("\"id\":{id},"));
            }
            o.push_str(&format!(
                "\"size_bytes\":{},\"size_kb\":{},\"num_objects\":{},\"num_object_clones\":{},\
                 \"num_object_copies\":{},\"num_objects_missing_on_primary\":{},\
                 \"num_objects_unfound\":{},\"num_objects_degraded\":{},\"read_ops\":{},\
                 \"read_bytes\":{},\"write_ops\":{},\"write_bytes\":{},\
                 \"compress_bytes_used\":{},\"compress_under_bytes\":{}}}",
                s.num_bytes,
                s.num_kb,
                s.num_objects,
                s.num_object_clones,
                s.num_object_copies,
                s.num_objects_missing_on_primary,
                s.num_objects_unfound,
                s.num_objects_degraded,
                s.num_rd,
                s.num_rd_kb.wrapping_mul(1024),
                s.num_wr,
                s.num_wr_kb.wrapping_mul(1024),
                s.compressed_bytes_alloc,
                s.compressed_bytes_orig
            ));
        }
        o.push_str(&format!(
            "],\"total_objects\":{},\"total_used\":{},\"total_avail\":{},\"total_space\":{}}}",
            total.num_objects, total.kb_used, total.kb_avail, total.kb
        ));
        return o;
    }
    let rows: Vec<Vec<String>> = pools
        .iter()
        .map(|(name, s)| {
            vec![
                name.clone(),
                byte_u(s.num_bytes),
                s.num_objects.to_string(),
                s.num_object_clones.to_string(),
                s.num_object_copies.to_string(),
                s.num_objects_missing_on_primary.to_string(),
                s.num_objects_unfound.to_string(),
                s.num_objects_degraded.to_string(),
                s.num_rd.to_string(),
                byte_u(s.num_rd_kb << 10),
                s.num_wr.to_string(),
                byte_u(s.num_wr_kb << 10),
                byte_u(s.compressed_bytes_alloc),
                byte_u(s.compressed_bytes_orig),
            ]
        })
        .collect();
    let mut out = table(&rows);
    out.push('\n');
    out.push_str(&format!("total_objects    {}\n", total.num_objects));
    out.push_str(&format!(
        "total_used       {}\n",
        byte_u(total.kb_used << 10)
    ));
    out.push_str(&format!(
        "total_avail      {}\n",
        byte_u(total.kb_avail << 10)
    ));
    out.push_str(&format!("total_space      {}\n", byte_u(total.kb << 10)));
    out
}

/// Connects and prints `rados df` for `pool` (or every pool).
pub async fn run(
    opts: &ClusterOpts,
    uring: bool,
    pool: Option<&str>,
    json: bool,
) -> Result<String, String> {
    let rados = crate::common::rados_client(opts, uring).await?;
    let out = df(&rados, pool, json).await;
    rados.shutdown().await;
    out
}

async fn df(rados: &Rados<TcpOrUring>, pool: Option<&str>, json: bool) -> Result<String, String> {
    let map = rados.osdmap();
    let ids: BTreeMap<String, i64> = map
        .pool_names
        .iter()
        .map(|(id, name)| (name.clone(), *id))
        .collect();
    let names: Vec<&str> = match pool {
        Some(p) => vec![p],
        None => ids.keys().map(String::as_str).collect(),
    };
    let pools = rados
        .pool_stats(&names)
        .await
        .map_err(|e| format!("error fetching pool stats: {e}"))?;
    let total = rados
        .cluster_stat()
        .await
        .map_err(|e| format!("error getting total cluster usage: {e}"))?;
    Ok(render(&pools, &ids, &total, json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_print_as_byte_u_t() {
        assert_eq!(byte_u(0), "0 B");
        assert_eq!(byte_u(1023), "1023 B");
        assert_eq!(byte_u(1024), "1 KiB");
        assert_eq!(byte_u(1536), "1.5 KiB");
        assert_eq!(byte_u(10239), "10 KiB");
        assert_eq!(byte_u(8 << 20), "8 MiB");
        assert_eq!(byte_u(1_100_000), "1.0 MiB");
        assert_eq!(byte_u(200 * 1024 + 1), "200 KiB");
        assert_eq!(byte_u(96 << 30), "96 GiB");
    }

    #[test]
    fn the_table_and_totals_are_as_rados_prints_them() {
        let pools = BTreeMap::from([(
            "test".to_string(),
            PoolStats {
                num_bytes: 8192,
                num_objects: 2,
                num_object_copies: 4,
                num_wr: 2,
                num_wr_kb: 8,
                ..Default::default()
            },
        )]);
        let ids = BTreeMap::from([("test".to_string(), 1)]);
        let total = ClusterStat {
            kb: 300 << 20,
            kb_used: 3 << 20,
            kb_avail: 297 << 20,
            num_objects: 2,
        };
        assert_eq!(
            render(&pools, &ids, &total, false),
            "POOL_NAME   USED  OBJECTS  CLONES  COPIES  MISSING_ON_PRIMARY  UNFOUND  DEGRADED  \
             RD_OPS   RD  WR_OPS     WR  USED COMPR  UNDER COMPR\n\
             test       8 KiB        2       0       4                   0        0         0       \
             0  0 B       2  8 KiB         0 B          0 B\n\
             \n\
             total_objects    2\n\
             total_used       3 GiB\n\
             total_avail      297 GiB\n\
             total_space      300 GiB\n"
        );
        assert_eq!(
            render(&BTreeMap::new(), &ids, &ClusterStat::default(), true),
            r#"{"pools":[],"total_objects":0,"total_used":0,"total_avail":0,"total_space":0}"#
        );
        assert!(render(&pools, &ids, &total, true)
            .starts_with(r#"{"pools":[{"name":"test","id":1,"size_bytes":8192,"size_kb":0,"#));
    }
}
