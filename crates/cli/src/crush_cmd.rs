//! `msgr crush -i MAP --test --show-mappings ...`: maps inputs through a
//! CRUSH map with our mapper and prints what `crushtool --test
//! --show-mappings` prints (CrushTester::test), so the two diff line for
//! line: `CRUSH rule R x X [a,b,c]`.

use std::collections::BTreeMap;
use std::io::Write;

use msgr_crush::{do_rule, hash2, CrushMap, WEIGHT_IN};

/// What to map (crushtool's test options).
#[derive(Debug, Clone, Default)]
pub struct CrushTest {
    pub min_x: i32,
    pub max_x: i32,
    /// All rules when None.
    pub rule: Option<usize>,
    /// The rule's replica counts (crushtool's --num-rep / --min-rep /
    /// --max-rep).
    pub min_rep: usize,
    pub max_rep: usize,
    /// Device reweights given (`--weight DEV W`, 0.0 to 1.0).
    pub weights: BTreeMap<usize, f64>,
    /// `--pool-id`: inputs hashed with it, as placement seeds are.
    pub pool_id: Option<i64>,
}

/// The device reweights crushtool tests with: given ones, else 1.0 for a
/// device some bucket holds, else 0.
fn weights(map: &CrushMap, given: &BTreeMap<usize, f64>) -> Vec<u32> {
    let held: std::collections::BTreeSet<i32> = map
        .buckets
        .iter()
        .flatten()
        .flat_map(|b| b.items.iter().copied())
        .filter(|i| *i >= 0)
        .collect();
    let n = usize::try_from(map.max_devices).unwrap_or(0);
    (0..n)
        .map(|d| match given.get(&d) {
            Some(w) => (w * f64::from(WEIGHT_IN)) as u32,
            None if i32::try_from(d).is_ok_and(|d| held.contains(&d)) => WEIGHT_IN,
            None => 0,
        })
        .collect()
}

/// Writes every mapping, as crushtool does.
pub fn run(map: &CrushMap, t: &CrushTest, out: &mut impl Write) -> std::io::Result<()> {
    let weights = weights(map, &t.weights);
    // CrushTester maps with choose_args index 0 (falling back to the
    // compat set), whatever --pool-id says.
    let args = map.choose_args_for(0);
    for (r, rule) in map.rules.iter().enumerate() {
        if rule.is_none() || t.rule.is_some_and(|want| want != r) {
            continue;
        }
        for nr in t.min_rep..=t.max_rep {
            for x in t.min_x..=t.max_x {
                let real_x = match t.pool_id {
                    Some(p) => hash2(0, x as u32, p as u32) as i32,
                    None => x,
                };
                let got = do_rule(map, r, real_x, nr, &weights, args);
                let list: Vec<String> = got.iter().map(|i| i.to_string()).collect();
                writeln!(out, "CRUSH rule {r} x {x} [{}]", list.join(","))?;
            }
        }
    }
    Ok(())
}
