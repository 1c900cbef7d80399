//! The session's queue: one FIFO list per priority, highest priority
//! first (ProtocolV2's out_queue, a map of priority to list).
//!
//! The highest priority's list is held inline and the others in a vector:
//! a connection almost always uses one priority (requeued messages add a
//! second after a fault), so queueing and taking a message touch the
//! session and the list's buffer, not a vector's buffer besides. With
//! thousands of connections each line a message touches is a cache miss
//! (BENCHMARKS.md, "What grows with connections").

use std::collections::VecDeque;

pub(crate) struct Lists<T> {
    /// The highest priority's list; None only while `rest` is empty.
    head: Option<(u16, VecDeque<T>)>,
    /// Lower priorities', highest first.
    rest: Vec<(u16, VecDeque<T>)>,
}

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists {
            head: None,
            rest: Vec::new(),
        }
    }
}

impl<T> Lists<T> {
    /// The list of `priority`, made (in its place) if there is none.
    pub fn list(&mut self, priority: u16) -> &mut VecDeque<T> {
        match self.head.as_ref().map(|(p, _)| *p) {
            Some(p) if p > priority => return self.rest_list(priority),
            Some(p) if p == priority => {}
            // A higher priority (or the first): the head moves to the rest.
            _ => {
                if let Some(old) = self.head.replace((priority, VecDeque::new())) {
                    self.rest.insert(0, old);
                }
            }
        }
        &mut self
            .head
            .get_or_insert_with(|| (priority, VecDeque::new()))
            .1
    }

    /// The list of `priority`, below the head's, made if there is none.
    // `at` indexes `rest`: where the priority was found or its list was
    // just inserted (at most the length, before the insert).
    #[allow(clippy::indexing_slicing)]
    fn rest_list(&mut self, priority: u16) -> &mut VecDeque<T> {
        let at = self
            .rest
            .iter()
            .position(|(p, _)| *p <= priority)
            .unwrap_or(self.rest.len());
        if self.rest.get(at).is_none_or(|(p, _)| *p != priority) {
            self.rest.insert(at, (priority, VecDeque::new()));
        }
        &mut self.rest[at].1
    }

    /// Every list with its priority, highest first.
    fn lists_mut(&mut self) -> impl Iterator<Item = &mut (u16, VecDeque<T>)> {
        self.head.iter_mut().chain(&mut self.rest)
    }

    /// The list of `priority`, if there is one.
    pub fn get_mut(&mut self, priority: u16) -> Option<&mut VecDeque<T>> {
        self.lists_mut()
            .find(|(p, _)| *p == priority)
            .map(|(_, l)| l)
    }

    /// The lists, highest priority first.
    pub fn iter(&self) -> impl Iterator<Item = &VecDeque<T>> {
        self.head.iter().chain(&self.rest).map(|(_, l)| l)
    }

    /// What [`Lists::pop_front`] would take next.
    pub fn front(&self) -> Option<&T> {
        self.iter().find_map(|l| l.front())
    }

    /// The front of the highest priority's list that holds any (a list
    /// emptied lets go of a small buffer: msgr_frames::let_go_if_small).
    pub fn pop_front(&mut self) -> Option<T> {
        self.lists_mut().find_map(|(_, l)| {
            let item = l.pop_front()?;
            msgr_frames::let_go_if_small(l);
            Some(item)
        })
    }

    /// Drops every list.
    pub fn clear(&mut self) {
        *self = Lists::default();
    }

    /// Whether an empty list still holds a buffer, or the vector of lower
    /// priorities holds only empty ones: what [`Lists::trim`] lets go.
    pub fn holds_spare(&self) -> bool {
        self.iter().any(msgr_frames::holds_spare)
            || (self.rest.capacity() > 0 && self.rest.iter().all(|(_, l)| l.is_empty()))
    }

    /// Drops the empty lists and lets go of the vector's capacity when
    /// only the head is left (an idle connection's).
    pub fn trim(&mut self) {
        self.rest.retain(|(_, l)| !l.is_empty());
        if self.head.as_ref().is_some_and(|(_, l)| l.is_empty()) {
            self.head = match self.rest.is_empty() {
                true => None,
                false => Some(self.rest.remove(0)),
            };
        }
        if self.rest.is_empty() {
            self.rest = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(l: &mut Lists<u32>) -> Vec<u32> {
        std::iter::from_fn(|| l.pop_front()).collect()
    }

    #[test]
    fn lists_come_out_highest_priority_first_fifo_within() {
        let mut l = Lists::default();
        // Priorities arrive in every order: lower, higher (the head moves
        // to the rest), in between, equal to the head and to a rest's.
        for (prio, v) in [
            (127, 1),
            (200, 2),
            (127, 3),
            (64, 4),
            (150, 5),
            (200, 6),
            (64, 7),
        ] {
            l.list(prio).push_back(v);
        }
        assert_eq!(l.iter().map(|x| x.len()).collect::<Vec<_>>(), [2, 1, 2, 2]);
        assert_eq!(drain(&mut l), [2, 6, 5, 1, 3, 4, 7]);
    }

    #[test]
    fn one_priority_stays_in_the_head() {
        let mut l = Lists::default();
        for v in 0..5 {
            l.list(127).push_back(v);
        }
        assert!(l.rest.is_empty() && l.rest.capacity() == 0);
        // Looking for another priority's list makes none.
        assert!(l.get_mut(u16::MAX).is_none());
        assert!(l.rest.is_empty() && l.iter().count() == 1);
        assert_eq!(l.get_mut(127).map(|x| x.len()), Some(5));
        assert_eq!(drain(&mut l), [0, 1, 2, 3, 4]);
    }

    #[test]
    fn trim_keeps_what_is_queued_in_order_and_frees_the_rest() {
        let mut l = Lists::default();
        l.list(u16::MAX).push_back(1); // requeued after a fault
        l.list(127).push_back(2);
        l.list(64).push_back(3);
        assert_eq!(l.pop_front(), Some(1));
        l.trim();
        // The emptied head went; the next priority took its place.
        assert_eq!(l.head.as_ref().map(|(p, _)| *p), Some(127));
        assert_eq!(l.rest.len(), 1);
        l.list(u16::MAX).push_back(4);
        assert_eq!(drain(&mut l), [4, 2, 3]);
        assert!(l.holds_spare(), "the vector of lower priorities");
        l.trim();
        assert!(l.head.is_none() && l.rest.capacity() == 0);
        assert!(!l.holds_spare());
        // One priority a message at a time: its emptied list lets go.
        l.list(5).push_back(5);
        assert!(!l.holds_spare(), "in use");
        assert_eq!(l.pop_front(), Some(5));
        assert!(!l.holds_spare());
        l.list(5).push_back(6);
        l.clear();
        assert_eq!(l.iter().count(), 0);
    }
}
