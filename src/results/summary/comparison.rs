//! A case against its baseline: the ratios of the baseline's figures to the case's, and
//! what they say.

use serde::{Deserialize, Serialize};

use super::CaseResult;
use crate::record::recorder::{LatencyStats, Measure};

/// Ratios of the baseline's figure to this case's (above 1: this case is lower).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub baseline: String,
    pub pickup_p50_ratio: Option<f64>,
    pub completion_p50_ratio: Option<f64>,
    pub discovery_per_min_ratio: Option<f64>,
    pub idle_discovery_per_min_ratio: Option<f64>,
    /// Absent from a run before they were recorded.
    #[serde(default)]
    pub wake_p50_ratio: Option<f64>,
    #[serde(default)]
    pub wake_p90_ratio: Option<f64>,
    #[serde(default)]
    pub pickup_p90_ratio: Option<f64>,
    #[serde(default)]
    pub completion_p90_ratio: Option<f64>,
    #[serde(default)]
    pub completion_mean_ratio: Option<f64>,
    #[serde(default)]
    pub pickup_mean_ratio: Option<f64>,
    /// The same, as a person reads it.
    pub text: String,
}

fn ratio(base: f64, this: f64) -> Option<f64> {
    (base > 0.0 && this > 0.0).then(|| crate::base::units::round(base / this, 4))
}

fn say_ratio(what: &str, r: Option<f64>, lower: &str, higher: &str) -> Option<String> {
    let r = r?;
    Some(if r >= 1.0 { format!("{what} {r:.1}x {lower}") } else { format!("{what} {:.1}x {higher}", 1.0 / r) })
}

impl Comparison {
    pub fn of(base: &CaseResult, this: &CaseResult) -> Comparison {
        let of = |m: Measure, stat: fn(&LatencyStats) -> f64| {
            let (x, y) = (base.latency(m), this.latency(m));
            ratio(stat(x), stat(y)).filter(|_| x.count > 0 && y.count > 0)
        };
        // Two pickups timed to different points are not one measure: no ratio.
        let same_pickup = base.pickup_defined_as() == this.pickup_defined_as();
        let mut c = Comparison {
            baseline: base.case.clone(),
            pickup_p50_ratio: of(Measure::Pickup, |s| s.p50).filter(|_| same_pickup),
            completion_p50_ratio: of(Measure::Completion, |s| s.p50),
            discovery_per_min_ratio: ratio(base.requests.discovery_per_min, this.requests.discovery_per_min),
            // The idle phases (a steady state) when the workload has any, else a live relay's
            // idle stretches (the dir's, in a summary that lacks them).
            idle_discovery_per_min_ratio: if this.requests.idle_phases.minutes > 0.0 {
                ratio(base.requests.idle_phases.discovery_per_min, this.requests.idle_phases.discovery_per_min)
            } else {
                let live =
                    |r: &CaseResult| r.requests.idle_relay.as_ref().unwrap_or(&r.requests.idle).discovery_per_min;
                ratio(live(base), live(this))
            },
            wake_p50_ratio: of(Measure::Wake, |s| s.p50),
            wake_p90_ratio: of(Measure::Wake, |s| s.p90),
            pickup_p90_ratio: of(Measure::Pickup, |s| s.p90).filter(|_| same_pickup),
            completion_p90_ratio: of(Measure::Completion, |s| s.p90),
            completion_mean_ratio: of(Measure::Completion, |s| s.mean),
            pickup_mean_ratio: of(Measure::Pickup, |s| s.mean).filter(|_| same_pickup),
            text: String::new(),
        };
        let mut parts: Vec<String> = [
            say_ratio("pickup p50", c.pickup_p50_ratio, "lower", "higher"),
            say_ratio("completion p50", c.completion_p50_ratio, "lower", "higher"),
            say_ratio("discovery requests", c.discovery_per_min_ratio, "fewer", "more"),
            say_ratio("idle discovery requests", c.idle_discovery_per_min_ratio, "fewer", "more"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !same_pickup {
            parts.push(format!(
                "pickup not compared (timed differently: here {}; in the baseline {})",
                this.pickup_defined_as().describe(),
                base.pickup_defined_as().describe()
            ));
        }
        c.text = if parts.is_empty() { "nothing comparable measured".into() } else { parts.join(", ") };
        c
    }
}
