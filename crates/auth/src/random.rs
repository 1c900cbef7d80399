//! Randomness as an input. Auth state machines draw challenges, nonces and
//! keys from a [`Random`] they are given, so tests can replay an exchange
//! byte for byte with [`SeededRandom`]; real use takes [`SystemRandom`].

use std::sync::Mutex;

/// A source of random bytes.
pub trait Random: Send + Sync {
    /// Fills `buf` with random bytes.
    fn fill(&self, buf: &mut [u8]);

    /// A random u64 (eight bytes of [`Random::fill`], little-endian).
    fn u64(&self) -> u64 {
        let mut b = [0u8; 8];
        self.fill(&mut b);
        u64::from_le_bytes(b)
    }
}

/// The operating system's CSPRNG.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemRandom;

impl Random for SystemRandom {
    fn fill(&self, buf: &mut [u8]) {
        fill(buf)
    }
}

/// Fills `buf` from the kernel's CSPRNG (/dev/urandom, i.e. getrandom's
/// pool). Not aws-lc's RAND: its first use in a process seeds a jitter
/// entropy collector, which costs tens of milliseconds of CPU on a busy
/// host — the first handshake's time.
pub fn fill(buf: &mut [u8]) {
    use std::io::Read;
    static URANDOM: std::sync::OnceLock<std::fs::File> = std::sync::OnceLock::new();
    let mut f = URANDOM
        .get_or_init(|| std::fs::File::open("/dev/urandom").expect("/dev/urandom is readable"));
    // Reads from /dev/urandom do not fail short of a broken system, which
    // leaves nothing safe to do.
    f.read_exact(buf).expect("reading /dev/urandom failed");
}

/// splitmix64: advances `state` and returns the next value. Deterministic
/// and fast, for cookies, seeds and tests; never for key material.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A deterministic generator for tests (splitmix64); never for real keys.
#[derive(Debug)]
pub struct SeededRandom(Mutex<u64>);

impl SeededRandom {
    /// A generator starting from `seed`: the same seed gives the same bytes.
    pub fn new(seed: u64) -> SeededRandom {
        SeededRandom(Mutex::new(seed))
    }
}

impl Random for SeededRandom {
    fn fill(&self, buf: &mut [u8]) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for chunk in buf.chunks_mut(8) {
            let z = splitmix64(&mut s).to_le_bytes();
            chunk.iter_mut().zip(z).for_each(|(b, z)| *b = z);
        }
    }
}
