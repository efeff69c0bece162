//! The figures `compare` judges, and which way each moves for the better: the p50 and p99
//! of wake, pickup and completion (bootstrapped from the runs' histograms); the discovery
//! and data request rates over the whole window, the idle and the active part; requests
//! per answered call; the fleet's capacity figures; and every other figure a gate of either
//! run names. A ratio to a case's own baseline (`vs_baseline.*`) is judged inside its run,
//! not here.

use crate::record::recorder::Measure;
use crate::report::export::fleet::telling;
use crate::results::summary::CaseResult;
pub(crate) use crate::scenario::gate::Better;
use crate::scenario::gate::{Counter, FleetGauge, FleetMetric, GaugeStat, Metric};

/// How a figure is read and judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// A latency quantile (`p50`, `p99`, ...): its ratio's 95 % bootstrap interval, from
    /// both runs' `.hlog` files.
    Quantile(Measure, &'static str),
    /// A figure of summary.json: its plain ratio.
    Plain(Metric),
}

/// One figure of a case to compare.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Figure {
    /// Its name in the figure table (`pickup.p99`, `idle_phase_discovery_per_min`,
    /// `fleet.rejected`, `requests_per_call`).
    pub name: String,
    pub kind: Kind,
    pub better: Better,
    pub unit: &'static str,
    /// A figure every case has (latency, request rates): a run that lacks it is said so.
    /// The others (fleet figures, gated extras) are left out where neither run has them.
    pub core: bool,
}

/// The fleet's figures judged whether gated or not: its capacity and its turns' health.
fn fleet_figures() -> Vec<FleetMetric> {
    use FleetGauge::{HeldExecs, InFlight, SandboxHeldExecs};
    vec![
        FleetMetric::Gauge(HeldExecs, GaugeStat::Max),
        FleetMetric::Gauge(HeldExecs, GaugeStat::P99),
        FleetMetric::Gauge(SandboxHeldExecs, GaugeStat::Max),
        FleetMetric::Gauge(InFlight, GaugeStat::Max),
        FleetMetric::HeldExecSecsPerMin,
        FleetMetric::HeldExecsUtilisation,
        FleetMetric::PeakRequestsPerSec1s,
        FleetMetric::MeanRequestsPerSec,
        FleetMetric::Rejected,
        FleetMetric::Queued,
        FleetMetric::Cut,
        FleetMetric::WindowFailures,
        FleetMetric::QueueWaitP99Ms,
        FleetMetric::TurnsDemoted,
        FleetMetric::TurnsDemotedPct,
        FleetMetric::FallbackSecs,
        FleetMetric::RecoverySecs,
    ]
}

fn plain(m: Metric, core: bool) -> Figure {
    Figure { name: m.name(), kind: Kind::Plain(m), better: m.better(), unit: m.unit(), core }
}

fn quantile(m: Measure, stat: &'static str, core: bool) -> Figure {
    Figure {
        name: format!("{}.{stat}", m.name()),
        kind: Kind::Quantile(m, stat),
        better: Better::Lower,
        unit: "ms",
        core,
    }
}

/// The figures to compare for a case in both runs, in the order they are shown.
pub(crate) fn figures(o: &CaseResult, n: &CaseResult) -> Vec<Figure> {
    let mut out = Vec::new();
    // A repeated case's histograms are its first repeat's: its quantiles are judged as the
    // medians across repeats summary.json holds, plain.
    let repeated = o.repeat.is_some() || n.repeat.is_some();
    let quantile = |m: Measure, stat: &'static str, core: bool| {
        if repeated {
            plain(Metric::Latency(m, stat), core)
        } else {
            quantile(m, stat, core)
        }
    };
    out.extend(Measure::SPEC.into_iter().flat_map(|m| [quantile(m, "p50", true), quantile(m, "p99", true)]));
    // The idle and active rates a request budget reads: over the workload's idle (active)
    // phases when both runs have them, else over the stretches without (with) calls in flight.
    let both = |f: fn(&CaseResult) -> f64| f(o) > 0.0 && f(n) > 0.0;
    let idle = if both(|r| r.requests.idle_phases.minutes) {
        Counter::IdlePhaseDiscoveryPerMin
    } else {
        Counter::IdleDiscoveryPerMin
    };
    let active = if both(|r| r.requests.active_phases.minutes) {
        Counter::ActivePhaseDiscoveryPerMin
    } else {
        Counter::BusyDiscoveryPerMin
    };
    let rates = [Counter::DiscoveryPerMin, idle, active, Counter::DataPerMin, Counter::RequestsPerCall];
    out.extend(rates.map(|c| plain(Metric::Count(c), true)));
    // A fleet's figures where either run's case has one to tell of (agent turns, limits, a
    // fleet-wide fault); a gate that names one brings it in below all the same.
    if telling(o).is_some() || telling(n).is_some() {
        out.extend(fleet_figures().into_iter().map(|f| plain(Metric::Fleet(f), false)));
    }
    for g in o.gates.iter().chain(&n.gates) {
        let f = match g.gate.metric {
            Metric::VsBaseline(_) => continue,
            Metric::Latency(m, stat) if crate::record::recorder::LatencyStats::quantile(stat).is_some() => {
                quantile(m, stat, false)
            }
            m => plain(m, false),
        };
        if !out.iter().any(|x| x.name == f.name) {
            out.push(f);
        }
    }
    out
}

/// A plain figure's value in a case (a latency in ms); `None` where the case did not
/// measure it.
pub(crate) fn read(r: &CaseResult, m: Metric) -> Option<f64> {
    match m {
        Metric::Latency(..) => r.metric(m).map(|us| us / 1000.0),
        m => r.metric(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::gate::Gate;

    #[test]
    fn every_headline_figure_and_every_gated_one_is_listed_once() {
        let o = CaseResult {
            gates: vec![
                Gate::parse("pickup.p50 < 150ms").unwrap().evaluate(None),
                Gate::parse("schedule_lag.p99 < 10ms").unwrap().evaluate(None),
                Gate::parse("completed >= 1").unwrap().evaluate(None),
                Gate::parse("vs_baseline.pickup_p50 <= 1.15").unwrap().evaluate(None),
            ],
            ..CaseResult::default()
        };
        let mut n = CaseResult::default();
        let none = figures(&o, &n);
        assert!(!none.iter().any(|f| f.name.starts_with("fleet.")), "no fleet to tell of: no fleet figure");
        n.fleet = Some(crate::results::fleet::FleetResult {
            org_measured: true,
            limits: "held execs 100".into(),
            ..Default::default()
        });
        let f = figures(&o, &n);
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        for want in ["wake.p50", "pickup.p99", "completion.p99", "idle_discovery_per_min", "busy_discovery_per_min"] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        for want in ["requests_per_call", "fleet.held_execs.max", "fleet.rejected", "fleet.recovery_secs"] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        assert_eq!(names.iter().filter(|n| **n == "pickup.p50").count(), 1, "a gated headline is listed once");
        let lag = f.iter().find(|f| f.name == "schedule_lag.p99").expect("a gated latency");
        assert_eq!(lag.kind, Kind::Quantile(Measure::ScheduleLag, "p99"));
        assert_eq!(f.iter().find(|f| f.name == "completed").unwrap().better, Better::Higher);
        assert!(!names.iter().any(|n| n.starts_with("vs_baseline")), "{names:?}");
    }

    #[test]
    fn the_idle_rate_is_the_phases_when_both_runs_have_them() {
        let mut o = CaseResult::default();
        o.requests.idle_phases.minutes = 2.0;
        let mut n = o.clone();
        let names = |o: &CaseResult, n: &CaseResult| figures(o, n).into_iter().map(|f| f.name).collect::<Vec<_>>();
        assert!(names(&o, &n).contains(&"idle_phase_discovery_per_min".to_owned()));
        n.requests.idle_phases.minutes = 0.0;
        assert!(names(&o, &n).contains(&"idle_discovery_per_min".to_owned()));
    }

    #[test]
    fn requests_per_call_counts_both_kinds_over_answered_calls() {
        let mut r = CaseResult::default();
        r.requests.discovery_total = 30;
        r.requests.data_total = 70;
        assert_eq!(read(&r, Metric::Count(Counter::RequestsPerCall)), None, "no call answered");
        r.calls.completed = 50;
        assert_eq!(read(&r, Metric::Count(Counter::RequestsPerCall)), Some(2.0));
        r.requests.not_measured = true;
        assert_eq!(
            read(&r, Metric::Count(Counter::RequestsPerCall)),
            None,
            "a black-box runner's requests are not seen"
        );
    }
}
