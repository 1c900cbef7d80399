//! OSDMaps and incrementals from a monitor: decoding refuses what is
//! malformed with a typed error; what decodes can be placed through, and an
//! incremental that decodes either applies or leaves the map unchanged.

use msgr_frames::crc::ceph_crc32c;
use msgr_osdmap::{Incremental, OsdMap, PgId};

/// Ceph 16's map at epoch 43 (testdata/osdmaps/README.md), the base
/// fuzzed incrementals are applied to.
const BASE: &[u8] = include_bytes!("../../../testdata/osdmaps/pacific/full-43.bin");

fn place_some(map: &OsdMap) {
    for (&id, pool) in map.pools.iter().take(4) {
        for name in [&b"obj"[..], b"", b"a longer object name"] {
            if let Some(p) = map.place(id, name, b"") {
                assert!(p.osds.up.len() <= usize::from(pool.size));
                assert!(p.pg.seed < pool.pg_num.max(1));
            }
        }
        for seed in 0..4 {
            let _ = map.pg_to_up_acting(PgId {
                pool: id as u64,
                seed,
            });
        }
    }
}

/// `data` with the crc `from_end` bytes before its end made right, so that
/// a mutated map gets past the crc to the decoder.
fn with_crc(data: &[u8], from_end: usize) -> Option<Vec<u8>> {
    let at = data.len().checked_sub(from_end)?;
    let crc = ceph_crc32c(ceph_crc32c(u32::MAX, &data[..at]), &data[at + 4..]);
    let mut fixed = data.to_vec();
    fixed[at..at + 4].copy_from_slice(&crc.to_le_bytes());
    Some(fixed)
}

pub fn osdmap(data: &[u8]) {
    // As given (a bad crc is refused), then with the crc made right: a full
    // map's is its last 4 bytes, an incremental's is followed by 4 more.
    full(data);
    if let Some(fixed) = with_crc(data, 4) {
        full(&fixed);
    }
    incremental(data);
    if let Some(fixed) = with_crc(data, 8) {
        incremental(&fixed);
    }
}

fn full(data: &[u8]) {
    if let Ok(map) = OsdMap::decode(data) {
        place_some(&map);
    }
}

fn incremental(data: &[u8]) {
    if let Ok(inc) = Incremental::decode(data) {
        let Ok(mut map) = OsdMap::decode(BASE) else {
            panic!("the base map decodes");
        };
        let before = map.clone();
        match map.apply(inc) {
            Ok(()) => place_some(&map),
            Err(_) => assert!(map == before, "a refused incremental changed the map"),
        }
    }
}
