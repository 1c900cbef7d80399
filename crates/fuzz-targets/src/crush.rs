//! CRUSH maps from a peer (inside an OSDMap): decoding refuses what is
//! malformed with a typed error, and mapping through what decodes never
//! panics, never loops, and returns at most what was asked for.

use msgr_crush::{do_rule, CrushMap, ITEM_NONE};

pub fn crush(data: &[u8]) {
    let Ok(mut map) = CrushMap::decode(data) else {
        return;
    };
    // The work a rule costs is its map's to set; bounded here so that a
    // run stays short.
    let t = &mut map.tunables;
    t.choose_total_tries = t.choose_total_tries.min(60);
    t.choose_local_tries = t.choose_local_tries.min(4);
    t.choose_local_fallback_tries = t.choose_local_fallback_tries.min(8);
    // So are the replicas a choose step asks for (a firstn step of two
    // billion whose every try is skipped makes two billion tries, in Ceph
    // too).
    for rule in map.rules.iter_mut().flatten() {
        for s in &mut rule.steps {
            match s.op {
                8..=11 => s.arg1 = s.arg1.min(60),
                2 | 3 | 6 | 7 => s.arg1 = s.arg1.clamp(-64, 64),
                _ => {}
            }
        }
    }
    let devices = usize::try_from(map.max_devices).unwrap_or(0).min(256);
    let weights: Vec<u32> = (0..devices).map(|d| [0x10000, 0x8000, 0][d % 3]).collect();
    let args = map.choose_args_for(0);
    for r in 0..map.rules.len().min(8) {
        for x in 0..4 {
            let out = do_rule(&map, r, x, 5, &weights, args);
            assert!(out.len() <= 5);
            for item in out {
                assert!(item == ITEM_NONE || item < map.max_devices.max(0) || item < 0);
            }
        }
    }
}
