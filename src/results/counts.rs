//! What a case counted besides its latencies: the runner's requests (rates over stretches
//! and phases, a timeline), pairing breaches, and what the runners did beside answering.

use serde::{Deserialize, Serialize};

use crate::events::pairing::{Breach, BreachKind, PairingReport};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Requests {
    /// True when the runner's requests cannot be seen (a black-box runner): every rate
    /// below is then 0 and not a measurement.
    #[serde(default)]
    pub not_measured: bool,
    /// Discovery requests (lists, watch execs) per minute per relay dir.
    pub discovery_per_min: f64,
    /// Data requests (read, delete, answer write + rename) per minute per relay dir.
    pub data_per_min: f64,
    /// Totals over all relay dirs and the whole window.
    pub discovery_total: u64,
    pub data_total: u64,
    /// While the relay dir had calls in flight.
    pub busy: Stretch,
    /// While it had none, over dir-minutes: between agent turns too, when no relay exists
    /// (gate `idle_dir_discovery_per_min`).
    pub idle: Stretch,
    /// While a relay was alive on the dir and no call was in flight: the idle budget's
    /// figure (gate `idle_discovery_per_min`). Equal to `idle` when one relay lives the
    /// whole case; over the turns alone under agent turns. `None` in a summary written
    /// without it, or where the calls ran in the sandbox (no call's flight is seen here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_relay: Option<Stretch>,
    /// Over the workload's phases with turns, and over its idle phases (0 turns/s): the
    /// steady state a request budget is about.
    pub active_phases: Stretch,
    pub idle_phases: Stretch,
    /// Each phase of the workload, in order (phases not reached are left out).
    pub phases: Vec<PhaseRates>,
    /// Discovery requests per minute per relay dir over time: one point per 1/60 of the
    /// schedule, each the rate over the trailing minute (or step, if longer).
    #[serde(default)]
    pub timeline: Vec<RatePoint>,
    pub by_kind: crate::sandbox::host::ByKind,
    /// Every request of the case by kind, the window's and those outside it (the stale
    /// sweep before the schedule, the runners' stop): what a daemon's own log counts.
    #[serde(default, skip_serializing_if = "crate::sandbox::host::ByKind::is_empty")]
    pub whole_case_by_kind: crate::sandbox::host::ByKind,
    /// relay-bench's own requests to a real daemon by what they are for, in no rate:
    /// `whole_case_by_kind` plus these is every request the daemon saw.
    #[serde(default, skip_serializing_if = "crate::sandbox::host::ByKind::is_empty")]
    pub bench_requests: crate::sandbox::host::ByKind,
}

/// The discovery rate over one step of the schedule, ending at `t_secs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    pub t_secs: f64,
    pub discovery_per_min: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseRates {
    pub turns_per_sec: f64,
    pub seconds: f64,
    pub discovery_per_min: f64,
    pub data_per_min: f64,
}

/// Request rates over one kind of stretch, per relay dir per minute.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stretch {
    /// Relay-dir minutes spent in this kind of stretch (summed over dirs).
    pub minutes: f64,
    pub discovery_per_min: f64,
    pub data_per_min: f64,
}

impl Stretch {
    /// The discovery rate, or `None` when no time was spent in this stretch.
    pub fn rate(&self) -> Option<f64> {
        (self.minutes > 0.0).then_some(self.discovery_per_min)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Violations {
    pub total: u64,
    pub by_kind: crate::sandbox::host::ByKind,
    /// The first breaches, each with its kind, sandbox and call id.
    pub listed: Vec<Breach>,
    /// Requests closed because an interrupt cut their call off: no breach.
    #[serde(default)]
    pub cut_off: u64,
}

impl Violations {
    pub fn of(p: &PairingReport) -> Violations {
        Violations {
            total: p.total(),
            by_kind: crate::sandbox::host::ByKind(
                BreachKind::ALL.iter().map(|k| (k.name().to_owned(), p.count(*k))).collect(),
            ),
            listed: p.breaches.clone(),
            cut_off: p.cut_off,
        }
    }

    pub fn count(&self, name: &str) -> u64 {
        self.by_kind.0.iter().find(|(k, _)| *k == name).map_or(0, |(_, v)| *v)
    }
}

/// Each distinct reason once, in the order first said, with how many said it when more
/// than one did (`... (32 turns)`): a fleet's thousand demotions are one line each kind.
fn tally(reasons: Vec<String>) -> Vec<String> {
    let mut out: Vec<(String, usize)> = Vec::new();
    for r in reasons {
        match out.iter_mut().find(|(x, _)| *x == r) {
            Some((_, n)) => *n += 1,
            None => out.push((r, 1)),
        }
    }
    out.into_iter().map(|(r, n)| if n > 1 { format!("{r} ({n} turns)") } else { r }).collect()
}

/// What the runners did beside answering calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunnerStats {
    pub scans: u64,
    pub woken_by_activity: u64,
    pub malformed: u64,
    pub delete_retries: u64,
    pub list_errors: u64,
    /// Timer-driven scans that found work the watch had not signalled.
    pub missed_by_source: u64,
    /// Safety lists: lists after the safety wait ended a wait while the window watch was
    /// healthy (a window that outlasts the safety wait makes one per window).
    #[serde(default)]
    pub safety_lists: u64,
    /// Requests the source carried inline (no list, no read).
    pub inline: u64,
    /// Runners that did not stop within the stop bound (aborted): a hang, which fails the case.
    #[serde(default)]
    pub stuck: u64,
    /// Why a watch fell back to its timer, if one did (runner or writer side).
    pub degraded: Vec<String>,
    /// The slowest runner's start-up before the schedule began (its stale sweep; a
    /// black-box runner's probe call), in ms.
    #[serde(default)]
    pub startup_ms: f64,
}

impl RunnerStats {
    /// The runners' reports added up; `stuck` runners did not stop in time.
    pub fn of(reports: &[crate::relay::runner::RunnerReport], stuck: u64, degraded: Vec<String>) -> RunnerStats {
        let sum = |f: fn(&crate::relay::runner::RunnerReport) -> u64| reports.iter().map(f).sum();
        let startup = reports.iter().map(|r| r.startup).max().unwrap_or_default();
        RunnerStats {
            scans: sum(|r| r.scans),
            woken_by_activity: sum(|r| r.woken_by_activity),
            malformed: sum(|r| r.malformed),
            delete_retries: sum(|r| r.delete_retries),
            list_errors: sum(|r| r.list_errors),
            missed_by_source: sum(|r| r.missed_by_source),
            safety_lists: sum(|r| r.safety_lists),
            inline: sum(|r| r.inline),
            stuck,
            degraded: tally(degraded),
            startup_ms: crate::base::units::ms_2dp(startup),
        }
    }
}
