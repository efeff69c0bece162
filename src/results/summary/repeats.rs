//! A case's repeats made one result: every figure (latency statistics, request rates and
//! totals, requests per call, the fleet's measures) is the median across the repeats, its
//! spread kept beside it ([`crate::results::repeat`]). The invariants (calls lost,
//! duplicated, pairing breaches, files left over, runners stuck) are the worst repeat's
//! instead: one lost call in any repeat is a lost call. A latency's sample count is the
//! fewest any repeat had, so a percentile too thin to mean anything in one repeat is marked
//! so. What is not a figure (fault rows, the timelines, phases, the histograms) is the first
//! repeat's, the one run with the run's own seed.

use super::CaseResult;
use crate::record::recorder::LatencyStats;
use crate::results::counts::Requests;
use crate::results::fleet::FleetResult;
use crate::results::repeat::{bootstrap_ci, median, Repeats, Rule, Spread};
use crate::scenario::gate::{Counter, FleetMetric, Metric};

/// A place in a [`CaseResult`] that holds a figure.
enum Slot<'a> {
    F(&'a mut f64),
    U(&'a mut u64),
    /// Computed from others (requests per call): reported, never written back.
    Derived(f64),
}

impl Slot<'_> {
    fn get(&self) -> f64 {
        match self {
            Slot::F(x) => **x,
            Slot::U(x) => **x as f64,
            Slot::Derived(x) => *x,
        }
    }

    fn set(&mut self, v: f64) {
        match self {
            Slot::F(x) => **x = (v * 1e4).round() / 1e4,
            Slot::U(x) => **x = v.round().max(0.0) as u64,
            Slot::Derived(_) => {}
        }
    }
}

type Named<'a> = (String, &'static str, Rule, Slot<'a>);

fn latency<'a>(out: &mut Vec<Named<'a>>, name: &str, s: &'a mut LatencyStats, unit: &'static str) {
    if s.count == 0 {
        return;
    }
    let LatencyStats { count, min, p50, p90, p99, p999, max, mean } = s;
    out.push((format!("{name}.count"), "", Rule::Fewest, Slot::U(count)));
    for (stat, x) in
        [("p50", p50), ("p90", p90), ("p99", p99), ("p999", p999), ("mean", mean), ("min", min), ("max", max)]
    {
        out.push((format!("{name}.{stat}"), unit, Rule::Median, Slot::F(x)));
    }
}

/// Every figure of `r`, named, with how repeats make it one.
fn slots(r: &mut CaseResult) -> Vec<Named<'_>> {
    let mut out: Vec<Named<'_>> = Vec::new();
    let measured = !r.requests.not_measured;
    let per_call = (measured && r.calls.completed > 0)
        .then(|| (r.requests.discovery_total + r.requests.data_total) as f64 / r.calls.completed as f64);
    // summary.json's order: the measures in `latency_us`, then those beside it.
    let (inside, apart): (Vec<_>, Vec<_>) = r.measures.iter_mut().partition(|(m, _)| m.in_latency_us());
    for (m, s) in inside.into_iter().chain(apart) {
        latency(&mut out, m.name(), s, "us");
    }
    if let Some(leg) = r.injected_leg_us.as_mut() {
        latency(&mut out, "injected_leg", leg, "us");
    }
    if measured {
        request_slots(&mut out, &mut r.requests);
    }
    if let Some(v) = per_call {
        out.push(("requests_per_call".into(), "", Rule::Median, Slot::Derived(v)));
    }
    let c = &mut r.calls;
    for (name, x) in [
        ("calls.scheduled", &mut c.scheduled),
        ("calls.started", &mut c.started),
        (Counter::Completed.name(), &mut c.completed),
        ("calls.ok", &mut c.ok),
        ("calls.error", &mut c.error),
        ("calls.paused", &mut c.paused),
        ("calls.warmup", &mut c.warmup),
    ] {
        out.push((name.into(), "", Rule::Median, Slot::U(x)));
    }
    for (name, x) in [
        (Counter::Lost.name(), &mut c.lost),
        (Counter::Duplicated.name(), &mut c.duplicated),
        ("calls.timeout", &mut c.timeout),
        ("calls.id_collision", &mut c.id_collision),
        ("calls.publish_error", &mut c.publish_error),
        ("calls.environment", &mut c.environment),
        ("calls.interrupted", &mut c.interrupted),
        ("calls.unmeasured", &mut c.unmeasured),
        (Counter::PairingViolations.name(), &mut r.pairing_violations.total),
        (Counter::LeftoverFiles.name(), &mut r.leftover_files),
        (Counter::Malformed.name(), &mut r.runner.malformed),
        ("runner.stuck", &mut r.runner.stuck),
    ] {
        out.push((name.into(), "", Rule::Worst, Slot::U(x)));
    }
    if measured {
        out.push((Counter::SafetyLists.name().into(), "", Rule::Median, Slot::U(&mut r.runner.safety_lists)));
        out.push((Counter::WatchMisses.name().into(), "", Rule::Median, Slot::U(&mut r.runner.missed_by_source)));
    }
    out.push(("window_secs".into(), "s", Rule::Median, Slot::F(&mut r.window_secs)));
    if let Some(f) = r.fleet.as_mut() {
        fleet_slots(&mut out, f);
    }
    out
}

/// The request rates and totals, over the window and each stretch that happened.
fn request_slots<'a>(out: &mut Vec<Named<'a>>, q: &'a mut Requests) {
    out.push((Counter::DiscoveryPerMin.name().into(), "/min", Rule::Median, Slot::F(&mut q.discovery_per_min)));
    out.push((Counter::DataPerMin.name().into(), "/min", Rule::Median, Slot::F(&mut q.data_per_min)));
    out.push(("discovery_total".into(), "", Rule::Median, Slot::U(&mut q.discovery_total)));
    out.push(("data_total".into(), "", Rule::Median, Slot::U(&mut q.data_total)));
    let stretches = [
        Some(("busy", &mut q.busy)),
        Some(("idle_dir", &mut q.idle)),
        q.idle_relay.as_mut().map(|s| ("idle", s)),
        Some(("active_phase", &mut q.active_phases)),
        Some(("idle_phase", &mut q.idle_phases)),
    ];
    for (name, s) in stretches.into_iter().flatten() {
        if s.minutes > 0.0 {
            out.push((format!("{name}_discovery_per_min"), "/min", Rule::Median, Slot::F(&mut s.discovery_per_min)));
            out.push((format!("{name}_data_per_min"), "/min", Rule::Median, Slot::F(&mut s.data_per_min)));
            out.push((format!("{name}_minutes"), "", Rule::Median, Slot::F(&mut s.minutes)));
        }
    }
}

/// The fleet's turns and, where its requests passed through the organisation, its gauges,
/// rates, rejections and queue waits.
fn fleet_slots<'a>(out: &mut Vec<Named<'a>>, f: &'a mut FleetResult) {
    let t = &mut f.turns;
    out.push(("fleet.turns_started".into(), "", Rule::Median, Slot::U(&mut t.started)));
    out.push(("fleet.turns_demoted".into(), "", Rule::Median, Slot::U(&mut t.demoted)));
    out.push(("fleet.turns_demoted_pct".into(), "%", Rule::Median, Slot::F(&mut t.demoted_pct)));
    out.push(("fleet.window_failures".into(), "", Rule::Median, Slot::U(&mut t.window_failures)));
    out.push(("fleet.fallback_secs".into(), "s", Rule::Median, Slot::F(&mut t.fallback_secs)));
    out.push(("fleet.calls_per_turn_mean".into(), "", Rule::Median, Slot::F(&mut t.calls_per_turn_mean)));
    if !f.org_measured {
        return;
    }
    let gauges = [
        ("held_execs", &mut f.held_execs),
        ("sandbox_held_execs", &mut f.sandbox_held_execs),
        ("in_flight", &mut f.in_flight),
        ("sandbox_in_flight", &mut f.sandbox_in_flight),
        ("connections", &mut f.connections),
        ("sandbox_connections", &mut f.sandbox_connections),
    ];
    for (name, g) in gauges {
        out.push((format!("fleet.{name}.max"), "", Rule::Median, Slot::U(&mut g.max)));
        out.push((format!("fleet.{name}.p99"), "", Rule::Median, Slot::U(&mut g.p99)));
        out.push((format!("fleet.{name}.p50"), "", Rule::Median, Slot::U(&mut g.p50)));
        out.push((format!("fleet.{name}.mean"), "", Rule::Median, Slot::F(&mut g.mean)));
    }
    let rps = &mut f.requests_per_sec;
    out.push(("fleet.requests_per_sec.mean".into(), "/s", Rule::Median, Slot::F(&mut rps.mean_per_sec)));
    out.push(("fleet.requests_per_sec.peak_1s".into(), "/s", Rule::Median, Slot::F(&mut rps.peak_1s)));
    out.push(("fleet.requests_per_sec.peak_10s".into(), "/s", Rule::Median, Slot::F(&mut rps.peak_10s)));
    if let Some(p) = rps.peak_60s.as_mut() {
        out.push(("fleet.requests_per_sec.peak_60s".into(), "/s", Rule::Median, Slot::F(p)));
    }
    out.push(("fleet.rejected".into(), "", Rule::Median, Slot::U(&mut f.rejected)));
    out.push(("fleet.queued".into(), "", Rule::Median, Slot::U(&mut f.queued)));
    out.push(("fleet.cut".into(), "", Rule::Median, Slot::U(&mut f.cut)));
    latency(out, "fleet.queue_wait", &mut f.queue_wait_us, "us");
}

/// The gate metrics read from more than one field (or from the fault rows, which are the
/// first repeat's): each repeat's value as its gate reads it, so the gate judges their
/// median (the worst, for the count of failed faults). [`CaseResult::metric`] reads them
/// from the spreads.
pub(crate) fn judged_whole() -> Vec<(Metric, Rule)> {
    let mut v: Vec<(Metric, Rule)> = FleetMetric::all().into_iter().map(|f| (Metric::Fleet(f), Rule::Median)).collect();
    v.push((Metric::Count(Counter::FaultWorstPickupMs), Rule::Median));
    v.push((Metric::Count(Counter::FaultsFailed), Rule::Worst));
    v
}

/// The repeats of one case (in seed order, the first run with the run's own seed) made into
/// one result: the first repeat's, with every figure replaced as its [`Rule`] says and the
/// spread of each kept in `repeat`. The intervals are drawn with generators seeded from the
/// first seed.
pub(crate) fn combine(mut runs: Vec<CaseResult>, seeds: Vec<u64>) -> CaseResult {
    assert!(!runs.is_empty(), "a case ran at least once");
    let n = runs.len();
    let mut table: Vec<(String, &'static str, Rule, Vec<Option<f64>>)> = Vec::new();
    for (k, r) in runs.iter_mut().enumerate() {
        for (name, unit, rule, slot) in slots(r) {
            let at = match table.iter().position(|e| e.0 == name) {
                Some(at) => at,
                None => {
                    table.push((name, unit, rule, vec![None; n]));
                    table.len() - 1
                }
            };
            table[at].3[k] = Some((slot.get() * 1e4).round() / 1e4);
        }
        for (m, rule) in judged_whole() {
            let (name, Some(v)) = (m.name(), r.metric(m)) else { continue };
            let at = match table.iter().position(|e| e.0 == name) {
                Some(at) => at,
                None => {
                    table.push((name, m.unit(), rule, vec![None; n]));
                    table.len() - 1
                }
            };
            table[at].3[k] = Some((v * 1e4).round() / 1e4);
        }
    }
    let interrupted = runs.iter().any(|r| r.interrupted);
    // A probe's repeat that stopped at a lost call: its figures are of the part that ran.
    let stopped_early = runs.iter().find_map(|r| r.stopped_early.clone());
    let notices: Vec<String> = runs[1..].iter().flat_map(|r| r.notices.iter().cloned()).collect();
    let notices_total: u64 = runs.iter().map(|r| r.notices_total).sum();
    let base = seeds.first().copied().unwrap_or(0);
    let figures: Vec<Spread> = table
        .into_iter()
        .enumerate()
        .filter_map(|(i, (figure, unit, rule, values))| {
            let got: Vec<f64> = values.iter().flatten().copied().collect();
            let med = median(&got)?;
            let (min, max) = got.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(*x), b.max(*x)));
            let value = match rule {
                Rule::Median => med,
                Rule::Worst => max,
                Rule::Fewest => min,
            };
            let ci95 = (rule == Rule::Median).then(|| bootstrap_ci(&got, base ^ (i as u64 + 1))).flatten();
            let r4 = |x: f64| (x * 1e4).round() / 1e4;
            Some(Spread {
                figure,
                unit: unit.into(),
                values,
                value: r4(value),
                rule: (rule != Rule::Median).then_some(rule),
                median: r4(med),
                min: r4(min),
                max: r4(max),
                ci95: ci95.map(|[a, b]| [r4(a), r4(b)]),
            })
        })
        .collect();
    let mut out = runs.swap_remove(0);
    for (name, _, _, mut slot) in slots(&mut out) {
        if let Some(s) = figures.iter().find(|s| s.figure == name) {
            slot.set(s.value);
        }
    }
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
        let mut r = case(100.0, 50, 0, 4.0);
        for m in Measure::all() {
            *r.measures.get_mut(m) = LatencyStats { count: 5, p50: 1.0, ..Default::default() };
        }
        for s in [&mut r.requests.busy, &mut r.requests.idle, &mut r.requests.active_phases] {
            s.minutes = 1.0;
        }
        r.requests.idle_relay = Some(r.requests.idle.clone());
        let mut named: Vec<String> = slots(&mut r).into_iter().map(|(name, ..)| name).collect();
        named.extend(judged_whole().into_iter().map(|(m, _)| m.name()));
        for m in Metric::all().filter(|m| !matches!(m, Metric::VsBaseline(_))) {
            assert!(named.contains(&m.name()), "{} is not combined across repeats", m.name());
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
        let util = Metric::Fleet(FleetMetric::HeldExecsUtilisation);
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
