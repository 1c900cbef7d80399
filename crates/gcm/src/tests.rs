use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use bytes::BytesMut;

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// aws-lc-rs's one-shot seal of the whole plaintext: the reference.
fn one_shot(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN], plain: &[u8]) -> (Vec<u8>, [u8; 16]) {
    let k = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, key).unwrap());
    let mut buf = plain.to_vec();
    let tag = k
        .seal_in_place_separate_tag(Nonce::assume_unique_for_key(*nonce), Aad::empty(), &mut buf)
        .unwrap();
    (buf, tag.as_ref().try_into().unwrap())
}

/// Seeded generator (xorshift64*), so a failing case can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn gcm_spec_test_case_3() {
    // McGrew and Viega, "The Galois/Counter Mode of Operation", test case 3
    // (AES-128, 96-bit IV, no AAD, four blocks).
    let key: [u8; 16] = hex("feffe9928665731c6d6a8f9467308308").try_into().unwrap();
    let nonce: [u8; 12] = hex("cafebabefacedbaddecaf888").try_into().unwrap();
    let plain = hex(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
         1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
    );
    let mut sealer = GcmSealer::new(&key).unwrap();
    let mut out = BytesMut::new();
    let mut s = sealer.begin(&nonce).unwrap();
    s.append(&plain[..7], &mut out).unwrap();
    s.append(&plain[7..40], &mut out).unwrap();
    s.append(&plain[40..], &mut out).unwrap();
    let tag = s.finish().unwrap();
    assert_eq!(
        out[..],
        hex(
            "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e\
             21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985"
        )[..]
    );
    assert_eq!(tag[..], hex("4d5c2af327cd64a62cf35abd2ba6fab4")[..]);
}

#[test]
fn empty_message_has_the_one_shot_tag() {
    let key = [1u8; 16];
    let nonce = [2u8; 12];
    let mut sealer = GcmSealer::new(&key).unwrap();
    let mut out = BytesMut::new();
    let mut s = sealer.begin(&nonce).unwrap();
    s.append(&[], &mut out).unwrap();
    assert_eq!(s.finish().unwrap(), one_shot(&key, &nonce, &[]).1);
    assert!(out.is_empty());
}

#[test]
fn any_split_matches_the_one_shot_seal() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let key: [u8; 16] = std::array::from_fn(|i| i as u8 * 7);
    let mut sealer = GcmSealer::new(&key).unwrap();
    for case in 0..400 {
        let len = match case % 10 {
            0 => (1 << 20) + rng.below(64),
            _ => rng.below(5000),
        };
        let plain: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let mut nonce = [0u8; 12];
        nonce[4..].copy_from_slice(&(case as u64).to_le_bytes());
        let (want, want_tag) = one_shot(&key, &nonce, &plain);

        // Up to six pieces at random cut points, each appended or, into
        // a prefix the buffer already holds, encrypted in place.
        let mut cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(len + 1)).collect();
        cuts.push(0);
        cuts.push(len);
        cuts.sort_unstable();
        let mut out = BytesMut::from(&b"prefix"[..]);
        let mut s = sealer.begin(&nonce).unwrap();
        for w in cuts.windows(2) {
            let piece = &plain[w[0]..w[1]];
            if rng.below(3) == 0 {
                let at = out.len();
                out.extend_from_slice(piece);
                s.in_place(&mut out[at..]).unwrap();
            } else {
                s.append(piece, &mut out).unwrap();
            }
        }
        let tag = s.finish().unwrap();
        assert_eq!(&out[..6], b"prefix", "case {case}");
        assert!(out[6..] == want[..], "case {case}: ciphertext differs");
        assert_eq!(tag, want_tag, "case {case}");
    }
}

#[test]
fn an_abandoned_message_leaves_no_trace() {
    let key = [9u8; 16];
    let mut sealer = GcmSealer::new(&key).unwrap();
    let mut scratch = BytesMut::new();
    // Started and left unfinished (the borrow ends with this block).
    {
        let mut s = sealer.begin(&[5; 12]).unwrap();
        s.append(&[1, 2, 3], &mut scratch).unwrap();
    }
    let mut out = BytesMut::new();
    let mut s = sealer.begin(&[6; 12]).unwrap();
    s.append(b"after", &mut out).unwrap();
    let tag = s.finish().unwrap();
    let (want, want_tag) = one_shot(&key, &[6; 12], b"after");
    assert_eq!(out[..], want[..]);
    assert_eq!(tag, want_tag);
}

#[test]
fn sealers_move_between_threads() {
    let key = [3u8; 16];
    let mut sealer = GcmSealer::new(&key).unwrap();
    let tag = std::thread::spawn(move || {
        let mut out = BytesMut::new();
        let mut s = sealer.begin(&[4; 12]).unwrap();
        s.append(b"moved", &mut out).unwrap();
        s.finish().unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(tag, one_shot(&key, &[4; 12], b"moved").1);
}
