//! What the recorder measures: the measures of SPEC §4 and the parts a call's time splits
//! into ([`Measure`]), their HDR histograms, and the summary statistics read from them.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The measures of SPEC §4, the parts a call's time splits into, and the pacer's lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Wake,
    Pickup,
    Completion,
    CompletionUncorrected,
    RelayOverhead,
    ScheduleLag,
    /// The handler's own time (handler start -> end).
    Handler,
    /// Handler end -> the answer's rename completed.
    AnswerPublish,
    /// The answer's rename -> the writer has read it (hop 1).
    Hop1,
}

impl Measure {
    pub const ALL: [Measure; 9] = [
        Measure::Wake,
        Measure::Pickup,
        Measure::Completion,
        Measure::CompletionUncorrected,
        Measure::RelayOverhead,
        Measure::ScheduleLag,
        Measure::Handler,
        Measure::AnswerPublish,
        Measure::Hop1,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Measure::Wake => "wake",
            Measure::Pickup => "pickup",
            Measure::Completion => "completion",
            Measure::CompletionUncorrected => "completion_uncorrected",
            Measure::RelayOverhead => "relay_overhead",
            Measure::ScheduleLag => "schedule_lag",
            Measure::Handler => "handler",
            Measure::AnswerPublish => "answer_publish",
            Measure::Hop1 => "hop1",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Measure> {
        Measure::ALL.into_iter().find(|m| m.name() == s)
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
