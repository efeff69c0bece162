//! Every measure goes everywhere a measure goes: recorded, kept in summary.json, gated,
//! repeated and shown, by a whole run.

use crate::record::measure::Measure;
use crate::results::summary::Summary;
use crate::runs::scenario::{run_scenario, RunOptions};

/// A small virtual workload: agent turns on two sandboxes for 20 s.
const WORKLOAD: &str =
    "[workload]\nsandboxes = 2\nduration = \"20s\"\nturns_per_sec = 1\ncalls_per_turn = 2\nseed = 3\n";

/// One case on an emulated remote daemon, a watch window and a watching writer.
const CASE: &str = "[[case]]\nname = \"remote\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\nrunner = \"window-exec\"\nwriter = \"watch\"\n";

/// Runs scenario `text`, each case `repeat` times, to a run directory of its own.
async fn run(text: &str, repeat: u32) -> (Summary, tempfile::TempDir) {
    let (out, relay) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let over = crate::scenario::Overrides { repeat: Some(repeat), ..Default::default() };
    let s = crate::scenario::Scenario::parse_with("recipe.toml", text, &over).unwrap();
    let opts = RunOptions {
        out_dir: out.path().to_path_buf(),
        relay_root: relay.path().to_path_buf(),
        quiet: true,
        calibrate: false,
        watch_program: "relay-bench".into(),
        calls_csv: false,
        no_event_log: true,
        event_log: crate::engine::logplan::EventLogFormat::Auto,
        max_event_log: crate::engine::logplan::DEFAULT_MAX,
        jobs: 1,
    };
    let sig = std::sync::Arc::new(crate::base::signal::Signal::new());
    (run_scenario(&s, &opts, "2026-01-01T00:00:00Z", sig).await.unwrap(), out)
}

/// Every measure of [`Measure::ALL`] is recorded, kept in summary.json and read back, gated,
/// carried by repeats, and shown in summary.md (those with a row) and hdr/: a new variant
/// is held to all of it here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_measure_is_recorded_kept_gated_repeated_and_shown() {
    let gates: Vec<String> = Measure::ALL.iter().map(|m| format!("\"{}.max >= 0ms\"", m.name())).collect();
    let text =
        format!("name = \"recipe\"\ngates = [{}]\n{WORKLOAD}[handler]\nduration = \"5ms\"\n{CASE}", gates.join(", "));
    let (summary, out) = run(&text, 2).await;
    let r = &summary.results[0];
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap();
    let back = crate::results::summary::Summary::read(out.path()).unwrap();
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    let rep = r.repeat.as_ref().expect("repeated");
    for m in Measure::ALL {
        let name = m.name();
        // Recorded, for every measured call.
        let t = r.latency(m);
        assert!(t.count > 0 && t.count <= r.latency(Measure::Completion).count, "{name}: {t:?}");
        // Kept in summary.json under its name, and read back from it.
        let kept = if m.in_latency_us() {
            &json["results"][0]["latency_us"][name]
        } else {
            &json["results"][0][format!("{name}_us")]
        };
        assert_eq!(kept["count"], t.count, "{name} in summary.json");
        assert_eq!(back.results[0].latency(m), t, "{name} read back");
        // Gated, and carried by the repeats.
        let g = r.gates.iter().find(|g| g.gate.metric.name() == format!("{name}.max")).expect("gated");
        assert!(g.pass && g.observed == Some(t.max), "{name}: {g:?}");
        assert!(rep.get(&format!("{name}.p50")).is_some(), "a repeat's spread of {name}");
        // Shown: a row in summary.md's latency table when it has one, an HDR histogram.
        if let Some(row) = m.row() {
            assert!(md.lines().any(|l| l.starts_with(&format!("| remote | {row} |"))), "{row}:\n{md}");
        }
        assert!(out.path().join(format!("hdr/remote/{name}.hgrm")).is_file(), "{name}.hgrm");
    }
}

/// A figure added to the figure table (the test-only `Counter::Probe`: one row in
/// `src/scenario/gate/counter.rs`, one read in `src/results/summary/figures.rs`) is read by
/// a gate, carried by the repeats, shown as a sweep's column and judged by `compare`, with
/// no other change anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_figure_added_to_the_table_is_gated_repeated_swept_and_compared() {
    use crate::scenario::gate::{Counter, Metric};
    let text = format!(
        "name = \"figure\"\ngates = [\"probe >= 1\"]\n{WORKLOAD}{CASE}{}",
        "sweep = { \"runner.window\" = [\"5s\", \"10s\"] }\nfigures = [\"probe\"]\n"
    );
    let probe = Metric::Count(Counter::Probe);
    let (summary, out) = run(&text, 2).await;
    for r in &summary.results {
        let started = r.calls.started as f64;
        let g = r.gates.iter().find(|g| g.gate.metric == probe).expect("gated");
        assert!(g.pass && g.observed == Some(started), "{g:?}");
        let spread = r.repeat.as_ref().and_then(|rep| rep.get("probe")).expect("a repeat's spread of probe");
        assert_eq!(spread.values.len(), 2, "{spread:?}");
    }
    let sweep = &summary.sweeps[0];
    let col = sweep.figures.iter().position(|m| *m == probe).expect("a sweep column");
    assert!(sweep.points.iter().all(|p| p.figures[col].is_some_and(|v| v >= 1.0)), "{:?}", sweep.points);
    let c =
        crate::report::compare::compare(out.path(), out.path(), crate::report::compare::Threshold::DEFAULT).unwrap();
    assert!(c.changes.iter().any(|ch| ch.figure == "probe"), "compare judges it: {:?}", c.changes);
}
