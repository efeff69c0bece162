//! A sweep end to end, in-process on the virtual clock: its points run (side by side where
//! the machine has cores) and are reported in the scenario's order; summary.md holds a row
//! per point with its departures, figures and gates and the best line; summary.json holds
//! the sweep's axes and points, valid against reports/schema.json; a chart per figure.

use serde_json::Value;

mod common;

const SWEEP: &str = r#"
name = "sweep-e2e"
[workload]
sandboxes = 4
duration = "6m"
warmup = "1m"
seed = 5
[workload.agent]
session_gap = { mean = "1m" }
[[case]]
name = "w"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
gates = ["fleet.turns_demoted_pct <= 1"]
sweep = { "runner.window" = ["5s", "25s"], "limits.org_held_execs" = [0, 100] }
objective = "min fleet.held_exec_secs_per_min"
figures = ["pickup.p99", "fleet.window_failures"]
"#;

const POINTS: [&str; 4] = [
    "w@window=5s,org_held_execs=0",
    "w@window=5s,org_held_execs=100",
    "w@window=25s,org_held_execs=0",
    "w@window=25s,org_held_execs=100",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweep_reports_a_row_per_point_and_the_best_one_that_meets_every_gate() {
    let (summary, out, _relay) = common::run("sweep.toml", SWEEP, false, false).await;
    let cases: Vec<&str> = summary.results.iter().map(|r| r.case.as_str()).collect();
    assert_eq!(cases, POINTS, "the scenario's order, whichever point finished first");
    // No exec is admitted under a limit of 0: every turn demotes and its gate fails there.
    for r in &summary.results {
        let held = r.case.ends_with("=100");
        assert_eq!(r.pass, held, "{}: {:?}", r.case, r.gates.iter().filter(|g| !g.pass).collect::<Vec<_>>());
        assert_eq!((r.calls.lost, r.calls.duplicated), (0, 0), "{}", r.case);
    }

    let json: Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap();
    common::check_schema(&json);
    let sw = &json["sweeps"][0];
    assert_eq!(sw["axes"][0]["path"], "runner.window");
    assert_eq!(sw["axes"][0]["numbers"], serde_json::json!([5.0, 25.0]));
    assert_eq!(sw["axes"][1]["values"], serde_json::json!(["0", "100"]));
    let figures: Vec<&str> = sw["figures"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(
        figures,
        ["fleet.turns_demoted_pct", "fleet.held_exec_secs_per_min", "pickup.p99", "fleet.window_failures"]
    );
    // The best: the least held-exec seconds among the points that pass.
    let points = sw["points"].as_array().unwrap();
    let held = |p: &Value| p["figures"][1].as_f64().unwrap();
    let passing: Vec<&Value> = points.iter().filter(|p| p["pass"] == true).collect();
    assert_eq!(passing.len(), 2);
    let best = passing.iter().min_by(|a, b| held(a).total_cmp(&held(b))).unwrap();
    assert_eq!(sw["best"], best["case"], "{sw}");
    let failures = |p: &Value| p["figures"][3].as_f64().unwrap();
    assert!(points.iter().filter(|p| p["pass"] == false).all(|p| failures(p) > 0.0), "rejected windows: {sw}");

    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(md.contains("## Sweep: w over `runner.window` × `limits.org_held_execs`"), "{md}");
    assert!(
        md.contains(&format!("**best: {}: min fleet.held_exec_secs_per_min = ", best["case"].as_str().unwrap())),
        "{md}"
    );
    let table = md.split("## Sweep:").nth(1).unwrap();
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| 5s") || l.starts_with("| 25s")).collect();
    assert_eq!(rows.len(), 4, "{table}");
    assert!(rows[0].starts_with("| 5s | 0 | window = 5.00s |") && rows[0].contains("❌"), "{}", rows[0]);
    assert!(rows[3].starts_with("| 25s | 100 | production as built |") && rows[3].contains("✅"), "{}", rows[3]);
    assert_eq!(table.matches("**best**").count(), 1, "{table}");
    for stem in ["fleet-held_exec_secs_per_min", "fleet-turns_demoted_pct", "pickup-p99", "fleet-window_failures"] {
        let png = out.path().join(format!("charts/sweep-w-{stem}.png"));
        assert!(png.is_file() && md.contains(&format!("charts/sweep-w-{stem}.png")), "{}", png.display());
    }
    // The event log holds every point's lines, whole.
    let log = std::fs::read_to_string(out.path().join("events.ndjson")).unwrap();
    for p in POINTS {
        assert!(log.contains(&format!("{{\"case\":\"{p}\"")), "{p}");
    }
    assert!(log.lines().all(|l| serde_json::from_str::<Value>(l).is_ok()), "no line interleaved");
}

/// `run --sweep` from the command line: the scenario states no sweep, the command line's
/// makes the points, summary.json carries its axes and points, report.html its table; a
/// path that does not apply to the case's strategy is refused before anything runs.
#[test]
fn the_command_line_sweeps_a_case_and_refuses_an_option_it_does_not_have() {
    const BIN: &str = env!("CARGO_BIN_EXE_relay-bench");
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("plain.toml");
    let plain = SWEEP
        .replace(r#"sweep = { "runner.window" = ["5s", "25s"], "limits.org_held_execs" = [0, 100] }"#, "")
        .replace("objective = ", "# ")
        .replace("figures = ", "# ");
    std::fs::write(&file, &plain).unwrap();
    let out = t.path().join("run");
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new(BIN);
        c.arg("run").arg(&file).args(["--quiet", "--no-event-log", "--out"]).arg(&out).args(args);
        c.output().unwrap()
    };
    let ok = run(&["--sweep", "runner.window=5s,25s"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sw = &json["sweeps"][0];
    assert_eq!((sw["case"].as_str(), sw["axes"][0]["path"].as_str()), (Some("w"), Some("runner.window")));
    let points: Vec<&str> = sw["points"].as_array().unwrap().iter().map(|p| p["case"].as_str().unwrap()).collect();
    assert_eq!(points, ["w@window=5s", "w@window=25s"]);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("<section id=\"sweep-0\">") && html.contains("<td>25s</td>"), "the table in report.html");
    // With no figures of its own, a command-line sweep shows the headline figures; with
    // `--figure`, those named.
    let figures = |json: &Value| -> Vec<String> {
        json["sweeps"][0]["figures"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_owned()).collect()
    };
    for want in ["pickup.p50", "completion.p50", "discovery_per_min"] {
        assert!(figures(&json).iter().any(|f| f == want), "{want}: {:?}", figures(&json));
    }
    let named = run(&["--sweep", "runner.window=5s,25s", "--figure", "wake.p99", "--figure", "data_per_min"]);
    assert!(named.status.success(), "{}", String::from_utf8_lossy(&named.stderr));
    let json: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let f = figures(&json);
    assert!(f.contains(&"wake.p99".to_owned()) && f.contains(&"data_per_min".to_owned()), "{f:?}");
    assert!(!f.contains(&"completion.p50".to_owned()), "named figures replace the headline ones: {f:?}");
    let bad = run(&["--sweep", "runner.window=5s,25s", "--figure", "nonsense"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("figures"), "{}", String::from_utf8_lossy(&bad.stderr));
    let alone = run(&["--figure", "wake.p99"]);
    assert_eq!(alone.status.code(), Some(2), "--figure needs --sweep");

    let poll = plain
        .replace("runner = \"window-exec\"", "runner = \"poll\"")
        .replace("writer = \"watch\"", "writer = \"poll\"");
    std::fs::write(&file, poll).unwrap();
    let refused = run(&["--sweep", "runner.window=5s,25s"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{err}");
    assert!(err.contains("case[0].sweep.runner.window") && err.contains("does not apply to this case"), "{err}");
}

/// Three virtual cases (a sweep's two points and a plain case) with their event logs: one at
/// a time and two at once give the same summary and the same events.ndjson, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_results_do_not_depend_on_jobs() {
    let text = SWEEP.replace(r#", "limits.org_held_execs" = [0, 100]"#, "")
        + "[[case]]\nname = \"p\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n";
    let s = relay_bench::Scenario::parse("jobs.toml", &text).unwrap();
    let mut seen = Vec::new();
    for jobs in [1, 3] {
        let (out, relay) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let opts = relay_bench::RunOptions { jobs, ..common::options(out.path(), relay.path(), false, false) };
        let summary = relay_bench::run_scenario(
            &s,
            &opts,
            "2026-01-01T00:00:00Z",
            std::sync::Arc::new(relay_bench::Signal::new()),
        )
        .await
        .unwrap();
        assert_eq!(summary.results.len(), 3);
        let mut json: Value = serde_json::to_value(&summary).unwrap();
        json.as_object_mut().unwrap().remove("environment");
        // Each case's wall time is how long this machine took, not a result.
        for r in json["results"].as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("wall_secs");
        }
        let log = std::fs::read(out.path().join("events.ndjson")).unwrap();
        assert!(!log.is_empty());
        seen.push((jobs, json, log));
    }
    for (jobs, json, log) in &seen[1..] {
        assert!(*json == seen[0].1, "--jobs {jobs} moved a result");
        assert!(*log == seen[0].2, "--jobs {jobs} changed the event log");
    }
}

/// On the console, a point's heading stands with its own result, the points in the
/// scenario's order, though they ran side by side and finished in any order.
#[test]
fn the_console_says_each_point_with_its_result_in_the_scenarios_order() {
    const BIN: &str = env!("CARGO_BIN_EXE_relay-bench");
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("sweep.toml");
    std::fs::write(&file, SWEEP).unwrap();
    let out = std::process::Command::new(BIN)
        .arg("run")
        .arg(&file)
        .args(["--no-event-log", "--out"])
        .arg(t.path().join("run"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some_and(|c| c <= 1), "{stdout}");
    let headings: Vec<(usize, &str)> =
        stdout.lines().enumerate().filter(|(_, l)| l.starts_with('[') && l.contains("(sweep w: point")).collect();
    let named: Vec<&str> = headings
        .iter()
        .map(|(_, l)| POINTS.iter().find(|p| l.contains(&format!("] {p} ("))).copied().unwrap_or(l))
        .collect();
    assert_eq!(named, POINTS, "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    for (k, (at, _)) in headings.iter().enumerate() {
        let end = headings.get(k + 1).map_or(lines.len(), |(n, _)| *n);
        let own = &lines[*at + 1..end];
        assert!(own.iter().any(|l| l.contains("calls answered")), "point {} has its result under it: {stdout}", k + 1);
        for other in POINTS.iter().filter(|p| **p != POINTS[k]) {
            assert!(!own.iter().any(|l| l.contains(&format!("{other}:"))), "{other} under point {}: {stdout}", k + 1);
        }
    }
}
