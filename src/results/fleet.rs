//! The fleet's figures of one case: the agent turns (started, demoted, time in fallback
//! polling, calls per turn) and the remote side as the organisation saw it (held execs,
//! requests in flight and open connections per sandbox and for the organisation; requests
//! per second by kind; what its limits queued, rejected or cut), with their timeline; and the
//! warm-up's own (its ramp: every turn of a fleet starting together, as after a deploy),
//! beside the steady state, with the higher of the two phases that the capacity is gated on.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::gauge::GaugeStats;
use crate::base::units::round;
use crate::record::recorder::{FleetRecording, LatencyStats};
use crate::results::repeat::{stat_place, Place};
use crate::sandbox::host::org::{OrgStats, RateStats};
use crate::scenario::gate::{FleetGauge, FleetMetric, GaugeStat, Phase};

/// Agent turns over a case (one relay per turn; a case of today's keys is one turn per
/// sandbox that lasts the whole case).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Turns {
    pub started: u64,
    pub ended: u64,
    /// Calls the ended turns made.
    pub calls: u64,
    /// Turns whose wakes fell back to polling (a demotion, a watch lost), and their share.
    pub demoted: u64,
    pub demoted_pct: f64,
    /// Windows (or followed streams) that failed in these turns: rejected by a limit, cut by
    /// the proxy, timed out, exited non-zero. Absent: a run from before it was counted.
    #[serde(default)]
    pub window_failures: u64,
    /// Time demoted turns spent polling, summed over turns.
    pub fallback_secs: f64,
    pub calls_per_turn_mean: f64,
    pub calls_per_turn_max: u64,
    /// Turns under way at once (time-weighted).
    pub active: GaugeStats,
    /// ... of which healthy (their source waking them).
    pub healthy: GaugeStats,
}

/// One point of the fleet's timeline, at the end of a step of the schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetPoint {
    pub t_secs: f64,
    /// The most execs held at once during the step, and open connections at its end.
    pub held_execs_max: u64,
    pub in_flight_max: u64,
    pub connections: u64,
    /// The organisation's requests per second over the step.
    pub requests_per_sec: f64,
    pub active_turns: u64,
    pub healthy_turns: u64,
    pub demoted_turns: u64,
}

/// The fleet's figures of one case.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetResult {
    /// Whether the runners' requests passed through the organisation (an emulated remote
    /// host, or the delay proxy in front of a real daemon under limits): when false, the
    /// gauges, rates and limits below are not measured (zeros).
    pub org_measured: bool,
    /// The limits in force, as a person reads them.
    pub limits: String,
    /// The organisation's held-exec limit, if it has one.
    pub held_exec_limit: Option<u32>,
    pub turns: Turns,
    pub held_execs: GaugeStats,
    pub sandbox_held_execs: GaugeStats,
    pub in_flight: GaugeStats,
    pub sandbox_in_flight: GaugeStats,
    pub connections: GaugeStats,
    pub sandbox_connections: GaugeStats,
    pub requests_per_sec: RateStats,
    pub rejected: u64,
    pub queued: u64,
    pub cut: u64,
    /// How long the queued requests that got through waited (µs).
    pub queue_wait_us: LatencyStats,
    pub timeline: Vec<FleetPoint>,
    /// The warm-up's ramp, which the figures above leave out (`None`: no warm-up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
    /// The workload said `warmup_gated = false`: the `fleet.worst.*` figures read the steady
    /// state alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup_ungated: bool,
}

/// The fleet ramping up during the warm-up: sessions starting over its first cycle (or
/// within `start_spread`, a burst), a load of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ramp {
    /// The warm-up's length.
    pub secs: f64,
    pub turns_started: u64,
    /// Turns started during it that were demoted, during it or after.
    pub turns_demoted: u64,
    pub window_failures: u64,
    /// The most execs held at once during it, and the organisation's busiest step's
    /// requests per second (from the timeline; `None` when the requests did not pass through
    /// the organisation).
    pub held_execs_max: Option<u64>,
    pub requests_per_sec_max: Option<f64>,
    /// `turns_demoted` as a share of `turns_started` (%; `None`: a run from before it was
    /// kept, whose report shows the ramp alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turns_demoted_pct: Option<f64>,
    /// What the organisation saw during the warm-up (`None`: its requests did not pass
    /// through it, or a run from before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub org: Option<RampOrg>,
}

/// The remote side during the warm-up, as the organisation saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RampOrg {
    pub held_execs: GaugeStats,
    pub sandbox_held_execs: GaugeStats,
    pub requests_per_sec: RateStats,
    pub rejected: u64,
    pub queued: u64,
    pub cut: u64,
}

crate::base::named! {
/// Where a `fleet.worst.*` figure came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FromPhase {
    Warmup,
    Steady,
    /// The two phases gave the same value.
    Both,
}
names ["warm-up", "steady state", "both"]
}

impl FromPhase {
    /// After a figure: `in the warm-up`, `in the steady state`, `in both`.
    pub fn in_words(self) -> &'static str {
        match self {
            FromPhase::Warmup => "in the warm-up",
            FromPhase::Steady => "in the steady state",
            FromPhase::Both => "in both",
        }
    }
}

/// A share in %, to two decimals.
fn pct(part: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        (part as f64 / of as f64 * 1e4).round() / 100.0
    }
}

impl FleetResult {
    /// From the organisation's figures (`None`: the requests did not pass through it; the
    /// steady state's, and the warm-up's if it had one) and the recorder's turns; `warmup` is
    /// the workload's, and whether its figures gate (`warmup_gated`).
    pub fn of(
        org: Option<(&OrgStats, String, Option<u32>)>,
        warmup_org: Option<&OrgStats>,
        turns: &FleetRecording,
        timeline: Vec<FleetPoint>,
        (warmup, gated): (Duration, bool),
    ) -> Self {
        let calls = turns.calls_per_turn.as_ref();
        let t = Turns {
            started: turns.started,
            ended: turns.ended,
            calls: turns.calls,
            demoted: turns.demoted,
            demoted_pct: pct(turns.demoted, turns.started),
            window_failures: turns.window_failures,
            fallback_secs: round(turns.fallback.as_secs_f64(), 2),
            calls_per_turn_mean: calls.map_or(0.0, |h| round(h.mean(), 2)),
            calls_per_turn_max: calls.map_or(0, |h| h.max()),
            active: turns.active,
            healthy: turns.healthy,
        };
        let ramp = turns.ramp.map(|c| {
            let during: Vec<&FleetPoint> = timeline.iter().filter(|p| p.t_secs <= warmup.as_secs_f64()).collect();
            let measured = org.is_some();
            Ramp {
                secs: warmup.as_secs_f64(),
                turns_started: c.started,
                turns_demoted: c.demoted,
                window_failures: c.window_failures,
                held_execs_max: measured.then(|| during.iter().map(|p| p.held_execs_max).max().unwrap_or(0)),
                requests_per_sec_max: measured.then(|| during.iter().map(|p| p.requests_per_sec).fold(0.0, f64::max)),
                turns_demoted_pct: Some(pct(c.demoted, c.started)),
                org: warmup_org.filter(|_| measured).map(|o| RampOrg {
                    held_execs: o.held_execs,
                    sandbox_held_execs: o.sandbox_held_execs,
                    requests_per_sec: o.rates.clone(),
                    rejected: o.rejected,
                    queued: o.queued,
                    cut: o.cut,
                }),
            }
        });
        let mut r = FleetResult { turns: t, timeline, ramp, warmup_ungated: !gated, ..FleetResult::default() };
        if let Some((o, limits, cap)) = org {
            r.org_measured = true;
            r.limits = limits;
            r.held_exec_limit = cap;
            r.held_execs = o.held_execs;
            r.sandbox_held_execs = o.sandbox_held_execs;
            r.in_flight = o.in_flight;
            r.sandbox_in_flight = o.sandbox_in_flight;
            r.connections = o.connections;
            r.sandbox_connections = o.sandbox_connections;
            r.requests_per_sec = o.rates.clone();
            r.rejected = o.rejected;
            r.queued = o.queued;
            r.cut = o.cut;
            r.queue_wait_us = LatencyStats::of(&o.queue_wait);
        }
        r
    }

    fn gauge(&self, g: FleetGauge) -> Option<&GaugeStats> {
        let org = |s| self.org_measured.then_some(s);
        match g {
            FleetGauge::HeldExecs => org(&self.held_execs),
            FleetGauge::SandboxHeldExecs => org(&self.sandbox_held_execs),
            FleetGauge::InFlight => org(&self.in_flight),
            FleetGauge::SandboxInFlight => org(&self.sandbox_in_flight),
            FleetGauge::Connections => org(&self.connections),
            FleetGauge::SandboxConnections => org(&self.sandbox_connections),
            FleetGauge::ActiveTurns => Some(&self.turns.active),
        }
    }

    /// The value a `fleet.*` gate reads; `None` when it was not measured. `recovery` is the
    /// longest recovery of the case's fleet-wide faults (seconds), if it had any: `Some(None)`
    /// when one never recovered.
    pub(crate) fn metric(&self, m: FleetMetric, recovery: Option<Option<f64>>) -> Option<f64> {
        let org = self.org_measured;
        let count = |v: u64| org.then_some(v as f64);
        match m {
            FleetMetric::Gauge(g, s) => {
                let st = self.gauge(g)?;
                Some(match s {
                    GaugeStat::Max => st.max as f64,
                    GaugeStat::P99 => st.p99 as f64,
                    GaugeStat::P50 => st.p50 as f64,
                    GaugeStat::Mean => st.mean,
                })
            }
            FleetMetric::PeakRequestsPerSec1s => org.then_some(self.requests_per_sec.peak_1s),
            FleetMetric::PeakRequestsPerSec10s => org.then_some(self.requests_per_sec.peak_10s),
            FleetMetric::PeakRequestsPerSec60s => self.requests_per_sec.peak_60s.filter(|_| org),
            FleetMetric::MeanRequestsPerSec => org.then_some(self.requests_per_sec.mean_per_sec),
            FleetMetric::Rejected => count(self.rejected),
            FleetMetric::Queued => count(self.queued),
            FleetMetric::Cut => count(self.cut),
            FleetMetric::QueueWaitP99Ms => org.then_some(self.queue_wait_us.p99 / 1000.0),
            FleetMetric::QueueWait(s) => crate::results::repeat::stat(&self.queue_wait_us, s).filter(|_| org),
            FleetMetric::CallsPerTurnMean => Some(self.turns.calls_per_turn_mean),
            FleetMetric::TurnsStarted => Some(self.turns.started as f64),
            FleetMetric::TurnsDemoted => Some(self.turns.demoted as f64),
            FleetMetric::TurnsDemotedPct => (self.turns.started > 0).then_some(self.turns.demoted_pct),
            FleetMetric::FallbackSecs => Some(self.turns.fallback_secs),
            FleetMetric::WindowFailures => Some(self.turns.window_failures as f64),
            FleetMetric::RecoverySecs => recovery.flatten(),
            FleetMetric::HeldExecsUtilisation => {
                let cap = self.held_exec_limit.filter(|c| *c > 0 && org)?;
                Some(round(self.held_execs.max as f64 / f64::from(cap), 4))
            }
            FleetMetric::HeldExecSecsPerMin => org.then_some(round(self.sandbox_held_execs.mean * 60.0, 2)),
            FleetMetric::Phased(Phase::Warmup, f) => self.warmup(*f),
            FleetMetric::Phased(Phase::Worst, f) => self.worst(*f).map(|(v, _)| v),
        }
    }

    /// The field a fleet figure is stored in, to write a combined value back; `None` for
    /// one computed from several fields (the phased ones, the utilisation, the recovery).
    pub(crate) fn place(&mut self, m: FleetMetric) -> Option<Place<'_>> {
        let t = &mut self.turns;
        let rps = &mut self.requests_per_sec;
        Some(match m {
            FleetMetric::TurnsStarted => Place::U(&mut t.started),
            FleetMetric::TurnsDemoted => Place::U(&mut t.demoted),
            FleetMetric::TurnsDemotedPct => Place::F(&mut t.demoted_pct),
            FleetMetric::WindowFailures => Place::U(&mut t.window_failures),
            FleetMetric::FallbackSecs => Place::F(&mut t.fallback_secs),
            FleetMetric::CallsPerTurnMean => Place::F(&mut t.calls_per_turn_mean),
            FleetMetric::Gauge(g, s) => {
                let st = match g {
                    FleetGauge::HeldExecs => &mut self.held_execs,
                    FleetGauge::SandboxHeldExecs => &mut self.sandbox_held_execs,
                    FleetGauge::InFlight => &mut self.in_flight,
                    FleetGauge::SandboxInFlight => &mut self.sandbox_in_flight,
                    FleetGauge::Connections => &mut self.connections,
                    FleetGauge::SandboxConnections => &mut self.sandbox_connections,
                    FleetGauge::ActiveTurns => return None,
                };
                match s {
                    GaugeStat::Max => Place::U(&mut st.max),
                    GaugeStat::P99 => Place::U(&mut st.p99),
                    GaugeStat::P50 => Place::U(&mut st.p50),
                    GaugeStat::Mean => Place::F(&mut st.mean),
                }
            }
            FleetMetric::MeanRequestsPerSec => Place::F(&mut rps.mean_per_sec),
            FleetMetric::PeakRequestsPerSec1s => Place::F(&mut rps.peak_1s),
            FleetMetric::PeakRequestsPerSec10s => Place::F(&mut rps.peak_10s),
            FleetMetric::PeakRequestsPerSec60s => Place::F(rps.peak_60s.as_mut()?),
            FleetMetric::Rejected => Place::U(&mut self.rejected),
            FleetMetric::Queued => Place::U(&mut self.queued),
            FleetMetric::Cut => Place::U(&mut self.cut),
            FleetMetric::QueueWait(s) => return stat_place(&mut self.queue_wait_us, s),
            _ => return None,
        })
    }

    /// A figure of the warm-up (one of the gates' `PHASED`); `None` without one, or when it
    /// was not measured.
    pub fn warmup(&self, f: FleetMetric) -> Option<f64> {
        let ramp = self.ramp.as_ref()?;
        let org = ramp.org.as_ref();
        let count = |v: u64| Some(v as f64);
        match f {
            FleetMetric::TurnsDemoted => count(ramp.turns_demoted),
            FleetMetric::TurnsDemotedPct => {
                (ramp.turns_started > 0).then(|| pct(ramp.turns_demoted, ramp.turns_started))
            }
            FleetMetric::WindowFailures => count(ramp.window_failures),
            FleetMetric::Gauge(FleetGauge::HeldExecs, GaugeStat::Max) => {
                org.map(|o| o.held_execs.max).or(ramp.held_execs_max).map(|v| v as f64)
            }
            FleetMetric::Gauge(FleetGauge::SandboxHeldExecs, GaugeStat::Max) => count(org?.sandbox_held_execs.max),
            FleetMetric::Rejected => count(org?.rejected),
            FleetMetric::PeakRequestsPerSec1s => Some(org?.requests_per_sec.peak_1s),
            FleetMetric::PeakRequestsPerSec10s => Some(org?.requests_per_sec.peak_10s),
            FleetMetric::PeakRequestsPerSec60s => org?.requests_per_sec.peak_60s,
            FleetMetric::MeanRequestsPerSec => Some(org?.requests_per_sec.mean_per_sec),
            _ => None,
        }
    }

    /// The higher of the warm-up's figure and the steady state's, and which it was: what
    /// the capacity is gated on (`fleet.worst.*`). The steady state's alone when the workload
    /// said `warmup_gated = false`, or when the warm-up did not measure it.
    pub fn worst(&self, f: FleetMetric) -> Option<(f64, FromPhase)> {
        let steady = self.metric(f, None);
        let warm = if self.warmup_ungated { None } else { self.warmup(f) };
        match (warm, steady) {
            (Some(w), Some(s)) if w > s => Some((w, FromPhase::Warmup)),
            (Some(w), Some(s)) if w == s => Some((s, FromPhase::Both)),
            (_, Some(s)) => Some((s, FromPhase::Steady)),
            (Some(w), None) => Some((w, FromPhase::Warmup)),
            (None, None) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELD: FleetMetric = FleetMetric::Gauge(FleetGauge::HeldExecs, GaugeStat::Max);
    const SANDBOX_HELD: FleetMetric = FleetMetric::Gauge(FleetGauge::SandboxHeldExecs, GaugeStat::Max);

    #[test]
    fn every_fleet_figure_reads_and_the_organisations_need_its_requests() {
        let mut r = FleetResult::default();
        r.turns.started = 10;
        r.turns.demoted = 1;
        r.turns.demoted_pct = 10.0;
        for m in FleetMetric::all() {
            let _ = r.metric(m, None);
        }
        assert_eq!(r.metric(FleetMetric::TurnsDemotedPct, None), Some(10.0));
        let held = FleetMetric::Gauge(FleetGauge::HeldExecs, GaugeStat::Max);
        assert_eq!(r.metric(held, None), None, "not measured without the organisation");
        r.org_measured = true;
        r.held_execs.max = 70;
        r.held_exec_limit = Some(100);
        assert_eq!(r.metric(held, None), Some(70.0));
        assert_eq!(r.metric(FleetMetric::HeldExecsUtilisation, None), Some(0.7));
        assert_eq!(r.metric(FleetMetric::RecoverySecs, Some(None)), None, "never recovered: the gate fails");
        assert_eq!(r.metric(FleetMetric::RecoverySecs, Some(Some(12.5))), Some(12.5));
    }

    /// A fleet whose turns all started together: the warm-up held more than the steady
    /// state and demoted a larger share of its turns.
    fn burst() -> FleetResult {
        let mut r = FleetResult { org_measured: true, ..FleetResult::default() };
        r.turns.started = 6392;
        r.turns.demoted = 13;
        r.turns.demoted_pct = 0.2;
        r.held_execs.max = 200;
        r.sandbox_held_execs.max = 2;
        r.requests_per_sec.peak_10s = 236.6;
        r.rejected = 509;
        let mut org = RampOrg { rejected: 2057, ..RampOrg::default() };
        org.held_execs.max = 240;
        org.sandbox_held_execs.max = 2;
        org.requests_per_sec.peak_10s = 221.2;
        r.ramp = Some(Ramp {
            secs: 1800.0,
            turns_started: 5450,
            turns_demoted: 74,
            turns_demoted_pct: Some(1.36),
            held_execs_max: Some(240),
            org: Some(org),
            ..Ramp::default()
        });
        r
    }

    #[test]
    fn the_worst_of_the_warmup_and_the_steady_state_and_where_it_came_from() {
        let r = burst();
        let read = |p, f| r.metric(FleetMetric::Phased(p, f), None);
        assert_eq!(read(Phase::Warmup, &HELD), Some(240.0));
        assert_eq!(read(Phase::Warmup, &FleetMetric::TurnsDemotedPct), Some(1.36), "74 of 5,450");
        assert_eq!(read(Phase::Warmup, &FleetMetric::Rejected), Some(2057.0));
        assert_eq!(r.worst(HELD), Some((240.0, FromPhase::Warmup)));
        assert_eq!(r.worst(FleetMetric::TurnsDemotedPct), Some((1.36, FromPhase::Warmup)));
        assert_eq!(r.worst(SANDBOX_HELD), Some((2.0, FromPhase::Both)));
        assert_eq!(r.worst(FleetMetric::PeakRequestsPerSec10s), Some((236.6, FromPhase::Steady)));
        assert_eq!(read(Phase::Worst, &FleetMetric::TurnsDemoted), Some(74.0));
        // The steady figures keep their names and values: summary.json's fields.
        assert_eq!(r.metric(HELD, None), Some(200.0));
        assert_eq!(r.metric(FleetMetric::TurnsDemotedPct, None), Some(0.2));
        // A gate on the worst reads the warm-up's 1.36 %; on the steady state, 0.2 %.
        let gate = crate::scenario::gate::Gate::parse("fleet.worst.turns_demoted_pct <= 1").unwrap();
        assert_eq!(gate.metric.name(), "fleet.worst.turns_demoted_pct");
        assert!(!gate.evaluate(read(Phase::Worst, &FleetMetric::TurnsDemotedPct)).pass);
    }

    #[test]
    fn a_workload_that_does_not_gate_its_warmup_reads_the_steady_state() {
        let mut r = burst();
        r.warmup_ungated = true;
        assert_eq!(r.worst(HELD), Some((200.0, FromPhase::Steady)));
        assert_eq!(r.worst(FleetMetric::TurnsDemotedPct), Some((0.2, FromPhase::Steady)));
        assert_eq!(r.warmup(HELD), Some(240.0), "still reported");
        // A run from before the warm-up's organisation figures were kept: its ramp's own.
        let mut old = burst();
        old.ramp.as_mut().unwrap().org = None;
        assert_eq!(old.warmup(HELD), Some(240.0), "the ramp's timeline maximum");
        assert_eq!(old.warmup(SANDBOX_HELD), None);
        assert_eq!(old.worst(SANDBOX_HELD), Some((2.0, FromPhase::Steady)));
        // No warm-up at all: the worst is the steady state.
        let mut none = burst();
        none.ramp = None;
        assert_eq!(none.worst(HELD), Some((200.0, FromPhase::Steady)));
    }

    #[test]
    fn older_summaries_read_without_the_warmups_new_figures() {
        let old = serde_json::json!({"secs": 1800.0, "turns_started": 5456, "turns_demoted": 0, "window_failures": 0,
            "held_execs_max": 241, "requests_per_sec_max": 221.9});
        let r: Ramp = serde_json::from_value(old).unwrap();
        assert_eq!((r.turns_demoted_pct, r.org), (None, None));
        let json = serde_json::to_value(FleetResult::default()).unwrap();
        assert!(json.get("warmup_ungated").is_none(), "written only when a workload says so");
    }
}
