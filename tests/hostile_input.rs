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

#[test]
fn check_replays_a_log_whose_last_line_a_kill_cut_and_refuses_an_endless_line() {
    let t = tempfile::tempdir().unwrap();
    let line =
        |call: &str, event: &str| format!(r#"{{"case":"c","sandbox":0,"call":"{call}","event":"{event}","t_ns":1}}"#);
    let log = t.path().join("events.ndjson");
    let text = [line("a", "request"), line("a", "response"), line("b", "request")].join("\n");
    std::fs::write(&log, &text[..text.len() - 5]).unwrap();
    let out = Command::new(BIN).arg("check").arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let s = said(&out);
    assert!(
        s.contains("events.ndjson:3: the last line has no newline") && s.contains("c: 1 requests, 1 responses"),
        "{s}"
    );

    std::fs::write(&log, format!("{}\n{}", line("a", "request"), "x".repeat(3 << 20))).unwrap();
    let out = Command::new(BIN).arg("check").arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("events.ndjson:2: longer than 1048576 bytes"), "{}", said(&out));
}

#[test]
fn a_case_name_that_would_leave_the_report_folder_is_refused_when_written_and_when_read() {
    let t = tempfile::tempdir().unwrap();
    for bad in ["..", ".", "-x", "../up"] {
        let text = format!(
            "name = \"n\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"{bad}\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n"
        );
        let out = run(t.path(), &text);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", said(&out));
        assert!(
            said(&out).contains("`case[0].name`") && said(&out).contains("is not allowed; allowed:"),
            "{}",
            said(&out)
        );
        assert!(!t.path().join("report").exists(), "{bad}: nothing written");
    }
    // A summary.json edited to name a case `../..` is not followed out of its run directory.
    let archived = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/archived-run/summary.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(archived).unwrap()).unwrap();
    v["results"][0]["case"] = "../..".into();
    let dir = t.path().join("edited");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("summary.json"), v.to_string()).unwrap();
    let out = Command::new(BIN).arg("report").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("`results[0].case`: \"../..\" is not allowed"), "{}", said(&out));
}
