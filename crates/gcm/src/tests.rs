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

/// A plaintext (one case in ten over 1 MiB, the others under 5000 bytes)
/// and a nonce of its own for case `case`.
fn random_case(rng: &mut Rng, case: usize) -> (Vec<u8>, [u8; NONCE_LEN]) {
    let len = match case % 10 {
        0 => (1 << 20) + rng.below(64),
        _ => rng.below(5000),
    };
    let plain: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
    let mut nonce = [0u8; NONCE_LEN];
    nonce[4..].copy_from_slice(&(case as u64).to_le_bytes());
    (plain, nonce)
}

/// Up to six random cut points in `0..=len`, with both ends, in order.
fn random_cuts(rng: &mut Rng, len: usize) -> Vec<usize> {
    let mut cuts: Vec<usize> = (0..rng.below(6)).map(|_| rng.below(len + 1)).collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts
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
    let mut sealer = GcmContext::new(&key).unwrap();
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
    let mut sealer = GcmContext::new(&key).unwrap();
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
    let mut sealer = GcmContext::new(&key).unwrap();
    for case in 0..400 {
        let (plain, nonce) = random_case(&mut rng, case);
        let len = plain.len();
        let (want, want_tag) = one_shot(&key, &nonce, &plain);

        // Up to six pieces at random cut points, each appended or, into
        // a prefix the buffer already holds, encrypted in place.
        let cuts = random_cuts(&mut rng, len);
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
    let mut sealer = GcmContext::new(&key).unwrap();
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
fn contexts_move_between_threads() {
    let key = [3u8; 16];
    let mut sealer = GcmContext::new(&key).unwrap();
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

/// aws-lc-rs's one-shot open: the reference.
fn one_shot_open(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN], sealed: &[u8]) -> Option<Vec<u8>> {
    let k = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, key).unwrap());
    let mut buf = sealed.to_vec();
    let n = k
        .open_in_place(Nonce::assume_unique_for_key(*nonce), Aad::empty(), &mut buf)
        .ok()?
        .len();
    buf.truncate(n);
    Some(buf)
}

#[test]
fn gcm_spec_test_case_3_opens() {
    let key: [u8; 16] = hex("feffe9928665731c6d6a8f9467308308").try_into().unwrap();
    let nonce: [u8; 12] = hex("cafebabefacedbaddecaf888").try_into().unwrap();
    let mut buf = hex(
        "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e\
         21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985",
    );
    let tag: [u8; 16] = hex("4d5c2af327cd64a62cf35abd2ba6fab4").try_into().unwrap();
    GcmContext::new(&key)
        .unwrap()
        .open(&nonce, &mut buf, &tag)
        .unwrap();
    assert_eq!(
        buf,
        hex(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
             1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
        )
    );
}

/// One context sealing and opening in turn, as a connection's two
/// directions share it: every result is what separate one-shot keys give.
#[test]
fn seals_and_opens_interleaved_on_one_context() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let key: [u8; 16] = std::array::from_fn(|i| 0xa0 ^ i as u8);
    let mut gcm = GcmContext::new(&key).unwrap();
    for case in 0..300u64 {
        let len = match case % 25 {
            0 => (1 << 20) + rng.below(64),
            _ => rng.below(5000),
        };
        let plain: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&case.to_le_bytes());
        let (sealed, tag) = one_shot(&key, &nonce, &plain);
        // The other direction's next seal, between this one's steps.
        let mut other = nonce;
        other[11] = 0xff;
        let (want_other, want_other_tag) = one_shot(&key, &other, &plain);
        let mut out = BytesMut::new();
        let mut s = gcm.begin(&other).unwrap();
        s.append(&plain, &mut out).unwrap();
        assert_eq!(s.finish().unwrap(), want_other_tag, "case {case}");
        assert!(out[..] == want_other[..], "case {case}");

        let mut buf = sealed.clone();
        gcm.open(&nonce, &mut buf, &tag).unwrap();
        assert!(buf == plain, "case {case}: plaintext differs");
        let mut with_tag = sealed;
        with_tag.extend_from_slice(&tag);
        assert_eq!(
            one_shot_open(&key, &nonce, &with_tag).as_ref(),
            Some(&plain)
        );
    }
}

#[test]
fn an_altered_message_is_unauthentic_and_left_zeroed() {
    let key = [0x11u8; 16];
    let nonce = [0x22u8; 12];
    let plain: Vec<u8> = (0..100u8).collect();
    let (sealed, tag) = one_shot(&key, &nonce, &plain);
    let mut gcm = GcmContext::new(&key).unwrap();
    for bit in [0usize, 7, 8 * 50 + 3, 8 * 99 + 7] {
        let mut buf = sealed.clone();
        buf[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(gcm.open(&nonce, &mut buf, &tag), Err(GcmError::Unauthentic));
        assert!(
            buf.iter().all(|&b| b == 0),
            "bit {bit}: plaintext left behind"
        );
    }
    let mut bad_tag = tag;
    bad_tag[15] ^= 0x80;
    let mut buf = sealed.clone();
    assert_eq!(
        gcm.open(&nonce, &mut buf, &bad_tag),
        Err(GcmError::Unauthentic)
    );
    let mut buf = sealed.clone();
    assert_eq!(
        gcm.open(&[0x23; 12], &mut buf, &tag),
        Err(GcmError::Unauthentic)
    );
    // A failed open leaves the context usable.
    let mut buf = sealed;
    gcm.open(&nonce, &mut buf, &tag).unwrap();
    assert_eq!(buf, plain);
}

#[test]
fn the_keystream_reads_a_prefix_before_the_tag() {
    let key = [0x33u8; 16];
    let nonce = [0x44u8; 12];
    let plain: Vec<u8> = (0..200u8).rev().collect();
    let (sealed, tag) = one_shot(&key, &nonce, &plain);
    let mut gcm = GcmContext::new(&key).unwrap();
    for n in [0, 1, 16, 32, 33, 200] {
        let mut prefix = sealed[..n].to_vec();
        gcm.keystream(&nonce, &mut prefix).unwrap();
        assert_eq!(prefix[..], plain[..n], "{n} bytes");
    }
    // Reading ahead does not disturb the open that follows.
    let mut buf = sealed;
    gcm.open(&nonce, &mut buf, &tag).unwrap();
    assert_eq!(buf, plain);
}

/// ring's whole-message key: the spec's test case 3, sealed from pieces and
/// opened; an empty message; random lengths and cuts against aws-lc-rs's
/// one-shot seal; an altered message refused and zeroed.
#[test]
fn the_whole_key_matches_the_spec_and_the_one_shot_seal() {
    let key: [u8; 16] = hex("feffe9928665731c6d6a8f9467308308").try_into().unwrap();
    let nonce: [u8; 12] = hex("cafebabefacedbaddecaf888").try_into().unwrap();
    let plain = hex(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72\
         1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
    );
    let whole = WholeKey::new(&key).unwrap();
    let mut out = BytesMut::from(&b"head"[..]);
    whole
        .seal_pieces(
            &nonce,
            &[&plain[..7], &plain[7..40], &plain[40..]],
            &mut out,
        )
        .unwrap();
    let mut want = b"head".to_vec();
    want.extend(hex(
        "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e\
         21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985\
         4d5c2af327cd64a62cf35abd2ba6fab4",
    ));
    assert_eq!(out[..], want[..]);
    let (body, tag) = out[4..].split_at_mut(plain.len());
    whole
        .open(&nonce, body, &tag[..].try_into().unwrap())
        .unwrap();
    assert_eq!(body[..], plain[..]);

    let mut empty = BytesMut::new();
    whole.seal_pieces(&nonce, &[], &mut empty).unwrap();
    assert_eq!(empty[..], one_shot(&key, &nonce, &[]).1[..]);

    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..200 {
        let (plain, nonce) = random_case(&mut rng, case);
        let len = plain.len();
        let (want, want_tag) = one_shot(&key, &nonce, &plain);
        let cuts = random_cuts(&mut rng, len);
        let pieces: Vec<&[u8]> = cuts.windows(2).map(|w| &plain[w[0]..w[1]]).collect();
        let mut out = BytesMut::new();
        whole.seal_pieces(&nonce, &pieces, &mut out).unwrap();
        assert!(out[..len] == want[..], "case {case}: ciphertext differs");
        assert_eq!(out[len..], want_tag[..], "case {case}");

        let mut in_place = plain.clone();
        assert_eq!(
            whole.seal_in_place(&nonce, &mut in_place).unwrap(),
            want_tag
        );
        assert!(in_place == want, "case {case}: in place");

        if len > 0 {
            let at = rng.below(len);
            in_place[at] ^= 0x40;
            assert_eq!(
                whole.open(&nonce, &mut in_place, &want_tag),
                Err(GcmError::Unauthentic)
            );
            assert!(in_place.iter().all(|&b| b == 0), "case {case}: not zeroed");
        }
    }
}

#[test]
fn a_whole_key_is_small() {
    // What a secure connection holds for its key schedule (boxed, behind
    // the `Arc` its halves share): under 1 KiB, as aws-lc's context.
    assert!(
        std::mem::size_of::<WholeKey>() <= 1024,
        "{}",
        std::mem::size_of::<WholeKey>()
    );
}
