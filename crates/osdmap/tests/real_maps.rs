//! Every full map and incremental a Ceph 16.2.15 and a Ceph 20.2.4
//! monitor stored while the commands of docs/research/osdmap.md §3.4 ran
//! on a 3-OSD cluster (testdata/osdmaps/README.md): each decodes with its
//! crc, each incremental applied to the map before it gives the next full
//! map, and placements are what `ceph osd map` printed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use msgr_osdmap::{Incremental, OsdMap, OsdMapError};

fn dir(release: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/osdmaps")
        .join(release)
}

/// `(full maps, incrementals)` by epoch, as bytes.
fn blobs(release: &str) -> (BTreeMap<u32, Vec<u8>>, BTreeMap<u32, Vec<u8>>) {
    let mut full = BTreeMap::new();
    let mut inc = BTreeMap::new();
    for entry in std::fs::read_dir(dir(release)).expect("testdata/osdmaps") {
        let path = entry.expect("entry").path();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("name")
            .to_string();
        let (kind, epoch) = name.split_once('-').expect("KIND-EPOCH");
        let epoch: u32 = epoch.parse().expect("epoch");
        let bytes = std::fs::read(&path).expect("read");
        match kind {
            "full" => full.insert(epoch, bytes),
            "inc" => inc.insert(epoch, bytes),
            other => panic!("unexpected file kind {other}"),
        };
    }
    (full, inc)
}

fn check_release(release: &str, epochs: u32) {
    let (full, inc) = blobs(release);
    assert_eq!(full.len() as u32, epochs, "{release}: full maps");
    assert_eq!(inc.len() as u32, epochs, "{release}: incrementals");
    let maps: BTreeMap<u32, OsdMap> = full
        .iter()
        .map(|(&e, b)| {
            let m = OsdMap::decode(b).unwrap_or_else(|err| panic!("{release} full {e}: {err}"));
            assert_eq!(m.epoch, e);
            (e, m)
        })
        .collect();
    // Epoch 1's incremental carries the whole first map.
    let mut chained = OsdMap::default();
    for (&e, bytes) in &inc {
        let i = Incremental::decode(bytes).unwrap_or_else(|err| panic!("{release} inc {e}: {err}"));
        if let Some(before) = maps.get(&e.wrapping_sub(1)) {
            let mut next = before.clone();
            next.apply(i.clone())
                .unwrap_or_else(|err| panic!("{release} apply {e}: {err}"));
            assert_eq!(
                &next,
                &maps[&e],
                "{release}: full {} + inc {e} != full {e}",
                e - 1
            );
        }
        chained
            .apply(i)
            .unwrap_or_else(|err| panic!("{release} chain {e}: {err}"));
    }
    assert_eq!(
        &chained,
        maps.values().last().expect("maps"),
        "{release}: the chain from epoch 1"
    );
}

#[test]
fn pacific_maps_decode_and_apply() {
    check_release("pacific", 62);
}

#[test]
fn tentacle_maps_decode_and_apply() {
    check_release("tentacle", 55);
}

/// `ceph osd map` as the monitor printed it, object by object.
fn check_osd_map_lines(release: &str, epoch: u32, expected: &str) {
    let (full, _) = blobs(release);
    let map = OsdMap::decode(&full[&epoch]).expect("map");
    let text = std::fs::read_to_string(dir("").join(expected)).expect("expected lines");
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.is_empty()) {
        // osdmap eE pool 'P' (N) object 'NS/NAME' -> ...
        let pool = line.split('\'').nth(1).expect("pool");
        let object = line.split('\'').nth(3).expect("object");
        let (nspace, name) = object.split_once('/').unwrap_or(("", object));
        let id = map.pool_id(pool).expect("pool id");
        let p = map
            .place(id, name.as_bytes(), nspace.as_bytes())
            .expect("placement");
        assert_eq!(p.ceph_line(map.epoch, pool, name, nspace), line);
        checked += 1;
    }
    assert!(checked >= 10, "{checked} lines");
}

/// Pacific e43: pg_temp, primary_temp, a pg_upmap, an upmap item, osd.2
/// reweighted to 0.8 and osd.0's primary affinity 0.5 (osdmap.md §6.11).
#[test]
fn pacific_placement_is_ceph_osd_map() {
    check_osd_map_lines("pacific", 43, "pacific-e43-osd-map.txt");
}

/// Tentacle e47: the same plus a pg_upmap_primary, and an EC pool.
#[test]
fn tentacle_placement_is_ceph_osd_map() {
    check_osd_map_lines("tentacle", 47, "tentacle-e47-osd-map.txt");
}

#[test]
fn damaged_maps_are_typed_errors() {
    let (full, inc) = blobs("pacific");
    let map = &full[&43];
    // A flipped byte in the middle: the crc says so.
    let mut bad = map.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x40;
    assert!(matches!(
        OsdMap::decode(&bad),
        Err(OsdMapError::BadCrc { .. }) | Err(OsdMapError::Decode(_))
    ));
    // Cut short anywhere: never a panic, always an error.
    for cut in (0..map.len()).step_by(7) {
        assert!(OsdMap::decode(&map[..cut]).is_err(), "cut at {cut}");
    }
    // An incremental out of order changes nothing.
    let mut m = OsdMap::decode(map).expect("map");
    let before = m.clone();
    let i = Incremental::decode(&inc[&45]).expect("inc");
    assert_eq!(m.apply(i), Err(OsdMapError::NotNext { epoch: 43, got: 45 }));
    assert_eq!(m, before);
}
