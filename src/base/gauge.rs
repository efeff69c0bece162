//! Values over time: requests in flight, execs held, turns healthy. A [`Level`] is one
//! thing's current value (one sandbox's held execs, the organisation's); a [`Tally`] is
//! where levels settle: the time each value was held, as a histogram of microseconds per
//! value (so its percentiles are time-weighted: p99 is the value the level stayed at or
//! below 99 % of the time), the maximum, and the area under the curve (value × time) for the
//! time-weighted mean. Several levels may settle into one tally (every sandbox's held execs:
//! the per-sandbox distribution). Settling is a few arithmetic operations and one histogram
//! record, so a gauge can sit on every request of a fleet.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// One thing's value over time, settled into a [`Tally`] at every change.
#[derive(Debug, Clone)]
pub struct Level {
    value: u64,
    since: Instant,
}

impl Level {
    /// A level at 0 from `at`.
    pub fn new(at: Instant) -> Level {
        Level { value: 0, since: at }
    }

    /// The current value.
    pub fn value(&self) -> u64 {
        self.value
    }

    /// Settles the time since the last change into `tally`, then sets the value to `to`.
    pub fn set(&mut self, to: u64, now: Instant, tally: &mut Tally) {
        tally.settle(self.value, now.saturating_duration_since(self.since));
        self.since = now.max(self.since);
        self.value = to;
        tally.max = tally.max.max(to);
        tally.window_max = tally.window_max.max(to);
    }

    pub(crate) fn add(&mut self, delta: u64, now: Instant, tally: &mut Tally) {
        self.set(self.value + delta, now, tally);
    }

    pub(crate) fn sub(&mut self, delta: u64, now: Instant, tally: &mut Tally) {
        self.set(self.value.saturating_sub(delta), now, tally);
    }

    /// Starts the level's clock again at `at` (a new measuring period): the time before it is
    /// settled nowhere.
    pub fn restart(&mut self, at: Instant) {
        self.since = at.max(self.since);
    }

    /// Settles up to `now` without changing the value (before the tally is read).
    pub fn settle(&mut self, now: Instant, tally: &mut Tally) {
        let v = self.value;
        self.set(v, now, tally);
    }
}

/// The time-weighted record of one or more [`Level`]s.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Microseconds spent at each value.
    time_at: Histogram<u64>,
    /// Value × nanoseconds, summed.
    area: u128,
    /// Nanoseconds settled (summed over every level that settles here).
    span: u128,
    max: u64,
    /// The maximum since [`Tally::take_window_max`] last read it (for timelines).
    window_max: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            time_at: Histogram::new_with_bounds(1, 1 << 24, 3).expect("valid gauge histogram bounds"),
            area: 0,
            span: 0,
            max: 0,
            window_max: 0,
        }
    }
}

impl Tally {
    fn settle(&mut self, value: u64, dt: Duration) {
        if dt.is_zero() {
            return;
        }
        let ns = dt.as_nanos();
        self.area += u128::from(value) * ns;
        self.span += ns;
        let us = (ns / 1000).max(1) as u64;
        let _ = self.time_at.record_n(value.min(self.time_at.high()), us);
    }

    /// The highest value since the last call (the current values of the levels included by
    /// the caller, who settles them first), reset to `floor`.
    pub(crate) fn take_window_max(&mut self, floor: u64) -> u64 {
        std::mem::replace(&mut self.window_max, floor)
    }

    /// Its statistics: max, time-weighted mean and percentiles.
    pub fn stats(&self) -> GaugeStats {
        let q = |q: f64| if self.time_at.is_empty() { 0 } else { self.time_at.value_at_quantile(q) };
        GaugeStats {
            max: self.max,
            mean: if self.span == 0 { 0.0 } else { (self.area as f64 / self.span as f64 * 1e4).round() / 1e4 },
            p50: q(0.5),
            p99: q(0.99),
        }
    }
}

/// A gauge's figures over a case.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GaugeStats {
    pub max: u64,
    /// Time-weighted, to four decimals (a per-sandbox mean is a fraction of one).
    pub mean: f64,
    /// The value it stayed at or below half the time / 99 % of the time.
    pub p50: u64,
    pub p99: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn percentiles_and_mean_are_weighted_by_time() {
        let t0 = Instant::now();
        let mut tally = Tally::default();
        let mut l = Level::new(t0);
        // 0 for 1 s, 10 for 98 s, 100 for 1 s.
        l.set(10, t0 + Duration::from_secs(1), &mut tally);
        l.set(100, t0 + Duration::from_secs(99), &mut tally);
        l.settle(t0 + Duration::from_secs(100), &mut tally);
        let s = tally.stats();
        assert_eq!((s.max, s.p50, s.p99), (100, 10, 10), "{s:?}");
        assert_eq!(s.mean, (98.0 * 10.0 + 100.0) / 100.0);
        assert_eq!(tally.take_window_max(l.value()), 100);
        assert_eq!(tally.take_window_max(0), 100, "reset to the floor given");
    }

    #[tokio::test(start_paused = true)]
    async fn several_levels_pool_into_one_distribution() {
        let t0 = Instant::now();
        let mut tally = Tally::default();
        let (mut a, mut b) = (Level::new(t0), Level::new(t0));
        a.set(1, t0, &mut tally);
        let t1 = t0 + Duration::from_secs(10);
        a.settle(t1, &mut tally);
        b.settle(t1, &mut tally);
        let s = tally.stats();
        assert_eq!(s.mean, 0.5, "one of two sandboxes held one exec all along");
        assert_eq!(s.max, 1);
    }
}
