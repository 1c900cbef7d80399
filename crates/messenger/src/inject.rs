//! Fault injection, compiled in and off by default: fail one socket
//! operation in N (Ceph's ms_inject_socket_failures) and delay operations
//! (ms_inject_delay_*), from a seeded generator so a run can be repeated.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Which faults to inject (Options::inject); none by default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InjectConfig {
    /// Fail one socket read or write in this many (0: never).
    pub socket_failures: u32,
    /// Delay one socket write in this many (0: never) ...
    pub delay_one_in: u32,
    /// ... by up to this long.
    pub delay_max: Duration,
}

/// The injector a messenger shares between its connections.
#[derive(Debug, Default)]
pub struct Injector {
    /// What it injects.
    pub config: InjectConfig,
    state: AtomicU64,
    /// Failures injected so far.
    pub failures: AtomicU64,
}

impl Injector {
    /// An injector of `config`'s faults, its choices drawn from `seed`.
    pub fn new(config: InjectConfig, seed: u64) -> Injector {
        Injector {
            config,
            state: AtomicU64::new(seed | 1),
            failures: AtomicU64::new(0),
        }
    }

    fn next(&self) -> u64 {
        // xorshift64*, advanced atomically.
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            let mut x = cur;
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            match self
                .state
                .compare_exchange_weak(cur, x, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return x.wrapping_mul(0x2545_f491_4f6c_dd1d),
                Err(seen) => cur = seen,
            }
        }
    }

    /// Whether this socket operation should fail.
    pub fn fail_now(&self) -> bool {
        let n = self.config.socket_failures;
        // One in n; none for n == 0, without touching the state every
        // shard's connections share.
        if n == 0 || self.next().checked_rem(n as u64) != Some(0) {
            return false;
        }
        self.failures.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// A delay to apply before this operation, if any.
    pub fn delay_now(&self) -> Option<Duration> {
        let n = self.config.delay_one_in;
        if self.config.delay_max.is_zero() || self.next().checked_rem(n as u64) != Some(0) {
            return None;
        }
        let max = self.config.delay_max.as_micros().max(1) as u64;
        Some(Duration::from_micros(
            self.next().checked_rem(max).unwrap_or(0),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_one_in_n() {
        let i = Injector::new(
            InjectConfig {
                socket_failures: 30,
                ..Default::default()
            },
            7,
        );
        let fails = (0..30_000).filter(|_| i.fail_now()).count();
        assert!((700..1300).contains(&fails), "{fails}");
        assert!(!Injector::default().fail_now());
    }
}
