//! The figure table's rows for a case's counts, request rates and totals: each declared
//! once, with its name, unit, which way it moves for the better, how repeats make it one,
//! and whether a gate may read it. Reading a figure from a case's result is
//! `CaseResult::figure`; latency statistics and the fleet's figures are the other rows of
//! [`super::Metric::table`].

use serde::{Deserialize, Serialize};

use super::Better;

/// How a figure of the repeats is made into the case's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rule {
    /// The median across repeats (gates judge it).
    Median,
    /// The worst (highest) repeat's: an invariant holds only if it held in every repeat.
    Worst,
    /// The fewest (a sample count: thinness is judged per repeat).
    Fewest,
}

/// One figure's declaration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Row {
    /// Its name in gates, summary.json's spreads, compare and sweep columns.
    pub name: &'static str,
    /// `/min`, `s`, `ms`, or empty (a count).
    pub unit: &'static str,
    pub better: Better,
    pub rule: Rule,
    /// A gate may read it (the others are reported and combined, never judged).
    pub gate: bool,
    /// A figure of the runner's requests: not measured for a black-box runner.
    pub requests: bool,
}

const fn row(name: &'static str, unit: &'static str, rule: Rule, gate: bool, requests: bool) -> Row {
    Row { name, unit, better: Better::Lower, rule, gate, requests }
}

/// An invariant: gated, the worst repeat's.
const fn invariant(name: &'static str) -> Row {
    row(name, "", Rule::Worst, true, false)
}

/// A count the reports show and gates do not read.
const fn count(name: &'static str, rule: Rule) -> Row {
    row(name, "", rule, false, false)
}

/// A figure of the runner's requests no gate reads: a total, a stretch's minutes.
const fn of_requests(name: &'static str) -> Row {
    row(name, "", Rule::Median, false, true)
}

/// A rate of the runner's requests per minute per relay dir.
const fn rate(name: &'static str, gate: bool) -> Row {
    row(name, "/min", Rule::Median, gate, true)
}

/// Generates [`Counter`], its `ALL` (in the order repeats show them) and its rows.
macro_rules! counters {
    ($($(#[cfg($cfg:meta)])? $(#[doc = $doc:expr])* $v:ident = $row:expr;)*) => {
        /// A figure of a case's counts, request rates and totals (a row of the figure table).
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Counter { $($(#[cfg($cfg)])? $(#[doc = $doc])* $v,)* }

        impl Counter {
            pub const ALL: &'static [Counter] = &[$($(#[cfg($cfg)])? Counter::$v,)*];

            /// Its declaration.
            pub(crate) const fn row(self) -> Row {
                match self { $($(#[cfg($cfg)])? Counter::$v => $row,)* }
            }
        }
    };
}

counters! {
    DiscoveryPerMin = rate("discovery_per_min", true);
    DataPerMin = rate("data_per_min", true);
    DiscoveryTotal = of_requests("discovery_total");
    DataTotal = of_requests("data_total");
    /// While the relay dir had calls in flight.
    BusyDiscoveryPerMin = rate("busy_discovery_per_min", true);
    BusyDataPerMin = rate("busy_data_per_min", false);
    BusyMinutes = of_requests("busy_minutes");
    /// Over dir-minutes with no call in flight, between agent turns too.
    IdleDirDiscoveryPerMin = rate("idle_dir_discovery_per_min", true);
    IdleDirDataPerMin = rate("idle_dir_data_per_min", false);
    IdleDirMinutes = of_requests("idle_dir_minutes");
    /// A live relay with no call in flight: the idle budget's figure.
    IdleDiscoveryPerMin = rate("idle_discovery_per_min", true);
    IdleDataPerMin = rate("idle_data_per_min", false);
    IdleMinutes = of_requests("idle_minutes");
    ActivePhaseDiscoveryPerMin = rate("active_phase_discovery_per_min", true);
    ActivePhaseDataPerMin = rate("active_phase_data_per_min", false);
    ActivePhaseMinutes = of_requests("active_phase_minutes");
    IdlePhaseDiscoveryPerMin = rate("idle_phase_discovery_per_min", true);
    IdlePhaseDataPerMin = rate("idle_phase_data_per_min", false);
    IdlePhaseMinutes = of_requests("idle_phase_minutes");
    /// Discovery and data requests over the window, per answered call.
    RequestsPerCall = of_requests("requests_per_call");
    Scheduled = count("calls.scheduled", Rule::Median);
    Started = count("calls.started", Rule::Median);
    Completed = Row { better: Better::Higher, ..row("completed", "", Rule::Median, true, false) };
    Ok = count("calls.ok", Rule::Median);
    Error = count("calls.error", Rule::Median);
    Paused = count("calls.paused", Rule::Median);
    Warmup = count("calls.warmup", Rule::Median);
    Lost = invariant("lost");
    Duplicated = invariant("duplicated");
    Timeout = count("calls.timeout", Rule::Worst);
    IdCollision = count("calls.id_collision", Rule::Worst);
    PublishError = count("calls.publish_error", Rule::Worst);
    Environment = count("calls.environment", Rule::Worst);
    Interrupted = count("calls.interrupted", Rule::Worst);
    Unmeasured = count("calls.unmeasured", Rule::Worst);
    PairingViolations = invariant("pairing_violations");
    LeftoverFiles = invariant("leftover_files");
    Malformed = invariant("malformed");
    Stuck = count("runner.stuck", Rule::Worst);
    SafetyLists = row("safety_lists", "", Rule::Median, true, true);
    WatchMisses = row("watch_misses", "", Rule::Median, true, true);
    WindowSecs = row("window_secs", "s", Rule::Median, false, false);
    /// The slowest pickup while a fault lasted (ms).
    FaultWorstPickupMs = row("fault_worst_pickup_ms", "ms", Rule::Median, true, false);
    FaultsFailed = invariant("faults_failed");
    #[cfg(test)]
    /// A figure the figure table's test adds: one row here and one read in
    /// `CaseResult::figure` put it in gates, repeats, compare and sweep columns.
    Probe = row("probe", "", Rule::Median, true, false);
}

impl Counter {
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// A rate of the runner's requests (not measurable for a black-box runner).
    pub(crate) fn is_request_rate(self) -> bool {
        self.row().unit == "/min"
    }

    /// A gated rate of discovery requests (the request charts draw these gates).
    pub(crate) fn is_discovery_rate(self) -> bool {
        self.is_request_rate() && self.row().gate && self != Counter::DataPerMin
    }
}
