//! The loop's timer heap (a `Sleep` registers here while it waits).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::task::Waker;
use std::time::Instant;

/// The loop's timers: deadlines in a heap, each with the waker of the
/// `Sleep` that waits for it. A moved or dropped timer leaves its old
/// heap entry behind, skipped when it comes up.
#[derive(Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    pub(super) waiting: HashMap<u64, (Instant, Waker)>,
    next_id: u64,
}

impl Timers {
    pub(super) fn set(&mut self, id: Option<u64>, at: Instant, waker: &Waker) -> u64 {
        let id = id.unwrap_or_else(|| {
            self.next_id = self.next_id.wrapping_add(1);
            self.next_id
        });
        let moved = match self.waiting.get_mut(&id) {
            Some((deadline, w)) => {
                if !w.will_wake(waker) {
                    w.clone_from(waker);
                }
                std::mem::replace(deadline, at) != at
            }
            None => {
                self.waiting.insert(id, (at, waker.clone()));
                true
            }
        };
        if moved {
            self.heap.push(Reverse((at, id)));
        }
        id
    }

    pub(super) fn cancel(&mut self, id: u64) {
        self.waiting.remove(&id);
        if self.waiting.is_empty() {
            self.heap.clear();
        }
    }

    /// The wakers of every timer due at `now` (each once: it is
    /// forgotten), to wake once the timers are let go of.
    pub(super) fn due(&mut self, now: Instant) -> Vec<Waker> {
        let mut due = Vec::new();
        while let Some(&Reverse((at, id))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            if self.waiting.get(&id).is_some_and(|(d, _)| *d == at) {
                if let Some((_, w)) = self.waiting.remove(&id) {
                    due.push(w);
                }
            }
        }
        due
    }

    /// The earliest deadline still waited for.
    pub(super) fn next(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, id))) = self.heap.peek() {
            if self.waiting.get(&id).is_some_and(|(d, _)| *d == at) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }
}
