//! The msgr2 banner and msgr2 feature negotiation.
//!
//! Wire form (ProtocolV2::_banner_exchange): `"ceph v2\n"`, le16 payload
//! length (16), then the payload: le64 supported features, le64 required
//! features. Both sides send theirs at once. Receiving (ProtocolV2::
//! _handle_peer_banner, _handle_peer_banner_payload): read the 10-byte
//! prefix, then the payload; fail on a peer that requires what we do not
//! support, or lacks what we require; use msgr2.1 iff the peer supports
//! REVISION_1; run the compression handshake iff it supports COMPRESSION.

use crate::FrameError;

/// `CEPH_BANNER_V2_PREFIX`.
pub const BANNER_MAGIC: &[u8; 8] = b"ceph v2\n";
/// msgr1's banner (`CEPH_BANNER`), recognised to name the error.
pub const MSGR1_BANNER: &[u8; 9] = b"ceph v027";
/// Magic plus the le16 payload length: what to read first.
pub const BANNER_PREFIX_LEN: usize = 10;
/// The payload Ceph sends: two le64 feature words.
pub const BANNER_PAYLOAD_LEN: usize = 16;
/// Our cap on a peer's payload length (older Ceph asserted <= 4096).
pub const MAX_BANNER_PAYLOAD_LEN: usize = 4096;

/// msgr2 feature bits (`DEFINE_MSGR2_FEATURE` in src/include/msgr.h).
pub mod features {
    /// msgr2.1 framing.
    pub const REVISION_1: u64 = 1 << 0;
    /// On-wire compression (Ceph 17+).
    pub const COMPRESSION: u64 = 1 << 1;
    /// Everything this implementation supports.
    pub const SUPPORTED: u64 = REVISION_1 | COMPRESSION;
}

/// A banner's feature words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Banner {
    /// The msgr2 features the sender supports ([`features`]).
    pub supported: u64,
    /// The msgr2 features the sender requires of its peer.
    pub required: u64,
}

/// What two banners agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// msgr2.1 framing (else msgr2.0).
    pub rev1: bool,
    /// Both sides support on-wire compression, so the compression handshake
    /// runs after authentication (even if nobody will compress).
    pub compression: bool,
}

impl Banner {
    /// What Ceph 20 sends: supported REVISION_1 | COMPRESSION, required none.
    pub const DEFAULT: Banner = Banner {
        supported: features::SUPPORTED,
        required: 0,
    };

    /// The 26 bytes to send.
    pub fn encode(&self) -> [u8; BANNER_PREFIX_LEN + BANNER_PAYLOAD_LEN] {
        let mut out = [0u8; BANNER_PREFIX_LEN + BANNER_PAYLOAD_LEN];
        out[..8].copy_from_slice(BANNER_MAGIC);
        out[8..10].copy_from_slice(&(BANNER_PAYLOAD_LEN as u16).to_le_bytes());
        out[10..18].copy_from_slice(&self.supported.to_le_bytes());
        out[18..26].copy_from_slice(&self.required.to_le_bytes());
        out
    }

    /// Checks the magic of the first 10 bytes and returns the payload length
    /// that follows.
    pub fn decode_prefix(prefix: &[u8; BANNER_PREFIX_LEN]) -> Result<usize, FrameError> {
        if &prefix[..8] != BANNER_MAGIC {
            return Err(FrameError::NotMsgr2 {
                msgr1: prefix.starts_with(MSGR1_BANNER),
            });
        }
        let len = u16::from_le_bytes([prefix[8], prefix[9]]) as usize;
        if len < BANNER_PAYLOAD_LEN {
            return Err(FrameError::BannerTooShort { len });
        }
        if len > MAX_BANNER_PAYLOAD_LEN {
            return Err(FrameError::BannerTooLarge {
                len,
                max: MAX_BANNER_PAYLOAD_LEN,
            });
        }
        Ok(len)
    }

    /// Decodes the payload; bytes past the two feature words are ignored,
    /// as Ceph does.
    pub fn decode_payload(payload: &[u8]) -> Result<Banner, FrameError> {
        let too_short = || FrameError::BannerTooShort { len: payload.len() };
        let (supported, rest) = payload.split_first_chunk().ok_or_else(too_short)?;
        let required = rest.first_chunk().ok_or_else(too_short)?;
        Ok(Banner {
            supported: u64::from_le_bytes(*supported),
            required: u64::from_le_bytes(*required),
        })
    }

    /// Decides what `self` (ours) and `peer` use, or why they cannot talk.
    pub fn negotiate(&self, peer: &Banner) -> Result<Negotiated, FrameError> {
        let lacking = self.required & !peer.supported;
        if lacking != 0 {
            return Err(FrameError::PeerLacksFeatures { missing: lacking });
        }
        let unsupported = peer.required & !self.supported;
        if unsupported != 0 {
            return Err(FrameError::PeerRequiresFeatures {
                missing: unsupported,
            });
        }
        let common = self.supported & peer.supported;
        Ok(Negotiated {
            rev1: common & features::REVISION_1 != 0,
            compression: common & features::COMPRESSION != 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_ceph_20() {
        // NOTES-tentacle.md: `ceph v2\n`, le16 16, le64 3, le64 0.
        let b = Banner::DEFAULT.encode();
        assert_eq!(&b[..8], b"ceph v2\n");
        assert_eq!(&b[8..10], &[16, 0]);
        assert_eq!(&b[10..18], &[3, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&b[18..], &[0; 8]);
        let len = Banner::decode_prefix(b[..10].try_into().unwrap()).unwrap();
        assert_eq!(
            Banner::decode_payload(&b[10..10 + len]).unwrap(),
            Banner::DEFAULT
        );
    }

    #[test]
    fn recognises_msgr1_and_garbage() {
        assert_eq!(
            Banner::decode_prefix(b"ceph v027\x00"),
            Err(FrameError::NotMsgr2 { msgr1: true })
        );
        assert_eq!(
            Banner::decode_prefix(b"GET / HTTP"),
            Err(FrameError::NotMsgr2 { msgr1: false })
        );
        assert_eq!(
            Banner::decode_prefix(b"ceph v2\n\xff\xff"),
            Err(FrameError::BannerTooLarge {
                len: 0xffff,
                max: MAX_BANNER_PAYLOAD_LEN
            })
        );
    }

    #[test]
    fn negotiation() {
        let pacific = Banner {
            supported: features::REVISION_1,
            required: 0,
        };
        let n = Banner::DEFAULT.negotiate(&pacific).unwrap();
        assert_eq!(
            n,
            Negotiated {
                rev1: true,
                compression: false
            }
        );
        // Our side offering only msgr2.0 talks rev0 to anyone.
        let rev0 = Banner {
            supported: 0,
            required: 0,
        };
        assert!(!rev0.negotiate(&Banner::DEFAULT).unwrap().rev1);
        // A kernel-like peer that requires REVISION_1 refuses rev0-only us.
        let kernel = Banner {
            supported: 1,
            required: 1,
        };
        assert_eq!(
            rev0.negotiate(&kernel),
            Err(FrameError::PeerRequiresFeatures { missing: 1 })
        );
        let picky = Banner {
            supported: 3,
            required: 3,
        };
        assert_eq!(
            picky.negotiate(&pacific),
            Err(FrameError::PeerLacksFeatures { missing: 2 })
        );
        // Unknown future features the peer merely supports are fine.
        let future = Banner {
            supported: 0xff,
            required: 0,
        };
        assert!(Banner::DEFAULT.negotiate(&future).unwrap().compression);
    }
}
