//! The streaming AES-GCM context (msgr-gcm, the workspace's unsafe FFI)
//! and ring's whole-message key against aws-lc-rs's one-shot seal, and
//! their opens and the keystream against the plaintext.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use bytes::BytesMut;
use msgr_gcm::{GcmContext, WholeKey};

/// The first byte is how many of the next bytes are cut points (at most
/// 8); the rest is the plaintext, sealed in the pieces the cuts make, each
/// appended or, for odd cut values, encrypted in place. Ciphertext and tag
/// must be the one-shot seal's; the same context opens them back, reads
/// the first cut's prefix with the bare keystream, and refuses the
/// ciphertext with its last byte changed. ring's key seals the same pieces
/// to the same bytes and opens and refuses alike.
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

    let whole = WholeKey::new(&key).expect("whole key");
    let pieces: Vec<&[u8]> = cuts.windows(2).map(|w| &plain[w[0]..w[1]]).collect();
    let mut sealed = BytesMut::new();
    whole
        .seal_pieces(&nonce, &pieces, &mut sealed)
        .expect("whole seal");
    let (ciphertext, whole_tag) = sealed.split_at_mut(plain.len());
    assert_eq!(&ciphertext[..], &want[..], "whole ciphertext");
    assert_eq!(&whole_tag[..], want_tag.as_ref(), "whole tag");
    let mut opened = want.clone();
    whole.open(&nonce, &mut opened, &tag).expect("whole open");
    assert_eq!(&opened[..], plain, "whole opened");
    let mut altered = want;
    if let Some(b) = altered.first_mut() {
        *b ^= 1;
        assert!(
            whole.open(&nonce, &mut altered, &tag).is_err(),
            "whole altered"
        );
        assert!(altered.iter().all(|&b| b == 0), "whole altered, zeroed");
    }
}
