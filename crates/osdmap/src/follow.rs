//! Keeping a map current from MOSDMap messages (`Objecter::handle_osd_map`):
//! incrementals applied in order, a full map taken where one is sent,
//! epochs the monitors have trimmed jumped over, and a request for what is
//! missing when a message skips ahead. Sans-IO: the caller subscribes.

use std::sync::Arc;

use msgr_messages::MOSDMap;

use crate::error::OsdMapError;
use crate::incremental::Incremental;
use crate::map::OsdMap;

/// What a message did to the map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Followed {
    /// The map's epoch now (0: still none).
    pub epoch: u32,
    /// Whether it moved.
    pub advanced: bool,
    /// Maps are missing from this epoch on (0: a full map is wanted):
    /// ask the monitors for them.
    pub want: Option<u32>,
}

/// The newest map, kept from MOSDMaps.
#[derive(Debug, Default, Clone)]
pub struct MapFollower {
    map: Option<Arc<OsdMap>>,
}

impl MapFollower {
    /// The map, once one arrived.
    pub fn map(&self) -> Option<&Arc<OsdMap>> {
        self.map.as_ref()
    }

    /// The map's epoch (0: none yet).
    pub fn epoch(&self) -> u32 {
        self.map.as_ref().map_or(0, |m| m.epoch)
    }

    /// Takes what `msg` brings (the first map must be a full one). A map that does not decode or apply is an
    /// error and the map stays at the last good epoch.
    pub fn handle(&mut self, msg: &MOSDMap) -> Result<Followed, OsdMapError> {
        let last = msg
            .maps
            .keys()
            .chain(msg.incremental_maps.keys())
            .max()
            .copied()
            .unwrap_or(0);
        let have = self.epoch();
        let done = |epoch: u32, want| Followed {
            epoch,
            advanced: epoch != have,
            want,
        };
        if last <= have {
            return Ok(done(have, None));
        }
        let Some(current) = self.map.as_mut() else {
            // The first map must be whole.
            let Some(full) = msg.maps.get(&last) else {
                return Ok(done(0, Some(0)));
            };
            self.map = Some(Arc::new(OsdMap::decode(full)?));
            return Ok(done(last, None));
        };
        let mut e = have.saturating_add(1);
        while e <= last {
            let map = Arc::make_mut(current);
            if let Some(inc) = msg
                .incremental_maps
                .get(&e)
                .filter(|_| map.epoch.wrapping_add(1) == e)
            {
                map.apply(Incremental::decode(inc)?)?;
            } else if let Some(full) = msg.maps.get(&e) {
                *map = OsdMap::decode(full)?;
            } else if e >= msg.oldest_map {
                // A gap the monitors still have maps for: ask for them.
                return Ok(done(map.epoch, Some(e)));
            } else {
                // Trimmed away: nobody has those epochs any more.
                e = msg.oldest_map;
                continue;
            }
            e = e.saturating_add(1);
        }
        Ok(done(current.epoch, None))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use msgr_encoding::Uuid;

    use super::*;

    fn blob(kind: &str, epoch: u32) -> Bytes {
        let path = format!(
            "{}/../../testdata/osdmaps/pacific/{kind}-{epoch}.bin",
            env!("CARGO_MANIFEST_DIR")
        );
        Bytes::from(std::fs::read(path).expect("testdata"))
    }

    fn msg(full: &[u32], inc: &[u32], oldest: u32) -> MOSDMap {
        let pick = |kind, es: &[u32]| {
            es.iter()
                .map(|&e| (e, blob(kind, e)))
                .collect::<BTreeMap<_, _>>()
        };
        MOSDMap {
            fsid: Uuid::default(),
            incremental_maps: pick("inc", inc),
            maps: pick("full", full),
            oldest_map: oldest,
            newest_map: 62,
        }
    }

    #[test]
    fn follows_as_the_objecter_does() {
        let mut f = MapFollower::default();
        // Incrementals alone cannot start a map.
        let r = f.handle(&msg(&[], &[10, 11], 1)).expect("ok");
        assert_eq!(
            r,
            Followed {
                epoch: 0,
                advanced: false,
                want: Some(0)
            }
        );
        let r = f.handle(&msg(&[10], &[], 1)).expect("ok");
        assert_eq!(
            r,
            Followed {
                epoch: 10,
                advanced: true,
                want: None
            }
        );
        // Older news changes nothing.
        let r = f.handle(&msg(&[9], &[10], 1)).expect("ok");
        assert_eq!(
            r,
            Followed {
                epoch: 10,
                advanced: false,
                want: None
            }
        );
        // Incrementals in order.
        let r = f.handle(&msg(&[], &[11, 12, 13], 1)).expect("ok");
        assert_eq!(
            r,
            Followed {
                epoch: 13,
                advanced: true,
                want: None
            }
        );
        // A message that skips ahead: ask for what is missing.
        let r = f.handle(&msg(&[], &[15, 16], 1)).expect("ok");
        assert_eq!(
            r,
            Followed {
                epoch: 13,
                advanced: false,
                want: Some(14)
            }
        );
        // Epochs the monitors trimmed are jumped over to a full map.
        let r = f.handle(&msg(&[20], &[21], 20)).expect("ok");
        assert_eq!(
            r,
            Followed {
                epoch: 21,
                advanced: true,
                want: None
            }
        );
        let whole = OsdMap::decode(&blob("full", 21)).expect("full 21");
        assert_eq!(f.map().map(|m| m.as_ref()), Some(&whole));
    }

    #[test]
    fn a_bad_map_leaves_the_last_good_one() {
        let mut f = MapFollower::default();
        f.handle(&msg(&[30], &[], 1)).expect("ok");
        let mut bad = msg(&[], &[31], 1);
        if let Some(b) = bad.incremental_maps.get_mut(&31) {
            let mut v = b.to_vec();
            if let Some(x) = v.get_mut(40) {
                *x ^= 1;
            }
            *b = Bytes::from(v);
        }
        assert!(matches!(f.handle(&bad), Err(OsdMapError::BadCrc { .. })));
        assert_eq!(f.epoch(), 30);
    }
}
