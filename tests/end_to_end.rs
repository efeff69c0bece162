//! End to end: the real binary and the in-process `run_scenario` on temp dirs.
//! Assertions are on counts, pairing and files, never on how fast this machine is.

use std::process::Command;
use std::sync::Arc;

use relay_bench::Measure;
use relay_bench::{run_scenario, Scenario, Signal, Summary};

mod common;
use common::BIN;

async fn run_temp(name: &str, text: &str, calibrate: bool) -> (Summary, tempfile::TempDir, tempfile::TempDir) {
    common::run(name, text, calibrate, false).await
}

const SMALL: &str = r#"
name = "small"
gates = ["lost == 0", "pairing_violations == 0", "leftover_files == 0", "duplicated == 0"]
[workload]
sandboxes = 2
turns_per_sec = 8
calls_per_turn = 3
duration = "1500ms"
warmup = "250ms"
[handler]
duration = "1ms"
duration_max = "3ms"
error_ratio = 0.2
pause_ratio = 0.2
[[case]]
name = "poll"
runner = { strategy = "poll", interval = "20ms", grow_after = 2, max_interval = "80ms" }
writer = { strategy = "poll", interval = "20ms" }
[[case]]
name = "watch"
runner = "watch"
writer = "watch"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_scenario_answers_every_call_and_leaves_nothing_behind() {
    let (summary, out, relay) = run_temp("small.toml", SMALL, true).await;
    assert_eq!(summary.results.len(), 2);
    for r in &summary.results {
        assert_eq!(r.calls.scheduled, 36, "{}", r.case);
        assert_eq!(r.calls.completed, 36, "{}: every call answered", r.case);
        assert_eq!(r.calls.ok + r.calls.error + r.calls.paused, 36);
        assert!(r.calls.error > 0 && r.calls.paused > 0, "{}: the outcome mix reaches the writer", r.case);
        assert_eq!(r.calls.lost, 0);
        assert_eq!(r.pairing_violations.total, 0);
        assert_eq!(r.leftover_files, 0);
        // Warm-up calls run but are not measured.
        assert_eq!(r.calls.warmup, 6);
        assert_eq!(r.latency(Measure::Pickup).count, 30);
        assert!(r.latency(Measure::Wake).p50 <= r.latency(Measure::Pickup).p50);
        assert!(r.latency(Measure::Pickup).p50 <= r.latency(Measure::Completion).p50);
        assert_eq!(r.requests.by_kind.0.iter().find(|(k, _)| *k == "read").unwrap().1, 36);
        assert!(r.requests.by_kind.0.iter().find(|(k, _)| *k == "list").unwrap().1 > 0);
        if r.strategy == "poll" {
            // Every poll-only list is a timer's: looking for work.
            assert!(r.requests.discovery_total > 0);
        }
        assert!(r.pass, "{}: {:?}", r.case, r.gates);
    }
    assert!(summary.pass);
    let cal = summary.calibration.as_ref().expect("calibration ran");
    assert_eq!(cal.inotify_rename_us.count + cal.inotify_missed, 200);

    // The relay root holds nothing once the run is over.
    assert_eq!(std::fs::read_dir(relay.path()).unwrap().count(), 0);

    // Both reports were written, and the JSON carries the documented fields.
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(md.contains("| poll |") && md.contains("| watch |"));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("summary.json")).unwrap()).unwrap();
    for key in ["schema_version", "tool", "scenario", "environment", "calibration", "results", "pass"] {
        assert!(json.get(key).is_some(), "summary.json lacks {key}");
    }
    let r0 = &json["results"][0];
    for key in [
        "case",
        "host",
        "strategy",
        "writer",
        "clock",
        "calls",
        "latency_us",
        "requests",
        "pairing_violations",
        "gates",
    ] {
        assert!(r0.get(key).is_some(), "results[0] lacks {key}");
    }
    for m in ["wake", "pickup", "completion", "completion_uncorrected", "relay_overhead"] {
        for stat in ["count", "min", "p50", "p90", "p99", "p999", "max", "mean"] {
            assert!(r0["latency_us"][m].get(stat).is_some(), "latency_us.{m}.{stat}");
        }
    }
    for key in ["scheduled", "completed", "ok", "error", "paused", "lost", "duplicated"] {
        assert!(r0["calls"].get(key).is_some(), "calls.{key}");
    }
    for key in ["discovery_per_min", "data_per_min", "by_kind"] {
        assert!(r0["requests"].get(key).is_some(), "requests.{key}");
    }
    assert_eq!(r0["clock"], "real");
    assert!(json["environment"]["kernel"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_the_case_and_marks_the_report() {
    let out = tempfile::tempdir().unwrap();
    let relay = tempfile::tempdir().unwrap();
    let text = SMALL.replace("duration = \"1500ms\"", "duration = \"60s\"");
    let s = Scenario::parse("long.toml", &text).unwrap();
    let opts = common::options(out.path(), relay.path(), false, false);
    let interrupt = Arc::new(Signal::new());
    let stopper = {
        let i = interrupt.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(700)).await;
            i.close();
        })
    };
    let started = std::time::Instant::now();
    let summary = run_scenario(&s, &opts, "t", interrupt).await.unwrap();
    stopper.await.unwrap();
    // Generous: the point is "not the 60 s schedule, nor a 60 s writer deadline".
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(summary.interrupted && !summary.pass);
    assert_eq!(summary.results.len(), 1);
    assert_eq!(summary.cases_not_run, vec!["watch".to_string()]);
    let r = &summary.results[0];
    assert!(r.interrupted);
    assert!(r.calls.started < r.calls.scheduled);
    // Calls cut short are counted, not dropped.
    assert_eq!(r.calls.completed + r.calls.interrupted, r.calls.started);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["interrupted"], true);
}

#[test]
fn a_malformed_scenario_names_file_and_key_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, SMALL.replace("turns_per_sec = 8", "turns_per_sec = 8\nturns_per_hour = 3")).unwrap();
    let out = Command::new(BIN).args(["run", "-q"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml"), "{err}");
    assert!(err.contains("workload.turns_per_hour"), "{err}");
    assert!(err.contains("allowed here:"), "{err}");

    std::fs::write(&path, SMALL.replace("writer = \"watch\"", "writer = \"smoke-signals\"")).unwrap();
    let out = Command::new(BIN).args(["run", "-q"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("case[1].writer") && err.contains("poll, watch"), "{err}");

    let out = Command::new(BIN).args(["run", "-q", "/nonexistent/scenario.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_failed_gate_exits_1_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gate.toml");
    let text = SMALL
        .replace("duration = \"1500ms\"", "duration = \"300ms\"")
        .replace("warmup = \"250ms\"", "")
        .replace("[[case]]\nname = \"poll\"", "[[case]]\nname = \"poll\"\ngates = [\"completed > 1000000\"]");
    std::fs::write(&path, text).unwrap();
    let out = Command::new(BIN)
        .args(["run", "-q", "--no-calibration", "--case", "poll", "--out"])
        .arg(dir.path().join("report"))
        .arg(&path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("gate `completed > 1000000` failed"), "{stdout}");
    assert!(dir.path().join("report/summary.json").exists());
}

#[test]
fn list_shows_the_shipped_scenarios() {
    let out = Command::new(BIN).arg("list").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("default") && text.contains("throughput"), "{text}");
}

const REMOTE: &str = r#"
name = "remote-small"
gates = ["lost == 0", "pairing_violations == 0", "leftover_files == 0", "duplicated == 0"]
baseline = "poll"
[workload]
sandboxes = 2
calls_per_turn = 3
[[workload.phase]]
duration = "2s"
turns_per_sec = 3
[[workload.phase]]
duration = "1s"
turns_per_sec = 0
[handler]
duration = "1ms"
[profile.near]
leg_min = "1ms"
leg_max = "2ms"
concurrency = 4
[[case]]
name = "poll"
host = "remote"
profile = "near"
runner = { strategy = "poll", interval = "20ms", max_interval = "20ms" }
writer = "watch"
[[case]]
name = "window"
host = "remote"
profile = "near"
runner = { strategy = "window-exec", window = "5s", safety_wait = "10s" }
writer = "watch"
[[case]]
name = "inline"
host = "remote"
profile = "lan"
runner = "window-exec-inline"
writer = "watch"
[[case]]
name = "follow"
host = "remote"
profile = "near"
runner = { strategy = "follow", lifetime = "1s" }
writer = "watch"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_window_exec_runs_the_real_watch_program_and_answers_every_call() {
    let (summary, _out, _relay) = run_temp("remote.toml", REMOTE, false).await;
    for r in &summary.results {
        assert_eq!(r.calls.completed, r.calls.scheduled, "{}: every call answered", r.case);
        assert!(r.pass, "{}: {:?} {:?}", r.case, r.gates, r.notices);
        assert!(r.host.starts_with("remote:"), "{}", r.host);
        assert!(r.injected_leg_us.as_ref().is_some_and(|l| l.count > 0), "{}: legs were paid", r.case);
        let kind = |k: &str| r.requests.by_kind.0.iter().find(|(n, _)| *n == k).unwrap().1;
        assert_eq!(kind("read") + r.runner.inline, r.calls.scheduled, "{}", r.case);
        if r.strategy.starts_with("window-exec") || r.strategy == "follow" {
            assert!(kind("exec") > 0, "{}: the watch program ran", r.case);
            assert!(r.runner.degraded.is_empty(), "{}: {:?}", r.case, r.runner.degraded);
        }
        assert!(r.requests.busy.minutes > 0.0 && r.requests.idle.minutes > 0.0);
        // Both phases were sampled: 2 s of turns, then 1 s idle, on 2 dirs.
        assert_eq!(r.requests.phases.len(), 2, "{}", r.case);
        assert!((r.requests.active_phases.minutes - 4.0 / 60.0).abs() < 1e-3, "{:?}", r.requests.active_phases);
        assert!((r.requests.idle_phases.minutes - 2.0 / 60.0).abs() < 1e-3, "{:?}", r.requests.idle_phases);
    }
    let inline = summary.results.iter().find(|r| r.case == "inline").unwrap();
    assert!(inline.runner.inline > 0, "the inline variant carried requests");
    let window = summary.results.iter().find(|r| r.case == "window").unwrap();
    assert!(window.vs_baseline.as_ref().unwrap().text.contains("pickup p50"));
}
