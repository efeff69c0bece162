//! `compare` on run directories written here: a summary.json and the `.hlog` files of
//! wake, pickup and completion, each figure set as a test needs it.

use hdrhistogram::Histogram;

use super::*;
use crate::base::rng::Rng;
use crate::record::recorder::new_histogram;
use crate::report::export::hdr::{write_hlog, Interval};

/// `n` samples uniform over (0, `max_ms`], the slowest `tail` share of them moved to
/// (`tail_ms`, `tail_ms` + 50] when given.
fn latencies(n: u64, max_ms: f64, tail: Option<(f64, f64)>, seed: u64) -> Histogram<u64> {
    let mut rng = Rng::new(seed);
    let mut h = new_histogram();
    let slow = tail.map_or(0, |(share, _)| (n as f64 * share) as u64);
    for i in 0..n {
        let ms = match tail {
            Some((_, tail_ms)) if i < slow => tail_ms + rng.unit() * 50.0,
            _ => rng.unit() * max_ms,
        };
        h.record((ms * 1e6) as u64 + 1).unwrap();
    }
    h
}

/// A run of one case, `local`, whose wake, pickup and completion all hold `h`, edited by `f`.
fn run(dir: &Path, h: &Histogram<u64>, f: impl FnOnce(&mut CaseResult)) {
    run_with(dir, h, f, |_| {});
}

/// [`run`], its summary edited by `g` too.
fn run_with(dir: &Path, h: &Histogram<u64>, f: impl FnOnce(&mut CaseResult), g: impl FnOnce(&mut Summary)) {
    let mut s = crate::report::export::fixture::archived();
    s.results.truncate(1);
    let r = &mut s.results[0];
    r.case = "local".into();
    r.gates.clear();
    for m in Measure::SPEC {
        let stats = LatencyStats::of(h);
        *r.measures.get_mut(m) = stats;
        let folder = dir.join("hdr/local");
        std::fs::create_dir_all(&folder).unwrap();
        let mut bytes = Vec::new();
        let iv =
            Interval { start: std::time::Duration::ZERO, length: std::time::Duration::from_secs(60), hist: h.clone() };
        write_hlog(&mut bytes, m.name(), &[iv]).unwrap();
        std::fs::write(folder.join(format!("{}.hlog", m.name())), bytes).unwrap();
    }
    f(r);
    g(&mut s);
    std::fs::write(dir.join("summary.json"), serde_json::to_vec(&s).unwrap()).unwrap();
}

/// Compares OLD (`h`, unedited) with NEW (`h2`, edited by `f`) at 5 %.
fn compared(h: &Histogram<u64>, h2: &Histogram<u64>, f: impl FnOnce(&mut CaseResult)) -> Comparison {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("old"), t.path().join("new"));
    run(&a, h, |_| {});
    run(&b, h2, f);
    compare(&a, &b, Threshold::DEFAULT).unwrap()
}

fn change<'a>(c: &'a Comparison, figure: &str) -> &'a Change {
    c.changes.iter().find(|ch| ch.figure == figure).unwrap_or_else(|| panic!("no {figure}: {}", console::render(c)))
}

#[test]
fn the_same_run_has_no_regression_and_every_headline_figure_is_judged() {
    let h = latencies(3000, 300.0, None, 1);
    let c = compared(&h, &h, |_| {});
    assert_eq!(c.regressions(), 0, "{}", console::render(&c));
    for f in ["wake.p50", "wake.p99", "pickup.p50", "pickup.p99", "completion.p99", "discovery_per_min"] {
        assert_eq!(change(&c, f).verdict, Verdict::Noise, "{f}");
    }
    for f in ["idle_phase_discovery_per_min", "active_phase_discovery_per_min", "requests_per_call"] {
        assert_eq!(change(&c, f).ratio, Some(1.0), "{f}");
    }
}

#[test]
fn a_doubled_idle_discovery_rate_is_a_regression_and_fewer_requests_an_improvement() {
    let h = latencies(3000, 300.0, None, 1);
    let c = compared(&h, &h, |r| r.requests.idle_phases.discovery_per_min *= 2.0);
    let idle = change(&c, "idle_phase_discovery_per_min");
    assert_eq!((idle.verdict, idle.ratio), (Verdict::Regression, Some(2.0)));
    assert_eq!(c.regressions(), 1, "nothing else moved: {}", console::render(&c));
    let c = compared(&h, &h, |r| r.requests.data_total /= 2);
    assert_eq!(change(&c, "requests_per_call").verdict, Verdict::Improvement);
    // Within the threshold: noise.
    let c = compared(&h, &h, |r| r.requests.idle_phases.discovery_per_min *= 1.04);
    assert_eq!(change(&c, "idle_phase_discovery_per_min").verdict, Verdict::Noise);
}

#[test]
fn a_tail_is_judged_apart_from_the_median() {
    let h = latencies(3000, 300.0, Some((0.02, 400.0)), 1);
    // The slowest 2 % twice as slow: p99 regresses, p50 does not.
    let worse = latencies(3000, 300.0, Some((0.02, 800.0)), 2);
    let c = compared(&h, &worse, |_| {});
    assert_eq!(change(&c, "pickup.p99").verdict, Verdict::Regression, "{}", console::render(&c));
    assert_eq!(change(&c, "pickup.p50").verdict, Verdict::Noise);
    // Half as slow: an improvement, and the comparison passes.
    let better = latencies(3000, 300.0, Some((0.02, 200.0)), 3);
    let c = compared(&h, &better, |_| {});
    assert_eq!(change(&c, "completion.p99").verdict, Verdict::Improvement, "{}", console::render(&c));
    assert_eq!(c.regressions(), 0, "{}", console::render(&c));
}

#[test]
fn a_quantile_over_too_few_samples_is_shown_and_not_judged() {
    let (h, worse) = (latencies(300, 300.0, None, 1), latencies(300, 600.0, None, 2));
    let c = compared(&h, &worse, |_| {});
    let p99 = change(&c, "pickup.p99");
    assert_eq!((p99.verdict, p99.samples), (Verdict::TooFewSamples, Some([300, 300])));
    assert_eq!(change(&c, "pickup.p50").verdict, Verdict::Regression, "300 samples are enough for a median");
    let text = console::render(&c);
    assert!(text.contains("too few samples: a p-quantile needs at least 10/(1-p) samples"), "{text}");
}

#[test]
fn the_direction_is_the_figures_own_and_zero_to_something_counts() {
    let h = latencies(3000, 300.0, None, 1);
    let c = compared(&h, &h, |r| {
        r.calls.completed /= 2;
        r.gates = vec![crate::scenario::gate::Gate::parse("completed >= 1").unwrap().evaluate(None)];
    });
    assert_eq!(change(&c, "completed").verdict, Verdict::Regression, "fewer completed calls are worse");
    assert_eq!(change(&c, "requests_per_call").verdict, Verdict::Regression, "the same requests over fewer calls");
    let c = compared(&h, &h, |r| {
        r.fleet = Some(crate::results::fleet::FleetResult { org_measured: true, rejected: 3, ..Default::default() })
    });
    assert!(c.changes.iter().all(|ch| !ch.figure.starts_with("fleet.")), "OLD has no fleet: nothing to set beside");
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("old"), t.path().join("new"));
    let fleet = |rejected| crate::results::fleet::FleetResult { org_measured: true, rejected, ..Default::default() };
    run(&a, &h, |r| r.fleet = Some(fleet(0)));
    run(&b, &h, |r| r.fleet = Some(fleet(30)));
    let c = compare(&a, &b, Threshold::DEFAULT).unwrap();
    let rejected = change(&c, "fleet.rejected");
    assert_eq!((rejected.verdict, rejected.ratio, rejected.model), (Verdict::Regression, None, Model::Poisson));
    assert!(console::render(&c).contains("from 0"), "{}", console::render(&c));
    assert!(c.zero_in_both > 0, "the fleet's other figures are 0 in both");
    // Three rejections where there were none is within a count's own noise.
    let b3 = t.path().join("new3");
    run(&b3, &h, |r| r.fleet = Some(fleet(3)));
    let c = compare(&a, &b3, Threshold::DEFAULT).unwrap();
    assert_eq!(change(&c, "fleet.rejected").verdict, Verdict::Noise, "{}", console::render(&c));
}

#[test]
fn markdown_leads_with_the_verdict_and_folds_the_full_table() {
    let h = latencies(3000, 300.0, None, 1);
    let c = compared(&h, &h, |r| r.requests.idle_phases.discovery_per_min *= 2.0);
    let md = markdown::render(&c);
    assert!(md.starts_with("### relay-bench compare: ❌ 1 regression\n"), "{md}");
    let tables: Vec<&str> = md.split("\n\n").filter(|b| b.starts_with("| case |")).collect();
    assert_eq!(tables.len(), 2, "the moved figures, then all: {md}");
    assert_eq!(tables[0].lines().count(), 3, "header, rule, one row: {}", tables[0]);
    assert!(tables[0].contains("`idle_phase_discovery_per_min`") && tables[0].contains("❌ regression"));
    for t in &tables {
        let cols = t.lines().next().unwrap().matches('|').count();
        assert!(t.lines().all(|l| l.matches('|').count() == cols), "every row has the header's columns: {t}");
    }
    assert!(md.contains("<details><summary>All ") && md.contains("</details>"), "{md}");
    let same = markdown::render(&compared(&h, &h, |_| {}));
    assert!(
        same.starts_with("### relay-bench compare: ✅ no regression\n") && same.contains("No figure moved past ±5%")
    );
}

#[test]
fn json_holds_every_figure_with_its_verdict() {
    let h = latencies(3000, 300.0, None, 1);
    let c = compared(&h, &h, |r| r.requests.idle_phases.discovery_per_min *= 2.0);
    let v: serde_json::Value = serde_json::from_str(&json::render(&c)).unwrap();
    assert_eq!((v["schema_version"].as_u64(), v["pass"].as_bool()), (Some(1), Some(false)));
    assert_eq!((v["regressions"].as_u64(), v["threshold"].as_f64()), (Some(1), Some(0.05)));
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), c.changes.len());
    let idle = changes.iter().find(|ch| ch["figure"] == "idle_phase_discovery_per_min").unwrap();
    assert_eq!(
        (&idle["verdict"], &idle["better"], &idle["ratio"]),
        (&"regression".into(), &"lower".into(), &2.0.into())
    );
    let p99 = changes.iter().find(|ch| ch["figure"] == "pickup.p99").unwrap();
    assert_eq!(p99["samples"], serde_json::json!([3000, 3000]));
    assert_eq!(p99["interval"].as_array().map(Vec::len), Some(2));
}

#[test]
fn a_repeated_run_is_judged_on_its_medians_not_its_first_repeats_histograms() {
    let h = latencies(3000, 300.0, None, 1);
    // The histograms unchanged (the first repeat's); the median of the repeats twice as slow.
    let repeated = |r: &mut CaseResult| {
        r.repeat = Some(crate::results::repeat::Repeats { seeds: vec![1, 2, 3], figures: Vec::new() });
    };
    let c = compared(&h, &h, |r| {
        repeated(r);
        r.measures.get_mut(Measure::Pickup).p50 *= 2.0;
    });
    let p50 = change(&c, "pickup.p50");
    assert_eq!((p50.verdict, p50.ratio), (Verdict::Regression, Some(2.0)), "{}", console::render(&c));
    // Run once, the quantile is read from the histograms, which did not move.
    let c = compared(&h, &h, |r| r.measures.get_mut(Measure::Pickup).p50 *= 2.0);
    assert_eq!(change(&c, "pickup.p50").verdict, Verdict::Noise, "{}", console::render(&c));
}

/// The relay unchanged, rerun on a machine every core of which was busy: its latencies 1.19x
/// (a tight interval) while one timer's floor barely moved, but the machine ran its own
/// calibration probes 1.4x slower. Not a regression; a relay twice as slow still is.
#[test]
fn an_unchanged_relay_on_a_busier_machine_is_within_its_floor_and_a_slower_one_still_a_regression() {
    let h = latencies(3000, 100.0, None, 1);
    let slower = |k: f64| latencies(3000, 100.0 * k, None, 1);
    let busier = |s: &mut Summary| {
        let c = s.calibration.as_mut().expect("the archived run was calibrated");
        c.list_16_files_us.p50 *= 1.4;
        c.inotify_rename_us.p50 *= 1.3;
    };
    let t = tempfile::tempdir().unwrap();
    let dir = |n: &str| t.path().join(n);
    run(&dir("old"), &h, |_| {});
    run_with(&dir("busy"), &slower(1.19), |_| {}, busier);
    run(&dir("calm"), &slower(1.19), |_| {});
    run_with(&dir("slow"), &slower(2.0), |_| {}, busier);
    let verdict = |new: &str| {
        let c = compare(&dir("old"), &dir(new), Threshold::DEFAULT).unwrap();
        (change(&c, "completion.p50").verdict, console::render(&c))
    };
    let (v, said) = verdict("busy");
    assert_eq!(v, Verdict::WithinFloor, "{said}");
    assert!(!said.contains("REGRESSION"), "{said}");
    let (v, said) = verdict("calm");
    assert_eq!(v, Verdict::Regression, "the same move on a machine no slower: {said}");
    let (v, said) = verdict("slow");
    assert_eq!(v, Verdict::Regression, "{said}");
}
