//! How the runner's loop runs ([`LoopOptions`]): each place where the suite can run it
//! otherwise than production is a named option whose default is production's (SPEC §8).

use std::time::Duration;

/// The poll delay: `interval` while fewer than `grow_after` consecutive idle lists, then
/// doubling per idle list (`interval · 2^(n − grow_after + 1)`), capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollDelay {
    pub interval: Duration,
    pub grow_after: u32,
    pub max: Duration,
}

impl PollDelay {
    /// Production's: 300 ms, growing after 5 idle lists, up to 1500 ms.
    pub(crate) const PRODUCTION: PollDelay =
        PollDelay { interval: Duration::from_millis(300), grow_after: 5, max: Duration::from_millis(1500) };

    /// The delay after `idle` consecutive idle lists (the current one included).
    pub fn after(&self, idle: u32) -> Duration {
        if idle < self.grow_after {
            return self.interval;
        }
        let doublings = (idle - self.grow_after + 1).min(20);
        self.interval.saturating_mul(1 << doublings).min(self.max).max(self.interval)
    }
}

crate::base::named! {
/// Which requests the loop remembers as handled (a strategy's `seen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeenScope {
    /// Every request name seen this turn (production): a reused id never runs twice.
    Turn,
    /// Only names in flight or awaiting their delete: a name seen again later runs again.
    InFlight,
}
names ["turn", "in-flight"]
}

crate::base::named! {
/// What a failed read of a request leads to (a strategy's `read_failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFailure {
    /// Answer `{ok:false,error}` under the file id and leave the file (production).
    Answer,
    /// Say nothing, forget the name and read it again on the next list.
    Retry,
}
names ["answer", "retry"]
}

crate::base::named! {
/// What a handler's pause writes (a strategy's `pause_answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseAnswer {
    /// Nothing: the turn ends and the writer is told out of band (production's default).
    None,
    /// `{"ok":true,"paused":true}` (production's other integration).
    Paused,
}
names ["none", "paused"]
}

/// How the loop runs; every default is production's (SPEC §8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopOptions {
    /// How long the loop waits between lists.
    pub poll: PollDelay,
    /// The wait on a healthy source that suspends polling (30 s).
    pub safety_wait: Duration,
    /// The loop's own bound on a wait is its timeout plus this (1 s).
    pub wait_margin: Duration,
    /// Await every pickup's read, stat and delete before the next wait.
    pub await_pickups: bool,
    /// Stat each request on pickup (pickup telemetry: one request per call).
    pub stat: bool,
    /// How long a handled request's name is remembered.
    pub seen: SeenScope,
    /// What a request that cannot be read gets.
    pub read_failure: ReadFailure,
    /// The answer a paused call gets.
    pub pause_answer: PauseAnswer,
    /// Sweep stale relay files before the first list.
    pub sweep: bool,
    /// Try a failed answer again on a schedule (production: one try; a failure drops it and
    /// the writer waits out its deadline). This machine's own failures (a full disk) are
    /// tried again either way: they are the run's, not the relay's.
    pub answer_retry: bool,
}

impl Default for LoopOptions {
    fn default() -> Self {
        LoopOptions {
            poll: PollDelay::PRODUCTION,
            safety_wait: Duration::from_secs(30),
            wait_margin: Duration::from_secs(1),
            await_pickups: true,
            stat: true,
            seen: SeenScope::Turn,
            read_failure: ReadFailure::Answer,
            pause_answer: PauseAnswer::None,
            sweep: true,
            answer_retry: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_poll_delay() {
        let ms = |v: &[u64]| v.iter().map(|m| Duration::from_millis(*m)).collect::<Vec<_>>();
        let got: Vec<Duration> = (0..10).map(|n| PollDelay::PRODUCTION.after(n)).collect();
        assert_eq!(got, ms(&[300, 300, 300, 300, 300, 600, 1200, 1500, 1500, 1500]));
        let fixed = PollDelay { interval: Duration::from_millis(50), grow_after: 5, max: Duration::from_millis(50) };
        assert!((0..100).all(|n| fixed.after(n) == Duration::from_millis(50)));
    }
}
