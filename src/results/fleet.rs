//! The fleet's figures of one case: the agent turns (started, demoted, time in fallback
//! polling, calls per turn) and the remote side as the organisation saw it (held execs,
//! requests in flight and open connections per sandbox and for the organisation; requests
//! per second by kind; what its limits queued, rejected or cut), with their timeline.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::gauge::GaugeStats;
use crate::record::recorder::{FleetRecording, LatencyStats};
use crate::sandbox::host::org::{OrgStats, RateStats};
use crate::scenario::gate::{FleetGauge, FleetMetric, GaugeStat};

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
}

impl FleetResult {
    /// From the organisation's figures (`None`: the requests did not pass through it) and
    /// the recorder's turns.
    pub fn of(
        org: Option<(&OrgStats, String, Option<u32>)>,
        turns: &FleetRecording,
        timeline: Vec<FleetPoint>,
        warmup: Duration,
    ) -> Self {
        let calls = turns.calls_per_turn.as_ref();
        let t = Turns {
            started: turns.started,
            ended: turns.ended,
            calls: turns.calls,
            demoted: turns.demoted,
            demoted_pct: if turns.started == 0 {
                0.0
            } else {
                (turns.demoted as f64 / turns.started as f64 * 1e4).round() / 100.0
            },
            window_failures: turns.window_failures,
            fallback_secs: (turns.fallback.as_secs_f64() * 100.0).round() / 100.0,
            calls_per_turn_mean: calls.map_or(0.0, |h| (h.mean() * 100.0).round() / 100.0),
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
            }
        });
        let mut r = FleetResult { turns: t, timeline, ramp, ..FleetResult::default() };
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
            FleetMetric::MeanRequestsPerSec => org.then_some(self.requests_per_sec.mean_per_sec),
            FleetMetric::Rejected => count(self.rejected),
            FleetMetric::Queued => count(self.queued),
            FleetMetric::Cut => count(self.cut),
            FleetMetric::QueueWaitP99Ms => org.then_some(self.queue_wait_us.p99 / 1000.0),
            FleetMetric::TurnsStarted => Some(self.turns.started as f64),
            FleetMetric::TurnsDemoted => Some(self.turns.demoted as f64),
            FleetMetric::TurnsDemotedPct => (self.turns.started > 0).then_some(self.turns.demoted_pct),
            FleetMetric::FallbackSecs => Some(self.turns.fallback_secs),
            FleetMetric::WindowFailures => Some(self.turns.window_failures as f64),
            FleetMetric::RecoverySecs => recovery.flatten(),
            FleetMetric::HeldExecsUtilisation => {
                let cap = self.held_exec_limit.filter(|c| *c > 0 && org)?;
                Some((self.held_execs.max as f64 / f64::from(cap) * 1e4).round() / 1e4)
            }
            FleetMetric::HeldExecSecsPerMin => {
                org.then_some((self.sandbox_held_execs.mean * 60.0 * 100.0).round() / 100.0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
