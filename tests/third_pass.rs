//! Smaller refusals of the third hostile pass: outputs that could not be written, values that
//! name one point twice, and an event log with a call deleted whole or an event made up.

use std::process::{Command, Stdio};

mod common;
use common::BIN;

fn said(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

#[test]
fn help_and_version_into_a_full_disk_exit_non_zero() {
    for args in [&["--help"][..], &["--version"], &["run", "--help"]] {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(BIN).args(args).stdout(Stdio::from(full)).output().unwrap();
        assert_eq!(out.status.code(), Some(6), "{args:?}: {}", said(&out));
        assert!(said(&out).contains("cannot write to stdout"), "{}", said(&out));
    }
}

#[test]
fn a_junit_path_in_a_directory_that_takes_no_file_is_refused_before_the_run() {
    let t = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["run", "default", "--case", "local-poll", "--no-calibration", "--junit", "/proc/junit.xml", "--out"])
        .arg(t.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("--junit /proc/junit.xml: its directory takes no file"), "{}", said(&out));
    assert!(!t.path().join("out").exists(), "refused before anything ran");
}

#[test]
fn one_value_said_two_ways_is_not_two_points() {
    let out = Command::new(BIN)
        .args(["run", "default", "--case", "local-poll", "--sweep", "runner.interval=300ms,0.3s", "--no-calibration"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("the values 300ms and 0.3s are the same value"), "{}", said(&out));
}

const SMALL: &str = r#"
name = "logged"
[workload]
sandboxes = 2
turns_per_sec = 4
duration = "5s"
[[case]]
name = "poll"
clock = "virtual"
runner = "poll"
writer = "poll"
"#;

fn check(log: &std::path::Path) -> std::process::Output {
    Command::new(BIN).arg("check").arg(log).output().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn check_fails_a_log_with_a_call_deleted_whole_and_refuses_a_made_up_event() {
    let (_summary, out, _relay) = common::run("logged.toml", SMALL, false, false).await;
    let log = out.path().join("events.ndjson");
    let done = check(&log);
    assert_eq!(done.status.code(), Some(0), "{}", said(&done));
    let text = std::fs::read_to_string(&log).unwrap();
    let victim = text
        .lines()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["event"] == "request").then(|| v["call"].as_str().unwrap().to_owned())
        })
        .unwrap();
    let needle = format!("\"call\":{}", serde_json::to_string(&victim).unwrap());
    let without: String = text.lines().filter(|l| !l.contains(&needle)).map(|l| format!("{l}\n")).collect();
    assert!(without.len() < text.len());
    let cut = out.path().join("cut.ndjson");
    std::fs::write(&cut, &without).unwrap();
    let done = check(&cut);
    assert_eq!(done.status.code(), Some(1), "a call the case made is missing: {}", said(&done));
    assert!(said(&done).contains("missing: 1 of the"), "{}", said(&done));
    let odd = out.path().join("odd.ndjson");
    let made_up = r#"{"case":"poll","sandbox":0,"call":"x","event":"teleported","t_ns":1}"#;
    std::fs::write(&odd, format!("{text}{made_up}\n")).unwrap();
    let done = check(&odd);
    assert_eq!(done.status.code(), Some(2), "{}", said(&done));
    assert!(said(&done).contains("unknown event \"teleported\""), "{}", said(&done));
}
