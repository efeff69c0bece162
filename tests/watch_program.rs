//! The in-sandbox watch program as the real child process the window-exec strategy runs:
//! its directory travels in argv, so hostile paths are harmless. Production's program
//! (the default) prints nothing and always exits 0; `--report` / `--inline` print what the
//! runner parses. Production's own expectations of its script as a real process are ported
//! here (`relay-watch.test.ts`, "the watch script as a real process"), with generous bounds.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use relay_bench::{parse_report as parse_output, Finish};

const BIN: &str = env!("CARGO_BIN_EXE_relay-bench");

/// Runs the program; `flag` is `--inline`, `--report` or nothing (production's).
fn run(dir: &Path, cwd: &Path, window_ms: u64, relist_ms: u64, flag: Option<&str>) -> std::process::Output {
    let mut c = Command::new(BIN);
    c.current_dir(cwd).arg("sandbox-watch");
    if let Some(f) = flag {
        c.arg(f);
    }
    c.arg("--").arg(dir).arg(window_ms.to_string()).arg(relist_ms.to_string());
    c.output().unwrap()
}

fn watch(dir: &Path, cwd: &Path, window_ms: u64, inline: bool) -> std::process::Output {
    run(dir, cwd, window_ms, 200, Some(if inline { "--inline" } else { "--report" }))
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
        relay_bench::publish_now(&relay_bench::RealDir::new(&d), "late.req.json", b"{}").unwrap();
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
fn a_missing_directory_degrades_to_the_relist_and_ends_at_the_window() {
    // Production: a dir that cannot be watched is no failure of the program; its re-list
    // runs for the window and it exits 0 (an idle wake for the runner).
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let out = run(&dir.path().join("gone"), dir.path(), 1200, 2000, None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(t0.elapsed() >= Duration::from_millis(1100), "ended at the window bound");
    assert!(out.stdout.is_empty());
}

#[test]
fn production_program_exits_0_and_prints_nothing_in_every_case() {
    let dir = tempfile::tempdir().unwrap();
    // A pre-existing request: exits at once.
    std::fs::write(dir.path().join("call-1.req.json"), b"{}").unwrap();
    let t0 = Instant::now();
    let out = run(dir.path(), dir.path(), 15_000, 2000, None);
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]));
    assert!(t0.elapsed() < Duration::from_secs(10), "not the 15 s window");
    // No file: exits at the window bound.
    std::fs::remove_file(dir.path().join("call-1.req.json")).unwrap();
    let t0 = Instant::now();
    let out = run(dir.path(), dir.path(), 1200, 2000, None);
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]));
    assert!(t0.elapsed() >= Duration::from_millis(1100));
    // Any change in the dir ends it (a file that is not a request, too), long before the
    // window and the re-list (production's program filters nothing).
    let d = dir.path().to_path_buf();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(d.join("notes.txt"), b"x").unwrap();
    });
    let t0 = Instant::now();
    let out = run(dir.path(), dir.path(), 60_000, 50_000, None);
    writer.join().unwrap();
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]));
    assert!(t0.elapsed() < Duration::from_secs(40), "ended by the event");
}

#[test]
fn with_events_requests_a_stray_file_does_not_end_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_path_buf();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        std::fs::write(d.join("notes.txt"), b"x").unwrap();
        relay_bench::publish_now(&relay_bench::RealDir::new(&d), "x.res.json", b"{}").unwrap();
    });
    let mut c = Command::new(BIN);
    c.arg("sandbox-watch").args(["--events", "requests", "--report", "--"]).arg(dir.path()).args(["1500", "60000"]);
    let out = c.output().unwrap();
    writer.join().unwrap();
    assert_eq!(parse_output(&out.stdout).unwrap().finish, Finish::Idle, "{:?}", out);
}

/// `program = "node"`: our Node script run as production runs its window (`node -e`), the
/// same facts as the default program. Skipped, and said so, without node.
#[test]
fn the_node_script_keeps_the_programs_facts() {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("the_node_script_keeps_the_programs_facts: skipped: node is not installed");
        return;
    }
    let node = |dir: &Path, window_ms: u64| {
        let argv = relay_bench::node_argv(dir, Duration::from_millis(window_ms), Duration::from_millis(200));
        let t0 = Instant::now();
        let out = Command::new(&argv[0]).args(&argv[1..]).output().unwrap();
        (out, t0.elapsed())
    };
    let outer = tempfile::tempdir().unwrap();
    let dir = outer.path().join("new\nline $(touch pwned) 'q'");
    std::fs::create_dir(&dir).unwrap();
    // Idle: the window runs out; nothing printed, exit 0.
    let (out, took) = node(&dir, 500);
    assert_eq!((out.status.code(), out.stdout.len()), (Some(0), 0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(took >= Duration::from_millis(450), "the window ran: {took:?}");
    // A request already there ends it at once (the look after arming).
    std::fs::write(dir.join("a.req.json"), b"{}").unwrap();
    let (out, took) = node(&dir, 30_000);
    assert_eq!(out.status.code(), Some(0));
    assert!(took < Duration::from_secs(20), "{took:?}");
    std::fs::remove_file(dir.join("a.req.json")).unwrap();
    // Any change ends it (a temp name too), well before the window. The writer changes the
    // dir every 500 ms until node is done: a change before node has armed its watch (a slow
    // start on a busy machine) is not one it can see.
    let d2 = dir.clone();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done2 = done.clone();
    let writer = std::thread::spawn(move || {
        for i in 1.. {
            std::thread::sleep(Duration::from_millis(500));
            if done2.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            std::fs::write(d2.join(format!("x.res.json.tmp.{i}")), b"{}").unwrap();
        }
    });
    let (out, took) = node(&dir, 30_000);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(took < Duration::from_secs(20), "{took:?}");
    // A dir that cannot be watched: the re-list carries the window, still exit 0.
    let (out, _) = node(&outer.path().join("missing"), 300);
    assert_eq!(out.status.code(), Some(0));
    assert!(!outer.path().join("pwned").exists(), "the dir is only a name");
}
