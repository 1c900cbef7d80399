//! The up and acting sets of the PGs placed in one OSD map, kept as they
//! are met (what Ceph's `OSDMapMapping` precomputes for a whole map): CRUSH
//! runs once per PG and map rather than once per request. A map's PG count
//! is its monitors' word, so the table is bounded.

use foldhash::HashMap;
use std::sync::{Arc, Weak};

use msgr_messages::osd_types::PgId;
use msgr_osdmap::{OsdMap, UpActing};

/// PGs kept per map at most (about 100 bytes each, and the OSD lists):
/// a map with more PGs than this computes the rest each time.
const MAX_PGS: usize = 1 << 16;

/// The mappings of one map's PGs.
#[derive(Default)]
pub(super) struct PgMappings {
    /// The map they were computed in. A `Weak` keeps the map's allocation,
    /// so a later map cannot be taken for it at the same address.
    map: Weak<OsdMap>,
    by_pg: HashMap<PgId, Option<UpActing>>,
}

impl PgMappings {
    /// `pg`'s up and acting sets in `map` (`None` when its pool is gone):
    /// computed on first use in that map, kept while the map stays the
    /// one asked about.
    pub(super) fn up_acting(&mut self, map: &Arc<OsdMap>, pg: PgId) -> Option<UpActing> {
        if !std::ptr::eq(self.map.as_ptr(), Arc::as_ptr(map)) {
            self.map = Arc::downgrade(map);
            self.by_pg.clear();
        }
        if let Some(known) = self.by_pg.get(&pg) {
            return known.clone();
        }
        let computed = map.pg_to_up_acting(pg);
        if self.by_pg.len() < MAX_PGS {
            self.by_pg.insert(pg, computed.clone());
        }
        computed
    }

    /// `pg`'s up and acting sets in `map` if they were computed already
    /// (`Some(None)`: its pool is gone), without computing them.
    pub(super) fn known(&self, map: &Arc<OsdMap>, pg: PgId) -> Option<Option<UpActing>> {
        if !std::ptr::eq(self.map.as_ptr(), Arc::as_ptr(map)) {
            return None;
        }
        self.by_pg.get(&pg).cloned()
    }

    /// How many PGs are kept (tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.by_pg.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> Arc<OsdMap> {
        let bytes = include_bytes!("../../../../testdata/osdmaps/pacific/full-43.bin");
        Arc::new(OsdMap::decode(bytes).expect("map"))
    }

    fn pg(seed: u32) -> PgId {
        PgId { pool: 1, seed }
    }

    #[test]
    fn a_pg_is_mapped_once_per_map_and_again_in_the_next() {
        let m = map();
        let mut k = PgMappings::default();
        let first = k.up_acting(&m, pg(0));
        assert_eq!(first, m.pg_to_up_acting(pg(0)));
        assert_eq!(k.up_acting(&m, pg(0)), first);
        k.up_acting(&m, pg(1));
        assert_eq!(k.len(), 2);
        // The next map: its primary for PG 0 down, so its up set changes;
        // what was kept for the last map is not used.
        let primary = first.as_ref().expect("mapped").acting_primary;
        let mut next = (*m).clone();
        next.epoch += 1;
        next.osd_state[primary as usize] &= !msgr_osdmap::state::UP;
        let next = Arc::new(next);
        let moved = k.up_acting(&next, pg(0));
        assert_eq!(moved, next.pg_to_up_acting(pg(0)));
        assert_ne!(moved, first);
        assert_eq!(k.len(), 1);
        // A pool the map lacks maps to nothing, and that is kept too.
        assert_eq!(k.up_acting(&next, PgId { pool: 99, seed: 0 }), None);
        assert_eq!(k.len(), 2);
    }

    #[test]
    fn the_table_is_bounded() {
        let m = map();
        let mut k = PgMappings::default();
        for seed in 0..(MAX_PGS as u32 + 10) {
            k.up_acting(&m, pg(seed));
        }
        assert_eq!(k.len(), MAX_PGS);
        // Past the bound PGs are still mapped, each time.
        let late = pg(MAX_PGS as u32 + 5);
        assert_eq!(k.up_acting(&m, late), m.pg_to_up_acting(late));
    }
}
