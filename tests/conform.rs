//! `relay-bench conform` run as the binary: relay-bench's own runner (`serve`) and writer
//! (`call`) pass every case; an independent runner and writer in Python pass the cases too,
//! and each of their faults (one rule broken, `--fault`) fails exactly its case. Those run
//! with every core busy (a busy loop per core, [`Hog`]): a verdict must not depend on how
//! loaded the machine is. Runners that exit at once, never start, print a gigabyte or leave a
//! daemon behind get a verdict each, and one SIGINT ends the battery at once with nothing left
//! behind. The runner cases also run with the relay dir inside a real sandbox-agent daemon's
//! filesystem, a Python runner reaching it only through the daemon. The real conform.json is
//! validated against reports/conform.schema.json and conform.md is the report rendered.

use std::path::{Path, PathBuf};
use std::process::Command;

use relay_bench::{ConformReport, Verdict};

mod common;

/// Every core kept busy (a busy loop per core) for as long as this lives. One set of busy
/// loops across the test processes, passed on by a lock: while two batteries overlap, one set
/// keeps every core busy for both (two sets would be two loops a core, and every other test
/// beside them slowed twice over); when the battery holding it ends, a battery still running
/// takes the lock and starts its own within milliseconds.
struct Hog {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    keeper: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn every_core() -> Hog {
        use std::os::fd::AsRawFd;
        use std::sync::atomic::Ordering::Relaxed;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let keeper = std::thread::spawn(move || {
            let path = std::env::temp_dir().join("relay-bench-tests-busy-loops.lock");
            // Never through a link another user left at that name in the shared temp dir.
            let lock = std::os::unix::fs::OpenOptionsExt::custom_flags(
                std::fs::OpenOptions::new().create(true).truncate(false).write(true),
                libc::O_NOFOLLOW,
            )
            .open(path)
            .unwrap();
            let nap = std::time::Duration::from_millis(10);
            while !stopped.load(Relaxed) {
                // SAFETY: flock on a file this thread holds open; the lock goes with it.
                if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                    std::thread::sleep(nap);
                    continue;
                }
                let n = std::thread::available_parallelism().map_or(2, |n| n.get());
                let mut loops: Vec<std::process::Child> = (0..n)
                    .map(|_| {
                        Command::new("sh").args(["-c", "while :; do :; done"]).spawn().expect("a busy loop starts")
                    })
                    .collect();
                while !stopped.load(Relaxed) {
                    std::thread::sleep(nap);
                }
                for c in &mut loops {
                    let _ = c.kill();
                    let _ = c.wait();
                }
            }
        });
        Hog { stop, keeper: Some(keeper) }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(k) = self.keeper.take() {
            let _ = k.join();
        }
    }
}

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

/// The cases graded FAILED or NON-STRICT (a broken implementation's other cases may be
/// INCONCLUSIVE on a loaded machine: not observed in time is no grade).
fn graded_wrong(r: &ConformReport) -> Vec<(String, Verdict)> {
    r.cases
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::Failed | Verdict::NonStrict))
        .map(|c| (c.name.clone(), c.verdict))
        .collect()
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
        .map(|c| format!("{} {}: {} {:?}", c.name, c.verdict.name(), c.reason, c.evidence))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn serve_passes_every_runner_case() {
    let _hog = Hog::every_core();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let (code, stdout, r) = conform(
        &["--runner", "--", common::BIN, "serve", "--dir", "{dir}", "--sweep", "--handler-command", "{handler}"],
        &out,
    );
    assert!(not_ok(&r).is_empty(), "{}", details(&r));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r.cases.len(), relay_bench::RUNNER_CASES.len(), "every case ran");
    assert!(stdout.contains("PASSED:") && stdout.contains("parallel-64"), "{stdout}");
    schema_check(&out);
    let md = std::fs::read_to_string(out.join("conform.md")).unwrap();
    assert_eq!(md, relay_bench::conform_markdown(&r), "conform.md is the report rendered");
    let page = std::fs::read_to_string(out.join("conform.html")).unwrap();
    assert_eq!(page, relay_bench::conform_html(&r), "conform.html is the report rendered");
    assert!(page.contains("<h3>parallel-64 — OK</h3>"), "a heading per case");
    assert_eq!(page.matches("<script").count(), 1, "the page's own check, no other script");
}

#[test]
fn call_passes_every_writer_case() {
    let _hog = Hog::every_core();
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let call = [common::BIN, "call", "--dir", "{dir}", "--tool", "{tool}", "--id", "{id}", "--args", "{args}"];
    let mut args = vec!["--writer", "--"];
    args.extend(call);
    args.extend(["--timeout", "{timeout_ms}ms"]);
    let (code, stdout, r) = conform(&args, &out);
    assert!(not_ok(&r).is_empty(), "{}", details(&r));
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(r.cases.len(), relay_bench::WRITER_CASES.len(), "every case ran");
    schema_check(&out);
}

/// Runs the Python implementation `script` under each fault (and none) on `cases`, four
/// batteries at a time beside the busy loops; asserts the correct one passes and each fault
/// fails exactly `fails`.
fn faults(side: &str, script_name: &str, cases: &[&str], faults: &[(&str, &str)], extra: &[&str]) {
    let _hog = Hog::every_core();
    let t = tempfile::tempdir().unwrap();
    let runs: Vec<(Option<&str>, Option<&str>, PathBuf)> = std::iter::once((None, None, t.path().join("correct")))
        .chain(faults.iter().map(|(f, case)| (Some(*f), Some(*case), t.path().join(f))))
        .collect();
    let py = script(script_name);
    for chunk in runs.chunks(4) {
        std::thread::scope(|s| {
            let handles: Vec<_> = chunk
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
                            graded_wrong(&r),
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
        "slow-publication",
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
            ("empties-link", "symlinked-request"),
            ("takes-temps", "slow-publication"),
        ],
        &["{dir}", "{handler}"],
    );
}

/// An answer published twice, or a tool run twice, 0.6 s apart: seen until the case's end.
/// Such a runner breaks every case it answers in; one case is enough to show it.
#[test]
fn a_runner_that_answers_or_runs_twice_fails() {
    faults(
        "--runner",
        "runner.py",
        &["answer-ok"],
        &[("republish-answer", "answer-ok"), ("rerun-tool", "answer-ok")],
        &["{dir}", "{handler}"],
    );
}

#[test]
fn a_writer_broken_one_way_fails_exactly_its_case() {
    // Every writer case but the deadlines' (10 s, 12.5 s): they run for the fault that breaks each.
    let cases: Vec<&str> =
        relay_bench::WRITER_CASES.iter().map(|c| c.name).filter(|n| !n.starts_with("deadline")).collect();
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
            ("reads-any", "parallel-8"),
            ("republish", "late-answer"),
            ("astral-one-unit", "hostile-ids"),
            ("collide", "id-collision"),
            ("no-timeout-10s", "deadline-no-timeout"),
        ],
        &[],
    );
}

/// A writer started 3 s late (as a loaded machine may start one) is judged by its own clock:
/// the one that gives up 10 s after its request with no timeout fails, and the correct one
/// passes both deadline cases, not "late" by its start-up.
#[test]
fn a_writer_slow_to_start_is_judged_from_its_request() {
    faults(
        "--writer",
        "writer.py",
        &["deadline", "deadline-no-timeout"],
        &[("no-timeout-10s", "deadline-no-timeout")],
        &["--slow-start", "3"],
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
    // A runner that never answers is graded no better than FAILED, within its bound.
    let out = t.path().join("out");
    // (INCONCLUSIVE, exit 8, when the machine slowed meanwhile: never OK.)
    let (code, _, r) = conform(&["--runner", "--case", "answer-ok", "--bound", "2s", "--", "sleep", "60"], &out);
    assert!(code == 1 || code == 8, "{code}");
    assert!(matches!(r.cases[0].verdict, Verdict::Failed | Verdict::Inconclusive), "{:?}", r.cases[0]);
    assert!(r.cases[0].reason.contains("no probe call answered"), "{}", r.cases[0].reason);
}

#[test]
fn committed_conform_runs_match_the_schema_and_re_render_to_their_own_conform_md() {
    let runs = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs");
    let mut checked = 0;
    for run in std::fs::read_dir(runs).unwrap().flatten().map(|e| e.path()) {
        for dir in std::fs::read_dir(&run).into_iter().flatten().flatten().map(|e| e.path()) {
            let Ok(json) = std::fs::read_to_string(dir.join("conform.json")) else { continue };
            let r: ConformReport = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            schema_check(&dir);
            let md = std::fs::read_to_string(dir.join("conform.md")).unwrap();
            assert!(md == relay_bench::conform_markdown(&r), "{}: conform.md re-renders differently", dir.display());
            let page = std::fs::read_to_string(dir.join("conform.html")).unwrap();
            assert!(page == relay_bench::conform_html(&r), "{}: conform.html re-renders differently", dir.display());
            checked += 1;
        }
    }
    assert!(
        checked >= 4,
        "the committed production run has a runner and a writer report, and the runner over the daemon"
    );
}

/// Runs conform with `args`, its report kept under `t`; exit code, stderr and report.
fn conform_in(t: &Path, args: &[&str]) -> (i32, String, ConformReport) {
    let out = t.join(format!(
        "out-{}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    ));
    let done = Command::new(common::BIN)
        .arg("conform")
        .args(args.iter().take_while(|a| **a != "--"))
        .arg("--out")
        .arg(&out)
        .args(args.iter().skip_while(|a| **a != "--"))
        .current_dir(t)
        .output()
        .unwrap();
    let json = std::fs::read_to_string(out.join("conform.json"))
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&done.stderr)));
    let md = std::fs::read(out.join("conform.md")).unwrap();
    assert!(String::from_utf8(md).is_ok(), "conform.md is text");
    (
        done.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&done.stderr).into_owned(),
        serde_json::from_str(&json).unwrap(),
    )
}

/// The processes whose command line holds `marker`.
fn running(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(marker) && !c.contains("conform"))
        .collect()
}

#[test]
fn the_battery_never_breaks_whatever_the_runner_does() {
    let t = tempfile::tempdir().unwrap();
    // One that exits at once: every case a verdict, none a panic.
    let (code, stderr, r) =
        conform_in(t.path(), &["--runner", "--case", "answer-ok", "--case", "idle-list-rate", "--", "true"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(r.cases.len(), 2);
    for c in &r.cases {
        assert_eq!(c.verdict, Verdict::Failed);
        assert!(c.reason.contains("exited before answering a probe"), "{}", c.reason);
    }
    assert!(r.counts.failed as usize <= r.cases.len() && r.calibration.is_some());
    // One that never starts.
    let (code, _, r) = conform_in(t.path(), &["--runner", "--case", "answer-ok", "--", "/nonexistent/runner"]);
    assert_eq!((code, r.cases[0].verdict), (1, Verdict::Failed));
    assert!(r.cases[0].reason.contains("never started"), "{}", r.cases[0].reason);
    // One that prints a gigabyte and leaves a daemon (setsid) behind: its output is capped,
    // the daemon killed at the case's end.
    let marker = format!("{}.{}", 300 + std::process::id() % 500, 7);
    let body =
        format!("setsid sleep {marker} & head -c 1000000000 /dev/zero; head -c 300000000 /dev/zero >&2; sleep 60");
    let (code, _, r) =
        conform_in(t.path(), &["--runner", "--case", "answer-ok", "--bound", "2s", "--", "sh", "-c", &body]);
    // Failed, or inconclusive (8) when a loaded machine's pace leaves the case undecided:
    // never a pass.
    assert!(matches!(code, 1 | 8), "exit {code}: {:?}", r.cases[0]);
    let ev = r.cases[0].evidence.join("\n");
    assert!(ev.contains("killed"), "{ev}");
    assert!(running(&format!("sleep {marker}")).is_empty(), "the setsid'd daemon is gone: {:?}", running(&marker));
    // --bound has a maximum.
    let over =
        Command::new(common::BIN).args(["conform", "--runner", "--bound", "601s", "--", "true"]).output().unwrap();
    assert_eq!(over.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&over.stderr).contains("600s"));
}

#[test]
fn one_sigint_ends_the_battery_at_once_with_nothing_left_behind() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("relays");
    std::fs::create_dir(&root).unwrap();
    let out = t.path().join("out");
    let marker = format!("{}.{}", 700 + std::process::id() % 200, 3);
    let mut child = Command::new(common::BIN)
        .args(["conform", "--runner", "--bound", "60s", "--relay-root"])
        .arg(&root)
        .arg("--out")
        .arg(&out)
        .args(["--", "sleep", &marker])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The case under way (its runner started) before the signal.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while running(&format!("sleep {marker}")).is_empty() && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let sent = std::time::Instant::now();
    let status = child.wait().unwrap();
    // The case would wait its 60 s bound; the battery ends long before.
    assert!(sent.elapsed() < std::time::Duration::from_secs(30), "{:?}", sent.elapsed());
    assert_eq!(status.code(), Some(130));
    let r: ConformReport = serde_json::from_str(&std::fs::read_to_string(out.join("conform.json")).unwrap()).unwrap();
    assert!(r.interrupted);
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0, "the cases' dirs are gone");
    assert!(running(&format!("sleep {marker}")).is_empty(), "the runner is gone");
}

/// The runner cases with the relay dir inside a real sandbox-agent daemon's filesystem: a
/// Python runner that reaches it only through the daemon passes every case, and one that
/// never deletes fails exactly delete-on-pickup; a daemon already running is graded by --url.
/// No busy loop beside it: the other batteries hold the verdicts on a busy machine, and this
/// one's point is the path through the daemon (under busy loops it took 200 s of CI's 20
/// minutes, and slowed every test beside it).
#[test]
#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
fn the_remote_path_is_graded_through_a_real_daemon() {
    let Some(bin) = common::daemon_or_skip("the_remote_path_is_graded_through_a_real_daemon") else { return };
    let t = tempfile::tempdir().unwrap();
    let bin = bin.display().to_string();
    let py = script("remote_runner.py");
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut a: Vec<String> =
            ["--runner", "--host", "sandbox-agent", "--sandbox-agent", &bin].map(String::from).to_vec();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(["--", "python3", &py, "{url}", "{dir}", "{handler}"].map(String::from));
        a
    };
    let (code, stderr, r) = conform_in(t.path(), &args(&[]).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(not_ok(&r).is_empty(), "{}", details(&r));
    assert_eq!(code, 0, "{stderr}");
    assert!(r.host.as_deref().is_some_and(|h| h.contains("sandbox-agent")), "{:?}", r.host);
    let mut broken = args(&["--case", "answer-ok", "--case", "delete-on-pickup"]);
    broken.extend(["--fault", "no-delete"].map(String::from));
    let (code, _, r) = conform_in(t.path(), &broken.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(not_ok(&r), vec![("delete-on-pickup".to_owned(), Verdict::Failed)], "{}", details(&r));
    assert_eq!(code, 1);
    // A daemon already running, by its URL; and one that is not there.
    let daemon = relay_bench::AgentProcess::start(std::path::Path::new(&bin)).unwrap();
    let url = daemon.base.clone();
    let (code, _, r) = conform_in(
        t.path(),
        &["--runner", "--url", &url, "--case", "parallel-8", "--", "python3", &py, "{url}", "{dir}", "{handler}"],
    );
    assert!(not_ok(&r).is_empty() && code == 0, "{}", details(&r));
    drop(daemon);
    let gone = Command::new(common::BIN).args(["conform", "--runner", "--url", &url, "--", "true"]).output().unwrap();
    assert_eq!(gone.status.code(), Some(2), "{}", String::from_utf8_lossy(&gone.stderr));
}
