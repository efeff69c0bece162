//! `compare` and baselines, on virtual-time runs (deterministic, a second each): the same
//! scenario run twice with other seeds is noise; a poll interval twice as long is a
//! regression of 2x (on an in-memory local dir, pickup is the wait for the next poll,
//! half the interval at the median) and halves the discovery rate (an improvement);
//! differing environments warn, and `--strict` refuses; `--threshold` reads `5%` and
//! `0.05` alike and refuses what it cannot read; `--format md` and `--format json` (the
//! latter checked against reports/compare.schema.json) carry the same verdict.

mod common;

use std::path::Path;
use std::process::Command;

use common::BIN;

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
    let line = said.lines().find(|l| l.trim_start().starts_with("pickup.p50 ")).unwrap();
    assert!(line.contains("REGRESSION"), "{said}");
    let ratio: f64 = line.split_whitespace().find(|w| w.ends_with('x')).unwrap().trim_end_matches('x').parse().unwrap();
    assert!((1.85..2.15).contains(&ratio), "pickup p50 ratio {ratio} for a doubled poll interval: {line}");
    let line = said.lines().find(|l| l.trim_start().starts_with("pickup.p99 ")).unwrap();
    assert!(line.contains("REGRESSION"), "the tail doubles with the interval: {said}");
    let line = said.lines().find(|l| l.trim_start().starts_with("discovery_per_min ")).unwrap();
    assert!(line.contains("improvement") && line.contains("0.50x"), "half the lists: {said}");
}

#[test]
fn the_threshold_reads_a_percentage_or_a_fraction_and_refuses_the_rest() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    for ok in ["5%", "0.05", "12.5%", "0"] {
        let (code, said) = compare(d, "a", "a", &["--threshold", ok]);
        assert_eq!(code, Some(0), "{ok}: {said}");
    }
    let (_, said) = compare(d, "a", "a", &["--threshold", "0.125"]);
    assert!(said.contains("verdict (±12.5%)"), "{said}");
    for (bad, says) in [
        ("5", "ambiguous: a bare number is a fraction of 1 (0.05 = 5%)"),
        ("-0.05", "cannot be negative"),
        ("-5%", "cannot be negative"),
        ("150%", "under 100%"),
        ("five", "not a number"),
    ] {
        let (code, said) = compare(d, "a", "a", &[&format!("--threshold={bad}")]);
        assert_eq!(code, Some(2), "{bad}: {said}");
        assert!(said.contains(says), "{bad}: {said}");
    }
}

#[test]
fn markdown_and_json_carry_the_verdict_and_the_json_matches_its_schema() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    assert!(run(d, "slow", &scenario(3, 600), &[]).status.success());
    let (code, md) = compare(d, "a", "slow", &["--format", "md"]);
    assert_eq!(code, Some(1), "{md}");
    assert!(md.starts_with("### relay-bench compare: ❌ "), "{md}");
    assert!(md.contains("| local-poll | `pickup.p50` |") && md.contains("❌ regression"), "{md}");
    let (code, json) = compare(d, "a", "slow", &["--format", "json"]);
    assert_eq!(code, Some(1), "{json}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/compare.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "compare's JSON does not match reports/compare.schema.json:\n{}", errors.join("\n"));
    assert_eq!(v["pass"], false);
    assert!(v["regressions"].as_u64().unwrap() >= 2, "pickup p50 and p99 at least: {json}");
    let (code, json) = compare(d, "a", "a", &["--format", "json"]);
    assert_eq!(code, Some(0));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(validator.iter_errors(&v).next().is_none() && v["pass"] == true, "{json}");
    let (code, said) = compare(d, "a", "a", &["--format", "html"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("allowed: table, md, json"), "{said}");
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

/// Copies the run directory `from` to `to` (summary.json and hdr/), for editing.
fn copy_run(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_run(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Edits a run directory's summary.json.
fn edit(dir: &Path, f: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join("summary.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_string(&v).unwrap()).unwrap();
}

#[test]
fn runs_that_share_no_case_are_bad_input_and_an_interrupted_run_is_warned_of() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    let renamed = scenario(2, 300).replace(r#"name = "local-poll""#, r#"name = "other-poll""#);
    assert!(run(d, "other", &renamed, &[]).status.success());
    let (code, said) = compare(d, "a", "other", &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("share no case: OLD has local-poll; NEW has other-poll"), "{said}");

    copy_run(&d.join("a"), &d.join("cut"));
    edit(&d.join("cut"), |v| {
        v["interrupted"] = true.into();
        v["results"][0]["interrupted"] = true.into();
    });
    let (code, said) = compare(d, "a", "cut", &[]);
    assert_eq!(code, Some(0), "{said}");
    let lines: Vec<&str> = said.lines().collect();
    assert!(lines[0].starts_with("OLD ") && lines[0].ends_with(": PASS"), "each run's verdict first: {said}");
    assert!(lines[1].starts_with("NEW "), "{said}");
    assert!(
        said.contains("\nwarning: the NEW run was interrupted: its figures are partial (cut short: local-poll)\n"),
        "{said}"
    );
    let (_, said) = compare(d, "a", "a", &[]);
    assert!(!said.contains("warning"), "{said}");
}

#[test]
fn a_missing_histogram_is_an_error_not_a_skipped_line() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    copy_run(&d.join("a"), &d.join("b"));
    std::fs::remove_file(d.join("b/hdr/local-poll/pickup.hlog")).unwrap();
    let (code, said) = compare(d, "a", "b", &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("b/hdr/local-poll/pickup.hlog: cannot read:"), "{said}");
    assert!(said.contains("pickup samples of case \"local-poll\", so this histogram is needed"), "{said}");
    std::fs::write(d.join("b/hdr/local-poll/pickup.hlog"), "not a log").unwrap();
    let (code, said) = compare(d, "b", "a", &[]);
    assert_eq!(code, Some(2), "{said}");
}

#[test]
fn a_black_box_pickup_is_never_set_beside_an_in_process_one() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("a/summary.json")).unwrap()).unwrap();
    assert_eq!(v["results"][0]["pickup_definition"], "handler_start", "recorded by every run");
    copy_run(&d.join("a"), &d.join("box"));
    edit(&d.join("box"), |v| v["results"][0]["pickup_definition"] = "request_gone".into());
    let (code, said) = compare(d, "a", "box", &[]);
    assert_eq!(code, Some(0), "{said}");
    let pickup: Vec<&str> = said.lines().filter(|l| l.contains("pickup")).collect();
    assert_eq!(pickup.len(), 1, "one line, and no ratio on it: {said}");
    assert!(
        pickup[0].contains("not compared: timed differently: OLD from publication to the handler's start")
            && pickup[0].contains("NEW from publication to the request file's removal"),
        "{said}"
    );
    assert!(said.lines().any(|l| l.contains("completion.p50 ") && l.contains("noise")), "the rest is compared: {said}");
    // A run from before the definition was recorded: a black box is known by its
    // requests not being measured.
    copy_run(&d.join("a"), &d.join("old-box"));
    edit(&d.join("old-box"), |v| {
        v["results"][0].as_object_mut().unwrap().remove("pickup_definition");
        v["results"][0]["requests"]["not_measured"] = true.into();
    });
    let (_, said) = compare(d, "old-box", "a", &[]);
    assert!(said.lines().any(|l| l.contains("pickup") && l.contains("timed differently")), "{said}");
    let (_, said) = compare(d, "old-box", "box", &[]);
    assert!(said.lines().any(|l| l.contains("pickup.p50 ") && l.contains("noise")), "same definition: {said}");
}

#[test]
fn a_summary_of_a_schema_version_this_build_cannot_read_is_refused_naming_it() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    for version in [serde_json::json!(0), serde_json::json!(99), serde_json::json!("1")] {
        copy_run(&d.join("a"), &d.join("other"));
        edit(&d.join("other"), |v| v["schema_version"] = version.clone());
        let (code, said) = compare(d, "a", "other", &[]);
        assert_eq!(code, Some(2), "{version}: {said}");
        assert!(said.contains(&format!("summary.json: schema_version {version}: this relay-bench (")), "{said}");
        assert!(said.contains("reads schema_version 1 only"), "{said}");
        let out = Command::new(BIN).arg("report").arg(d.join("other")).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "report {version}");
    }
}

#[test]
fn compare_says_what_differs_first_and_fails_on_a_case_missing_from_new_or_an_impossible_figure() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    assert!(run(d, "a", &scenario(1, 300), &[]).status.success());
    assert!(run(d, "b", &scenario(2, 300), &[]).status.success());
    let (code, said) = compare(d, "a", "b", &[]);
    assert_eq!(code, Some(0), "{said}");
    let head: Vec<&str> = said.lines().take(3).collect();
    assert!(head[0].starts_with("OLD ") && head[0].ends_with(": PASS"), "{said}");
    assert!(head[1].starts_with("NEW ") && head[1].ends_with(": PASS"), "{said}");
    assert_eq!(head[2], "differs: local-poll: seed: 1 -> 2", "{said}");

    // Another scenario with a case of the same name: matched by name, and said so.
    let other = scenario(1, 300).replace(r#"name = "cmp""#, r#"name = "other""#);
    assert!(run(d, "other", &other, &[]).status.success());
    let (code, said) = compare(d, "a", "other", &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("differs: scenario: cmp -> other"), "{said}");
    assert!(said.contains("warning: the runs are of two scenarios (OLD \"cmp\", NEW \"other\"): case(s) local-poll are matched by name only"), "{said}");

    // A case of OLD that NEW lacks fails the comparison; one NEW adds does not.
    let two =
        scenario(1, 300) + "[[case]]\nname = \"second\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n";
    assert!(run(d, "two", &two, &[]).status.success());
    let (code, said) = compare(d, "two", "a", &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("FAIL: case second of OLD is missing from NEW"), "{said}");
    assert!(
        said.trim_end().ends_with("0 regression(s), 0 improvement(s), 1 case(s) of OLD missing from NEW"),
        "{said}"
    );
    let (code, said) = compare(d, "a", "two", &["--format", "json"]);
    assert_eq!(code, Some(0), "{said}");

    // A negative rate is no measurement at all, not an improvement.
    copy_run(&d.join("b"), &d.join("neg"));
    edit(&d.join("neg"), |v| v["results"][0]["requests"]["discovery_per_min"] = (-5.0).into());
    let (code, said) = compare(d, "a", "neg", &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("case \"local-poll\": discovery_per_min is -5; no run measures that"), "{said}");
}

/// The main job's production poll case (real clock) against the same case listing every
/// 900 ms instead of 300 ms (a third of the discovery requests) is a regression, whatever the
/// machine's load: the option that differs comes first, the request rate is the regression.
/// (That the whole main job run twice with the code unchanged is no regression at 15 % is
/// checked by `.ci/run`, where the two runs have the machine to themselves: a noise floor on
/// the real clock is a property of the machine, not of a test binary's neighbours.)
#[test]
fn a_tripled_list_rate_of_the_default_scenario_is_a_regression() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let main_job = |out: &str, extra: &[&str]| {
        let o = Command::new(BIN)
            .current_dir(d)
            .args(["run", "--quiet", "--out"])
            .arg(d.join(out))
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.code().is_some_and(|c| c <= 1), "{out}: {}", String::from_utf8_lossy(&o.stderr));
    };
    main_job("first", &["--case", "local-poll"]);
    let default = include_str!("../scenarios/default.toml");
    let production_poll = "runner = \"poll\"         # production";
    assert!(default.contains(production_poll), "local-poll's runner line moved");
    let slower = default.replacen(
        production_poll,
        "runner = { strategy = \"poll\", interval = \"900ms\", max_interval = \"900ms\" } #",
        1,
    );
    std::fs::write(d.join("slower.toml"), slower).unwrap();
    main_job("slower", &["slower.toml", "--case", "local-poll"]);

    let (code, said) = compare(d, "slower", "first", &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("differs: local-poll: runner: poll 900.0ms"), "the option that differs comes first: {said}");
    let line = said.lines().find(|l| l.trim_start().starts_with("discovery_per_min ")).unwrap();
    assert!(line.contains("REGRESSION"), "{said}");
}
