//! SIGTERM and SIGHUP stop `run`, `serve` and `call` as Ctrl-C does: the report written and
//! marked interrupted, children killed and reaped, relay dirs and requests removed; and a
//! reader that closes the pipe early is no error.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

mod common;
use common::{processes_naming, wait_until, BIN};

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap();
    assert!(ok.success(), "kill -{name}");
}

const SCENARIO: &str = r#"
name = "sigterm"
[workload]
sandboxes = 2
turns_per_sec = 5
duration = "30s"
[[case]]
name = "window"
host = "remote"
profile = "lan"
runner = "window-exec"
writer = "watch"
[[case]]
name = "never-reached"
runner = "poll"
writer = "poll"
"#;

#[test]
fn sigterm_on_run_writes_the_interrupted_report_and_leaves_nothing_behind() {
    for sig in ["TERM", "HUP"] {
        let tmp = tempfile::tempdir().unwrap();
        let (file, out, root) = (tmp.path().join("s.toml"), tmp.path().join("out"), tmp.path().join("relays"));
        std::fs::write(&file, SCENARIO).unwrap();
        std::fs::create_dir(&root).unwrap();
        let child = Command::new(BIN)
            .arg("run")
            .arg(&file)
            .args(["--no-calibration", "--quiet", "--out"])
            .arg(&out)
            .arg("--relay-root")
            .arg(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The case is under way once its watch programs run.
        wait_until("the watch programs", || !processes_naming(&root).iter().all(|c| c.contains(" run ")));
        std::thread::sleep(Duration::from_secs(2));
        signal(&child, sig);
        let done = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&done.stderr);
        assert_eq!(done.status.code(), Some(130), "SIG{sig}: {err}");
        assert!(err.contains(&format!("interrupted (SIG{sig})")), "{err}");
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["interrupted"], true);
        assert_eq!(summary["results"].as_array().unwrap().len(), 1, "the case under way is reported");
        assert_eq!(summary["results"][0]["interrupted"], true);
        assert_eq!(summary["results"][0]["calls"]["lost"], 0, "calls cut off are counted as interrupted, not lost");
        assert_eq!(summary["cases_not_run"][0], "never-reached");
        assert_cut_off_cleanly(&summary["results"][0], &out);
        let events = std::fs::read_to_string(out.join("events.ndjson")).unwrap();
        assert!(events.lines().count() > 10, "the event log was written");
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "relay dirs removed");
        assert!(processes_naming(&root).is_empty(), "children reaped: {:?}", processes_naming(&root));
    }
}

/// Calls an interrupt cut off are closed as cut off, not breaches, in the summary and in the
/// log (`check` passes).
fn assert_cut_off_cleanly(r: &serde_json::Value, out: &std::path::Path) {
    let v = &r["pairing_violations"];
    assert_eq!(v["total"], 0, "an interrupt makes no breach: {v}");
    // Every interrupted call whose request was still open is closed as cut off (one whose
    // answer was out already, unread, is closed by that answer).
    let (cut, interrupted) = (v["cut_off"].as_u64().unwrap(), r["calls"]["interrupted"].as_u64().unwrap());
    assert!(cut <= interrupted && (interrupted == 0 || cut > 0), "cut off {cut} of {interrupted} interrupted: {v}");
    // A simulated day's planned calls make its log the compact one (`--event-log auto`).
    let log = ["events.ndjson", "events.bin"].iter().map(|f| out.join(f)).find(|p| p.is_file()).expect("an event log");
    let check = Command::new(BIN).arg("check").arg(log).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
}

#[test]
fn sigterm_during_a_virtual_run_cuts_calls_off_without_breaches() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, out) = (tmp.path().join("v.toml"), tmp.path().join("out"));
    let text = SCENARIO
        .replace("duration = \"30s\"", "duration = \"24h\"")
        .replace("runner = \"window-exec\"", "clock = \"virtual\"\nrunner = \"window-exec\"");
    std::fs::write(&file, text).unwrap();
    let child = Command::new(BIN)
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Under way once the report's skeleton is written; a simulated day takes far longer.
    wait_until("the first report", || out.join("summary.json").is_file());
    std::thread::sleep(Duration::from_millis(500));
    signal(&child, "TERM");
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(130), "{}", String::from_utf8_lossy(&done.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let r = &summary["results"][0];
    assert_eq!((&r["interrupted"], &r["calls"]["lost"], &r["leftover_files"]), (&true.into(), &0.into(), &0.into()));
    assert_cut_off_cleanly(r, &out);
}

#[test]
fn sigterm_and_sighup_stop_serve_cleanly() {
    for sig in ["TERM", "HUP"] {
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new(BIN)
            .args(["serve", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let call = Command::new(BIN).args(["call", "--tool", "t", "--dir"]).arg(dir.path()).output().unwrap();
        assert_eq!(call.status.code(), Some(0));
        signal(&child, sig);
        let done = child.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&done.stdout);
        assert_eq!(done.status.code(), Some(0), "SIG{sig}: {said}");
        assert!(said.contains("stopped after") && said.contains(": 1 answered"), "{said}");
    }
}

#[test]
fn sigterm_on_call_removes_its_request() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args(["call", "--tool", "t", "--id", "waiting", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let req = dir.path().join("waiting.req.json");
    wait_until("the request", || req.exists());
    signal(&child, "TERM");
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(130), "{}", String::from_utf8_lossy(&done.stderr));
    assert!(!req.exists(), "no runner picks up a call nobody waits for");
}

#[test]
fn list_into_a_reader_that_goes_away_exits_0() {
    // `relay-bench list | head -1` with `head` gone before `list` writes (the read end is
    // closed microseconds after the spawn; the program needs milliseconds to start): its
    // write fails with EPIPE, which a Rust `print!` turns into a panic.
    let mut child = Command::new(BIN).arg("list").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", String::from_utf8_lossy(&done.stderr));
}

#[test]
fn serve_into_a_reader_that_goes_away_keeps_serving_and_exits_0() {
    // `relay-bench serve | head -1`: once `head` is gone every stat line meets EPIPE. The
    // runner keeps answering, and a signal still ends it cleanly.
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--every", "100ms", "--dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let call = Command::new(BIN).args(["call", "--tool", "t", "--dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(call.status.code(), Some(0), "answered with its stdout gone");
    std::thread::sleep(Duration::from_millis(300)); // a few stat lines into the closed pipe
    signal(&child, "TERM");
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{}", String::from_utf8_lossy(&done.stderr));
}
