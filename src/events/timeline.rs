//! Joining the two halves of a call's timeline: the writer's and the runner's arrive in
//! either order, each once, and a call is whole when both are in. The recorder joins them
//! to fold a call into its histograms; `calls.csv` to write its row.

use std::collections::hash_map::Entry;
use std::hash::Hash;
use std::mem::discriminant;

use foldhash::HashMap;

use crate::events::{RunnerSide, WriterSide};

/// The half of a call's timeline that arrived first, waiting for the other.
#[derive(Debug)]
enum Half {
    Writer(WriterSide),
    Runner(RunnerSide),
}

/// Calls with one half of their timeline in, by key. A second half of the same side
/// replaces the first.
#[derive(Debug, Default)]
pub(crate) struct Halves<K> {
    waiting: HashMap<K, Half>,
}

impl<K: Hash + Eq> Halves<K> {
    /// `mine` waits for the other side's half of `key`, or takes it if that was waiting (the
    /// call is whole and forgotten).
    fn meet(&mut self, key: K, mine: Half) -> Option<Half> {
        match self.waiting.entry(key) {
            Entry::Occupied(o) if discriminant(o.get()) != discriminant(&mine) => Some(o.remove()),
            e => {
                e.insert_entry(mine);
                None
            }
        }
    }

    /// The writer's half of `key`: the runner's, if it was waiting (the call is whole and
    /// forgotten); else `w` waits for it.
    pub(crate) fn writer(&mut self, key: K, w: &WriterSide) -> Option<RunnerSide> {
        match self.meet(key, Half::Writer(w.clone()))? {
            Half::Runner(r) => Some(r),
            Half::Writer(_) => unreachable!("met a runner half"),
        }
    }

    /// The runner's half of `key`: the writer's, if it was waiting (the call is whole and
    /// forgotten); else `r` waits for it.
    pub(crate) fn runner(&mut self, key: K, r: &RunnerSide) -> Option<WriterSide> {
        match self.meet(key, Half::Runner(r.clone()))? {
            Half::Writer(w) => Some(w),
            Half::Runner(_) => unreachable!("met a writer half"),
        }
    }

    /// Forgets `key`'s waiting half (its call ended without the other); returns the
    /// runner's, if that is what waited (it answered a call its writer gave up on).
    pub(crate) fn forget(&mut self, key: &K) -> Option<RunnerSide> {
        match self.waiting.remove(key) {
            Some(Half::Runner(r)) => Some(r),
            _ => None,
        }
    }

    /// Calls whose writer half waits for a runner half that never came.
    pub(crate) fn writers_waiting(&self) -> u64 {
        self.waiting.values().filter(|h| matches!(h, Half::Writer(_))).count() as u64
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}
