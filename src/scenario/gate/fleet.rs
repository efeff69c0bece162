//! The fleet's figures a gate reads (`fleet.<name>`): its gauges and their statistics, the
//! organisation's rates and limits, the turns. Each is the steady state's (after the
//! warm-up); the figures a warm-up also has are read for it too (`fleet.warmup.<name>`), and
//! as the higher of the two phases (`fleet.worst.<name>`: what the capacity is gated on).

use super::{Better, MetricError, Unknown, LATENCY_FIGURES};

crate::base::named! {
/// A gauge of the fleet, over a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetGauge {
    /// Execs held at once by the organisation (all sandboxes).
    HeldExecs,
    /// ... by one sandbox (pooled over sandboxes).
    SandboxHeldExecs,
    InFlight,
    SandboxInFlight,
    Connections,
    SandboxConnections,
    /// Agent turns under way at once.
    ActiveTurns,
}
names ["held_execs", "sandbox_held_execs", "in_flight", "sandbox_in_flight", "connections", "sandbox_connections", "active_turns"]
}

crate::base::named! {
/// A statistic of a gauge (time-weighted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GaugeStat {
    Max,
    P99,
    P50,
    Mean,
}
names ["max", "p99", "p50", "mean"]
}

/// A figure of the fleet a gate can read: `fleet.<name>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FleetMetric {
    Gauge(FleetGauge, GaugeStat),
    /// The organisation's requests per second: its busiest second, ten seconds, the mean.
    PeakRequestsPerSec1s,
    PeakRequestsPerSec10s,
    /// The busiest sixty seconds (per second): what a per-minute rate limit meets.
    PeakRequestsPerSec60s,
    MeanRequestsPerSec,
    Rejected,
    Queued,
    Cut,
    QueueWaitP99Ms,
    /// A statistic of the organisation's queue waits in microseconds (reported, not gated:
    /// `queue_wait_p99_ms` is the gated one): `fleet.queue_wait.p50`.
    QueueWait(&'static str),
    TurnsStarted,
    /// Calls per agent turn, the mean: set by the workload.
    CallsPerTurnMean,
    TurnsDemoted,
    /// Demoted turns as a share of turns started (%).
    TurnsDemotedPct,
    /// Time demoted turns spent in fallback polling, summed (s).
    FallbackSecs,
    /// Windows (or followed streams) that failed: rejected, cut, timed out, exited non-zero.
    WindowFailures,
    /// The longest recovery to 95 % healthy turns after a fleet-wide fault (s; a fleet that
    /// did not recover has no value, and its gate fails).
    RecoverySecs,
    /// The organisation's most held execs over its held-exec limit.
    HeldExecsUtilisation,
    /// Seconds of held exec per sandbox per minute.
    HeldExecSecsPerMin,
    /// A figure the warm-up has too (one of [`PHASED`]), read for one phase ([`Phase`]).
    Phased(Phase, &'static FleetMetric),
}

crate::base::named! {
/// Which phase a [`FleetMetric::Phased`] figure is read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The warm-up's own (`fleet.warmup.<name>`): the fleet's turns starting together.
    Warmup,
    /// The higher of the warm-up's and the steady state's (`fleet.worst.<name>`), unless the
    /// workload says `warmup_gated = false` (then the steady state's): what the capacity is
    /// gated on, since every deploy starts a fleet's turns together.
    Worst,
}
names ["warmup", "worst"]
}

/// The figures measured in the warm-up as in the steady state: the ones a
/// [`FleetMetric::Phased`] reads.
pub(crate) static PHASED: [FleetMetric; 10] = [
    FleetMetric::Gauge(FleetGauge::HeldExecs, GaugeStat::Max),
    FleetMetric::Gauge(FleetGauge::SandboxHeldExecs, GaugeStat::Max),
    FleetMetric::TurnsDemoted,
    FleetMetric::TurnsDemotedPct,
    FleetMetric::WindowFailures,
    FleetMetric::Rejected,
    FleetMetric::PeakRequestsPerSec1s,
    FleetMetric::PeakRequestsPerSec10s,
    FleetMetric::PeakRequestsPerSec60s,
    FleetMetric::MeanRequestsPerSec,
];

/// The prefix of a fleet figure's name.
pub(crate) const FLEET: &str = "fleet";

impl FleetMetric {
    /// The figures of one field or one formula, in the order [`FleetMetric::all`] lists
    /// them, with their names.
    const PLAIN: [(FleetMetric, &'static str); 17] = [
        (FleetMetric::PeakRequestsPerSec1s, "requests_per_sec.peak_1s"),
        (FleetMetric::PeakRequestsPerSec10s, "requests_per_sec.peak_10s"),
        (FleetMetric::PeakRequestsPerSec60s, "requests_per_sec.peak_60s"),
        (FleetMetric::MeanRequestsPerSec, "requests_per_sec.mean"),
        (FleetMetric::Rejected, "rejected"),
        (FleetMetric::Queued, "queued"),
        (FleetMetric::Cut, "cut"),
        (FleetMetric::QueueWaitP99Ms, "queue_wait_p99_ms"),
        (FleetMetric::TurnsStarted, "turns_started"),
        (FleetMetric::TurnsDemoted, "turns_demoted"),
        (FleetMetric::TurnsDemotedPct, "turns_demoted_pct"),
        (FleetMetric::FallbackSecs, "fallback_secs"),
        (FleetMetric::WindowFailures, "window_failures"),
        (FleetMetric::RecoverySecs, "recovery_secs"),
        (FleetMetric::HeldExecsUtilisation, "held_execs_utilisation"),
        (FleetMetric::CallsPerTurnMean, "calls_per_turn_mean"),
        (FleetMetric::HeldExecSecsPerMin, "held_exec_secs_per_min"),
    ];

    /// The unit its value is shown in (`""`: a count or a share).
    pub(super) fn unit(self) -> &'static str {
        match self {
            // A phased figure is in its steady figure's unit.
            FleetMetric::Phased(_, f) => f.unit(),
            FleetMetric::QueueWaitP99Ms | FleetMetric::QueueWait(_) => "ms",
            FleetMetric::FallbackSecs | FleetMetric::RecoverySecs => "s",
            FleetMetric::HeldExecSecsPerMin => "s/min",
            FleetMetric::PeakRequestsPerSec1s
            | FleetMetric::PeakRequestsPerSec10s
            | FleetMetric::PeakRequestsPerSec60s
            | FleetMetric::MeanRequestsPerSec => "/s",
            FleetMetric::TurnsDemotedPct => "%",
            _ => "",
        }
    }

    /// What the workload sets (turns started, calls per turn, turns under way) is neither
    /// better nor worse; more of any other fleet figure is worse.
    pub(super) fn better(self) -> Better {
        match self {
            FleetMetric::TurnsStarted | FleetMetric::CallsPerTurnMean => Better::Either,
            FleetMetric::Gauge(FleetGauge::ActiveTurns, _) => Better::Either,
            _ => Better::Lower,
        }
    }

    /// Every fleet figure of the figure table, in the order repeats show them: the turns',
    /// the organisation's gauges, rates, rejections and queue waits, then the figures read
    /// from several fields.
    pub(super) fn table() -> Vec<FleetMetric> {
        use FleetMetric as F;
        let turns = [F::TurnsStarted, F::TurnsDemoted, F::TurnsDemotedPct, F::WindowFailures, F::FallbackSecs];
        let org_gauges = FleetGauge::ALL.into_iter().filter(|g| *g != FleetGauge::ActiveTurns);
        let rates =
            [F::MeanRequestsPerSec, F::PeakRequestsPerSec1s, F::PeakRequestsPerSec10s, F::PeakRequestsPerSec60s];
        let mut out: Vec<FleetMetric> = turns
            .into_iter()
            .chain([F::CallsPerTurnMean])
            .chain(org_gauges.flat_map(|g| GaugeStat::ALL.map(|s| F::Gauge(g, s))))
            .chain(rates)
            .chain([F::Rejected, F::Queued, F::Cut])
            .chain(LATENCY_FIGURES.map(F::QueueWait))
            .collect();
        for f in FleetMetric::all() {
            if !out.contains(&f) {
                out.push(f);
            }
        }
        out
    }

    /// Every fleet figure, gauges first, the phased ones last.
    pub fn all() -> Vec<FleetMetric> {
        let gauges = FleetGauge::ALL.iter().flat_map(|g| GaugeStat::ALL.iter().map(|s| FleetMetric::Gauge(*g, *s)));
        let phased = Phase::ALL.into_iter().flat_map(|p| PHASED.iter().map(move |f| FleetMetric::Phased(p, f)));
        gauges.chain(FleetMetric::PLAIN.map(|(m, _)| m)).chain(phased).collect()
    }

    /// The name after `fleet.`.
    pub fn name(self) -> String {
        match self {
            FleetMetric::Gauge(g, s) => format!("{}.{}", g.name(), s.name()),
            FleetMetric::QueueWait(stat) => format!("queue_wait.{stat}"),
            FleetMetric::Phased(p, f) => format!("{}.{}", p.name(), f.name()),
            plain => {
                let (_, name) =
                    FleetMetric::PLAIN.iter().find(|(m, _)| *m == plain).expect("a plain figure is in PLAIN");
                (*name).to_owned()
            }
        }
    }

    pub(super) fn parse(rest: &str) -> Result<FleetMetric, MetricError> {
        FleetMetric::all().into_iter().find(|m| m.name() == rest).ok_or_else(|| {
            let names: Vec<String> = FleetMetric::all().iter().map(|m| format!("{FLEET}.{}", m.name())).collect();
            MetricError::new(Unknown::FleetFigure(rest.to_owned()), names.join(", "))
        })
    }
}
