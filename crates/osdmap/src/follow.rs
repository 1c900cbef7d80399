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

/// How far past its epoch one message may take a map. Ceph's objecter
/// takes any jump; here a message whose newest map is further ahead is
/// refused (and the map stays), so that a map claiming a far-future epoch
/// (up to u32::MAX, past which no map can follow) cannot freeze the
/// client on it while the cluster's real maps, all older, are passed
/// over. At one epoch a second a cluster takes twelve days to move this
/// far; a client that far behind is started again (a new follower takes
/// a first map of any epoch).
pub const MAX_EPOCH_JUMP: u32 = 1 << 20;

/// The newest map, kept from MOSDMaps.
#[derive(Debug, Default, Clone)]
pub struct MapFollower {
    map: Option<Arc<OsdMap>>,
}

/// The full map sent as epoch `key`, which it must encode.
fn full_map(key: u32, bytes: &[u8]) -> Result<OsdMap, OsdMapError> {
    let map = OsdMap::decode(bytes)?;
    if map.epoch != key {
        return Err(OsdMapError::EpochMismatch {
            what: "a full map",
            sent_as: key,
            encoded: map.epoch,
        });
    }
    Ok(map)
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

    /// Takes what `msg` brings (the first map must be a full one). A map
    /// that does not decode or apply, a full map that encodes another
    /// epoch than its key, or a message more than [`MAX_EPOCH_JUMP`]
    /// epochs ahead is an error, and the map stays at the last good epoch.
    /// The work is one step per map the message carries.
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
        // Past here `have < last`, so `have + 1` is an epoch.
        let Some(mut e) = have.checked_add(1).filter(|_| last > have) else {
            return Ok(done(have, None));
        };
        let Some(current) = self.map.as_mut() else {
            // The first map must be whole.
            let Some(full) = msg.maps.get(&last) else {
                return Ok(done(0, Some(0)));
            };
            self.map = Some(Arc::new(full_map(last, full)?));
            return Ok(done(last, None));
        };
        if last
            .checked_sub(have)
            .is_none_or(|jump| jump > MAX_EPOCH_JUMP)
        {
            return Err(OsdMapError::EpochJump {
                epoch: have,
                got: last,
                max: MAX_EPOCH_JUMP,
            });
        }
        // Each turn takes a map of the message at `e`, jumps once to
        // `oldest_map` (which is past `e`), or returns.
        while e <= last {
            let map = Arc::make_mut(current);
            if let Some(inc) = msg
                .incremental_maps
                .get(&e)
                .filter(|_| map.epoch.checked_add(1) == Some(e))
            {
                map.apply(Incremental::decode(inc)?)?;
            } else if let Some(full) = msg.maps.get(&e) {
                *map = full_map(e, full)?;
            } else if e >= msg.oldest_map {
                // A gap the monitors still have maps for: ask for them.
                return Ok(done(map.epoch, Some(e)));
            } else {
                // Trimmed away: nobody has those epochs any more.
                e = msg.oldest_map;
                continue;
            }
            // The last epoch there is: nothing can follow it.
            let Some(next) = e.checked_add(1) else {
                break;
            };
            e = next;
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

    /// Full map `epoch` of the pacific cluster re-encoded as `as_epoch`
    /// (its crc, the last four bytes, made anew).
    fn full_as(epoch: u32, as_epoch: u32) -> Bytes {
        let mut b = blob("full", epoch).to_vec();
        // The outer and client-data envelopes (6 bytes each), the fsid.
        if let Some(at) = b.get_mut(28..32) {
            at.copy_from_slice(&as_epoch.to_le_bytes());
        }
        let end = b.len().saturating_sub(4);
        let (front, crc) = b.split_at_mut(end);
        let computed = msgr_encoding::crc32c::ceph_crc32c(u32::MAX, front);
        crc.copy_from_slice(&computed.to_le_bytes());
        assert_eq!(OsdMap::decode(&b).expect("re-encoded").epoch, as_epoch);
        Bytes::from(b)
    }

    fn poison(full: Bytes) -> MOSDMap {
        MOSDMap {
            fsid: Uuid::default(),
            incremental_maps: BTreeMap::new(),
            maps: BTreeMap::from([(u32::MAX, full)]),
            oldest_map: u32::MAX,
            newest_map: u32::MAX,
        }
    }

    /// Runs `f` on a thread; fails the test if it takes over 10 s.
    fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("MapFollower::handle returned")
    }

    /// The message: a full map keyed u32::MAX, oldest_map
    /// u32::MAX. To a follower with a map it was an endless loop (the
    /// epoch saturating at u32::MAX), decoding the map each turn.
    #[test]
    fn a_map_keyed_u32_max_ends_at_once() {
        let mut f = MapFollower::default();
        f.handle(&msg(&[10], &[], 1)).expect("ok");
        let (r, f) = within_10s(move || {
            let r = f.clone().handle(&poison(blob("full", 10)));
            (r, f)
        });
        assert!(matches!(r, Err(OsdMapError::EpochJump { .. })), "{r:?}");
        assert_eq!(f.epoch(), 10);
        // With no map yet: the map does not encode the epoch it is sent as.
        let r = within_10s(|| MapFollower::default().handle(&poison(blob("full", 10))));
        assert_eq!(
            r,
            Err(OsdMapError::EpochMismatch {
                what: "a full map",
                sent_as: u32::MAX,
                encoded: 10
            })
        );
        // One that does encode u32::MAX is the last map there can be:
        // taken, and nothing after it loops either.
        let mut f = MapFollower::default();
        let r = within_10s(move || {
            let r = f.handle(&poison(full_as(10, u32::MAX)));
            let again = f.handle(&poison(full_as(10, u32::MAX)));
            (r, again, f.epoch())
        });
        assert_eq!(r.0.map(|f| f.epoch), Ok(u32::MAX));
        assert_eq!(r.1.map(|f| f.advanced), Ok(false));
        assert_eq!(r.2, u32::MAX);
        // Nor does reaching it from the epoch before.
        let mut f = MapFollower::default();
        let mut m = msg(&[], &[], 1);
        m.maps.insert(u32::MAX - 1, full_as(10, u32::MAX - 1));
        f.handle(&m).expect("ok");
        let r = within_10s(move || f.handle(&poison(full_as(10, u32::MAX))));
        assert_eq!(r.map(|f| f.epoch), Ok(u32::MAX));
    }

    #[test]
    fn a_full_map_must_encode_its_key() {
        let mut f = MapFollower::default();
        f.handle(&msg(&[10], &[], 1)).expect("ok");
        // full-12's bytes sent as epoch 11.
        let mut m = msg(&[], &[], 1);
        m.maps.insert(11, blob("full", 12));
        assert_eq!(
            f.handle(&m),
            Err(OsdMapError::EpochMismatch {
                what: "a full map",
                sent_as: 11,
                encoded: 12
            })
        );
        assert_eq!(f.epoch(), 10);
    }

    /// A map far past ours is refused; one within the limit is taken
    /// (epochs the monitors trimmed jumped over).
    #[test]
    fn a_far_future_epoch_is_not_followed() {
        let mut f = MapFollower::default();
        f.handle(&msg(&[10], &[], 1)).expect("ok");
        let far = 10 + MAX_EPOCH_JUMP + 1;
        let mut m = msg(&[], &[], far);
        m.maps.insert(far, full_as(11, far));
        assert_eq!(
            f.handle(&m),
            Err(OsdMapError::EpochJump {
                epoch: 10,
                got: far,
                max: MAX_EPOCH_JUMP
            })
        );
        assert_eq!(f.epoch(), 10);
        // The cluster's next real map still applies.
        assert_eq!(f.handle(&msg(&[], &[11], 1)).map(|r| r.epoch), Ok(11));
        let near = 11 + MAX_EPOCH_JUMP;
        let mut m = msg(&[], &[], near);
        m.maps.insert(near, full_as(12, near));
        assert_eq!(f.handle(&m).map(|r| r.epoch), Ok(near));
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
