//! What the recorder measures of every call: the [`Measure`]s (SPEC §4's measures and the
//! parts a call's time splits into), each computed from a call's instants ([`CallTimes`]),
//! and the summary statistics read from a measure's HDR histogram ([`LatencyStats`]).
//!
//! A measure is one variant of [`Measure`] and its arm in each `match` below: the recorder
//! records it from each call's instants, summary.json keeps its statistics under its name, a
//! gate reads `<name>.<stat>`, repeats take its medians, `hdr/` writes its histogram, and
//! summary.md gives it a row when it has one ([`Measure::row`]). Nothing else names it.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

crate::base::named! {
/// A measure taken of every call: a duration between two of its instants. The order of
/// [`Measure::ALL`] is the order summary.json and summary.md list them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Measure {
    /// Request published -> the runner's wait returned (not seen for a black-box runner).
    Wake,
    /// Request published -> the handler started (SPEC's pickup).
    Pickup,
    /// The call's intended start -> its answer read (open loop: the pacer's lag counts).
    Completion,
    /// The writer's actual start -> its answer read.
    CompletionUncorrected,
    /// Uncorrected completion minus the handler's own time: what the relay adds.
    RelayOverhead,
    /// The call's intended start -> the writer's actual start: the pacer's lag, not the
    /// relay's.
    ScheduleLag,
    /// The handler's own time (its start -> its end).
    Handler,
    /// The handler's end -> the answer's rename completed.
    AnswerPublish,
    /// The answer's rename -> the writer has read it (hop 1).
    Hop1,
}
names ["wake", "pickup", "completion", "completion_uncorrected", "relay_overhead", "schedule_lag", "handler", "answer_publish", "hop1"]
}

/// How many measures there are.
pub(crate) const COUNT: usize = Measure::ALL.len();

impl Measure {
    /// SPEC §4's three measures, the ones every table shows.
    pub const SPEC: [Measure; 3] = [Measure::Wake, Measure::Pickup, Measure::Completion];

    /// Every measure, in [`Measure::ALL`]'s order.
    pub(crate) fn all() -> impl Iterator<Item = Measure> + Clone {
        Measure::ALL.into_iter()
    }

    /// Its place in [`Measure::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// What it times, in a line (`relay-bench list`).
    pub(crate) fn about(self) -> &'static str {
        match self {
            Measure::Wake => "request published -> the runner's wait returned (not seen for a black-box runner)",
            Measure::Pickup => "request published -> the handler started (SPEC §4)",
            Measure::Completion => "the call's intended start -> its answer read (open loop)",
            Measure::CompletionUncorrected => "the writer's actual start -> its answer read",
            Measure::RelayOverhead => "uncorrected completion minus the handler's time: what the relay adds",
            Measure::ScheduleLag => "the call's intended start -> the writer's actual start (the pacer's lag)",
            Measure::Handler => "the handler's start -> its end",
            Measure::AnswerPublish => "the handler's end -> the answer's rename completed",
            Measure::Hop1 => "the answer's rename -> the writer read it (hop 1)",
        }
    }

    /// Its label in summary.md's latency table; `None`: recorded, kept and gated, not a row.
    pub(crate) fn row(self) -> Option<&'static str> {
        Some(match self {
            Measure::Wake => "wake",
            Measure::Pickup => "pickup",
            Measure::Completion => "completion",
            Measure::CompletionUncorrected => "completion (uncorrected)",
            Measure::RelayOverhead => "relay overhead",
            Measure::ScheduleLag => "schedule lag",
            Measure::Handler | Measure::AnswerPublish | Measure::Hop1 => return None,
        })
    }

    /// Whether summary.json keeps it in `latency_us` (else beside it, as `<name>_us`).
    pub(crate) fn in_latency_us(self) -> bool {
        match self {
            Measure::ScheduleLag => false,
            Measure::Wake
            | Measure::Pickup
            | Measure::Completion
            | Measure::CompletionUncorrected
            | Measure::RelayOverhead
            | Measure::Handler
            | Measure::AnswerPublish
            | Measure::Hop1 => true,
        }
    }

    /// Its value for one call in nanoseconds, or `None` when the call does not show it (a
    /// black-box runner's wake, an answer never read). Recorded as at least 1 ns.
    pub(crate) fn of(self, c: &CallTimes) -> Option<u64> {
        let known = |v: Option<u64>| v.filter(|_| c.handler_known);
        match self {
            Measure::Wake => CallTimes::between(c.published, Some(c.woke)).filter(|_| !c.observed),
            Measure::Pickup => CallTimes::between(c.published, Some(c.handler_start)),
            Measure::Completion => CallTimes::between(Some(0), c.read),
            Measure::CompletionUncorrected => c.uncorrected(),
            Measure::RelayOverhead => known(c.uncorrected().zip(c.handler()).map(|(u, h)| u.saturating_sub(h))),
            Measure::ScheduleLag => CallTimes::between(Some(0), Some(c.started)),
            Measure::Handler => known(c.handler()),
            Measure::AnswerPublish => known(CallTimes::between(Some(c.handler_end), c.answered)),
            Measure::Hop1 => CallTimes::between(c.answered, c.read),
        }
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
        let mut s = *self;
        s.get_mut(stat).copied()
    }

    /// A statistic by its gate name, to change (a repeated case's median written back).
    pub(crate) fn get_mut(&mut self, stat: &str) -> Option<&mut f64> {
        Some(match stat {
            "min" => &mut self.min,
            "p50" | "median" => &mut self.p50,
            "p90" => &mut self.p90,
            "p99" => &mut self.p99,
            "p999" => &mut self.p999,
            "max" => &mut self.max,
            "mean" => &mut self.mean,
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
