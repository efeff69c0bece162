//! A finished case as its result: what the recorder saw, the request counters and phase
//! rates, the runners' reports, the fault rows, and the fleet (its turns, and the remote
//! side as the organisation saw it), judged by the case's gates.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::sample::Point;
use crate::base::units::ms_2dp;
use crate::record::recorder::{CaseHdr, LatencyStats, Measure, Recording};
use crate::relay::runner::RunnerReport;
use crate::results::fleet::{FleetPoint, FleetResult};
use crate::results::rates::Snapshots;
use crate::results::summary::{CaseResult, RunnerStats, SandboxSide};
use crate::sandbox::host::org::{Limits, Org, OrgStats};
use crate::sandbox::host::{DaemonControl, Host, RequestCounts};
use crate::scenario::fault::FleetRecovery;
use crate::scenario::CaseSpec;

/// How long after a fleet-wide fault's recovery its storm is still looked for.
const STORM_AFTER: Duration = Duration::from_secs(60);

/// Everything a case ended with, besides the recording.
pub(super) struct Ended<'a> {
    pub case: &'a CaseSpec,
    pub hosts: &'a [Arc<dyn Host>],
    pub epoch: Instant,
    pub end: Instant,
    pub step: Duration,
    /// Calls scheduled (bursts included).
    pub total: usize,
    pub interrupted: bool,
    /// A search's probe stopped once its `lost` gates had failed for good.
    pub stopped_early: Option<crate::results::stopped::StoppedEarly>,
    pub leftover: u64,
    pub sandbox_side: Option<SandboxSide>,
    pub before: RequestCounts,
    pub after: RequestCounts,
    /// The counters once the runners have stopped (everything of the case).
    pub whole: RequestCounts,
    pub at_phase_ends: Vec<RequestCounts>,
    pub timeline: Vec<Point>,
    pub busy_known: bool,
    pub reports: Vec<RunnerReport>,
    pub stuck: u64,
    pub degraded: Vec<String>,
    pub stops: Vec<Option<Duration>>,
    /// The organisation's figures, when the host's requests passed through it.
    pub org: Option<(OrgStats, Limits)>,
    /// What the organisation saw during the warm-up, when the case had one and got past it.
    pub warmup_org: Option<OrgStats>,
    pub org_handle: &'a Arc<Org>,
    /// Each sandbox's daemon, if its host has one (a storm's marks).
    pub daemons: &'a [Option<Arc<dyn DaemonControl>>],
}

impl Ended<'_> {
    pub(super) fn result(self, recording: &Recording) -> CaseResult {
        let (case, wl) = (self.case, &self.case.workload);
        let window = self.end.saturating_duration_since(self.epoch).max(Duration::from_millis(1));
        // The emulated daemons' legs are their organisation's; a real daemon's proxy keeps its own.
        let mut injected = self.org_handle.legs();
        for legs in self.hosts.iter().filter_map(|h| h.injected_legs()) {
            let _ = injected.add(&legs);
        }
        let mut r = CaseResult {
            case: case.name.clone(),
            host: self.hosts.first().map_or_else(|| case.host.name().to_owned(), |h| h.label()),
            host_params: case.host.params(),
            injected_leg_us: (!injected.is_empty()).then(|| LatencyStats::of(&injected)),
            strategy: case.runner.name().into(),
            strategy_params: case.runner.params(),
            departures: Some(case.departures()),
            other_design: !case.runner.production_design(),
            writer: case.writer.name().into(),
            writer_params: case.writer.params(),
            clock: case.clock,
            sandboxes: wl.sandboxes,
            seed: Some(wl.seed),
            window_secs: (window.as_secs_f64() * 1000.0).round() / 1000.0,
            leftover_files: self.leftover,
            interrupted: self.interrupted,
            stopped_early: self.stopped_early,
            unavailable: case.runner.unavailable(),
            pickup_definition: Some(case.runner.pickup_definition()),
            sandbox_side: self.sandbox_side,
            ..CaseResult::default()
        };
        r.fill_from(recording);
        r.calls.scheduled = self.total as u64;
        let counts: Vec<(Duration, RequestCounts)> = self.timeline.iter().map(|(t, c, _)| (*t, *c)).collect();
        r.requests = crate::results::rates::requests(&Snapshots {
            sandboxes: wl.sandboxes,
            window,
            before: self.before,
            after: self.after,
            whole: self.whole,
            phases: &wl.phases,
            at_phase_ends: &self.at_phase_ends,
            timeline: &counts,
            step: self.step,
            visible: case.runner.requests_visible(),
            busy_known: self.busy_known,
        });
        r.requests.bench_requests = crate::sandbox::host::ByKind(
            case.host.bench_requests().into_iter().map(|(k, n)| (k.to_owned(), n)).collect(),
        );
        r.runner = RunnerStats::of(&self.reports, self.stuck, self.degraded);
        r.faults = crate::scenario::fault::rows(&case.faults, self.epoch, recording, &self.stops);
        let storm_of = |k: u32| self.daemons.get(k as usize)?.as_ref()?.read_storm();
        crate::scenario::fault::fill_storms(&mut r.faults, &case.faults, (self.epoch, self.end), recording, storm_of);
        let fleet = recording.fleet.clone().unwrap_or_default();
        // The fleet-wide faults, in order, are the recorder's recoveries.
        let windows = case.faults.iter().zip(r.faults.iter_mut()).filter(|(f, _)| f.fleet);
        for ((f, row), rec) in windows.zip(&fleet.recoveries) {
            let from = self.epoch + f.at;
            let until = from + f.duration + rec.after.unwrap_or(window) + STORM_AFTER;
            row.fleet_recovery = Some(FleetRecovery {
                secs_to_95pct_healthy: rec.after.map(|d| ms_2dp(d) / 1000.0),
                worst_healthy_pct: (rec.worst_healthy * 1e4).round() / 100.0,
                turns_demoted: rec.demoted,
                peak_requests_per_sec_10s: self.org_handle.peak_10s_between(from, until),
            });
        }
        let points = fleet_points(&self.timeline, &fleet.timeline, self.before);
        let org = self.org.as_ref().map(|(o, l)| (o, l.describe(), self.org_handle.org_held_execs()));
        let warmup = (wl.warmup, wl.warmup_gated);
        r.fleet = Some(FleetResult::of(org, self.warmup_org.as_ref(), &fleet, points, warmup));
        r.hdr = Some(Arc::new(CaseHdr {
            measures: Measure::all().map(|m| (m, recording.histogram(m).clone())).collect(),
            intervals: recording.intervals.clone(),
            length: window,
        }));
        r.judge(&case.gates, &case.rollout);
        r
    }
}

/// The fleet's timeline: the engine's samples (counters and the organisation's gauges)
/// beside the recorder's health at the same step.
fn fleet_points(
    samples: &[Point],
    health: &[crate::record::recorder::HealthPoint],
    first: RequestCounts,
) -> Vec<FleetPoint> {
    let (mut last, mut last_t) = (first, Duration::ZERO);
    samples
        .iter()
        .enumerate()
        .map(|(i, (t, c, o))| {
            let d = c.minus(&last);
            let secs = t.saturating_sub(last_t).as_secs_f64().max(1e-9);
            let h = health.get(i).copied().unwrap_or_default();
            (last, last_t) = (*c, *t);
            FleetPoint {
                t_secs: t.as_secs_f64(),
                held_execs_max: o.held_max,
                in_flight_max: o.in_flight_max,
                connections: o.conns,
                requests_per_sec: ((d.discovery_total() + d.data_total()) as f64 / secs * 100.0).round() / 100.0,
                active_turns: h.active,
                healthy_turns: h.healthy,
                demoted_turns: h.demoted,
            }
        })
        .collect()
}
