//! `relay-bench conform` run as the binary: relay-bench's own runner (`serve`) and writer
//! (`call`) pass every case; an independent runner and writer in Python pass the cases too,
//! and each of their faults (one rule broken, `--fault`) fails exactly its case. The real
//! conform.json is validated against reports/conform.schema.json and conform.md is the
//! report rendered.

use std::path::{Path, PathBuf};
use std::process::Command;

use relay_bench::results::conform::{ConformReport, Verdict};

mod common;

fn script(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conform").join(name).display().to_string()
}

/// Runs `conform ARGS --out OUT`; its exit code, stdout and report.
fn conform(args: &[&str], out: &Path) -> (i32, String, ConformReport) {
    let done = Command::new(common::BIN)
        .arg("conform")
        .args(args.iter().take_while(|a| **a != "--"))
        .arg("--out")
        .arg(out)
        .args(args.iter().skip_while(|a| **a != "--"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&done.stderr);
    let json = std::fs::read_to_string(out.join("conform.json"))
        .unwrap_or_else(|e| panic!("no conform.json ({e}); stdout {stdout}, stderr {stderr}"));
    (done.status.code().unwrap_or(-1), stdout, serde_json::from_str(&json).unwrap())
}

fn not_ok(r: &ConformReport) -> Vec<(String, Verdict)> {
    r.cases
        .iter()
        .filter(|c| !matches!(c.verdict, Verdict::Ok | Verdict::Informational))
        .map(|c| (c.name.clone(), c.verdict))
        .collect()
}

fn schema_check(out: &Path) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/conform.schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("reports/conform.schema.json is a valid JSON Schema");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("conform.json")).unwrap()).unwrap();
    let errors: Vec<String> = v.iter_errors(&json).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "conform.json does not match the schema:\n{}", errors.join("\n"));
}

fn details(r: &ConformReport) -> String {
    r.cases
        .iter()
        .map(|c| format!("{} {}: {} {:?}", c.name, c.verdict.label(), c.reason, c.evidence))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn serve_passes_every_runner_case() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let (code, stdout, r) = conform(
        &["--runner", "--", common::BIN, "serve", "--dir", "{dir}", "--sweep", "--handler-command", "{handler}"],
        &out,
    );
    assert!(not_ok(&r).is_empty(), "{}", details(&r));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r.cases.len(), relay_bench::engine::conform::runner::CASES.len(), "every case ran");
    assert!(stdout.contains("PASSED:") && stdout.contains("parallel-64"), "{stdout}");
    schema_check(&out);
    let md = std::fs::read_to_string(out.join("conform.md")).unwrap();
    assert_eq!(md, relay_bench::report::conform::markdown(&r), "conform.md is the report rendered");
    let page = std::fs::read_to_string(out.join("conform.html")).unwrap();
    assert_eq!(page, relay_bench::report::conform::html(&r), "conform.html is the report rendered");
    assert!(page.contains("id=\"parallel-64\"") && !page.contains("<script"), "a section per case, no script");
}

#[test]
fn call_passes_every_writer_case() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let call = [common::BIN, "call", "--dir", "{dir}", "--tool", "{tool}", "--id", "{id}", "--args", "{args}"];
    let mut args = vec!["--writer", "--"];
    args.extend(call);
    args.extend(["--timeout", "{timeout_ms}ms"]);
    let (code, stdout, r) = conform(&args, &out);
    assert!(not_ok(&r).is_empty(), "{}", details(&r));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r.cases.len(), relay_bench::engine::conform::writer::CASES.len(), "every case ran");
    schema_check(&out);
}

/// Runs the Python implementation `script` under each fault (and none) on `cases`, in
/// parallel; asserts the correct one passes and each fault fails exactly `fails`.
fn faults(side: &str, script_name: &str, cases: &[&str], faults: &[(&str, &str)], extra: &[&str]) {
    let t = tempfile::tempdir().unwrap();
    let runs: Vec<(Option<&str>, Option<&str>, PathBuf)> = std::iter::once((None, None, t.path().join("correct")))
        .chain(faults.iter().map(|(f, case)| (Some(*f), Some(*case), t.path().join(f))))
        .collect();
    let py = script(script_name);
    std::thread::scope(|s| {
        let handles: Vec<_> = runs
            .iter()
            .map(|(fault, fails, out)| {
                let py = py.clone();
                s.spawn(move || {
                    let mut args: Vec<&str> = vec![side];
                    let mut with: Vec<&str> = cases.to_vec();
                    if let Some(f) = fails.filter(|f| !cases.contains(f)) {
                        with.push(f);
                    }
                    for c in &with {
                        args.extend(["--case", c]);
                    }
                    args.extend(["--", "python3", &py]);
                    args.extend(extra);
                    if let Some(f) = fault {
                        args.extend(["--fault", f]);
                    }
                    let (code, _, r) = conform(&args, out);
                    (*fault, *fails, code, r)
                })
            })
            .collect();
        for h in handles {
            let (fault, fails, code, r) = h.join().unwrap();
            match fails {
                None => {
                    assert!(not_ok(&r).is_empty(), "the correct {script_name}: {}", details(&r));
                    assert_eq!(code, 0);
                }
                Some(case) => {
                    assert_eq!(
                        not_ok(&r),
                        vec![(case.to_owned(), Verdict::Failed)],
                        "--fault {fault:?}: {}",
                        details(&r)
                    );
                    assert_eq!(code, 1, "a FAILED case exits 1");
                }
            }
        }
    });
}

#[test]
fn a_runner_broken_one_way_fails_exactly_its_case() {
    let cases = [
        "answer-ok",
        "answer-pause",
        "atomic-answers",
        "delete-on-pickup",
        "stale-sweep",
        "reused-id",
        "parallel-8",
        "malformed-request",
        "symlinked-request",
        "hostile-ids",
    ];
    faults(
        "--runner",
        "runner.py",
        &cases,
        &[
            ("non-atomic", "atomic-answers"),
            ("no-delete", "delete-on-pickup"),
            ("no-sweep", "stale-sweep"),
            ("rerun-reused", "reused-id"),
            ("pause-as-ok", "answer-pause"),
        ],
        &["{dir}", "{handler}"],
    );
}

#[test]
fn a_writer_broken_one_way_fails_exactly_its_case() {
    // Every writer case but the deadline's (10 s): that one runs for the fault that breaks it.
    let cases: Vec<&str> =
        relay_bench::engine::conform::writer::CASES.iter().map(|c| c.name).filter(|n| *n != "deadline").collect();
    faults(
        "--writer",
        "writer.py",
        &cases,
        &[
            ("non-atomic", "request-atomic"),
            ("ignores-paused", "answer-pause"),
            ("keeps-on-pause", "cleanup-after-pause"),
            ("returns-stale", "stale-answer"),
            ("early-deadline", "deadline"),
        ],
        &[],
    );
}

#[test]
fn bad_input_is_refused_and_the_cases_are_listed() {
    let t = tempfile::tempdir().unwrap();
    let run =
        |args: &[&str]| Command::new(common::BIN).arg("conform").args(args).current_dir(t.path()).output().unwrap();
    let none = run(&["--runner"]);
    assert_eq!(none.status.code(), Some(2), "no command");
    let unknown = run(&["--runner", "--case", "nope", "--", "true"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("nope"), "names the case");
    let list = run(&["--list"]);
    let text = String::from_utf8_lossy(&list.stdout);
    assert!(
        text.contains("--runner:")
            && text.contains("stale-sweep")
            && text.contains("--writer:")
            && text.contains("deadline"),
        "{text}"
    );
    // A runner that never answers fails every case it is given, within its bound.
    let out = t.path().join("out");
    let (code, _, r) = conform(&["--runner", "--case", "answer-ok", "--bound", "2s", "--", "sleep", "60"], &out);
    assert_eq!(code, 1);
    assert_eq!(not_ok(&r), vec![("answer-ok".to_owned(), Verdict::Failed)]);
    assert!(r.cases[0].reason.contains("no probe call answered"), "{}", r.cases[0].reason);
}

#[test]
fn committed_conform_runs_match_the_schema_and_re_render_to_their_own_conform_md() {
    let runs = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs");
    let mut checked = 0;
    for run in std::fs::read_dir(runs).unwrap().flatten().map(|e| e.path()) {
        for side in ["runner", "writer"] {
            let dir = run.join(side);
            let Ok(json) = std::fs::read_to_string(dir.join("conform.json")) else { continue };
            let r: ConformReport = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            schema_check(&dir);
            let md = std::fs::read_to_string(dir.join("conform.md")).unwrap();
            assert!(
                md == relay_bench::report::conform::markdown(&r),
                "{}: conform.md re-renders differently",
                dir.display()
            );
            let page = std::fs::read_to_string(dir.join("conform.html")).unwrap();
            assert!(
                page == relay_bench::report::conform::html(&r),
                "{}: conform.html re-renders differently",
                dir.display()
            );
            checked += 1;
        }
    }
    assert!(checked >= 2, "the committed production run has a runner and a writer report");
}
