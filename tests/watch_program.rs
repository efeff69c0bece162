//! The in-sandbox watch program as the real child process the window-exec strategy runs:
//! its directory travels in argv, so hostile paths are harmless, and its output is what
//! the runner parses.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use relay_bench::sandbox_watch::{parse_output, Finish};

const BIN: &str = env!("CARGO_BIN_EXE_relay-bench");

fn watch(dir: &Path, cwd: &Path, window_ms: u64, inline: bool) -> std::process::Output {
    let mut c = Command::new(BIN);
    c.current_dir(cwd).arg("sandbox-watch");
    if inline {
        c.arg("--inline");
    }
    c.arg("--").arg(dir).arg(window_ms.to_string()).arg("200");
    c.output().unwrap()
}

#[test]
fn hostile_directory_names_are_only_names() {
    let outer = tempfile::tempdir().unwrap();
    let names = [
        "with space",
        "quote'single",
        "dq\"double",
        "new\nline",
        "semi;touch pwned-semi",
        "$(touch pwned-subst)",
        "`touch pwned-tick`",
        "star*glob?[x]",
        "back\\slash",
        "-dash-first",
        "|pipe &amp > redirect",
    ];
    for name in names {
        let dir = outer.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("a.req.json"), br#"{"toolName":"t","toolCallId":"a","args":{}}"#).unwrap();
        let out = watch(&dir, outer.path(), 10_000, true);
        assert_eq!(out.status.code(), Some(0), "{name:?}: {}", String::from_utf8_lossy(&out.stderr));
        let report = parse_output(&out.stdout).unwrap_or_else(|| panic!("{name:?}: {:?}", out.stdout));
        assert_eq!(report.finish, Finish::Found, "{name:?}");
        assert_eq!(report.inline.len(), 1);
        assert_eq!(report.inline[0].name, "a.req.json");
        assert!(report.inline[0].body.contains("\"toolCallId\":\"a\""));
    }
    // A relative directory starting with `-` is a directory too.
    let out = watch(Path::new("-dash-first"), outer.path(), 10_000, false);
    assert_eq!(parse_output(&out.stdout).unwrap().finish, Finish::Found);
    // Nothing ran as a shell command.
    let entries: Vec<String> = std::fs::read_dir(outer.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(entries.iter().all(|e| !e.starts_with("pwned")), "{entries:?}");
    assert_eq!(entries.len(), names.len());
}

#[test]
fn an_event_ends_the_window_and_an_idle_window_ends_by_itself() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        relay_bench::fsio::publish_atomic(&d, "late.req.json", b"{}").unwrap();
    });
    let t0 = Instant::now();
    let out = watch(dir.path(), dir.path(), 60_000, false);
    writer.join().unwrap();
    let report = parse_output(&out.stdout).unwrap();
    assert!(matches!(report.finish, Finish::Event | Finish::Found), "{report:?}");
    assert!(t0.elapsed() < Duration::from_secs(50), "ended by the event, not the 60 s window");

    let empty = tempfile::tempdir().unwrap();
    let out = watch(empty.path(), empty.path(), 300, false);
    assert_eq!(parse_output(&out.stdout).unwrap().finish, Finish::Idle);
}

#[test]
fn a_missing_directory_is_a_failure_the_runner_can_see() {
    let dir = tempfile::tempdir().unwrap();
    let out = watch(&dir.path().join("gone"), dir.path(), 1000, false);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot watch"));
}
