//! AES-128-GCM for msgr2 secure mode (src/msg/async/crypto_onwire.cc).
//!
//! Keys and nonces come from the connection secret the auth phase produced
//! (`rxtx_t::create_handler_pair`): bytes 0..16 are the key for both
//! directions, 16..28 the connector's receive nonce, 28..40 its transmit
//! nonce; the acceptor swaps the two (`crossed`).
//!
//! A nonce is `le32 fixed, le64 counter` and is used once, then advanced:
//! msgr2.0 increments the first four bytes (a 32-bit counter that can wrap),
//! msgr2.1 the last eight. Every GCM operation has no AAD and a 16-byte tag.
//!
//! CVE-2020-1759: the transmit side refuses to reuse its initial nonce after
//! a wrap ("out of nonces"), forcing a reconnect with fresh keys.
//!
//! One key, so one key schedule: a connection's two halves share it. Two
//! implementations, whichever is faster on the CPU (`msgr_gcm`'s
//! `whole_is_faster`; BENCHMARKS.md, "crc32c and AES-GCM without AVX-512"):
//! - aws-lc's [`GcmContext`] (about 900 bytes of aws-lc's memory), which
//!   streams a frame's pieces; the halves take turns with it under a lock,
//!   never contended (a connection encodes and decodes from one task),
//!   which makes the sharing safe wherever the halves go. msgr2.0 always
//!   takes it: its preamble is read with the bare keystream.
//! - ring's [`WholeKey`], one call over contiguous bytes, shared without a
//!   lock.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::BytesMut;
use msgr_gcm::{GcmContext, GcmError, WholeKey};

use crate::layout::GCM_TAG_LEN;
use crate::FrameError;

/// The AES-128-GCM key's length in bytes.
pub const KEY_LEN: usize = 16;
/// A GCM nonce's length in bytes.
pub const NONCE_LEN: usize = 12;
/// The shortest connection secret secure mode can use (key + two nonces).
pub const MIN_CONNECTION_SECRET_LEN: usize = KEY_LEN + 2 * NONCE_LEN;

/// Which end of the connection we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// We opened the connection (Ceph's "client" side of the handshake).
    Connector,
    /// We accepted it.
    Acceptor,
}

/// The key and initial nonces of one connection, from our point of view.
#[derive(Clone, PartialEq, Eq)]
pub struct SecureKeys {
    /// The AES-128-GCM key, the same both ways.
    pub key: [u8; KEY_LEN],
    /// The nonce our first frame is sealed with; each frame after it counts on from it.
    pub tx_nonce: [u8; NONCE_LEN],
    /// The nonce the peer's first frame is sealed with.
    pub rx_nonce: [u8; NONCE_LEN],
}

/// The key and nonces are wiped when dropped (Ceph wipes the nonces of its
/// handlers; the key schedule lives in aws-lc, which cleanses what it
/// frees).
impl Drop for SecureKeys {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.key.zeroize();
        self.tx_nonce.zeroize();
        self.rx_nonce.zeroize();
    }
}

impl std::fmt::Debug for SecureKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecureKeys(..)")
    }
}

impl SecureKeys {
    /// Derives the keys from a connection secret, as `create_handler_pair`.
    pub fn from_connection_secret(secret: &[u8], role: Role) -> Result<Self, FrameError> {
        // Key, then two nonces: MIN_CONNECTION_SECRET_LEN bytes at least.
        let too_short = || FrameError::BadConnectionSecret { len: secret.len() };
        let (key, rest) = secret.split_first_chunk().ok_or_else(too_short)?;
        let (first, rest) = rest.split_first_chunk().ok_or_else(too_short)?;
        let second = rest.first_chunk().ok_or_else(too_short)?;
        let (rx_nonce, tx_nonce) = match role {
            Role::Connector => (*first, *second),
            Role::Acceptor => (*second, *first),
        };
        Ok(SecureKeys {
            key: *key,
            tx_nonce,
            rx_nonce,
        })
    }

    /// The two ciphers of one end, sharing one key schedule; `rev1` picks
    /// the nonce counter layout.
    pub fn ciphers(&self, rev1: bool) -> (TxCipher, RxCipher) {
        self.ciphers_on(Engine::for_this_cpu(&self.key, rev1), rev1)
    }

    fn ciphers_on(&self, gcm: Shared, rev1: bool) -> (TxCipher, RxCipher) {
        (
            TxCipher {
                gcm: gcm.clone(),
                nonces: NonceSequence::new(self.tx_nonce, rev1),
            },
            RxCipher {
                gcm,
                nonces: NonceSequence::new(self.rx_nonce, rev1),
            },
        )
    }
}

/// A nonce sequence: hands out the current nonce and advances it.
#[derive(Clone)]
struct NonceSequence {
    current: [u8; NONCE_LEN],
    initial: [u8; NONCE_LEN],
    used_initial: bool,
    rev1: bool,
}

impl Drop for NonceSequence {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.current.zeroize();
        self.initial.zeroize();
    }
}

impl NonceSequence {
    fn new(initial: [u8; NONCE_LEN], rev1: bool) -> Self {
        NonceSequence {
            current: initial,
            initial,
            used_initial: false,
            rev1,
        }
    }

    fn advance(&mut self) {
        if self.rev1 {
            let mut c = [0u8; 8];
            c.copy_from_slice(&self.current[4..]);
            let next = u64::from_le_bytes(c).wrapping_add(1);
            self.current[4..].copy_from_slice(&next.to_le_bytes());
        } else {
            let mut c = [0u8; 4];
            c.copy_from_slice(&self.current[..4]);
            let next = u32::from_le_bytes(c).wrapping_add(1);
            self.current[..4].copy_from_slice(&next.to_le_bytes());
        }
    }

    /// The nonce for the next operation (reset_tx_handler), refusing the
    /// initial nonce a second time.
    fn next_checked(&mut self) -> Result<[u8; NONCE_LEN], FrameError> {
        if self.current == self.initial {
            if self.used_initial {
                return Err(FrameError::OutOfNonces);
            }
            self.used_initial = true;
        }
        let n = self.current;
        self.advance();
        Ok(n)
    }

    /// The nonce for the next operation, without the reuse check (the
    /// receive side, as in Ceph).
    fn next(&mut self) -> [u8; NONCE_LEN] {
        let n = self.current;
        self.advance();
        n
    }
}

/// The key schedule the two halves of a connection share, in the
/// implementation picked for it (one pointer in each half).
type Shared = Arc<Engine>;

/// The implementation a connection's key schedule is in.
enum Engine {
    /// aws-lc, streaming a frame's pieces; the halves take turns.
    Streaming(Mutex<GcmContext>),
    /// ring, over a message's contiguous bytes (boxed: its 544 bytes
    /// would make every connection's `Arc` that long, aws-lc's too).
    Whole(Box<WholeKey>),
}

impl Engine {
    /// The faster of the two here; msgr2.0 (not `rev1`) needs aws-lc's
    /// bare keystream.
    fn for_this_cpu(key: &[u8; KEY_LEN], rev1: bool) -> Shared {
        if rev1 && msgr_gcm::whole_is_faster() {
            Engine::whole(key)
        } else {
            Engine::streaming(key)
        }
    }

    fn streaming(key: &[u8; KEY_LEN]) -> Shared {
        // Only an allocation failure can stop a 16-byte AES-128 key.
        let gcm = GcmContext::new(key).expect("AES-128-GCM context");
        Arc::new(Engine::Streaming(Mutex::new(gcm)))
    }

    fn whole(key: &[u8; KEY_LEN]) -> Shared {
        // As above.
        let key = WholeKey::new(key).expect("AES-128-GCM key");
        Arc::new(Engine::Whole(Box::new(key)))
    }
}

/// The context, for one operation. A panic while it was held poisons the
/// lock but leaves nothing to distrust: every operation starts by setting
/// its own nonce and direction.
fn lock(gcm: &Mutex<GcmContext>) -> MutexGuard<'_, GcmContext> {
    gcm.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The transmit half: one nonce per operation. aws-lc's
/// [`msgr_gcm::GcmContext`] streams a frame's scattered pieces into the
/// send buffer (no gathering copy; see that crate); ring's
/// [`msgr_gcm::WholeKey`] gathers them there first.
pub struct TxCipher {
    gcm: Shared,
    nonces: NonceSequence,
}

impl TxCipher {
    /// A transmit half with a key schedule of its own (a connection's
    /// halves come from [`SecureKeys::ciphers`]).
    pub fn new(key: &[u8; KEY_LEN], nonce: [u8; NONCE_LEN], rev1: bool) -> Self {
        TxCipher {
            gcm: Engine::for_this_cpu(key, rev1),
            nonces: NonceSequence::new(nonce, rev1),
        }
    }

    /// Encrypts `in_out` in place and returns the tag to send after it.
    pub fn seal(&mut self, in_out: &mut [u8]) -> Result<[u8; GCM_TAG_LEN], FrameError> {
        let nonce = self.nonces.next_checked()?;
        if cfg!(all(fuzzing, feature = "fuzz-cipher")) {
            // Fuzz builds only: the identity, with a zero tag.
            return Ok([0u8; GCM_TAG_LEN]);
        }
        self.seal_with(nonce, in_out)
            .map_err(FrameError::CipherFailed)
    }

    fn seal_with(
        &self,
        nonce: [u8; NONCE_LEN],
        in_out: &mut [u8],
    ) -> Result<[u8; GCM_TAG_LEN], GcmError> {
        let gcm = match &*self.gcm {
            Engine::Whole(key) => return key.seal_in_place(&nonce, in_out),
            Engine::Streaming(gcm) => gcm,
        };
        let mut gcm = lock(gcm);
        let mut s = gcm.begin(&nonce)?;
        s.in_place(in_out)?;
        s.finish()
    }

    /// Seals the concatenation of `pieces` as one GCM operation: appends
    /// the ciphertext and then the tag to `out`, encrypting each piece from
    /// where it lies.
    pub fn seal_pieces(&mut self, pieces: &[&[u8]], out: &mut BytesMut) -> Result<(), FrameError> {
        let nonce = self.nonces.next_checked()?;
        if cfg!(all(fuzzing, feature = "fuzz-cipher")) {
            // Fuzz builds only: the identity, with a zero tag.
            pieces.iter().for_each(|p| out.extend_from_slice(p));
            out.extend_from_slice(&[0u8; GCM_TAG_LEN]);
            return Ok(());
        }
        let gcm = match &*self.gcm {
            Engine::Whole(key) => {
                return key
                    .seal_pieces(&nonce, pieces, out)
                    .map_err(FrameError::CipherFailed)
            }
            Engine::Streaming(gcm) => gcm,
        };
        let mut gcm = lock(gcm);
        let mut s = gcm.begin(&nonce).map_err(FrameError::CipherFailed)?;
        for piece in pieces {
            s.append(piece, out).map_err(FrameError::CipherFailed)?;
        }
        out.extend_from_slice(&s.finish().map_err(FrameError::CipherFailed)?);
        Ok(())
    }

    /// Test hook: moves the counter so that the nonce wraps after `n` more
    /// operations.
    #[cfg(test)]
    pub(crate) fn wrap_in(&mut self, n: u64) {
        self.nonces.used_initial = true;
        let mut cur = self.nonces.initial;
        if self.nonces.rev1 {
            let mut c = [0u8; 8];
            c.copy_from_slice(&cur[4..]);
            let v = u64::from_le_bytes(c).wrapping_sub(n);
            cur[4..].copy_from_slice(&v.to_le_bytes());
        } else {
            let mut c = [0u8; 4];
            c.copy_from_slice(&cur[..4]);
            let v = u32::from_le_bytes(c).wrapping_sub(n as u32);
            cur[..4].copy_from_slice(&v.to_le_bytes());
        }
        self.nonces.current = cur;
    }
}

/// The receive half: decrypts in place, one nonce per operation.
pub struct RxCipher {
    gcm: Shared,
    nonces: NonceSequence,
}

impl RxCipher {
    /// A receive half with a key schedule of its own (a connection's
    /// halves come from [`SecureKeys::ciphers`]).
    pub fn new(key: &[u8; KEY_LEN], nonce: [u8; NONCE_LEN], rev1: bool) -> Self {
        RxCipher {
            gcm: Engine::for_this_cpu(key, rev1),
            nonces: NonceSequence::new(nonce, rev1),
        }
    }

    /// Authenticates and decrypts `in_out`, whose last 16 bytes are the tag;
    /// returns the plaintext length (`in_out.len() - 16`). A frame that
    /// fails is left zeroed.
    pub fn open(&mut self, in_out: &mut [u8]) -> Result<usize, FrameError> {
        let nonce = self.nonces.next();
        let (body, tag) = in_out
            .split_last_chunk_mut::<GCM_TAG_LEN>()
            .ok_or(FrameError::DecryptFailed)?;
        #[cfg(all(fuzzing, feature = "fuzz-cipher"))]
        {
            // Fuzz builds only: the identity; the tag must be zero.
            let _ = nonce;
            return match *tag == [0; GCM_TAG_LEN] {
                true => Ok(body.len()),
                false => Err(FrameError::DecryptFailed),
            };
        }
        #[allow(unreachable_code)]
        let opened = match &*self.gcm {
            Engine::Whole(key) => key.open(&nonce, body, tag),
            Engine::Streaming(gcm) => lock(gcm).open(&nonce, body, tag),
        };
        match opened {
            Ok(()) => Ok(body.len()),
            Err(GcmError::Unauthentic) => Err(FrameError::DecryptFailed),
            Err(e) => Err(FrameError::CipherFailed(e)),
        }
    }

    /// Decrypts, without authenticating and without using up a nonce, the
    /// start of the ciphertext the next [`RxCipher::open`] will see, into
    /// `out` (as much as both hold). msgr2.0 secure mode needs this to
    /// learn a frame's length (msgr2 document, "msgr2.0-secure mode",
    /// issue 1); the frame is authenticated as a whole afterwards.
    pub fn peek(&self, ciphertext: &[u8], out: &mut [u8]) -> Result<(), FrameError> {
        // The common prefix of the two.
        let n = ciphertext.len().min(out.len());
        let (Some(out), Some(ciphertext)) = (out.get_mut(..n), ciphertext.get(..n)) else {
            return Ok(());
        };
        out.copy_from_slice(ciphertext);
        if cfg!(all(fuzzing, feature = "fuzz-cipher")) {
            return Ok(());
        }
        match &*self.gcm {
            Engine::Streaming(gcm) => lock(gcm)
                .keystream(&self.nonces.current, out)
                .map_err(FrameError::CipherFailed),
            // msgr2.0, the only mode that peeks, always streams.
            Engine::Whole(_) => Err(FrameError::CipherFailed(GcmError::NoKeystream)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        msgr_encoding::hex::decode(s).unwrap()
    }

    const SECRET: &[u8] = b"mock of crypto material for deriving key and nonce for AES GCM";
    const PLAIN: &[u8] = b"mock of plain text for AES GCM cipher";
    /// src/test/crypto_onwire.cc, AESGCMTxHandler.fits_recording:
    /// ciphertext then tag.
    const RECORDED: &str = "4da2a61ba52e200da33e566f368cf3431ae58155b2318c79e516aeab80abd9e4\
                            1391ad447df4919e370edca8b2c6ebf803e96242c5";

    fn recorded_pair(rev1: bool) -> (TxCipher, RxCipher) {
        // The test builds its handler from key = secret[0..16], nonce =
        // secret[16..28] for both directions.
        let key: [u8; 16] = SECRET[..16].try_into().unwrap();
        let nonce: [u8; 12] = SECRET[16..28].try_into().unwrap();
        (
            TxCipher::new(&key, nonce, rev1),
            RxCipher::new(&key, nonce, rev1),
        )
    }

    #[test]
    fn fits_cephs_recording() {
        let (mut tx, mut rx) = recorded_pair(false);
        let mut buf = PLAIN.to_vec();
        let tag = tx.seal(&mut buf).unwrap();
        buf.extend_from_slice(&tag);
        assert_eq!(buf, hex(RECORDED));
        // A second encryption uses the next nonce and differs.
        let mut again = PLAIN.to_vec();
        let tag2 = tx.seal(&mut again).unwrap();
        assert_ne!(again, buf[..PLAIN.len()]);
        assert_ne!(tag2, tag);

        let n = rx.open(&mut buf).unwrap();
        assert_eq!(&buf[..n], PLAIN);
    }

    #[test]
    fn nonce_increment_rules() {
        // msgr2.0: le32 at bytes 0..4; msgr2.1: le64 at bytes 4..12.
        let mut s0 = NonceSequence::new(*b"aterial for ", false);
        s0.next();
        assert_eq!(&s0.current, b"bterial for ");
        let mut s1 = NonceSequence::new(*b"aterial for ", true);
        s1.next();
        assert_eq!(&s1.current, b"aterjal for ");
    }

    #[test]
    fn mismatched_tag_fails() {
        let (_, mut rx) = recorded_pair(false);
        let mut buf = hex(RECORDED);
        let n = buf.len();
        buf[n - 16..].fill(0);
        assert_eq!(rx.open(&mut buf), Err(FrameError::DecryptFailed));
    }

    #[test]
    fn peek_reads_the_start_without_using_a_nonce() {
        let (_, mut rx) = recorded_pair(false);
        let mut buf = hex(RECORDED);
        let mut head = [0u8; 20];
        rx.peek(&buf[..20], &mut head).unwrap();
        assert_eq!(&head, &PLAIN[..20]);
        let n = rx.open(&mut buf).unwrap();
        assert_eq!(&buf[..n], PLAIN);
    }

    #[test]
    fn connector_and_acceptor_nonces_are_crossed() {
        let secret: Vec<u8> = (0..64).collect();
        let c = SecureKeys::from_connection_secret(&secret, Role::Connector).unwrap();
        let a = SecureKeys::from_connection_secret(&secret, Role::Acceptor).unwrap();
        assert_eq!(c.key, a.key);
        assert_eq!(c.tx_nonce, a.rx_nonce);
        assert_eq!(c.rx_nonce, a.tx_nonce);
        assert_eq!(c.rx_nonce[0], 16);
        assert_eq!(c.tx_nonce[0], 28);
        for rev1 in [false, true] {
            let (mut ctx, _) = c.ciphers(rev1);
            let (_, mut arx) = a.ciphers(rev1);
            for round in 0..5u8 {
                let mut buf = vec![round; 33];
                let tag = ctx.seal(&mut buf).unwrap();
                buf.extend_from_slice(&tag);
                let n = arx.open(&mut buf).unwrap();
                assert_eq!(buf[..n], vec![round; 33]);
            }
        }
        assert_eq!(
            SecureKeys::from_connection_secret(&secret[..39], Role::Connector),
            Err(FrameError::BadConnectionSecret { len: 39 })
        );
    }

    /// Each end's halves share one key schedule: a conversation in both
    /// directions, each end sealing between its peeks and opens.
    #[test]
    fn the_halves_of_an_end_take_turns_with_one_key_schedule() {
        let secret: Vec<u8> = (100..164).collect();
        let c = SecureKeys::from_connection_secret(&secret, Role::Connector).unwrap();
        let a = SecureKeys::from_connection_secret(&secret, Role::Acceptor).unwrap();
        for rev1 in [false, true] {
            let (mut ctx, mut crx) = c.ciphers(rev1);
            let (mut atx, mut arx) = a.ciphers(rev1);
            for round in 0..6u8 {
                let plain = vec![round; 40 + round as usize];
                let mut to_a = plain.clone();
                let tag = ctx.seal(&mut to_a).unwrap();
                to_a.extend_from_slice(&tag);
                let mut to_c = plain.clone();
                let tag = atx.seal(&mut to_c).unwrap();
                to_c.extend_from_slice(&tag);
                let mut head = [0u8; 32];
                if !rev1 {
                    arx.peek(&to_a, &mut head).unwrap();
                    assert_eq!(head[..], plain[..32]);
                }
                let n = arx.open(&mut to_a).unwrap();
                assert_eq!(to_a[..n], plain[..]);
                let mut more = plain.clone();
                let tag = ctx.seal(&mut more).unwrap();
                if !rev1 {
                    crx.peek(&to_c, &mut head).unwrap();
                    assert_eq!(head[..], plain[..32]);
                }
                let n = crx.open(&mut to_c).unwrap();
                assert_eq!(to_c[..n], plain[..]);
                more.extend_from_slice(&tag);
                let n = arx.open(&mut more).unwrap();
                assert_eq!(more[..n], plain[..]);
            }
        }
    }

    #[test]
    fn a_failed_open_leaves_the_frame_zeroed() {
        let (_, mut rx) = recorded_pair(true);
        let (mut tx, _) = recorded_pair(true);
        let mut buf = PLAIN.to_vec();
        let tag = tx.seal(&mut buf).unwrap();
        buf.extend_from_slice(&tag);
        buf[3] ^= 4;
        assert_eq!(rx.open(&mut buf), Err(FrameError::DecryptFailed));
        assert!(buf[..PLAIN.len()].iter().all(|&b| b == 0));
        assert_eq!(rx.open(&mut [0u8; 15]), Err(FrameError::DecryptFailed));
    }

    /// Both implementations, whichever this CPU picks, against each other:
    /// a frame sealed by one (whole, or from scattered pieces) opens with
    /// the other, and a tampered one fails on both, leaving zeros.
    #[test]
    fn the_two_implementations_interoperate() {
        let secret: Vec<u8> = (7..71).collect();
        let c = SecureKeys::from_connection_secret(&secret, Role::Connector).unwrap();
        let a = SecureKeys::from_connection_secret(&secret, Role::Acceptor).unwrap();
        let streaming = || Engine::streaming(&c.key);
        let engines = [
            (streaming(), Engine::whole(&a.key)),
            (Engine::whole(&c.key), streaming()),
        ];
        let (_, whole_rx) = a.ciphers_on(Engine::whole(&a.key), true);
        assert_eq!(
            whole_rx.peek(&[1, 2, 3], &mut [0; 3]),
            Err(FrameError::CipherFailed(GcmError::NoKeystream)),
            "ring's key has no bare keystream: msgr2.0 streams"
        );
        for (from, to) in engines {
            let (mut tx, _) = c.ciphers_on(from, true);
            let (_, mut rx) = a.ciphers_on(to, true);
            for len in [0usize, 1, 15, 16, 17, 4096, 70000] {
                let plain: Vec<u8> = (0..len).map(|i| (i * 13 + len) as u8).collect();
                let mut whole = plain.clone();
                let tag = tx.seal(&mut whole).unwrap();
                whole.extend_from_slice(&tag);
                let n = rx.open(&mut whole).unwrap();
                assert_eq!(whole[..n], plain[..], "whole, {len} bytes");

                let cut = len / 3;
                let (head, rest) = plain.split_at(cut);
                let (mid, tail) = rest.split_at(rest.len() / 2);
                let mut out = BytesMut::from(&b"before"[..]);
                tx.seal_pieces(&[head, mid, tail], &mut out).unwrap();
                assert_eq!(&out[..6], b"before");
                let mut sealed = out[6..].to_vec();
                assert_eq!(sealed.len(), len + GCM_TAG_LEN);
                let n = rx.open(&mut sealed).unwrap();
                assert_eq!(sealed[..n], plain[..], "pieces, {len} bytes");

                let mut bad = plain.clone();
                let tag = tx.seal(&mut bad).unwrap();
                bad.extend_from_slice(&tag);
                let last = bad.len() - 1;
                bad[last] ^= 1;
                assert_eq!(rx.open(&mut bad), Err(FrameError::DecryptFailed));
                assert!(bad[..len].iter().all(|&b| b == 0), "{len} bytes");
            }
        }
    }

    #[test]
    fn refuses_to_reuse_the_initial_nonce() {
        for rev1 in [false, true] {
            let (mut tx, _) = recorded_pair(rev1);
            tx.wrap_in(2);
            let mut buf = [0u8; 16];
            tx.seal(&mut buf).unwrap();
            tx.seal(&mut buf).unwrap();
            assert_eq!(tx.seal(&mut buf), Err(FrameError::OutOfNonces));
        }
    }
}
