//! One SIGTERM ends every command soon, exit 130, with what it has reported: a virtual
//! sweep, virtual repeats, and `daemon-capacity` against a daemon that never answers. (The
//! bounds are generous, for a debug build on a busy machine: the commands before them
//! ran on for minutes.)

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{wait_until, BIN};

/// SIGTERMs `child` once; its exit code, stderr and how long it took to end (killed after
/// `bound`, which then fails the test).
fn terminate(mut child: Child, bound: Duration) -> (Option<i32>, String, Duration) {
    let t0 = Instant::now();
    let ok = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
    while child.try_wait().unwrap().is_none() && t0.elapsed() < bound {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = t0.elapsed();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(took < bound, "still running {took:?} after one SIGTERM: {err}");
    (out.status.code(), err, took)
}

/// A virtual case of a simulated day: minutes of wall time a point, uninterrupted.
const LONG: &str = r#"
name = "long"
[workload]
sandboxes = 4
turns_per_sec = 5
duration = "24h"
[[case]]
name = "poll"
clock = "virtual"
runner = "poll"
writer = "poll"
"#;

fn run(dir: &std::path::Path, extra: &[&str]) -> Child {
    std::fs::write(dir.join("long.toml"), LONG).unwrap();
    Command::new(BIN)
        .arg("run")
        .arg(dir.join("long.toml"))
        .args(["--quiet", "--no-calibration", "--out"])
        .arg(dir.join("out"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn summary(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("out/summary.json")).unwrap()).unwrap()
}

#[test]
fn one_sigterm_ends_a_virtual_sweep_as_interrupted_and_leaves_the_drawing_for_later() {
    let t = tempfile::tempdir().unwrap();
    // Points short enough that the first is done well within the wait on a busy machine
    // (debug build), and enough of them that the sweep is still under way when the report is
    // first rewritten (at most every 5 s) on a release build too.
    std::fs::write(t.path().join("short.toml"), LONG.replace("\"24h\"", "\"3h\"")).unwrap();
    let child = Command::new(BIN)
        .arg("run")
        .arg(t.path().join("short.toml"))
        .args(["--quiet", "--no-calibration", "--sweep", "runner.interval=100ms..1s:64", "--out"])
        .arg(t.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Under way, a point done (its report, charts included, written).
    wait_until("a point's report", || {
        std::fs::read(t.path().join("out/summary.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .is_some_and(|s: serde_json::Value| s["results"].as_array().is_some_and(|r| !r.is_empty()))
    });
    let (code, err, _) = terminate(child, Duration::from_secs(90));
    assert_eq!(code, Some(130), "{err}");
    let s = summary(t.path());
    assert_eq!(s["interrupted"], true, "{err}");
    assert_eq!(s["pass"], false);
    assert!(!s["cases_not_run"].as_array().unwrap().is_empty(), "the points not begun are not run");
    // What was measured is written; the drawings are left to `report`, said so.
    assert!(err.contains("not drawn; `relay-bench report"), "{err}");
    assert!(!t.path().join("out/report.html").exists());
    let again = Command::new(BIN).arg("report").arg(t.path().join("out")).output().unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(t.path().join("out/report.html").is_file());
}

#[test]
fn one_sigterm_ends_virtual_repeats_and_the_repeats_not_run_are_not_zeros() {
    let t = tempfile::tempdir().unwrap();
    let child = run(t.path(), &["--repeat", "6"]);
    wait_until("the first report", || t.path().join("out/summary.json").is_file());
    std::thread::sleep(Duration::from_millis(1500));
    let (code, err, _) = terminate(child, Duration::from_secs(60));
    assert_eq!(code, Some(130), "{err}");
    let s = summary(t.path());
    assert_eq!(s["interrupted"], true, "{err}");
    let r = &s["results"][0];
    assert_eq!(r["interrupted"], true, "the case is reported, cut short: {s}");
    // Only the repeats that ran are in the spread: none of the six is a zero for a run
    // that never happened.
    let spread = r["repeat"]["figures"].as_array().unwrap();
    let calls = spread.iter().find(|f| f["figure"] == "completed").expect("the completed spread");
    let values = calls["values"].as_array().unwrap();
    assert!(values.len() < 6, "{values:?}");
    assert!(values.iter().all(|v| v.as_f64().is_some_and(|v| v > 0.0)), "{values:?}");
    assert!(r["calls"]["completed"].as_u64().unwrap() > 0);
}

#[test]
fn one_sigterm_ends_daemon_capacity_against_a_daemon_that_never_answers() {
    let t = tempfile::tempdir().unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    // Accepts, reads the request and never answers.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept() {
            held.push(s);
        }
    });
    let child = Command::new(BIN)
        .args(["daemon-capacity", "--url", &format!("http://{addr}"), "--out"])
        .arg(t.path().join("out"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(1));
    let (code, err, took) = terminate(child, Duration::from_secs(20));
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted while asking the daemon its version"), "{err}");
    assert!(took < Duration::from_secs(20));
}
