//! A CRUSH map and its binary encoding, as `CrushWrapper::encode` writes
//! it (inside an OSDMap, in `crushtool -o`'s file, in `ceph osd
//! getcrushmap`'s reply): docs/research/crush-encoding.md. The encoding
//! has no version: groups at the end are read while bytes remain, so the
//! decoder is given exactly the map's bytes.

use std::collections::BTreeMap;

use msgr_encoding::{DecodeError, Decoder};

/// `CRUSH_MAGIC`.
pub const MAGIC: u32 = 0x0001_0000;

/// The most tries [`CrushMap::check_work`] lets a tunable or step set.
pub const MAX_TRIES: i64 = 1000;
/// The most replicas it lets one choose step ask for.
pub const MAX_REPLICAS: i64 = 256;

/// Bucket algorithms (`CRUSH_BUCKET_*`).
pub mod alg {
    /// `CRUSH_BUCKET_UNIFORM`: items of equal weight.
    pub const UNIFORM: u8 = 1;
    /// `CRUSH_BUCKET_LIST`: a list, cheap to grow at its end.
    pub const LIST: u8 = 2;
    /// `CRUSH_BUCKET_TREE`: a binary tree of weights.
    pub const TREE: u8 = 3;
    /// `CRUSH_BUCKET_STRAW`: the original straw.
    pub const STRAW: u8 = 4;
    /// `CRUSH_BUCKET_STRAW2`: straw2, the default.
    pub const STRAW2: u8 = 5;
}

/// Rule step opcodes (`enum crush_opcodes`).
pub mod op {
    /// `CRUSH_RULE_NOOP`: does nothing.
    pub const NOOP: u32 = 0;
    /// `CRUSH_RULE_TAKE`: start from item `arg1`.
    pub const TAKE: u32 = 1;
    /// `CRUSH_RULE_CHOOSE_FIRSTN`: choose `arg1` items of type `arg2`, replicated style (a
    /// failed pick shifts the rest).
    pub const CHOOSE_FIRSTN: u32 = 2;
    /// `CRUSH_RULE_CHOOSE_INDEP`: choose `arg1` items of type `arg2`, erasure style (a failed
    /// pick leaves a hole).
    pub const CHOOSE_INDEP: u32 = 3;
    /// `CRUSH_RULE_EMIT`: append the chosen items to the result.
    pub const EMIT: u32 = 4;
    /// `CRUSH_RULE_CHOOSELEAF_FIRSTN`: as CHOOSE_FIRSTN, then a device under each.
    pub const CHOOSELEAF_FIRSTN: u32 = 6;
    /// `CRUSH_RULE_CHOOSELEAF_INDEP`: as CHOOSE_INDEP, then a device under each.
    pub const CHOOSELEAF_INDEP: u32 = 7;
    /// `CRUSH_RULE_SET_CHOOSE_TRIES`: this rule's choose_total_tries.
    pub const SET_CHOOSE_TRIES: u32 = 8;
    /// `CRUSH_RULE_SET_CHOOSELEAF_TRIES`: this rule's tries for the leaf descent.
    pub const SET_CHOOSELEAF_TRIES: u32 = 9;
    /// `CRUSH_RULE_SET_CHOOSE_LOCAL_TRIES`: this rule's choose_local_tries.
    pub const SET_CHOOSE_LOCAL_TRIES: u32 = 10;
    /// `CRUSH_RULE_SET_CHOOSE_LOCAL_FALLBACK_TRIES`: this rule's choose_local_fallback_tries.
    pub const SET_CHOOSE_LOCAL_FALLBACK_TRIES: u32 = 11;
    /// `CRUSH_RULE_SET_CHOOSELEAF_VARY_R`: this rule's chooseleaf_vary_r.
    pub const SET_CHOOSELEAF_VARY_R: u32 = 12;
    /// `CRUSH_RULE_SET_CHOOSELEAF_STABLE`: this rule's chooseleaf_stable.
    pub const SET_CHOOSELEAF_STABLE: u32 = 13;
    /// Squid's multi-step retry rules (not mapped here).
    pub const SET_MSR_DESCENTS: u32 = 14;
    /// `CRUSH_RULE_SET_MSR_COLLISION_TRIES`: Squid's MSR rules (not mapped here).
    pub const SET_MSR_COLLISION_TRIES: u32 = 15;
    /// `CRUSH_RULE_CHOOSE_MSR`: Squid's MSR rules (not mapped here).
    pub const CHOOSE_MSR: u32 = 16;
}

/// How a bucket picks among its items, with what each algorithm keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choose {
    /// Every item weighs `item_weight`.
    Uniform {
        /// The weight of each item, 16.16 fixed point.
        item_weight: u32,
    },
    /// `sum_weights[i]`: the weights of items 0..=i.
    List {
        /// Each item's weight, 16.16 fixed point.
        item_weights: Vec<u32>,
        /// The running sums of the weights.
        sum_weights: Vec<u32>,
    },
    /// A binary tree of weights: leaf `i` is node `2i + 1`.
    Tree {
        /// The tree's node weights, each the sum of its children's.
        node_weights: Vec<u32>,
    },
    /// `CRUSH_BUCKET_STRAW`: each item draws a straw scaled by its weight; the
    /// longest wins (the original straw, superseded by straw2).
    Straw {
        /// Each item's weight, 16.16 fixed point.
        item_weights: Vec<u32>,
        /// Each item's straw length, scaled from the weights (`straw_calc_version`).
        straws: Vec<u32>,
    },
    /// `CRUSH_BUCKET_STRAW2`: each item draws from an exponential
    /// distribution scaled by its weight; a weight change moves data only to
    /// or from that item.
    Straw2 {
        /// Each item's weight, 16.16 fixed point.
        item_weights: Vec<u32>,
    },
}

/// A bucket (`struct crush_bucket` and its algorithm's part).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    /// Negative: the bucket in slot `-1 - id`.
    pub id: i32,
    /// Its type (a key of the type names; 0 is the devices').
    pub type_id: u16,
    /// 0: rjenkins1, the one hash there is.
    pub hash: u8,
    /// The items' weights summed, 16.16 fixed point.
    pub weight: u32,
    /// Devices (>= 0) and buckets (< 0).
    pub items: Vec<i32>,
    /// The algorithm and what it keeps per item.
    pub choose: Choose,
}

impl Bucket {
    /// The algorithm's number (`CRUSH_BUCKET_*`).
    pub fn alg(&self) -> u8 {
        match self.choose {
            Choose::Uniform { .. } => alg::UNIFORM,
            Choose::List { .. } => alg::LIST,
            Choose::Tree { .. } => alg::TREE,
            Choose::Straw { .. } => alg::STRAW,
            Choose::Straw2 { .. } => alg::STRAW2,
        }
    }
}

/// One step of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// The opcode ([`op`]).
    pub op: u32,
    /// The first argument (an item for TAKE, a count for CHOOSE*).
    pub arg1: i32,
    /// The second argument (a bucket type for CHOOSE*).
    pub arg2: i32,
}

/// A rule: its type and steps (and the legacy mask bytes, kept as read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The legacy ruleset byte: the rule's id since Quincy.
    pub ruleset: u8,
    /// 1 replicated, 3 erasure (4, 5: Squid's MSR rules).
    pub rule_type: u8,
    /// The legacy mask's smallest replica count.
    pub min_size: u8,
    /// The legacy mask's largest replica count.
    pub max_size: u8,
    /// The steps, run in order.
    pub steps: Vec<Step>,
}

/// The tunables (`struct crush_map`'s), with the values a map that leaves
/// them out has (`set_tunables_legacy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tunables {
    /// Local retries within a bucket before a full retry (legacy: 2; modern maps 0).
    pub choose_local_tries: u32,
    /// Local retries with an exhaustive search (legacy: 5; modern maps 0).
    pub choose_local_fallback_tries: u32,
    /// The most attempts per replica (`choose_total_tries`, 50 in modern maps).
    pub choose_total_tries: u32,
    /// A leaf descent that fails retries from the top, not inside (1 in modern maps).
    pub chooseleaf_descend_once: u32,
    /// The leaf descent's hash varies with the outer replica (1 in modern maps).
    pub chooseleaf_vary_r: u8,
    /// The leaf descent keeps earlier picks when later ones change (1 in modern maps).
    pub chooseleaf_stable: u8,
    /// How straw buckets' straws are computed (1 fixes the original's bias).
    pub straw_calc_version: u8,
    /// A bit per allowed algorithm (`1 << alg`).
    pub allowed_bucket_algs: u32,
    /// Squid's MSR rules: the most descents (not mapped here).
    pub msr_descents: u32,
    /// Squid's MSR rules: the most collision retries (not mapped here).
    pub msr_collision_tries: u32,
}

impl Tunables {
    /// What a map without tunables means (argonaut's, straw_calc 0).
    pub const LEGACY: Tunables = Tunables {
        choose_local_tries: 2,
        choose_local_fallback_tries: 5,
        choose_total_tries: 19,
        chooseleaf_descend_once: 0,
        chooseleaf_vary_r: 0,
        chooseleaf_stable: 0,
        straw_calc_version: 0,
        allowed_bucket_algs: (1 << alg::UNIFORM) | (1 << alg::LIST) | (1 << alg::STRAW),
        msr_descents: 100,
        msr_collision_tries: 100,
    };
}

/// A bucket's replacements in a choose_args set: per position (replica),
/// the straw2 weights to use, and the ids to hash instead of its items'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChooseArg {
    /// Per position, the straw2 weights to use in place of the bucket's.
    pub weight_set: Vec<Vec<u32>>,
    /// The ids to hash in place of the bucket's items' ids.
    pub ids: Vec<i32>,
}

/// The choose_args of one key (a pool id, or -1 for the compat set), by
/// bucket slot (`-1 - bucket id`).
pub type ChooseArgs = BTreeMap<usize, ChooseArg>;

/// The choose_args key of the compat weight set (`DEFAULT_CHOOSE_ARGS`).
pub const DEFAULT_CHOOSE_ARGS: i64 = -1;

/// A CRUSH map (CrushWrapper's content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrushMap {
    /// Slot `i` holds bucket `-1 - i`.
    pub buckets: Vec<Option<Bucket>>,
    /// Slot `i` holds rule `i`.
    pub rules: Vec<Option<Rule>>,
    /// One past the highest device id (recomputed, as `crush_finalize`).
    pub max_devices: i32,
    /// The bucket types' names (`osd`, `host`, `rack`, ...), by type id.
    pub type_names: BTreeMap<i32, String>,
    /// Item (bucket or device) names.
    pub names: BTreeMap<i32, String>,
    /// The rules' names, by rule id.
    pub rule_names: BTreeMap<i32, String>,
    /// The tunables mapping follows.
    pub tunables: Tunables,
    /// Device class of each device (and shadow bucket).
    pub class_of: BTreeMap<i32, i32>,
    /// The device classes' names (`hdd`, `ssd`, ...), by class id.
    pub class_names: BTreeMap<i32, String>,
    /// For each bucket, its shadow copy per class: `[bucket][class]`.
    pub class_buckets: BTreeMap<i32, BTreeMap<i32, i32>>,
    /// The choose_args sets, by key (a pool id, or [`DEFAULT_CHOOSE_ARGS`]).
    pub choose_args: BTreeMap<i64, ChooseArgs>,
}

impl Default for CrushMap {
    /// A map with nothing in it: every rule maps to nothing.
    fn default() -> Self {
        CrushMap {
            buckets: Vec::new(),
            rules: Vec::new(),
            max_devices: 0,
            type_names: BTreeMap::new(),
            names: BTreeMap::new(),
            rule_names: BTreeMap::new(),
            tunables: Tunables::LEGACY,
            class_of: BTreeMap::new(),
            class_names: BTreeMap::new(),
            class_buckets: BTreeMap::new(),
            choose_args: BTreeMap::new(),
        }
    }
}

/// Why a CRUSH map could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CrushError {
    /// The bytes do not decode.
    Decode(DecodeError),
    /// The map does not start with `CRUSH_MAGIC`.
    BadMagic {
        /// The magic the map starts with.
        got: u32,
    },
    /// A count that is negative or larger than the input could hold.
    BadCount {
        /// What was counted.
        what: &'static str,
        /// The count that arrived.
        got: i64,
    },
    /// The bucket in slot `slot` says it is another.
    BucketId {
        /// The slot it was read into.
        slot: usize,
        /// The id it carries.
        id: i32,
    },
    /// An algorithm CRUSH does not have, or two that differ in one bucket.
    BadAlg {
        /// The bucket's id.
        bucket: i32,
        /// The algorithm number.
        alg: u32,
    },
    /// A choose_args entry for a bucket that is not there, or whose sizes
    /// are not the bucket's.
    BadChooseArg {
        /// The choose_args key (a pool id, or −1).
        key: i64,
        /// The bucket slot the entry names.
        slot: u32,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A tunable or a rule step that would make one mapping cost more
    /// than [`CrushMap::check_work`] allows.
    TooCostly {
        /// Which tunable or step.
        what: &'static str,
        /// Its value.
        got: i64,
        /// The most we allow.
        max: i64,
    },
}

impl From<DecodeError> for CrushError {
    fn from(e: DecodeError) -> Self {
        CrushError::Decode(e)
    }
}

impl std::fmt::Display for CrushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CrushError::Decode(e) => write!(f, "crush map: {e}"),
            CrushError::BadMagic { got } => {
                write!(f, "not a crush map: magic {got:#x}, expected {MAGIC:#x}")
            }
            CrushError::BadCount { what, got } => {
                write!(f, "crush map: {what} {got} is impossible")
            }
            CrushError::BucketId { slot, id } => {
                write!(f, "crush map: bucket slot {slot} holds id {id}")
            }
            CrushError::BadAlg { bucket, alg } => {
                write!(
                    f,
                    "crush map: bucket {bucket} has unsupported algorithm {alg}"
                )
            }
            CrushError::BadChooseArg { key, slot, why } => {
                write!(f, "crush map: choose_args {key}, bucket slot {slot}: {why}")
            }
            CrushError::TooCostly { what, got, max } => {
                write!(f, "crush map: {what} is {got}, at most {max} is mapped")
            }
        }
    }
}

impl std::error::Error for CrushError {}

/// A count read as `s32`/`u32`, checked against what `min_len`-byte items
/// the rest of the input could hold.
fn count(
    d: &Decoder<'_>,
    what: &'static str,
    got: i64,
    min_len: usize,
) -> Result<usize, CrushError> {
    let fits = d.remaining().checked_div(min_len).unwrap_or(usize::MAX);
    match usize::try_from(got) {
        Ok(n) if n <= fits => Ok(n),
        _ => Err(CrushError::BadCount { what, got }),
    }
}

fn u32s(d: &mut Decoder<'_>, n: usize, what: &'static str) -> Result<Vec<u32>, CrushError> {
    let n = count(d, what, n as i64, 4)?;
    (0..n).map(|_| Ok(d.u32(what)?)).collect()
}

fn i32s(d: &mut Decoder<'_>, n: usize, what: &'static str) -> Result<Vec<i32>, CrushError> {
    Ok(u32s(d, n, what)?.into_iter().map(|v| v as i32).collect())
}

/// Pairs written interleaved (list and straw buckets): two vectors.
fn pairs(
    d: &mut Decoder<'_>,
    n: usize,
    what: &'static str,
) -> Result<(Vec<u32>, Vec<u32>), CrushError> {
    let n = count(d, what, n as i64, 8)?;
    let mut a = Vec::with_capacity(n);
    let mut b = Vec::with_capacity(n);
    for _ in 0..n {
        a.push(d.u32(what)?);
        b.push(d.u32(what)?);
    }
    Ok((a, b))
}

fn string(d: &mut Decoder<'_>, len: u32, what: &'static str) -> Result<String, CrushError> {
    let n = count(d, what, i64::from(len), 1)?;
    Ok(String::from_utf8_lossy(d.take(n, what)?).into_owned())
}

/// `decode_32_or_64_string_map`: a key whose string length reads 0 was
/// written 64 bits wide (a 2012 encoder): the length follows its high half.
fn name_map(d: &mut Decoder<'_>, what: &'static str) -> Result<BTreeMap<i32, String>, CrushError> {
    let n = d.length(what, 8)?;
    let mut m = BTreeMap::new();
    for _ in 0..n {
        let key = d.u32(what)? as i32;
        let mut len = d.u32(what)?;
        if len == 0 {
            len = d.u32(what)?;
        }
        m.insert(key, string(d, len, what)?);
    }
    Ok(m)
}

fn bucket(d: &mut Decoder<'_>, slot: usize) -> Result<Option<Bucket>, CrushError> {
    let alg = d.u32("bucket alg")?;
    if alg == 0 {
        return Ok(None);
    }
    let id = d.u32("bucket id")? as i32;
    let expected = i32::try_from(slot)
        .ok()
        .and_then(|s| (-1i32).checked_sub(s));
    if expected != Some(id) {
        return Err(CrushError::BucketId { slot, id });
    }
    let type_id = d.u16("bucket type")?;
    let alg2 = d.u8("bucket alg")?;
    if u32::from(alg2) != alg {
        return Err(CrushError::BadAlg { bucket: id, alg });
    }
    let hash = d.u8("bucket hash")?;
    let weight = d.u32("bucket weight")?;
    let size = d.u32("bucket size")? as usize;
    let items = i32s(d, size, "bucket items")?;
    let choose = match alg2 {
        alg::UNIFORM => Choose::Uniform {
            item_weight: d.u32("uniform item weight")?,
        },
        alg::LIST => {
            let (item_weights, sum_weights) = pairs(d, size, "list weights")?;
            Choose::List {
                item_weights,
                sum_weights,
            }
        }
        alg::TREE => {
            let n = usize::from(d.u8("tree nodes")?);
            Choose::Tree {
                node_weights: u32s(d, n, "tree node weights")?,
            }
        }
        alg::STRAW => {
            let (item_weights, straws) = pairs(d, size, "straw weights")?;
            Choose::Straw {
                item_weights,
                straws,
            }
        }
        alg::STRAW2 => Choose::Straw2 {
            item_weights: u32s(d, size, "straw2 weights")?,
        },
        _ => return Err(CrushError::BadAlg { bucket: id, alg }),
    };
    Ok(Some(Bucket {
        id,
        type_id,
        hash,
        weight,
        items,
        choose,
    }))
}

fn rule(d: &mut Decoder<'_>) -> Result<Option<Rule>, CrushError> {
    if d.u32("rule present")? == 0 {
        return Ok(None);
    }
    let len = d.u32("rule steps")? as usize;
    let [ruleset, rule_type, min_size, max_size] = d.array::<4>("rule mask")?;
    let n = count(d, "rule steps", len as i64, 12)?;
    let steps = (0..n)
        .map(|_| {
            Ok(Step {
                op: d.u32("step op")?,
                arg1: d.u32("step arg1")? as i32,
                arg2: d.u32("step arg2")? as i32,
            })
        })
        .collect::<Result<_, CrushError>>()?;
    Ok(Some(Rule {
        ruleset,
        rule_type,
        min_size,
        max_size,
        steps,
    }))
}

impl CrushMap {
    /// Reads a map from exactly its bytes.
    pub fn decode(data: &[u8]) -> Result<CrushMap, CrushError> {
        let mut d = Decoder::new(data);
        let magic = d.u32("magic")?;
        if magic != MAGIC {
            return Err(CrushError::BadMagic { got: magic });
        }
        let max_buckets = d.u32("max_buckets")? as i32;
        let max_rules = d.u32("max_rules")?;
        let _max_devices = d.u32("max_devices")?;
        let nb = count(&d, "max_buckets", i64::from(max_buckets), 4)?;
        let buckets = (0..nb)
            .map(|slot| bucket(&mut d, slot))
            .collect::<Result<Vec<_>, _>>()?;
        let nr = count(&d, "max_rules", i64::from(max_rules), 4)?;
        let rules = (0..nr)
            .map(|_| rule(&mut d))
            .collect::<Result<Vec<_>, _>>()?;
        let type_names = name_map(&mut d, "type names")?;
        let names = name_map(&mut d, "item names")?;
        let rule_names = name_map(&mut d, "rule names")?;
        let mut map = CrushMap {
            buckets,
            rules,
            max_devices: 0,
            type_names,
            names,
            rule_names,
            tunables: Tunables::LEGACY,
            class_of: BTreeMap::new(),
            class_names: BTreeMap::new(),
            class_buckets: BTreeMap::new(),
            choose_args: BTreeMap::new(),
        };
        map.decode_tail(&mut d)?;
        map.max_devices = map.count_devices();
        Ok(map)
    }

    /// The groups a newer encoder appends, each read if bytes remain
    /// (`CrushWrapper::decode`'s `!blp.end()` checks).
    fn decode_tail(&mut self, d: &mut Decoder<'_>) -> Result<(), CrushError> {
        let t = &mut self.tunables;
        if !d.is_empty() {
            t.choose_local_tries = d.u32("choose_local_tries")?;
            t.choose_local_fallback_tries = d.u32("choose_local_fallback_tries")?;
            t.choose_total_tries = d.u32("choose_total_tries")?;
        }
        if !d.is_empty() {
            t.chooseleaf_descend_once = d.u32("chooseleaf_descend_once")?;
        }
        if !d.is_empty() {
            t.chooseleaf_vary_r = d.u8("chooseleaf_vary_r")?;
        }
        if !d.is_empty() {
            t.straw_calc_version = d.u8("straw_calc_version")?;
        }
        if !d.is_empty() {
            t.allowed_bucket_algs = d.u32("allowed_bucket_algs")?;
        }
        if !d.is_empty() {
            t.chooseleaf_stable = d.u8("chooseleaf_stable")?;
        }
        if !d.is_empty() {
            self.decode_classes(d)?;
        }
        if !d.is_empty() {
            self.decode_choose_args(d)?;
        }
        if !d.is_empty() {
            self.tunables.msr_descents = d.u32("msr_descents")?;
            self.tunables.msr_collision_tries = d.u32("msr_collision_tries")?;
        }
        Ok(())
    }

    fn decode_classes(&mut self, d: &mut Decoder<'_>) -> Result<(), CrushError> {
        let n = d.length("class_map", 8)?;
        for _ in 0..n {
            let item = d.u32("class_map")? as i32;
            self.class_of.insert(item, d.u32("class_map")? as i32);
        }
        let n = d.length("class_name", 8)?;
        for _ in 0..n {
            let class = d.u32("class_name")? as i32;
            let len = d.u32("class_name")?;
            self.class_names
                .insert(class, string(d, len, "class_name")?);
        }
        let n = d.length("class_bucket", 8)?;
        for _ in 0..n {
            let bucket = d.u32("class_bucket")? as i32;
            let m = d.length("class_bucket", 8)?;
            let mut by_class = BTreeMap::new();
            for _ in 0..m {
                let class = d.u32("class_bucket")? as i32;
                by_class.insert(class, d.u32("class_bucket")? as i32);
            }
            self.class_buckets.insert(bucket, by_class);
        }
        Ok(())
    }

    fn decode_choose_args(&mut self, d: &mut Decoder<'_>) -> Result<(), CrushError> {
        let maps = d.length("choose_args", 12)?;
        for _ in 0..maps {
            let key = d.u64("choose_args key")? as i64;
            let n = d.length("choose_args", 12)?;
            let mut args = ChooseArgs::new();
            for _ in 0..n {
                let slot = d.u32("choose_arg bucket")?;
                let bad = |why| CrushError::BadChooseArg { key, slot, why };
                let size = self
                    .buckets
                    .get(slot as usize)
                    .and_then(Option::as_ref)
                    .map(|b| b.items.len())
                    .ok_or(bad("no such bucket"))?;
                let positions = d.length("weight_set positions", 4)?;
                let mut weight_set = Vec::with_capacity(positions);
                for _ in 0..positions {
                    let len = d.length("weight_set", 4)?;
                    weight_set.push(u32s(d, len, "weight_set")?);
                }
                let ids_len = d.length("choose_arg ids", 4)?;
                if ids_len != 0 && ids_len != size {
                    return Err(bad("ids not one per item"));
                }
                let ids = i32s(d, ids_len, "choose_arg ids")?;
                args.insert(slot as usize, ChooseArg { weight_set, ids });
            }
            self.choose_args.insert(key, args);
        }
        Ok(())
    }

    /// One past the highest device id the buckets hold or the names name
    /// (`crush_finalize`, then CrushWrapper::finalize).
    fn count_devices(&self) -> i32 {
        let items = self
            .buckets
            .iter()
            .flatten()
            .flat_map(|b| b.items.iter().copied());
        let named = self.names.keys().copied();
        items
            .chain(named)
            .filter(|i| *i >= 0)
            .max()
            .map_or(0, |m| m.saturating_add(1))
    }

    /// Bucket `id` (negative), if the map has it.
    pub fn bucket(&self, id: i32) -> Option<&Bucket> {
        let slot = usize::try_from((-1i64).checked_sub(i64::from(id))?).ok()?;
        self.buckets.get(slot)?.as_ref()
    }

    /// Rule `id`, if the map has it.
    pub fn rule(&self, id: usize) -> Option<&Rule> {
        self.rules.get(id)?.as_ref()
    }

    /// Refuses a map whose mappings could cost without bound: the work of
    /// one mapping is the replicas its steps ask for times the tries its
    /// tunables and set_* steps allow (a firstn step of two billion
    /// replicas, each skipped, makes two billion tries, in Ceph too). The
    /// limits are far above any map Ceph makes (50 total tries, 100 in an
    /// EC rule's `set_choose_tries`, as many replicas as the pool's size).
    /// Each is checked alone; what they cost together with the map's
    /// bucket sizes is bounded by the mapper's budget (`WORK_BUDGET`),
    /// which ends a mapping that spends it.
    pub fn check_work(&self) -> Result<(), CrushError> {
        let over = |what, got: i64, max: i64| {
            if got > max {
                Err(CrushError::TooCostly { what, got, max })
            } else {
                Ok(())
            }
        };
        let t = &self.tunables;
        over("choose_total_tries", t.choose_total_tries.into(), MAX_TRIES)?;
        over("choose_local_tries", t.choose_local_tries.into(), MAX_TRIES)?;
        over(
            "choose_local_fallback_tries",
            t.choose_local_fallback_tries.into(),
            MAX_TRIES,
        )?;
        for step in self.rules.iter().flatten().flat_map(|r| &r.steps) {
            let arg = i64::from(step.arg1);
            match step.op {
                op::SET_CHOOSE_TRIES
                | op::SET_CHOOSELEAF_TRIES
                | op::SET_CHOOSE_LOCAL_TRIES
                | op::SET_CHOOSE_LOCAL_FALLBACK_TRIES => {
                    over("a set_*_tries step", arg, MAX_TRIES)?
                }
                op::CHOOSE_FIRSTN
                | op::CHOOSE_INDEP
                | op::CHOOSELEAF_FIRSTN
                | op::CHOOSELEAF_INDEP => over("a choose step's replicas", arg, MAX_REPLICAS)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The id of the item (bucket or device) named `name`.
    pub fn item_id(&self, name: &str) -> Option<i32> {
        self.names.iter().find(|(_, n)| *n == name).map(|(i, _)| *i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_a_typed_error() {
        assert_eq!(
            CrushMap::decode(&[1, 0, 0, 0]),
            Err(CrushError::BadMagic { got: 1 })
        );
        let mut huge = MAGIC.to_le_bytes().to_vec();
        huge.extend_from_slice(&0x7fff_ffffu32.to_le_bytes());
        huge.extend_from_slice(&[0; 8]);
        assert!(matches!(
            CrushMap::decode(&huge),
            Err(CrushError::BadCount { .. })
        ));
    }

    #[test]
    fn costly_maps_are_named() {
        let mut map = CrushMap {
            rules: vec![Some(Rule {
                ruleset: 0,
                rule_type: 1,
                min_size: 1,
                max_size: 10,
                steps: vec![Step {
                    op: op::CHOOSE_FIRSTN,
                    arg1: 3,
                    arg2: 0,
                }],
            })],
            ..CrushMap::default()
        };
        assert_eq!(map.check_work(), Ok(()));
        if let Some(s) = map
            .rules
            .first_mut()
            .and_then(|r| r.as_mut()?.steps.first_mut())
        {
            s.arg1 = 1_600_000_000;
        }
        assert_eq!(
            map.check_work(),
            Err(CrushError::TooCostly {
                what: "a choose step's replicas",
                got: 1_600_000_000,
                max: MAX_REPLICAS
            })
        );
        map.rules.clear();
        map.tunables.choose_total_tries = u32::MAX;
        assert!(matches!(
            map.check_work(),
            Err(CrushError::TooCostly { .. })
        ));
    }
}
