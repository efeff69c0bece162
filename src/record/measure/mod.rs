//! What the recorder measures of every call: the [`CallMeasure`]s of [`MEASURES`] (SPEC
//! §4's measures and the parts a call's time splits into), a [`Measure`] naming one of them,
//! and the summary statistics read from a measure's HDR histogram ([`LatencyStats`]).
//!
//! A measure is one registered implementation: the recorder records it from each call's
//! instants ([`CallTimes`]), summary.json keeps its statistics under its name, a gate reads
//! `<name>.<stat>`, repeats take its medians, `hdr/` writes its histogram, and summary.md
//! gives it a row when it has one ([`CallMeasure::row`]). Nothing else names it.

mod builtin;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A measure taken of every call: a duration between two of its instants.
pub(crate) trait CallMeasure: Sync {
    /// Its name: its key in summary.json's `latency_us`, the `<name>` of a gate's
    /// `<name>.<stat>`, its `hdr/<case>/<name>.hgrm`. Lower case, `_` between words.
    fn name(&self) -> &'static str;

    /// What it times, in a line (`relay-bench list`).
    fn about(&self) -> &'static str;

    /// Its label in summary.md's latency table; `None`: recorded, kept and gated, not a row.
    fn row(&self) -> Option<&'static str> {
        None
    }

    /// Whether summary.json keeps it in `latency_us` (else beside it, as `<name>_us`).
    fn in_latency_us(&self) -> bool {
        true
    }

    /// Its value for one call in nanoseconds, or `None` when the call does not show it (a
    /// black-box runner's wake, an answer never read). Recorded as at least 1 ns.
    fn of(&self, call: &CallTimes) -> Option<u64>;
}

/// Every measure, in the order summary.json and summary.md list them. A new measure is a
/// unit struct implementing [`CallMeasure`] and a line here.
pub(crate) const MEASURES: &[&dyn CallMeasure] = &[
    &builtin::Wake,
    &builtin::Pickup,
    &builtin::Completion,
    &builtin::CompletionUncorrected,
    &builtin::RelayOverhead,
    &builtin::ScheduleLag,
    &builtin::Handler,
    &builtin::AnswerPublish,
    &builtin::Hop1,
    #[cfg(test)]
    &tests::Turnaround,
];

/// How many measures there are.
pub(crate) const COUNT: usize = MEASURES.len();

/// One of [`MEASURES`], by its place there.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Measure(u8);

impl Measure {
    /// The measures the rest of the suite names, by their place in [`MEASURES`]
    /// (`the_named_measures_are_in_place` holds them to it).
    /// Request published -> the runner's wait returned.
    pub const WAKE: Measure = Measure(0);
    /// Request published -> the handler started.
    pub const PICKUP: Measure = Measure(1);
    /// Intended start -> answer read.
    pub const COMPLETION: Measure = Measure(2);
    /// Actual start -> answer read.
    pub const COMPLETION_UNCORRECTED: Measure = Measure(3);
    /// Uncorrected completion minus the handler's time.
    pub const RELAY_OVERHEAD: Measure = Measure(4);
    /// Intended start -> actual start.
    pub const SCHEDULE_LAG: Measure = Measure(5);
    /// Handler start -> end.
    pub const HANDLER: Measure = Measure(6);
    /// Handler end -> the answer's rename.
    pub const ANSWER_PUBLISH: Measure = Measure(7);
    /// The answer's rename -> read by the writer.
    pub const HOP1: Measure = Measure(8);

    /// SPEC §4's three measures, the ones every table shows.
    pub const SPEC: [Measure; 3] = [Measure::WAKE, Measure::PICKUP, Measure::COMPLETION];

    /// Every measure, in registry order.
    pub(crate) fn all() -> impl Iterator<Item = Measure> + Clone {
        (0..COUNT as u8).map(Measure)
    }

    fn def(self) -> &'static dyn CallMeasure {
        MEASURES[self.0 as usize]
    }

    /// Its place in [`MEASURES`].
    pub(crate) fn index(self) -> usize {
        self.0 as usize
    }

    /// Its name (summary.json's key, a gate's `<name>.<stat>`).
    pub fn name(self) -> &'static str {
        self.def().name()
    }

    /// What it times, in a line.
    pub(crate) fn about(self) -> &'static str {
        self.def().about()
    }

    /// Its label in summary.md's latency table, if it has a row.
    pub(crate) fn row(self) -> Option<&'static str> {
        self.def().row()
    }

    /// Whether summary.json keeps it in `latency_us`.
    pub(crate) fn in_latency_us(self) -> bool {
        self.def().in_latency_us()
    }

    pub(crate) fn from_name(s: &str) -> Option<Measure> {
        Measure::all().find(|m| m.name() == s)
    }
}

impl std::fmt::Debug for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A call's instants, as nanoseconds from its intended start (the writer's and the runner's
/// halves joined), what every measure is computed from.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CallTimes {
    /// The writer started the call.
    pub started: i64,
    /// The request was published (renamed into the dir).
    pub published: Option<i64>,
    /// The runner's wait returned.
    pub woke: i64,
    /// The runner is a black box: seen from outside, so `woke` is not known.
    pub observed: bool,
    pub handler_start: i64,
    pub handler_end: i64,
    /// The handler's start and end are the tool's own (not a black box's guess).
    pub handler_known: bool,
    /// The answer's rename completed.
    pub answered: Option<i64>,
    /// The writer read the answer.
    pub read: Option<i64>,
}

impl CallTimes {
    /// `to - from`, floored at zero; `None` if either is unknown.
    pub(crate) fn between(from: Option<i64>, to: Option<i64>) -> Option<u64> {
        Some(to?.saturating_sub(from?).max(0) as u64)
    }

    /// The handler's time.
    pub(crate) fn handler(&self) -> Option<u64> {
        CallTimes::between(Some(self.handler_start), Some(self.handler_end))
    }

    /// The writer's start -> the answer read.
    pub(crate) fn uncorrected(&self) -> Option<u64> {
        CallTimes::between(Some(self.started), self.read)
    }
}

pub(crate) use crate::base::units::new_histogram;

/// Summary statistics of one histogram, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl LatencyStats {
    pub fn of(h: &Histogram<u64>) -> LatencyStats {
        if h.is_empty() {
            return LatencyStats::default();
        }
        let us = |ns: u64| (ns as f64 / 1000.0 * 10.0).round() / 10.0;
        LatencyStats {
            count: h.len(),
            min: us(h.min()),
            p50: us(h.value_at_quantile(0.5)),
            p90: us(h.value_at_quantile(0.9)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
            mean: (h.mean() / 1000.0 * 10.0).round() / 10.0,
        }
    }

    /// A statistic by its gate name (`p50`, `p99`, `max`, ...), in microseconds.
    pub fn get(&self, stat: &str) -> Option<f64> {
        Some(match stat {
            "min" => self.min,
            "p50" | "median" => self.p50,
            "p90" => self.p90,
            "p99" => self.p99,
            "p999" => self.p999,
            "max" => self.max,
            "mean" => self.mean,
            _ => return None,
        })
    }

    pub(crate) const STATS: [&'static str; 7] = ["min", "p50", "p90", "p99", "p999", "max", "mean"];

    /// The quantile a statistic names (`p99` -> 0.99); `None` for `min`, `max` and `mean`.
    pub(crate) fn quantile(stat: &str) -> Option<f64> {
        match stat {
            "p50" | "median" => Some(0.5),
            "p90" => Some(0.9),
            "p99" => Some(0.99),
            "p999" => Some(0.999),
            _ => None,
        }
    }

    /// Whether `stat` is a quantile taken over fewer samples than [`samples_needed`] asks:
    /// a figure to mark, not to print bare.
    pub(crate) fn too_few_for(&self, stat: &str) -> bool {
        LatencyStats::quantile(stat).is_some_and(|q| self.count < samples_needed(q))
    }
}

/// The fewest samples a `q`-quantile means something over: 10 / (1 - q), so that at least
/// ten samples lie at or beyond it (p50: 20, p90: 100, p99: 1,000, p99.9: 10,000). Over
/// fewer, the figure is one of the few highest samples, not an estimate of the tail.
pub(crate) fn samples_needed(q: f64) -> u64 {
    (10.0 / (1.0 - q)).round() as u64
}

#[cfg(test)]
mod tests;
