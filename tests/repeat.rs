//! `run --repeat N` end to end on the virtual clock: each case runs N times with seeds of
//! its own, summary.json carries each repeat's seed and every figure's spread (valid
//! against reports/schema.json), and gates judge the median, not any one repeat.

use std::process::Command;
use std::sync::Arc;

use relay_bench::Measure;
use relay_bench::{run_scenario, Overrides, Scenario, Signal, Summary};
use serde_json::Value;

mod common;
use common::BIN;

/// A small virtual scenario with `gate` on its one case.
fn scenario(gate: &str) -> String {
    format!(
        r#"
name = "repeated"
gates = ["lost == 0", "{gate}"]
[workload]
sandboxes = 2
duration = "40s"
turns_per_sec = 1
calls_per_turn = 2
seed = 3
[handler]
duration = "5ms"
duration_max = "40ms"
[[case]]
name = "window"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
"#
    )
}

async fn run(text: &str, repeat: u32) -> (Summary, Value) {
    let out = tempfile::tempdir().unwrap();
    let relay = tempfile::tempdir().unwrap();
    let over = Overrides { repeat: Some(repeat), ..Default::default() };
    let s = Scenario::parse_with("repeated.toml", text, &over).unwrap();
    let opts = common::options(out.path(), relay.path(), false, false);
    let summary = run_scenario(&s, &opts, "2026-01-01T00:00:00Z", Arc::new(Signal::new())).await.unwrap();
    let json = serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap();
    (summary, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_repeats_report_spreads_and_their_gates_judge_the_median() {
    let (first, json) = run(&scenario("completion.mean < 600s"), 5).await;
    common::check_schema(&json);
    let r = &first.results[0];
    let rep = r.repeat.as_ref().expect("repeat data");
    assert_eq!(rep.seeds.len(), 5);
    assert_eq!(rep.seeds[0], 3, "the first repeat runs the scenario's own seed");
    assert_eq!(json["overrides"]["repeat"], 5);
    let mean = rep.get("completion.mean").unwrap().clone();
    assert_eq!(mean.values.len(), 5);
    assert_eq!(r.latency(Measure::Completion).mean, mean.median, "the case reports the median");
    let [lo, hi] = mean.ci95.expect("five repeats: an interval");
    assert!(lo <= mean.median && mean.median <= hi, "{mean:?}");
    assert!(mean.min < mean.max, "seeds of their own give different runs: {mean:?}");
    // A threshold the slowest repeat misses and the median meets: the gate passes.
    let threshold = ((mean.median + mean.max) / 2.0).round();
    assert!(mean.values.iter().flatten().any(|v| *v >= threshold) && mean.median < threshold, "{mean:?}");
    let (judged, _) = run(&scenario(&format!("completion.mean < {threshold}us")), 5).await;
    let r = &judged.results[0];
    assert_eq!(r.repeat.as_ref().unwrap().get("completion.mean").unwrap().values, mean.values, "same seeds, same runs");
    let gate = r.gates.iter().find(|g| g.gate.expr.starts_with("completion.mean")).unwrap();
    assert!(gate.pass && r.pass, "{gate:?}");
    // And one the median misses fails, though the fastest repeat meets it.
    let threshold = ((mean.median + mean.min) / 2.0).round();
    let (judged, _) = run(&scenario(&format!("completion.mean < {threshold}us")), 5).await;
    let gate = judged.results[0].gates.iter().find(|g| g.gate.expr.starts_with("completion.mean")).unwrap();
    assert!(!gate.pass && !judged.pass, "{gate:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_repeat_is_the_plain_run() {
    let text = scenario("lost == 0");
    let (once, _) = run(&text, 1).await;
    let plain = Scenario::parse("repeated.toml", &text).unwrap();
    assert!(once.results[0].repeat.is_none());
    let out = tempfile::tempdir().unwrap();
    let relay = tempfile::tempdir().unwrap();
    let opts = common::options(out.path(), relay.path(), false, false);
    let p = run_scenario(&plain, &opts, "2026-01-01T00:00:00Z", Arc::new(Signal::new())).await.unwrap();
    assert_eq!(p.results[0].measures, once.results[0].measures);
}

#[test]
fn repeat_zero_and_an_in_sandbox_case_are_refused_naming_what_is_allowed() {
    let out = Command::new(BIN).args(["run", "rollout-gate", "--repeat", "0", "--quiet"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("--repeat: `0`: runs each case N times; allowed: 1 (the default, once) to 100"), "{err}");
    let over = Overrides { repeat: Some(3), ..Default::default() };
    let shipped = Scenario::load("real-daemon").unwrap();
    let e = Scenario::parse_with(&shipped.origin, &shipped.source, &over).unwrap_err().to_string();
    assert!(e.contains("--repeat 3") && e.contains("in_sandbox = true"), "{e}");
    assert!(e.contains("--repeat takes every case whose writer runs on this machine"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_point_of_a_sweep_is_repeated_and_keeps_its_own_results() {
    let text = scenario("lost == 0")
        .replace("writer = \"watch\"\n", "writer = \"watch\"\nsweep = { \"workload.sandboxes\" = [1, 2] }\n");
    let (s, json) = run(&text, 3).await;
    common::check_schema(&json);
    let names: Vec<&str> = s.results.iter().map(|r| r.case.as_str()).collect();
    assert_eq!(names, ["window@sandboxes=1", "window@sandboxes=2"], "the points in the scenario's order");
    for r in &s.results {
        assert_eq!(r.repeat.as_ref().unwrap().seeds.len(), 3, "{}", r.case);
    }
    // Each point's first repeat is that point run once: no repeat went to another point.
    let (once, _) = run(&text, 1).await;
    for (r, plain) in s.results.iter().zip(&once.results) {
        assert_eq!(r.case, plain.case);
        let first = |figure: &str| r.repeat.as_ref().unwrap().get(figure).unwrap().values[0];
        assert_eq!(first("pickup.mean"), Some(plain.latency(Measure::Pickup).mean), "{}", r.case);
        assert_eq!(first("discovery_total"), Some(plain.requests.discovery_total as f64), "{}", r.case);
    }
    assert_ne!(once.results[0].requests.discovery_total, once.results[1].requests.discovery_total, "two points");
}
