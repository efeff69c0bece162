//! Gates (k6-style thresholds): `pickup.p50 < 10ms`, `completion.p99 < 2s`, `lost == 0`,
//! `discovery_per_min <= 5`. Parsed and checked when the scenario loads; evaluated against
//! each case's result. A gate whose metric has no samples fails and says so.

mod counter;
mod error;
mod fleet;

use serde::{Deserialize, Serialize};

use crate::base::suggest::did_you_mean;
use crate::base::units::parse_duration;
use crate::record::recorder::{LatencyStats, Measure};
pub(crate) use counter::{Counter, Rule};
pub(crate) use error::{GateError, MetricError, Unknown};
pub(crate) use fleet::{FleetGauge, FleetMetric, GaugeStat, Phase, FLEET};

/// A number a gate can read from a case result; written as its name (`pickup.p50`, `lost`,
/// `vs_baseline.pickup_p50`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency statistic, in microseconds (`count`: its samples, reported, not gated).
    Latency(Measure, &'static str),
    /// A statistic of the daemon legs injected into a remote-emulated case (reported, not
    /// gated): `injected_leg.p50`.
    InjectedLeg(&'static str),
    Count(Counter),
    /// This case's figure over its baseline case's (1.0: the same).
    VsBaseline(Ratio),
    /// A figure of the fleet: the remote side's gauges, rates and limits, and the turns.
    Fleet(FleetMetric),
}

crate::base::named! {
/// A figure compared with the baseline case's: `vs_baseline.<name>` is this case's value
/// divided by the baseline's, so `vs_baseline.pickup_p50 <= 1.15` reads "at most 15 % more".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ratio {
    PickupP50,
    CompletionP50,
    DiscoveryPerMin,
    /// Over the idle phases when the workload has any, else the idle stretches.
    IdleDiscoveryPerMin,
    WakeP50,
    WakeP90,
    PickupP90,
    CompletionP90,
    /// The mean: the figure of a distribution a quantile cannot summarise (a polling
    /// writer's completions split between its first and second check).
    CompletionMean,
    /// The mean: a poll runner's pickups are spread over its list cycle, and their p50 moves
    /// with where the cycle's phase falls against the arrivals; the mean averages it out.
    PickupMean,
}
names ["pickup_p50", "completion_p50", "discovery_per_min", "idle_discovery_per_min", "wake_p50", "wake_p90", "pickup_p90", "completion_p90", "completion_mean", "pickup_mean"]
}

/// The prefix of a baseline ratio's name.
pub(crate) const VS_BASELINE: &str = "vs_baseline";

/// Which way a figure moves for the better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Better {
    Lower,
    Higher,
    /// Neither: set by the workload (turns started), shown but never a regression.
    Either,
}

/// A latency's statistics in the order repeats show them: its samples first.
const LATENCY_FIGURES: [&str; 8] = ["count", "p50", "p90", "p99", "p999", "mean", "min", "max"];

impl Metric {
    /// The unit its value is shown in beside a figure (a latency statistic: in ms); `""`: a
    /// count or a share.
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Metric::Latency(_, "count") | Metric::InjectedLeg("count") => "",
            Metric::Fleet(FleetMetric::QueueWait("count")) => "",
            Metric::Latency(..) | Metric::InjectedLeg(_) => "ms",
            Metric::Count(c) => c.row().unit,
            Metric::Fleet(f) => f.unit(),
            Metric::VsBaseline(_) => "",
        }
    }

    /// The unit of its value as summary.json stores it: latencies in microseconds.
    pub(crate) fn stored_unit(self) -> &'static str {
        match (self.unit(), self) {
            ("ms", Metric::Latency(..) | Metric::InjectedLeg(_) | Metric::Fleet(FleetMetric::QueueWait(_))) => "us",
            (unit, _) => unit,
        }
    }

    /// Which way it moves for the better: more of a latency, a request rate or a rejection
    /// is worse; more calls completed is better; what the workload sets is neither.
    pub(crate) fn better(self) -> Better {
        match self {
            Metric::Count(c) => c.row().better,
            Metric::Fleet(f) => f.better(),
            Metric::VsBaseline(_) => Better::Either,
            Metric::Latency(..) | Metric::InjectedLeg(_) => Better::Lower,
        }
    }

    /// How a case's repeats make it one.
    pub(crate) fn rule(self) -> Rule {
        match self {
            Metric::Count(c) => c.row().rule,
            Metric::Latency(_, "count") | Metric::InjectedLeg("count") => Rule::Fewest,
            Metric::Fleet(FleetMetric::QueueWait("count")) => Rule::Fewest,
            _ => Rule::Median,
        }
    }

    /// Whether a gate (and so a sweep's column or an objective) may read it.
    pub(crate) fn gateable(self) -> bool {
        match self {
            Metric::Count(c) => c.row().gate,
            Metric::Latency(_, stat) => stat != "count",
            Metric::InjectedLeg(_) | Metric::Fleet(FleetMetric::QueueWait(_)) => false,
            Metric::VsBaseline(_) | Metric::Fleet(_) => true,
        }
    }

    /// A value of this metric as a gate's observed value reads (`93.1ms`, `5.25`,
    /// `0.968x the baseline`).
    pub(crate) fn show(self, v: f64) -> String {
        match self {
            Metric::Latency(..) | Metric::InjectedLeg(_) => crate::base::units::human_us(v),
            Metric::Count(_) | Metric::Fleet(_) => crate::base::units::readable(v, 2),
            Metric::VsBaseline(_) if (1e-3..1e9).contains(&v.abs()) => format!("{v:.3}x the baseline"),
            Metric::VsBaseline(_) => format!("{}x the baseline", crate::base::units::readable(v, 3)),
        }
    }

    /// The figure table: every figure a case's result holds, in the order repeats and
    /// summary.json's spreads show them (the baseline ratios, computed after, aside).
    pub(crate) fn table() -> &'static [Metric] {
        static TABLE: std::sync::OnceLock<Vec<Metric>> = std::sync::OnceLock::new();
        TABLE.get_or_init(|| {
            let (inside, apart): (Vec<Measure>, Vec<Measure>) = Measure::all().partition(|m| m.in_latency_us());
            let latency = inside.into_iter().chain(apart).flat_map(|m| LATENCY_FIGURES.map(|s| Metric::Latency(m, s)));
            // The faults' figures (read from the fault rows) come last, after the fleet's, as
            // summary.json's spreads have always listed them.
            let fault = |c: &Counter| matches!(c, Counter::FaultWorstPickupMs | Counter::FaultsFailed);
            latency
                .chain(LATENCY_FIGURES.map(Metric::InjectedLeg))
                .chain(Counter::ALL.iter().filter(|c| !fault(c)).map(|c| Metric::Count(*c)))
                .chain(FleetMetric::table().into_iter().map(Metric::Fleet))
                .chain(Counter::ALL.iter().filter(|c| fault(c)).map(|c| Metric::Count(*c)))
                .collect()
        })
    }

    /// Every metric a gate may read: each statistic of each measure, the counters, the
    /// baseline ratios, the fleet's figures.
    pub(crate) fn all() -> impl Iterator<Item = Metric> {
        let latency = Measure::all().flat_map(|m| LatencyStats::STATS.into_iter().map(move |s| Metric::Latency(m, s)));
        let others = Metric::table().iter().copied().filter(|m| m.gateable() && !matches!(m, Metric::Latency(..)));
        latency.chain(others).chain(Ratio::ALL.map(Metric::VsBaseline))
    }

    /// The name a gate uses: `pickup.p50`, `discovery_per_min`.
    pub fn name(self) -> String {
        match self {
            Metric::Latency(m, stat) => format!("{}.{stat}", m.name()),
            Metric::InjectedLeg(stat) => format!("injected_leg.{stat}"),
            Metric::Count(c) => c.name().to_owned(),
            Metric::VsBaseline(r) => format!("{VS_BASELINE}.{}", r.name()),
            Metric::Fleet(f) => format!("{FLEET}.{}", f.name()),
        }
    }

    /// A metric by its name; the error names the closest one to a typo and lists the
    /// allowed ones.
    pub fn parse(name: &str) -> Result<Metric, MetricError> {
        Metric::parse_exact(name).map_err(|e| {
            // Every metric's full name, each statistic of each measure spelled out.
            let every: Vec<String> = Metric::all().map(Metric::name).collect();
            MetricError { hint: did_you_mean(name, every.iter().map(String::as_str)), ..e }
        })
    }

    fn parse_exact(name: &str) -> Result<Metric, MetricError> {
        match name.split_once('.') {
            Some((FLEET, f)) => FleetMetric::parse(f).map(Metric::Fleet),
            Some((VS_BASELINE, r)) => Ratio::from_name(r)
                .map(Metric::VsBaseline)
                .ok_or_else(|| MetricError::new(Unknown::Ratio(r.to_owned()), Ratio::NAMES.join(", "))),
            Some((m, stat)) => {
                let measure = Measure::from_name(m)
                    .ok_or_else(|| MetricError::new(Unknown::Metric(name.to_owned()), metric_names()))?;
                let stat = LatencyStats::STATS.iter().find(|s| **s == stat).ok_or_else(|| {
                    MetricError::new(Unknown::Statistic(stat.to_owned()), LatencyStats::STATS.join(", "))
                })?;
                Ok(Metric::Latency(measure, stat))
            }
            None => Counter::ALL
                .iter()
                .find(|c| c.name() == name && c.row().gate)
                .map(|c| Metric::Count(*c))
                .ok_or_else(|| MetricError::new(Unknown::Metric(name.to_owned()), metric_names())),
        }
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Metric::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

crate::base::named! {
/// A gate's comparison; written as its symbol (`<=`), its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}
names ["<", "<=", ">", ">=", "==", "!="]
}

impl Op {
    pub(crate) fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// What a gate reads, how it compares, and its threshold: its expression, parsed (a gate's
/// verdict and a rollout gate hold them, the same four keys first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub expr: String,
    pub metric: Metric,
    pub op: Op,
    /// In microseconds for latency metrics, plain for counters.
    pub threshold: f64,
}

impl Serialize for Op {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Op {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let sym = String::deserialize(d)?;
        Op::from_name(&sym)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown comparison {sym:?} (use <, <=, >, >=, == or !=)")))
    }
}

/// A gate's verdict on one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "StoredGateResult")]
pub struct GateResult {
    #[serde(flatten)]
    pub gate: Gate,
    /// The observed value (microseconds for latency metrics); null when nothing was measured.
    pub observed: Option<f64>,
    /// The observed value as a person reads it.
    pub observed_text: String,
    pub pass: bool,
}

/// A figure this close to its gate's threshold (a share of the threshold) meets it only
/// on the edge: a long idle phase measures an idle rate to within this, and a figure
/// closer than it to its limit could have fallen on either side. The reports say "on the
/// edge" with its margin, never a bare pass, and a search looks for values past it.
pub(crate) const EDGE: f64 = 0.02;

impl GateResult {
    /// How far the observed value is from the threshold, as a share of the threshold:
    /// positive on the passing side. `None` for `==` and `!=`, a threshold of 0, or nothing
    /// measured.
    pub fn margin(&self) -> Option<f64> {
        let v = self.observed?;
        if self.gate.threshold == 0.0 || !v.is_finite() {
            return None;
        }
        let t = self.gate.threshold;
        match self.gate.op {
            Op::Lt | Op::Le => Some((t - v) / t.abs()),
            Op::Gt | Op::Ge => Some((v - t) / t.abs()),
            Op::Eq | Op::Ne => None,
        }
    }

    /// A gate on `lost`, whose verdict a search's probe stopped at its first lost call past
    /// the allowance still holds ([`Gate::lost_allowed`]); any other gate judged such a probe
    /// on the part that ran.
    pub(crate) fn holds_when_stopped_early(&self) -> bool {
        self.gate.lost_allowed().is_some()
    }

    /// Met, but by less than [`EDGE`].
    pub fn on_edge(&self) -> bool {
        // A figure exactly the edge's width from its threshold (4.9 against 5.0) is past it:
        // the float noise of the subtraction does not put it back.
        self.pass && self.margin().is_some_and(|m| m < EDGE - 1e-9)
    }

    /// `on the edge: 0.2 % to spare`, or `1.4 % over`, or `12 % to spare`, as the reports say
    /// a gate's margin; `None` without one.
    pub fn margin_text(&self) -> Option<String> {
        let m = self.margin()?;
        let pct = crate::base::units::readable((m * 100.0).abs(), 1);
        Some(match (self.pass, self.on_edge()) {
            (true, true) => format!("on the edge: {pct} % to spare"),
            (true, false) => format!("{pct} % to spare"),
            (false, _) => format!("{pct} % over"),
        })
    }
}

/// A gate result as stored: runs written before `metric`, `op` and `threshold` were
/// recorded still read, from their expression.
#[derive(Deserialize)]
struct StoredGateResult {
    expr: String,
    metric: Option<Metric>,
    op: Option<Op>,
    threshold: Option<f64>,
    observed: Option<f64>,
    observed_text: String,
    pass: bool,
}

impl TryFrom<StoredGateResult> for GateResult {
    type Error = GateError;

    fn try_from(g: StoredGateResult) -> Result<GateResult, GateError> {
        let gate = match (g.metric, g.op, g.threshold) {
            (Some(metric), Some(op), Some(threshold)) => Gate { expr: g.expr, metric, op, threshold },
            _ => Gate { expr: g.expr.clone(), ..Gate::parse(&g.expr)? },
        };
        Ok(GateResult { gate, observed: g.observed, observed_text: g.observed_text, pass: g.pass })
    }
}

pub(crate) fn metric_names() -> String {
    let lat: Vec<String> = Measure::all().map(|m| format!("{}.<stat>", m.name())).collect();
    let cnt: Vec<&str> = Counter::ALL.iter().filter(|c| c.row().gate).map(|c| c.name()).collect();
    let ratios: Vec<String> = Ratio::ALL.iter().map(|r| format!("{VS_BASELINE}.{}", r.name())).collect();
    format!(
        "{}, {}, {}, {FLEET}.<figure> (stat: {}; fleet figures: see the docs)",
        lat.join(", "),
        cnt.join(", "),
        ratios.join(", "),
        LatencyStats::STATS.join(", ")
    )
}

impl Gate {
    /// For a gate on `lost` (`lost == 0`, `lost <= 5`, `lost < 3`), the most lost calls it
    /// allows: lost calls only add up, so one more and it has failed whatever follows.
    /// `None` for any other gate.
    pub(crate) fn lost_allowed(&self) -> Option<u64> {
        if self.metric != Metric::Count(Counter::Lost) {
            return None;
        }
        let most = match self.op {
            Op::Eq | Op::Le => self.threshold.floor(),
            Op::Lt => self.threshold.ceil() - 1.0,
            Op::Gt | Op::Ge | Op::Ne => return None,
        };
        // A float past u64's range saturates; below 0, the first lost call decides it.
        Some(most.max(0.0) as u64)
    }

    pub fn parse(expr: &str) -> Result<Gate, GateError> {
        let (pos, sym, op) = Op::ALL
            .into_iter()
            .filter_map(|op| expr.find(op.name()).map(|p| (p, op.name(), op)))
            .min_by_key(|(p, sym, _)| (*p, std::cmp::Reverse(sym.len())))
            .ok_or_else(|| GateError::NoComparison(expr.to_owned()))?;
        let lhs = expr[..pos].trim();
        let rhs = expr[pos + sym.len()..].trim();
        let metric = Metric::parse(lhs)?;
        let threshold = match metric {
            Metric::Latency(..) | Metric::InjectedLeg(_) => {
                parse_duration(rhs).map_err(|why| GateError::Duration { expr: expr.to_owned(), why })?.as_secs_f64()
                    * 1e6
            }
            Metric::Count(_) | Metric::VsBaseline(_) | Metric::Fleet(_) => {
                rhs.parse::<f64>().map_err(|_| GateError::NotANumber { expr: expr.to_owned(), rhs: rhs.to_owned() })?
            }
        };
        if !threshold.is_finite() {
            return Err(GateError::NotFinite(expr.to_owned()));
        }
        Ok(Gate { expr: expr.trim().to_owned(), metric, op, threshold })
    }

    /// Whether `other` tests the same thing, written alike or not (`<= 5` and `<= 5.0`).
    pub(crate) fn same_test(&self, other: &Gate) -> bool {
        self.metric == other.metric && self.op == other.op && self.threshold == other.threshold
    }

    /// Checks the gate against a value read by `lookup`.
    pub(crate) fn evaluate(&self, observed: Option<f64>) -> GateResult {
        let observed_text = observed.map_or_else(|| "not measured (no samples)".to_owned(), |v| self.metric.show(v));
        let pass = observed.is_some_and(|v| self.op.holds(v, self.threshold));
        GateResult { gate: self.clone(), observed, observed_text, pass }
    }
}

#[cfg(test)]
mod docs_tests;
#[cfg(test)]
mod tests;
