//! Summary's own tests: gates on figures never measured, comparisons, archived runs.

use super::*;

#[test]
fn a_gate_on_a_stretch_that_never_happened_fails_as_not_measured() {
    let mut r = CaseResult::default();
    let g = Gate::parse("idle_phase_discovery_per_min <= 5").unwrap();
    r.judge(std::slice::from_ref(&g), &[]);
    assert!(!r.pass);
    assert!(r.gates[0].observed.is_none());
    r.requests.idle_phases = Stretch { minutes: 3.0, discovery_per_min: 4.6, data_per_min: 0.0 };
    r.judge(&[g], &[]);
    assert!(r.pass);
}

#[test]
fn comparisons_read_as_ratios() {
    let mut base = CaseResult { case: "poll".into(), ..Default::default() };
    *base.measures.get_mut(Measure::Pickup) = LatencyStats { count: 10, p50: 200_000.0, ..Default::default() };
    base.requests.discovery_per_min = 180.0;
    let mut fast = CaseResult { case: "window".into(), ..Default::default() };
    *fast.measures.get_mut(Measure::Pickup) = LatencyStats { count: 10, p50: 20_000.0, ..Default::default() };
    fast.requests.discovery_per_min = 360.0;
    let c = Comparison::of(&base, &fast);
    assert_eq!(c.pickup_p50_ratio, Some(10.0));
    assert_eq!(c.text, "pickup p50 10.0x lower, discovery requests 2.0x more");
    // A black-box case's pickup is timed to another point: no ratio, and said.
    fast.pickup_definition = Some(PickupDefinition::RequestGone);
    let c = Comparison::of(&base, &fast);
    assert_eq!(c.pickup_p50_ratio, None);
    assert!(c.text.ends_with("pickup not compared (timed differently: here from publication to the request file's removal (or its answer's appearance), seen outside a black-box runner; in the baseline from publication to the handler's start, inside the runner)"), "{}", c.text);
}

#[test]
fn the_archived_runs_still_read() {
    let runs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs");
    let mut n = 0;
    // A daemon-capacity run holds capacity.json, a conform run runner/conform.json, a scale
    // bench run scale-bench.md, a pickup-floor run pickup-floor.md, a split run's record its
    // parts.json, a record of what runs cost its SETUP.md and the scenarios it ran, no JSON:
    // no summary.
    let no_summary = |d: &std::fs::DirEntry| {
        let names: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        let cost_record = names.iter().any(|n| n == "SETUP.md")
            && names.iter().all(|n| n.to_str().is_some_and(|n| n.ends_with(".md") || n.ends_with(".toml")));
        cost_record
            || ["capacity.json", "runner/conform.json", "scale-bench.md", "pickup-floor.md", "parts.json"]
                .iter()
                .any(|f| d.path().join(f).is_file())
    };
    for dir in std::fs::read_dir(runs).unwrap().flatten().filter(|d| !no_summary(d)) {
        let s = Summary::read(&dir.path()).unwrap();
        assert!(!s.results.is_empty());
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn a_virtual_local_step_of_no_time_is_not_measured_not_zero() {
    use crate::record::recorder::Measure;
    use crate::scenario::gate::{Gate, Metric};
    let mut r = CaseResult { clock: crate::scenario::Clock::Virtual, host: "local".into(), ..CaseResult::default() };
    r.measures.get_mut(Measure::Pickup).count = 100;
    r.measures.get_mut(Measure::Pickup).p99 = 150_000.0;
    let p50 = Metric::Latency(Measure::Pickup, "p50");
    assert_eq!(r.metric(p50), None, "0 µs on a simulated local dir");
    assert_eq!(r.metric(Metric::Latency(Measure::Pickup, "p99")), Some(150_000.0), "a simulated poll wait is timed");
    let gate = Gate::parse("pickup.p50 < 10ms").unwrap();
    assert!(!gate.evaluate(r.metric(p50)).pass, "not measured does not pass a gate");
    r.injected_leg_us = Some(crate::record::recorder::LatencyStats { count: 10, ..Default::default() });
    assert_eq!(r.metric(p50), Some(0.0), "a remote host's emulated legs are simulated time");
    r.injected_leg_us = None;
    r.clock = crate::scenario::Clock::Real;
    assert_eq!(r.metric(p50), Some(0.0), "on the real clock a 0 is what was measured");
}
