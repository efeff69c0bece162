//! `run`'s overrides through the real binary: a real-clock scenario of four minutes run as
//! `--clock virtual --duration 30s --seed 7 --sandboxes 3` takes seconds, prints its estimate
//! before it starts, runs every case as overridden, and records what was overridden in
//! summary.json (valid against the schema) and summary.md.

use std::process::Command;

mod common;
use common::BIN;

const FOUR_MINUTES_REAL: &str = r#"
name = "long-real"
[workload]
sandboxes = 2
warmup = "4s"
[[workload.phase]]
duration = "60s"
turns_per_sec = 2
[[workload.phase]]
duration = "180s"
[[case]]
name = "poll"
host = "remote"
profile = "proxy"
runner = "poll"
writer = "poll"
[[case]]
name = "window"
host = "remote"
profile = "proxy"
runner = "window-exec"
writer = "watch"
"#;

#[test]
fn a_real_scenario_runs_on_the_virtual_clock_shortened_and_says_so_in_its_report() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("long-real.toml");
    std::fs::write(&file, FOUR_MINUTES_REAL).unwrap();
    let out = Command::new(BIN)
        .current_dir(t.path())
        .arg("run")
        .arg(&file)
        .args(["--no-calibration", "--clock", "virtual", "--duration", "30s", "--seed", "7", "--sandboxes", "3"])
        .arg("--out")
        .arg(t.path().join("out"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");

    // Progress (on stderr): the estimate comes before the first case, and speaks of what
    // will run.
    let lines: Vec<&str> = stderr.lines().collect();
    let estimate = lines.iter().position(|l| l.starts_with("long-real: estimate about ")).expect(&stderr);
    let first_case = lines.iter().position(|l| l.starts_with("[1/2] poll:")).expect(&stderr);
    assert!(estimate < first_case, "{stderr}");
    assert!(lines[estimate].contains("2 virtual cases (30s simulated each"), "{stderr}");
    assert!(!lines[estimate].contains("real clock"), "{stderr}");
    assert!(
        stderr.contains("long-real: overridden: --clock virtual --duration 30s --seed 7 --sandboxes 3"),
        "{stderr}"
    );

    let text = std::fs::read_to_string(t.path().join("out/summary.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    common::check_schema(&json);

    let o = &json["overrides"];
    assert_eq!(o["given"], serde_json::json!(["--clock virtual", "--duration 30s", "--seed 7", "--sandboxes 3"]));
    assert_eq!((o["clock"].as_str(), o["seed"].as_u64(), o["sandboxes"].as_u64()), (Some("virtual"), Some(7), Some(3)));
    assert_eq!((o["schedule_secs"].as_f64(), o["scaled_schedule_secs"].as_f64()), (Some(240.0), Some(30.0)));
    for r in json["results"].as_array().unwrap() {
        assert_eq!((r["clock"].as_str(), r["sandboxes"].as_u64()), (Some("virtual"), Some(3)), "{r:#}");
        // A minute of turns scaled to 7.5 s: the calls are those of the shorter schedule.
        let started = r["calls"]["started"].as_u64().unwrap();
        assert!(started > 0 && started < 2 * 60 * 3 / 4, "{started} calls: {r:#}");
        assert!(r["window_secs"].as_f64().unwrap() < 40.0, "{r:#}");
    }

    let md = std::fs::read_to_string(t.path().join("out/summary.md")).unwrap();
    assert!(
        md.contains("Run with overrides of the scenario file: `--clock virtual`, `--duration 30s` (the 4m schedule scaled by 0.125), `--seed 7`, `--sandboxes 3`."),
        "{md}"
    );
}

#[test]
fn an_override_a_case_cannot_take_is_refused_before_anything_runs() {
    let t = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .current_dir(t.path())
        .args(["run", "real-daemon", "--clock", "virtual", "--out"])
        .arg(t.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--clock virtual"), "{stderr}");
    assert!(stderr.contains("runs on the real clock only"), "{stderr}");
    assert!(!t.path().join("out").exists(), "nothing ran");
}
