//! The streaming AES-GCM sealer (msgr-gcm, the workspace's unsafe FFI)
//! against aws-lc-rs's one-shot seal.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use bytes::BytesMut;
use msgr_gcm::GcmSealer;

/// The first byte is how many of the next bytes are cut points (at most
/// 8); the rest is the plaintext, sealed in the pieces the cuts make, each
/// appended or, for odd cut values, encrypted in place. Ciphertext and tag
/// must be the one-shot seal's.
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
    let mut sealer = GcmSealer::new(&key).expect("context");
    let mut out = BytesMut::new();
    let mut s = sealer.begin(&nonce).expect("nonce");
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
}
