//! Fuzz target bodies. Each takes arbitrary bytes and must neither panic
//! nor allocate beyond the caps, and checks the properties that hold for any
//! input (decode ∘ encode is the identity on what decodes). The cargo-fuzz
//! binaries in fuzz/ call these; tests/corpus.rs replays the stored corpus
//! through them on every test run.
// Test scaffolding: what it drives is checked where it parses.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
#![forbid(unsafe_code)]

use bytes::Bytes;
use msgr_encoding::{Decode, Decoder, Encode, EntityAddr, EntityAddrvec, EntityName, UTime};
use msgr_frames::banner::{Banner, BANNER_PREFIX_LEN};
use msgr_frames::compression::{self, Algorithm};
use msgr_frames::crypto::{Role, SecureKeys};
use msgr_frames::preamble::{Preamble, PREAMBLE_LEN};
use msgr_frames::{ControlFrame, FrameDecoder, FrameLimits, FrameReader, MessageFrame, Tag};

mod admin;
mod auth;
mod cls_lock;
mod config;
mod crush;
mod gcm;
mod mgr;
mod mon;
mod msgr1;
mod osd;
mod osdmap;
mod rados;
mod session;
mod snap;
mod stats;
mod watch;

pub use admin::admin;
pub use auth::cephx;
pub use cls_lock::cls_lock;
pub use config::config;
pub use crush::crush;
pub use gcm::gcm_pieces;
pub use mgr::mgr_messages;
pub use mon::mon_messages;
pub use msgr1::msgr1;
pub use osd::osd_messages;
pub use osdmap::osdmap;
pub use rados::rados_outputs;
pub use session::session;
pub use snap::snap;
pub use stats::stats_messages;
pub use watch::watch_notify;

/// Every target, by the name of its corpus folder.
/// A fuzz target's body.
pub type Target = fn(&[u8]);

pub const TARGETS: &[(&str, Target)] = &[
    ("cephx", cephx),
    ("config", config),
    ("gcm_pieces", gcm_pieces),
    ("mon_messages", mon_messages),
    ("osd_messages", osd_messages),
    ("stats_messages", stats_messages),
    ("session", session),
    ("encoding", encoding),
    ("preamble", preamble),
    ("banner", banner),
    ("control_payload", control_payload),
    ("frame_stream", frame_stream),
    ("decompress", decompress),
    ("capture", capture),
    ("msgr1", msgr1),
    ("admin", admin),
    ("crush", crush),
    ("osdmap", osdmap),
    ("watch_notify", watch_notify),
    ("snap", snap),
    ("cls_lock", cls_lock),
    ("rados_outputs", rados_outputs),
    ("mgr_messages", mgr_messages),
];

fn roundtrip<T: Decode + Encode + PartialEq + std::fmt::Debug>(data: &[u8]) {
    let mut d = Decoder::new(data);
    if let Ok(v) = T::decode(&mut d) {
        let again = T::decode_exact(&v.to_bytes(), "re-encoded").expect("re-encoding decodes");
        assert_eq!(again, v, "decode(encode(v)) != v");
    }
}

/// Ceph encoding types, chosen by the first byte.
pub fn encoding(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 8 {
        0 => roundtrip::<EntityAddr>(rest),
        1 => roundtrip::<EntityAddrvec>(rest),
        2 => roundtrip::<EntityName>(rest),
        3 => roundtrip::<UTime>(rest),
        4 => roundtrip::<String>(rest),
        5 => roundtrip::<Vec<u32>>(rest),
        6 => roundtrip::<std::collections::BTreeMap<String, Bytes>>(rest),
        _ => roundtrip::<Vec<(u64, Option<Vec<u8>>)>>(rest),
    }
}

/// A plaintext preamble: if it validates, it re-encodes to the same bytes.
pub fn preamble(data: &[u8]) {
    let Some(raw) = data.get(..PREAMBLE_LEN) else {
        return;
    };
    let raw: [u8; PREAMBLE_LEN] = raw.try_into().expect("length checked");
    if let Ok(p) = Preamble::decode(&raw) {
        assert_eq!(p.encode(), raw);
    }
}

/// A peer's banner, then negotiation against ours.
pub fn banner(data: &[u8]) {
    let Some(prefix) = data.get(..BANNER_PREFIX_LEN) else {
        return;
    };
    let prefix: [u8; BANNER_PREFIX_LEN] = prefix.try_into().expect("length checked");
    if let Ok(len) = Banner::decode_prefix(&prefix) {
        if let Some(payload) = data.get(BANNER_PREFIX_LEN..BANNER_PREFIX_LEN + len) {
            if let Ok(peer) = Banner::decode_payload(payload) {
                let _ = Banner::DEFAULT.negotiate(&peer);
            }
        }
    }
}

/// A control frame payload for the tag in the first byte.
pub fn control_payload(data: &[u8]) {
    let Some((&tag, rest)) = data.split_first() else {
        return;
    };
    let payload = Bytes::copy_from_slice(rest);
    if let Ok(c) = ControlFrame::decode(Tag(tag), &payload) {
        let again = ControlFrame::decode(c.tag(), &c.payload()).expect("re-encoding decodes");
        assert_eq!(again, c);
    }
}

/// A fixed connection secret for the secure-mode streams.
const SECRET: [u8; 64] = [0x42; 64];

/// A byte stream after the banner, in the mode the first byte picks (crc or
/// secure, msgr2.0 or 2.1, with or without accepting compression), fed in
/// pieces whose sizes come from the second byte; decoded frames are parsed
/// as control frames or messages.
pub fn frame_stream(data: &[u8]) {
    let [mode, step, rest @ ..] = data else {
        return;
    };
    let rev1 = mode & 1 != 0;
    let limits = FrameLimits {
        max_segment_len: 1 << 20,
        max_frame_len: 2 << 20,
        max_decompressed_len: 1 << 20,
    };
    let mut dec = FrameDecoder::new(rev1, limits);
    if mode & 2 != 0 {
        let keys = SecureKeys::from_connection_secret(&SECRET, Role::Acceptor).expect("64 bytes");
        dec.set_cipher(keys.ciphers(rev1).1);
    }
    if mode & 4 != 0 {
        dec.set_decompression(Algorithm::from_wire(((mode >> 3) % 4 + 1) as u32));
    }
    let mut reader = FrameReader::new(dec);
    let mut buf = bytes::BytesMut::new();
    let step = *step as usize + 1;
    for chunk in rest.chunks(step) {
        buf.extend_from_slice(chunk);
        loop {
            match reader.next_frame(&mut buf) {
                Ok(Some(f)) => {
                    if f.tag == Tag::MESSAGE {
                        let _ = MessageFrame::from_received(&f);
                    } else {
                        let _ = ControlFrame::from_received(&f);
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

/// A compressed segment for the algorithm in the first byte; what
/// decompresses stays within the cap.
pub fn decompress(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let alg = Algorithm::ALL[which as usize % Algorithm::ALL.len()];
    const CAP: usize = 1 << 20;
    if let Ok(out) = compression::decompress(alg, rest, CAP) {
        assert!(out.len() <= CAP);
    }
    // And the other direction, on the same bytes.
    let mut c = Vec::new();
    compression::compress(alg, rest, &mut c).expect("compression of any input");
    assert_eq!(
        compression::decompress(alg, &c, rest.len()).expect("own output"),
        rest
    );
}

/// A whole capture file through `msgr decode` (text or JSON output).
pub fn capture(data: &[u8]) {
    let mut out = Vec::new();
    let keys = msgr_inspect::KeyLog::default();
    let _ = msgr_inspect::decode::decode(data, &keys, data.len() % 2 == 0, &mut out);
}
