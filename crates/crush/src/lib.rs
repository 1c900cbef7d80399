//! CRUSH as Ceph has it: the map as `CrushWrapper` encodes it
//! ([`CrushMap::decode`]), and the mapper ([`do_rule`]), bit-exact with
//! `crush_do_rule` of Ceph 16 and 20 (checked against `crushtool --test
//! --show-mappings` by `scripts/interop/crush.sh`). Sans-IO; a map from a
//! peer is untrusted: decoding bounds every count by the input, and the
//! mapper never indexes past an array or loops on a malformed map.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod hash;
#[allow(
    clippy::arithmetic_side_effects,
    reason = "crush_ln's fixed point, operation by operation: x is normalised to [0x8000, 0x10000] first, so every index and sum is bounded (docs/research/crush-mapper.md §6)"
)]
mod ln;
#[allow(
    clippy::unreadable_literal,
    reason = "Ceph's tables, as its header writes them"
)]
mod ln_table;
pub mod map;
#[allow(
    clippy::arithmetic_side_effects,
    reason = "mapper.c's arithmetic, ported operation by operation: where C wraps (int and unsigned mixed) the code says wrapping_*; the rest are products of a 16-bit hash and a 32-bit weight in u64, and indexes below a size checked just before"
)]
mod mapper;

pub use hash::{hash2, hash3, hash4, mix as jenkins_mix};
pub use ln::crush_ln;
pub use map::{Bucket, Choose, ChooseArg, ChooseArgs, CrushError, CrushMap, Rule, Step, Tunables};
pub use mapper::{do_rule, do_rule_within, Mapped, ITEM_NONE, WEIGHT_IN, WORK_BUDGET};
