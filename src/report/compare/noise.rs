//! Each figure's noise model, and the verdict it gives. A change counts only when it is past
//! the threshold *and* past the figure's noise:
//!
//! - a latency quantile: the 95 % bootstrap interval of its ratio, from both runs' histograms
//!   ([`super::bootstrap`]), or from the repeats' medians under `run --repeat`;
//! - a rate or a count: the 95 % Poisson interval of the ratio of two counts over their
//!   exposures (relay-dir minutes, answered calls, seconds), with half a count added to each
//!   side so that 0 is an event count like any other ([`poisson_interval`]);
//! - a maximum, a gauge or a duration of one event: flagged only past [`MARGIN`] (and, for a
//!   figure counted in whole units, past one unit) as well as the threshold;
//! - an invariant (lost, duplicated, pairing violations, leftover files, malformed, failed
//!   faults): exact, any rise is a regression;
//! - under `--repeat`, any figure both runs' repeats measured: the interval from the spread
//!   of each run's repeats (its bootstrap interval of the median from 5 repeats, else its
//!   min–max).
//!
//! On the real clock a latency is also judged against each run's own measured floor
//! ([`Floor`]): a move no larger than the floor, or a ratio no larger than the floor's own
//! ratio, is [`super::Verdict::WithinFloor`], not a regression of the code.

use serde::Serialize;

use super::figures::Better;
use super::Verdict;
use crate::record::recorder::Measure;
use crate::results::repeat::Spread;
use crate::results::summary::{CaseResult, Summary};
use crate::scenario::gate::{Counter, FleetMetric, Metric};

/// How far a maximum (or a gauge, or one event's duration) may move before it counts: it
/// is one draw of the worst case, not an estimate, so its band is wide.
pub(crate) const MARGIN: f64 = 0.25;

crate::base::named! {
/// The noise model a figure was judged with; its name is how the console and the markdown
/// say it in the interval column's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Model {
    /// A latency quantile's bootstrap interval from the runs' histograms.
    Bootstrap,
    /// The interval from each run's repeats (`run --repeat`).
    Repeats,
    /// The Poisson interval of two counts over their exposures.
    Poisson,
    /// A maximum or a level: flagged only past [`MARGIN`].
    Margin,
    /// An invariant: any rise counts.
    Exact,
    /// A figure with no better side: shown, not judged.
    None,
}
names ["bootstrap", "repeats", "poisson", "margin 25%", "exact", ""]
}

/// The model a plain figure of summary.json is judged with, when the runs have no repeats.
pub(crate) fn model_of(m: Metric) -> Model {
    use Counter as C;
    use FleetMetric as F;
    match m {
        Metric::Latency(..) | Metric::InjectedLeg(_) => Model::Margin,
        Metric::Count(
            C::Lost | C::Duplicated | C::PairingViolations | C::LeftoverFiles | C::Malformed | C::FaultsFailed,
        ) => Model::Exact,
        Metric::Count(C::FaultWorstPickupMs) => Model::Margin,
        Metric::Count(_) => Model::Poisson,
        Metric::Fleet(
            F::MeanRequestsPerSec
            | F::Rejected
            | F::Queued
            | F::Cut
            | F::TurnsStarted
            | F::TurnsDemoted
            | F::TurnsDemotedPct
            | F::WindowFailures,
        ) => Model::Poisson,
        Metric::Fleet(_) => Model::Margin,
        Metric::VsBaseline(_) => Model::None,
    }
}

/// A figure's events and their exposure, `(count, exposure)`, whose quotient is the figure:
/// a rate per relay-dir minute is its requests over the relay-dir minutes, a count is
/// itself over 1. `None`: the case does not say.
pub(crate) fn counts(r: &CaseResult, m: Metric) -> Option<(f64, f64)> {
    use Counter as C;
    let q = &r.requests;
    let rate = |per_min: f64, minutes: f64| (minutes > 0.0).then(|| ((per_min * minutes).round(), minutes));
    let dir_minutes = r.window_secs * f64::from(r.sandboxes) / 60.0;
    match m {
        Metric::Count(c) => match c {
            C::RequestsPerCall => {
                (r.calls.completed > 0).then(|| ((q.discovery_total + q.data_total) as f64, r.calls.completed as f64))
            }
            C::DiscoveryPerMin => Some((q.discovery_total as f64, dir_minutes)),
            C::DataPerMin => Some((q.data_total as f64, dir_minutes)),
            C::BusyDiscoveryPerMin => rate(q.busy.discovery_per_min, q.busy.minutes),
            C::IdleDiscoveryPerMin => q.idle_relay.as_ref().and_then(|s| rate(s.discovery_per_min, s.minutes)),
            C::IdleDirDiscoveryPerMin => rate(q.idle.discovery_per_min, q.idle.minutes),
            C::ActivePhaseDiscoveryPerMin => rate(q.active_phases.discovery_per_min, q.active_phases.minutes),
            C::IdlePhaseDiscoveryPerMin => rate(q.idle_phases.discovery_per_min, q.idle_phases.minutes),
            c => r.metric(Metric::Count(c)).map(|v| (v, 1.0)),
        },
        Metric::Fleet(f) => {
            let fleet = r.fleet.as_ref()?;
            match f {
                FleetMetric::MeanRequestsPerSec => {
                    let secs = r.window_secs;
                    (secs > 0.0).then(|| ((fleet.requests_per_sec.mean_per_sec * secs).round(), secs))
                }
                FleetMetric::TurnsDemotedPct => {
                    (fleet.turns.started > 0).then(|| (fleet.turns.demoted as f64, fleet.turns.started as f64 / 100.0))
                }
                _ => r.metric(m).map(|v| (v, 1.0)),
            }
        }
        _ => None,
    }
}

/// The 95 % interval of the ratio of two Poisson rates, `(k_new / e_new) / (k_old / e_old)`,
/// on the log scale, with half an event added to each count (so 0 against 3 is a wide
/// interval, not a division by zero).
pub(crate) fn poisson_interval((ko, eo): (f64, f64), (kn, en): (f64, f64)) -> [f64; 2] {
    let (ko, kn) = (ko.max(0.0) + 0.5, kn.max(0.0) + 0.5);
    let centre = (kn / en) / (ko / eo);
    let half = 1.96 * (1.0 / ko + 1.0 / kn).sqrt();
    [centre * (-half).exp(), centre * half.exp()]
}

/// The interval of NEW / OLD from each run's repeats of a figure: each spread's bootstrap
/// interval of the median (from 5 repeats), else its min–max.
pub(crate) fn repeats_interval(o: &Spread, n: &Spread) -> Option<[f64; 2]> {
    let band = |s: &Spread| s.ci95.unwrap_or([s.min, s.max]);
    let ([olo, ohi], [nlo, nhi]) = (band(o), band(n));
    (olo > 0.0 && ohi > 0.0).then(|| [nlo / ohi, nhi / olo])
}

/// The verdict on a ratio whose noise interval is `[low, high]`, for a figure better
/// `better`: past the threshold `t` with its whole interval.
pub(crate) fn judge(better: Better, low: f64, high: f64, t: f64) -> Verdict {
    let (worse, improved) = match better {
        Better::Lower => (low > 1.0 + t, high < 1.0 - t),
        Better::Higher => (high < 1.0 - t, low > 1.0 + t),
        Better::Either => return Verdict::NotJudged,
    };
    if worse {
        Verdict::Regression
    } else if improved {
        Verdict::Improvement
    } else {
        Verdict::Noise
    }
}

/// The verdict on a maximum or a level: past the threshold and [`MARGIN`], and past one
/// unit when `whole` (24 → 27 held requests is not news).
pub(crate) fn judge_margin(better: Better, old: f64, new: f64, t: f64, whole: bool) -> Verdict {
    let band = t.max(MARGIN);
    let slack = if whole { 1.0 } else { 0.0 };
    let past = |from: f64, to: f64| to > from * (1.0 + band) && to - from > slack;
    let (up, down) = (past(old, new), past(new, old));
    match better {
        Better::Either => Verdict::NotJudged,
        Better::Lower if up => Verdict::Regression,
        Better::Lower if down => Verdict::Improvement,
        Better::Higher if down => Verdict::Regression,
        Better::Higher if up => Verdict::Improvement,
        _ => Verdict::Noise,
    }
}

/// The verdict on an invariant: any rise is a regression, any fall an improvement.
pub(crate) fn judge_exact(better: Better, old: f64, new: f64) -> Verdict {
    let r = match new.partial_cmp(&old) {
        Some(std::cmp::Ordering::Greater) => 2.0,
        Some(std::cmp::Ordering::Less) => 0.0,
        _ => 1.0,
    };
    judge(better, r, r, 0.0)
}

/// A real-clock run's floor at one statistic, in ms: the later of how late this machine ran
/// a task that was due while the case ran (its writers' schedule lag) and the run's
/// calibration of a 1 ms timer's overshoot (the resolution of any timed wait). The load of
/// the machine shows in it as much as in any latency.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub(crate) struct Floor {
    pub old: f64,
    pub new: f64,
    /// How much slower this machine ran its own probes in NEW than in OLD: the highest ratio
    /// of the calibrations' medians (an inotify event's delivery, a pickup's floor, a listing,
    /// a timer's overshoot), 1 when NEW's were no slower or a run has none. A busy machine
    /// slows what the relay does (a process started, a file parsed) more than one timer.
    #[serde(skip_serializing_if = "is_one")]
    pub slowdown: f64,
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
}

/// How much slower `new`'s machine ran the calibration probes than `old`'s (their medians'
/// highest ratio, at least 1): the run's own measure of the load it ran under.
fn slowdown(old: &Summary, new: &Summary) -> f64 {
    let (Some(o), Some(n)) = (old.calibration.as_ref(), new.calibration.as_ref()) else { return 1.0 };
    let pairs = [
        (Some(&o.inotify_rename_us), Some(&n.inotify_rename_us)),
        (o.inotify_pickup_us.as_ref(), n.inotify_pickup_us.as_ref()),
        (Some(&o.list_16_files_us), Some(&n.list_16_files_us)),
        (Some(&o.timer_overshoot_1ms_us), Some(&n.timer_overshoot_1ms_us)),
    ];
    pairs
        .into_iter()
        .filter_map(|(a, b)| {
            let (a, b) = (a?, b?);
            // A median over enough samples to mean something, of a probe that took time.
            (a.count >= 20 && b.count >= 20 && a.p50 > 0.0).then(|| b.p50 / a.p50)
        })
        .fold(1.0, f64::max)
}

impl Floor {
    /// The floors of a latency statistic (`p50`, `p99`, `max`, ...) of a case in both runs,
    /// when both ran on the real clock and measured one.
    pub(crate) fn of((so, o): (&Summary, &CaseResult), (sn, n): (&Summary, &CaseResult), stat: &str) -> Option<Floor> {
        let one = |s: &Summary, r: &CaseResult| -> Option<f64> {
            if r.clock != crate::scenario::Clock::Real {
                return None;
            }
            let lag = r.latency(Measure::ScheduleLag);
            let lag = (lag.count > 0).then(|| lag.get(stat)).flatten();
            let timer = s.calibration.as_ref().map(|c| &c.timer_overshoot_1ms_us);
            let timer = timer.filter(|t| t.count > 0).and_then(|t| t.get(stat));
            let us = match (lag, timer) {
                (Some(a), Some(b)) => a.max(b),
                (a, b) => a.or(b)?,
            };
            Some(us / 1000.0)
        };
        Some(Floor { old: one(so, o)?, new: one(sn, n)?, slowdown: slowdown(so, sn) })
    }

    /// `verdict` (of a latency `old` → `new` ms, interval `[low, high]`) held against the
    /// floors: a regression must rise by more than the higher floor and by a ratio past the
    /// machine's own slowdown (the threshold's band times the larger of NEW's floor over
    /// OLD's and the calibrations' [`Floor::slowdown`]); an improvement the same the other
    /// way. Otherwise the move is within what the machine's own load explains.
    pub(crate) fn hold(self, verdict: Verdict, (old, new): (f64, f64), [low, high]: [f64; 2], t: f64) -> Verdict {
        let level = self.old.max(self.new);
        let floor_moved = if self.old > 0.0 { self.new / self.old } else { 1.0 };
        let moved = floor_moved.max(self.slowdown);
        match verdict {
            Verdict::Regression if new - old <= level || low <= (1.0 + t) * moved.max(1.0) => Verdict::WithinFloor,
            Verdict::Improvement if old - new <= level || high >= (1.0 - t) * floor_moved.min(1.0) => {
                Verdict::WithinFloor
            }
            v => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisson_interval_straddles_1_for_the_same_rate_and_not_for_a_doubled_one() {
        let [lo, hi] = poisson_interval((500.0, 1.0), (540.0, 1.0));
        assert!(lo < 1.0 && hi > 1.0, "500 against 540 lists: [{lo}, {hi}]");
        let [lo, _] = poisson_interval((500.0, 1.0), (1000.0, 1.0));
        assert!(lo > 1.7, "a doubled rate: {lo}");
        // 0 against 3 over the same time: a wide interval, not a division by zero.
        let [lo, hi] = poisson_interval((0.0, 2.0), (3.0, 2.0));
        assert!(lo < 1.0 && hi > 10.0, "[{lo}, {hi}]");
        // Exposures count: 100 over 1 minute against 200 over 2 minutes is one rate.
        let [lo, hi] = poisson_interval((100.0, 1.0), (200.0, 2.0));
        assert!(lo < 1.0 && hi > 1.0, "[{lo}, {hi}]");
    }

    #[test]
    fn a_maximum_counts_only_past_its_margin_and_one_unit() {
        let t = 0.05;
        assert_eq!(judge_margin(Better::Lower, 24.0, 27.0, t, true), Verdict::Noise, "+12.5%");
        assert_eq!(judge_margin(Better::Lower, 24.0, 31.0, t, true), Verdict::Regression, "+29%");
        assert_eq!(judge_margin(Better::Lower, 2.0, 3.0, t, true), Verdict::Noise, "one unit is the resolution");
        assert_eq!(judge_margin(Better::Lower, 2.0, 4.0, t, true), Verdict::Regression);
        assert_eq!(judge_margin(Better::Lower, 40.0, 20.0, t, false), Verdict::Improvement);
    }

    #[test]
    fn an_invariant_counts_any_rise() {
        assert_eq!(judge_exact(Better::Lower, 0.0, 1.0), Verdict::Regression);
        assert_eq!(judge_exact(Better::Lower, 1.0, 1.0), Verdict::Noise);
        assert_eq!(judge_exact(Better::Lower, 2.0, 0.0), Verdict::Improvement);
    }

    #[test]
    fn a_busier_machine_is_not_a_regression_of_the_code_and_a_real_one_still_is() {
        let t = 0.05;
        // A sub-millisecond wake that moved by less than the floor (10 ms of schedule lag).
        let f = Floor { old: 9.9, new: 10.4, slowdown: 1.0 };
        assert_eq!(f.hold(Verdict::Regression, (0.22, 0.62), [2.0, 7.0], t), Verdict::WithinFloor);
        // A pickup 1.3x slower on a machine whose floor rose 3.7x.
        let f = Floor { old: 1.4, new: 5.1, slowdown: 1.0 };
        assert_eq!(f.hold(Verdict::Regression, (123.0, 163.0), [1.23, 1.44], t), Verdict::WithinFloor);
        // A pickup 2x slower on a machine whose floor did not move.
        let f = Floor { old: 1.4, new: 1.5, slowdown: 1.0 };
        assert_eq!(f.hold(Verdict::Regression, (150.0, 300.0), [1.9, 2.1], t), Verdict::Regression);
        assert_eq!(f.hold(Verdict::Improvement, (300.0, 150.0), [0.45, 0.55], t), Verdict::Improvement);
        assert_eq!(f.hold(Verdict::Noise, (150.0, 151.0), [0.9, 1.1], t), Verdict::Noise);
        // An unchanged relay rerun on a busy machine: completion 1.19x [1.14, 1.26] while the
        // timer's floor barely moved, but the machine ran its own probes 1.4x slower.
        let calm = Floor { old: 1.1, new: 1.1, slowdown: 1.0 };
        assert_eq!(calm.hold(Verdict::Regression, (49.0, 58.3), [1.14, 1.26], t), Verdict::Regression);
        let busy = Floor { slowdown: 1.4, ..calm };
        assert_eq!(busy.hold(Verdict::Regression, (49.0, 58.3), [1.14, 1.26], t), Verdict::WithinFloor);
        // ... and a relay twice as slow is one still, on that busy machine.
        assert_eq!(busy.hold(Verdict::Regression, (49.0, 98.0), [1.9, 2.1], t), Verdict::Regression);
    }

    #[test]
    fn repeats_give_the_widest_ratio_their_bands_allow() {
        let s = |lo: f64, hi: f64| Spread { min: lo, max: hi, ..Spread::default() };
        let [lo, hi] = repeats_interval(&s(100.0, 110.0), &s(200.0, 220.0)).unwrap();
        assert!((lo - 200.0 / 110.0).abs() < 1e-9 && (hi - 2.2).abs() < 1e-9);
        let ci = Spread { ci95: Some([100.0, 104.0]), min: 50.0, max: 200.0, ..Spread::default() };
        let [lo, _] = repeats_interval(&ci, &ci).unwrap();
        assert!((lo - 100.0 / 104.0).abs() < 1e-9, "the median's interval, not the min-max");
    }
}
