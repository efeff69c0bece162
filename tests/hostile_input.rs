//! Hostile input through the real binary (issue 13): a scenario too large to schedule, a
//! case name that would leave its report folder, an event log with an endless line or a
//! last line cut by a kill. Each ends in a clear message and the right exit code, before
//! anything is allocated or written outside the run directory.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::BIN;

fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// `relay-bench run FILE` in `dir`, with relay dirs under `dir/relay` and the report in
/// `dir/report`.
fn run(dir: &Path, text: &str) -> Output {
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    std::fs::create_dir_all(dir.join("relay")).unwrap();
    Command::new(BIN)
        .current_dir(dir)
        .args(["run", "-q", "--no-calibration", "--relay-root", "relay", "--out", "report"])
        .arg(&file)
        .output()
        .unwrap()
}

#[test]
fn a_schedule_too_large_to_build_exits_2_and_leaves_nothing_behind() {
    let t = tempfile::tempdir().unwrap();
    let text = r#"
name = "huge"
[workload]
turns_per_sec = 100000
calls_per_turn = 1000
[[case]]
name = "poll"
runner = "poll"
writer = "poll"
"#;
    let out = run(t.path(), text);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let e = said(&out);
    assert!(e.contains("s.toml: `workload`: every case would schedule 1000000000 calls"), "{e}");
    assert!(e.contains("allowed: at most 10000000 calls per case"), "{e}");
    assert!(!t.path().join("report").exists(), "no report started");
    assert_eq!(std::fs::read_dir(t.path().join("relay")).unwrap().count(), 0, "no relay dir made");
}
