//! `compare` and baselines, on virtual-time runs (deterministic, a second each): the same
//! scenario run twice with other seeds is noise; a poll interval twice as long is a
//! regression of 2x (on an in-memory local dir, pickup is the wait for the next poll,
//! half the interval at the median); differing environments warn, and `--strict` refuses.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_relay-bench");

fn scenario(seed: u64, interval_ms: u64) -> String {
    format!(
        r#"
name = "cmp"
[workload]
sandboxes = 4
arrival = "poisson"
turns_per_sec = 4
duration = "5m"
seed = {seed}
[[case]]
name = "local-poll"
clock = "virtual"
runner = {{ strategy = "poll", interval = "{interval_ms}ms", grow_after = 1000, max_interval = "{interval_ms}ms" }}
writer = "watch"
"#
    )
}

fn run(dir: &Path, name: &str, text: &str, extra: &[&str]) -> std::process::Output {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    Command::new(BIN)
        .current_dir(dir)
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--no-calibration", "--out"])
        .arg(dir.join(name))
        .args(extra)
        .output()
        .unwrap()
}

fn compare(dir: &Path, a: &str, b: &str, extra: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN).arg("compare").arg(dir.join(a)).arg(dir.join(b)).args(extra).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn same_scenario_is_noise_and_a_slower_poll_is_a_regression_of_about_2x() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    assert!(run(d, "b", &scenario(2, 300), &[]).status.success());
    assert!(run(d, "slow", &scenario(3, 600), &[]).status.success());

    let (code, said) = compare(d, "a", "b", &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("0 regression(s)"), "{said}");
    assert!(!said.contains("REGRESSION"), "{said}");

    let (code, said) = compare(d, "a", "slow", &[]);
    assert_eq!(code, Some(1), "{said}");
    let line = said.lines().find(|l| l.contains(" pickup ")).unwrap();
    assert!(line.contains("REGRESSION"), "{said}");
    let ratio: f64 = line.split_whitespace().find(|w| w.ends_with('x')).unwrap().trim_end_matches('x').parse().unwrap();
    assert!((1.85..2.15).contains(&ratio), "pickup p50 ratio {ratio} for a doubled poll interval: {line}");
}

#[test]
fn baselines_are_saved_and_compared_and_environments_are_checked() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let out = run(d, "base", &scenario(1, 300), &["--save-baseline", "nightly"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(d.join("reports/baselines/nightly/summary.json").is_file());
    assert!(d.join("reports/baselines/nightly/hdr/local-poll/pickup.hlog").is_file());
    let out = run(d, "slower", &scenario(2, 600), &["--baseline", "nightly"]);
    assert_eq!(out.status.code(), Some(1), "a regression against the baseline fails the run");
    assert!(String::from_utf8_lossy(&out.stdout).contains("against the baseline nightly"));
    let out = run(d, "x", &scenario(2, 300), &["--baseline", "nope"]);
    assert_eq!(out.status.code(), Some(2), "a missing baseline is bad input");

    // Another kernel: a warning, and --strict refuses.
    let p = d.join("slower/summary.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    v["environment"]["kernel"] = "0.0.0-other".into();
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
    let (_, said) = compare(d, "base", "slower", &[]);
    assert!(said.contains("warning: environments differ: kernel"), "{said}");
    let (code, said) = compare(d, "base", "slower", &["--strict"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("--strict"), "{said}");
}

#[test]
fn a_baseline_is_found_however_the_saving_run_was_composed_and_checked_before_anything_runs() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let other = scenario(1, 300).replace(r#"name = "cmp""#, r#"name = "cmp2""#);
    std::fs::write(d.join("cmp.toml"), scenario(1, 300)).unwrap();
    std::fs::write(d.join("cmp2.toml"), &other).unwrap();
    let run = |files: &[&str], out: &str, extra: &[&str]| {
        Command::new(BIN)
            .current_dir(d)
            .arg("run")
            .args(files)
            .args(["--quiet", "--no-calibration", "--out", out])
            .args(extra)
            .output()
            .unwrap()
    };
    // Saved by a run of two scenarios (a subdirectory each), compared by a run of one.
    let out = run(&["cmp.toml", "cmp2.toml"], "pair", &["--save-baseline", "both"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["cmp.toml"], "one", &["--baseline", "both"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("against the baseline both"));
    // Saved by a run of one: a run of two finds it for that scenario, and the other
    // scenario's missing baseline is refused before anything runs.
    let out = run(&["cmp.toml"], "solo", &["--save-baseline", "solo"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["cmp.toml", "cmp2.toml"], "late", &["--baseline", "solo"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(r#"scenario "cmp2""#),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!d.join("late").exists(), "nothing ran");
    // A run is never compared with the baseline it saves.
    let out = run(&["cmp.toml"], "self", &["--save-baseline", "solo", "--baseline", "solo"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("compared with itself"));
}
