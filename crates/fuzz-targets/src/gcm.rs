//! The streaming AES-GCM context (msgr-gcm, the workspace's unsafe FFI)
//! against aws-lc-rs's one-shot seal, and its open and keystream against
//! the plaintext.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use bytes::BytesMut;
use msgr_gcm::GcmContext;

/// The first byte is how many of the next bytes are cut points (at most
/// 8); the rest is the plaintext, sealed in the pieces the cuts make, each
/// appended or, for odd cut values, encrypted in place. Ciphertext and tag
/// must be the one-shot seal's; the same context opens them back, reads
/// the first cut's prefix with the bare keystream, and refuses the
/// ciphertext with its last byte changed.
pub fn gcm_pieces(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = (n as usize % 9).min(rest.len());
    let (cut_bytes, plain) = rest.split_at(n);
    let mut cuts: Vec<usize> = cut_bytes
        .iter()
        .map(|&c| (c as usize * plain.len()) / 255)
        .collect();
    cuts.push(0);
    cuts.push(plain.len());
    cuts.sort_unstable();

    let key = [0x42u8; 16];
    let nonce = [7u8; 12];
    let mut gcm = GcmContext::new(&key).expect("context");
    let mut out = BytesMut::new();
    let mut s = gcm.begin(&nonce).expect("nonce");
    for (w, c) in cuts
        .windows(2)
        .zip(cut_bytes.iter().chain(std::iter::repeat(&0)))
    {
        let piece = &plain[w[0]..w[1]];
        if c % 2 == 1 {
            let at = out.len();
            out.extend_from_slice(piece);
            s.in_place(&mut out[at..]).expect("in place");
        } else {
            s.append(piece, &mut out).expect("append");
        }
    }
    let tag = s.finish().expect("tag");

    let k = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &key).expect("key"));
    let mut want = plain.to_vec();
    let want_tag = k
        .seal_in_place_separate_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut want)
        .expect("seal");
    assert_eq!(&out[..], &want[..], "ciphertext");
    assert_eq!(&tag[..], want_tag.as_ref(), "tag");

    let first = cuts.get(1).copied().unwrap_or(0);
    let mut prefix = out[..first].to_vec();
    gcm.keystream(&nonce, &mut prefix).expect("keystream");
    assert_eq!(&prefix[..], &plain[..first], "keystream prefix");
    let mut opened = out.to_vec();
    gcm.open(&nonce, &mut opened, &tag).expect("open");
    assert_eq!(&opened[..], plain, "opened");
    let mut altered = out.to_vec();
    if let Some(b) = altered.last_mut() {
        *b ^= 1;
        assert!(gcm.open(&nonce, &mut altered, &tag).is_err(), "altered");
    }
}
