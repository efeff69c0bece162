//! A case's repeats made one result: every figure (latency statistics, request rates and
//! totals, requests per call, the fleet's measures) is the median across the repeats, its
//! spread kept beside it ([`crate::results::repeat`]). The invariants (calls lost,
//! duplicated, pairing breaches, files left over, runners stuck) are the worst repeat's
//! instead: one lost call in any repeat is a lost call. A latency's sample count is the
//! fewest any repeat had, so a percentile too thin to mean anything in one repeat is marked
//! so. What is not a figure (fault rows, the timelines, phases, the histograms) is the first
//! repeat's, the one run with the run's own seed.

use super::CaseResult;
use crate::base::units::round;
use crate::results::repeat::{bootstrap_ci, median, Repeats, Rule, Spread};
use crate::scenario::gate::Metric;

/// One figure's spread across repeats: each repeat's value (rounded as summary.json holds
/// it), the one the case reports as its [`Rule`] says, the median's interval.
fn spread(m: Metric, values: Vec<Option<f64>>, seed: u64) -> Option<Spread> {
    let got: Vec<f64> = values.iter().flatten().copied().collect();
    let med = median(&got)?;
    let (min, max) = got.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(*x), b.max(*x)));
    let rule = m.rule();
    let value = match rule {
        Rule::Median => med,
        Rule::Worst => max,
        Rule::Fewest => min,
    };
    let ci95 = (rule == Rule::Median).then(|| bootstrap_ci(&got, seed)).flatten();
    Some(Spread {
        figure: m.name(),
        unit: m.stored_unit().into(),
        values,
        value: round(value, 4),
        rule: (rule != Rule::Median).then_some(rule),
        median: round(med, 4),
        min: round(min, 4),
        max: round(max, 4),
        ci95: ci95.map(|[a, b]| [round(a, 4), round(b, 4)]),
    })
}

/// The repeats of one case (in seed order, the first run with the run's own seed) made into
/// one result: the first repeat's, with every figure of the table replaced as its [`Rule`]
/// says and the spread of each kept in `repeat`. The intervals are drawn with generators
/// seeded from the first seed.
pub(crate) fn combine(mut runs: Vec<CaseResult>, seeds: Vec<u64>) -> CaseResult {
    assert!(!runs.is_empty(), "a case ran at least once");
    let base = seeds.first().copied().unwrap_or(0);
    let mut combined: Vec<(Metric, Spread)> = Vec::new();
    for m in Metric::table() {
        let values: Vec<Option<f64>> = runs.iter().map(|r| r.figure(*m).map(|v| round(v, 4))).collect();
        if values.iter().any(Option::is_some) {
            combined.extend(spread(*m, values, base ^ (combined.len() as u64 + 1)).map(|s| (*m, s)));
        }
    }
    let interrupted = runs.iter().any(|r| r.interrupted);
    // A probe's repeat that stopped at a lost call: its figures are of the part that ran.
    let stopped_early = runs.iter().find_map(|r| r.stopped_early.clone());
    let notices: Vec<String> = runs[1..].iter().flat_map(|r| r.notices.iter().cloned()).collect();
    let notices_total: u64 = runs.iter().map(|r| r.notices_total).sum();
    let mut out = runs.swap_remove(0);
    for (m, s) in &combined {
        if let Some(place) = out.place(*m) {
            place.set(s.value);
        }
    }
    let figures = combined.into_iter().map(|(_, s)| s).collect();
    out.interrupted = interrupted;
    out.stopped_early = stopped_early;
    out.notices.extend(notices);
    out.notices_total = notices_total;
    out.repeat = Some(Repeats { seeds, figures });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::recorder::LatencyStats;
    use crate::record::recorder::Measure;

    fn case(pickup_p50: f64, count: u64, lost: u64, idle: f64) -> CaseResult {
        let mut r = CaseResult { case: "c".into(), ..Default::default() };
        *r.measures.get_mut(Measure::Pickup) =
            LatencyStats { count, p50: pickup_p50, p99: pickup_p50 * 3.0, ..Default::default() };
        r.calls.lost = lost;
        r.calls.completed = count;
        r.requests.idle_phases.minutes = 3.0;
        r.requests.idle_phases.discovery_per_min = idle;
        r
    }

    /// A probe whose later repeat stopped at a lost call says so, though its first ran whole.
    #[test]
    fn a_repeat_that_stopped_early_marks_the_combined_result() {
        let stop = crate::results::stopped::StoppedEarly { at_secs: 90.0, of_secs: 600.0, lost_allowed: 0 };
        let second = CaseResult { stopped_early: Some(stop.clone()), ..case(100.0, 50, 1, 4.0) };
        let r = combine(vec![case(100.0, 50, 0, 4.0), second, case(100.0, 50, 0, 4.0)], vec![1, 2, 3]);
        assert_eq!(r.stopped_early, Some(stop));
        assert_eq!(r.calls.lost, 1, "the worst repeat's");
        let whole = combine(vec![case(100.0, 50, 0, 4.0), case(100.0, 50, 0, 4.0)], vec![1, 2]);
        assert_eq!(whole.stopped_early, None);
    }

    /// Every figure a gate reads is combined across repeats (a figure left out would be
    /// judged on the first repeat alone while the report calls it the median); the ratios to
    /// a baseline case are computed after, from the combined figures.
    #[test]
    fn every_gate_metric_is_combined_across_repeats() {
        for m in Metric::all().filter(|m| !matches!(m, Metric::VsBaseline(_))) {
            assert!(Metric::table().contains(&m), "{} is not combined across repeats", m.name());
        }
        let mut r = case(100.0, 50, 0, 4.0);
        r.requests.busy.minutes = 1.0;
        let c = combine(vec![r.clone(), r], vec![1, 2]);
        let names: Vec<&str> = c.repeat.as_ref().unwrap().figures.iter().map(|s| s.figure.as_str()).collect();
        for want in ["pickup.count", "pickup.p50", "busy_minutes", "calls.scheduled", "runner.stuck", "window_secs"] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
    }

    #[test]
    fn a_fleet_gate_judges_the_median_of_each_repeats_figure() {
        let with = |held: u64| {
            let mut r = case(100.0, 50, 0, 4.0);
            r.fleet = Some(crate::results::fleet::FleetResult {
                org_measured: true,
                held_exec_limit: Some(10),
                held_execs: crate::base::gauge::GaugeStats { max: held, ..Default::default() },
                ..Default::default()
            });
            r
        };
        let r = combine(vec![with(9), with(2), with(4)], vec![1, 2, 3]);
        let util = Metric::Fleet(crate::scenario::gate::FleetMetric::HeldExecsUtilisation);
        assert_eq!(r.metric(util), Some(0.4), "the median repeat's utilisation");
        let gate = crate::scenario::gate::Gate::parse("fleet.held_execs_utilisation <= 0.5").unwrap();
        assert!(gate.evaluate(r.metric(gate.metric)).pass, "one repeat at 0.9 alone would fail it");
    }

    #[test]
    fn repeats_give_medians_the_worst_invariant_and_the_fewest_samples() {
        let runs = vec![case(100.0, 50, 0, 4.0), case(300.0, 40, 2, 6.0), case(200.0, 60, 0, 5.0)];
        let r = combine(runs, vec![1, 2, 3]);
        assert_eq!(r.latency(Measure::Pickup).p50, 200.0);
        assert_eq!(r.latency(Measure::Pickup).p99, 600.0);
        assert_eq!(r.latency(Measure::Pickup).count, 40, "the thinnest repeat's count");
        assert_eq!(r.calls.lost, 2, "a lost call in any repeat");
        assert_eq!(r.requests.idle_phases.discovery_per_min, 5.0);
        let rep = r.repeat.as_ref().unwrap();
        assert_eq!(rep.seeds, [1, 2, 3]);
        let p50 = rep.get("pickup.p50").unwrap();
        assert_eq!(p50.values, [Some(100.0), Some(300.0), Some(200.0)]);
        assert_eq!((p50.median, p50.min, p50.max, p50.ci95), (200.0, 100.0, 300.0, None));
        assert_eq!(rep.get("lost").unwrap().rule, Some(Rule::Worst));
        let five: Vec<CaseResult> = (0..5).map(|k| case(100.0 + k as f64, 50, 0, 4.0)).collect();
        let r = combine(five, crate::base::rng::seeds(1, 5));
        let ci = r.repeat.unwrap().get("pickup.p50").unwrap().ci95.unwrap();
        assert!(ci[0] <= 102.0 && 102.0 <= ci[1], "{ci:?}");
    }
}
