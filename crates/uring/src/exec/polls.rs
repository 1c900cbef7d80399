//! The loop's readiness polls in flight (a `Ready` waits on one).

use std::collections::HashMap;
use std::task::Waker;

/// Readiness polls in flight: each waits for its completion, and one
/// whose `Ready` was dropped is forgotten when its completion comes.
#[derive(Default)]
pub(super) struct Polls {
    pub(super) waiting: HashMap<u64, PollState>,
    pub(super) next_id: u64,
}

pub(super) enum PollState {
    Waiting(Waker),
    Done(i32),
    Abandoned,
}

impl Polls {
    pub(super) fn done(&mut self, id: u64, res: i32) -> Option<Waker> {
        match self.waiting.remove(&id)? {
            PollState::Waiting(w) => {
                self.waiting.insert(id, PollState::Done(res));
                Some(w)
            }
            PollState::Done(_) | PollState::Abandoned => None,
        }
    }
}
