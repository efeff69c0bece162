//! Activity sources: what wakes the runner's loop (SPEC §3, §8).
//!
//! A source is production's contract: `wait(timeout)` resolves as [`Wake::Activity`],
//! [`Wake::Timeout`] or [`Wake::Closed`]; `close()` ends it; `suspends_polling()` says
//! whether, while healthy, the runner waits a long safety bound instead of its poll delay;
//! `is_healthy()` turns false for good once a source is demoted or closed (the runner then
//! polls and never waits on it again); `note_miss()` is the runner telling it that a list
//! after a timed-out wait found work the source never signalled. Poll-only has no source.
//! The sources themselves live with their strategies ([`crate::strategy`]); this module
//! holds the contract and what they share: the [`Signal`], the backoff and jitter rules,
//! where they report ([`Reporter`]) and how requests carried by a source reach the runner
//! ([`Inbox`]).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::base::notice::Say;
use crate::base::rng::Rng;
use crate::base::BoxFut;
use crate::events::EventSink;

pub(crate) use crate::base::signal::Signal;
pub use crate::base::signal::Wake;

/// One runner's wake-up contract.
pub trait ActivitySource: Send + Sync {
    /// Waits for activity, at most `timeout`.
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake>;
    /// Resolves a held wait as `Closed`; later waits return `Closed` at once.
    fn close(&self);
    /// While healthy, the runner's polling is suspended behind a long safety wait.
    fn suspends_polling(&self) -> bool {
        false
    }
    /// False once demoted or closed: the runner then polls and no longer waits here.
    fn is_healthy(&self) -> bool;
    /// A list after a timed-out wait found requests this source never signalled. Returns
    /// whether the source counted it (as a failure of its watch, or by re-arming).
    fn note_miss(&self) -> bool {
        false
    }
    /// Closed, and nothing of it runs on (no abandoned exec, no timer): dropping it changes
    /// nothing. A source that cannot tell says no, and is kept until the case ends.
    fn finished(&self) -> bool {
        false
    }
}

/// Where a source (or the runner) says what happened to it, with a timestamp, so a fault's
/// report row can tell how a fault was detected and recovered from. It remembers the first
/// reason the relay dir's wakes degraded. A reporter without a sink stays quiet (tests).
#[derive(Debug, Clone, Default)]
pub struct Reporter {
    to: Option<(EventSink, u32)>,
    degraded: Arc<OnceLock<String>>,
}

impl Reporter {
    /// Notices of `sandbox`, sent on `sink`.
    pub fn new(sink: EventSink, sandbox: u32) -> Reporter {
        Reporter { to: Some((sink, sandbox)), degraded: Arc::default() }
    }

    pub(crate) fn say(&self, what: Say) {
        if what.degraded() {
            let _ = self.degraded.set(what.to_string());
        }
        if let Some((sink, sandbox)) = &self.to {
            sink.notice(*sandbox, what);
        }
    }

    /// The first thing said that degraded the wakes (a demotion, a watch lost).
    pub fn degraded(&self) -> Option<String> {
        self.degraded.get().cloned()
    }
}

/// Requests a source carried to the runner itself, as (name, bytes): the runner skips its
/// list and read for them (the inline window variant). Shared by the two, drained by the
/// runner before each list.
#[derive(Debug, Clone, Default)]
pub struct Inbox(Arc<Mutex<Vec<Carried>>>);

/// A request a source carried: its name and bytes.
pub(crate) type Carried = (String, Vec<u8>);

impl Inbox {
    pub fn put(&self, carried: impl IntoIterator<Item = Carried>) {
        self.0.lock().expect("inbox poisoned").extend(carried);
    }

    pub fn take(&self) -> Vec<Carried> {
        std::mem::take(&mut *self.0.lock().expect("inbox poisoned"))
    }
}

/// A duration scaled by a factor drawn uniformly from [0.8, 1.0] (production's jitter is
/// downward only).
pub(crate) fn jitter(d: Duration, rng: &mut Rng) -> Duration {
    d.mul_f64(0.8 + 0.2 * rng.unit())
}

/// The delay before the next arm after the `n`-th consecutive failure (n ≥ 1), before
/// jitter: `min` doubling per failure, capped at `max` (1 s, 2 s, 4 s, ... 30 s).
pub(crate) fn backoff(n: u32, min: Duration, max: Duration) -> Duration {
    min.saturating_mul(1u32 << n.saturating_sub(1).min(20)).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_sequence() {
        let s = Duration::from_secs;
        let seq: Vec<u64> = (1..9).map(|n| backoff(n, s(1), s(30)).as_secs()).collect();
        assert_eq!(seq, vec![1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[test]
    fn jitter_is_downward_only_and_uses_the_whole_range() {
        let mut rng = Rng::new(9);
        let (mut lo, mut hi) = (f64::MAX, 0.0f64);
        for _ in 0..10_000 {
            let j = jitter(Duration::from_secs(25), &mut rng).as_secs_f64();
            assert!((20.0..=25.0).contains(&j), "{j}");
            (lo, hi) = (lo.min(j), hi.max(j));
        }
        assert!(lo < 20.1 && hi > 24.9, "the whole [0.8, 1.0] range is used: {lo}..{hi}");
    }

    #[test]
    fn an_inbox_hands_over_once() {
        let i = Inbox::default();
        i.put([("a.req.json".to_owned(), b"{}".to_vec())]);
        assert_eq!(i.take().len(), 1);
        assert!(i.take().is_empty());
    }
}
