//! Other people's relays: an independent runner (a stdlib-only Python script) measured as a
//! black box, `serve` and `call` as reference peers, and `check` over a real event log.
//! Timing bounds are generous: they test what a poll interval implies, not this machine.

use std::path::{Path, PathBuf};
use std::process::Command;

use relay_bench::Measure;
use relay_bench::{RealDir, RelayDir, Summary};

mod common;
use common::BIN;

fn runner_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/poll_runner.py")
}

async fn run(text: &str) -> (Summary, tempfile::TempDir) {
    run_with(text, false).await
}

async fn run_with(text: &str, calls_csv: bool) -> (Summary, tempfile::TempDir) {
    let (summary, out, _relay) = common::run("black-box.toml", text, false, calls_csv).await;
    (summary, out)
}

fn scenario(runner_args: &str, workload: &str) -> String {
    format!(
        r#"
name = "black-box"
[workload]
{workload}
[[case]]
name = "python"
runner = {{ command = ["python3", {script:?}, "{{dir}}", {runner_args}] }}
writer = "watch"
"#,
        script = runner_script().display().to_string()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_independent_python_runner_is_measured_from_outside() {
    // Poisson arrivals against a 200 ms poll: a pickup waits for the next poll, about
    // 100 ms at the median and never much more than 200 ms plus the script's own work.
    let text = scenario(
        r#""0.2""#,
        r#"sandboxes = 1
arrival = "poisson"
turns_per_sec = 5
calls_per_turn = 2
duration = "6s"
warmup = "1s"
seed = 3"#,
    );
    let (summary, out) = run_with(&text, true).await;
    let r = &summary.results[0];
    assert_eq!(r.strategy, "external");
    // calls.csv: a row per call, its wake cell empty (not seen from outside).
    let csv = std::fs::read_to_string(out.path().join("calls.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), relay_bench::CALLS_CSV_HEADER);
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len() as u64, r.calls.started);
    assert!(rows.iter().all(|row| row.split(',').nth(6) == Some("")), "{}", rows[0]);
    assert_eq!(r.calls.lost, 0, "{:?}", r.notices);
    assert_eq!(r.calls.completed, r.calls.started);
    assert_eq!(r.pairing_violations.total, 0, "{:?}", r.pairing_violations.listed);
    let p = &r.latency(Measure::Pickup);
    // Its figures are this machine's (a Python poller on a shared 2-core box): they are
    // for the report, not for a test to bound.
    assert!(p.count > 10 && p.p50 > 0.0, "{p:?}");
    // What cannot be seen from outside is said, not invented.
    assert_eq!(r.latency(Measure::Wake).count, 0);
    assert_eq!(r.latency(Measure::RelayOverhead).count, 0);
    assert!(r.unavailable.iter().any(|u| u.starts_with("wake:")), "{:?}", r.unavailable);
    assert!(r.unavailable.iter().any(|u| u.starts_with("relay_overhead:")));
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(md.contains("not measured"), "the report says which measures are unavailable");
    // Its stderr is kept; the event log replays clean.
    assert!(out.path().join("python-sandbox-0.stderr").exists());
    let log = out.path().join("events.ndjson");
    let check = Command::new(BIN).arg("check").arg(&log).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "{}", String::from_utf8_lossy(&check.stdout));
    assert!(String::from_utf8_lossy(&check.stdout).contains("0 breaches"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_sweeps_at_start_up_is_ready_before_the_schedule_starts() {
    // The runner sleeps a second, then sweeps every relay file (as production's runner does
    // before a turn), then serves. The schedule waits for its probe call to be answered, so
    // no measured call is swept away and charged to it as lost.
    let text = scenario(
        r#""0.05", "--startup", "1""#,
        r#"sandboxes = 1
turns_per_sec = 10
calls_per_turn = 1
duration = "2s""#,
    );
    let (summary, _out) = run(&text).await;
    let r = &summary.results[0];
    assert_eq!(r.calls.started, 20);
    assert_eq!(r.calls.lost, 0, "{:?}", r.notices);
    assert_eq!(r.pairing_violations.total, 0, "{:?}", r.pairing_violations.listed);
    assert!(r.runner.startup_ms >= 900.0, "the start-up is reported: {} ms", r.runner.startup_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_answers_twice_and_never_is_reported_and_the_run_finishes() {
    // 20 requests: the 4th, 8th, 12th and 16th are answered twice; the 5th, 10th, 15th and
    // 20th never (their writers give up after the 1 s tool timeout + 10 s).
    let text = scenario(
        r#""0.05", "--double-every", "4", "--skip-every", "5""#,
        r#"sandboxes = 1
turns_per_sec = 10
calls_per_turn = 1
duration = "2s"
tool_timeout = "1s""#,
    );
    let (summary, out) = run(&text).await;
    let r = &summary.results[0];
    assert_eq!(r.calls.started, 20);
    assert_eq!(r.calls.timeout, 4);
    assert_eq!(r.calls.lost, 4);
    assert_eq!(r.pairing_violations.count("duplicate_response"), 4, "{:?}", r.pairing_violations);
    assert_eq!(r.pairing_violations.count("unanswered_at_end"), 4);
    assert_eq!(r.pairing_violations.total, 8);
    assert!(out.path().join("summary.md").exists());
    // The replay of its event log finds the same breaches and exits 1.
    let check = Command::new(BIN).arg("check").arg(out.path().join("events.ndjson")).output().unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert_eq!(check.status.code(), Some(1), "{said}");
    assert!(said.contains("duplicate_response: 4") && said.contains("unanswered_at_end: 4"), "{said}");
}

/// Runs `relay-bench run` on `text` in a child process; its exit code and stderr.
fn run_cli(text: &str) -> (Option<i32>, String, std::time::Duration) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, text).unwrap();
    let t0 = std::time::Instant::now();
    let out = run_command(&file, dir.path()).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), t0.elapsed())
}

/// `relay-bench run FILE` with its report and relay dirs under `dir`.
fn run_command(file: &Path, dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("run").arg(file).args(["--no-calibration", "--quiet", "--out"]).arg(dir.join("out"));
    c.arg("--relay-root").arg(dir);
    c
}

#[test]
fn a_runner_that_cannot_start_is_a_case_error_at_once() {
    let case = |command: &str| {
        format!(
            "name = \"x\"\n[workload]\nsandboxes = 1\nturns_per_sec = 2\nduration = \"2s\"\n[[case]]\nname = \"broken\"\nrunner = {{ command = {command} }}\nwriter = \"watch\"\n"
        )
    };
    let (code, err, took) = run_cli(&case(r#"["/nonexistent/runner", "{dir}"]"#));
    assert_eq!(code, Some(2), "a runner command that cannot start is bad input: {err}");
    assert!(err.contains("case \"broken\"") && err.contains("cannot start the external runner"), "{err}");
    let (code, err, _) = run_cli(&case(r#"["sh", "-c", "echo bad flag >&2; exit 3"]"#));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("exited (exit status: 3) before answering"), "{err}");
    // Said when it happens, not after the 30 s probe bound (generous: a loaded machine).
    assert!(took < std::time::Duration::from_secs(25), "{took:?}");
}

/// A scenario whose black-box runner starts a long sleep in the background (its pid written
/// to `pid_file`), then becomes the Python runner.
fn sleeper(name: &str, pid_file: &Path, turns_per_sec: u32, duration: &str) -> String {
    format!(
        r#"
name = "{name}"
[workload]
sandboxes = 1
turns_per_sec = {turns_per_sec}
duration = "{duration}"
[[case]]
name = "python"
runner = {{ command = ["sh", "-c", "sleep 600 & echo $! > \"$1\"; exec python3 \"$2\" \"$3\" 0.05", "sh", {pid:?}, {script:?}, "{{dir}}"] }}
writer = "watch"
"#,
        pid = pid_file.display().to_string(),
        script = runner_script().display().to_string()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_black_box_runner_starts_ends_with_it() {
    let pid_file = tempfile::NamedTempFile::new().unwrap();
    let (summary, _out) = run(&sleeper("black-box", pid_file.path(), 5, "1s")).await;
    assert_eq!(summary.results[0].calls.lost, 0, "{:?}", summary.results[0].notices);
    let pid = std::fs::read_to_string(pid_file.path()).unwrap().trim().to_owned();
    assert!(!pid.is_empty(), "the runner wrote its child's pid");
    assert!(!running(&pid), "the runner's child {pid} outlived the case");
}

/// `relay-bench serve` on a dir, stopped with SIGINT when dropped.
struct Serve(std::process::Child);

impl Serve {
    fn start(dir: &Path, extra: &[&str]) -> Serve {
        let child = Command::new(BIN)
            .args(["serve", "--dir"])
            .arg(dir)
            .args(["--every", "1s"])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        Serve(child)
    }

    fn stop(mut self) -> (Option<i32>, String) {
        let _ = Command::new("kill").args(["-INT", &self.0.id().to_string()]).status();
        let out = std::mem::replace(&mut self.0, Command::new("true").spawn().unwrap()).wait_with_output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn call(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(BIN).args(["call", "--dir"]).arg(dir).args(args).output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn serve_answers_call_and_a_writer_in_another_language() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &[]);
    let (code, out) = call(dir.path(), &["--tool", "echo", "--args", r#"{"q":[1,2]}"#, "--id", "c/1"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with(r#"{"ok":true,"text":"#), "{out}");
    // A Python writer with its own whitespace and key order.
    let py = r#"
import json, os, sys, time
d = sys.argv[1]
body = json.dumps({"args": {"b": 2}, "toolCallId": "py-1", "toolName": "x"}, indent=2)
with open(os.path.join(d, "py-1.req.json.tmp.9"), "w") as f:
    f.write(body)
os.replace(os.path.join(d, "py-1.req.json.tmp.9"), os.path.join(d, "py-1.req.json"))
res = os.path.join(d, "py-1.res.json")
for _ in range(600):
    if os.path.exists(res):
        print(open(res).read())
        os.remove(res)
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
"#;
    let out = Command::new("python3").args(["-c", py]).arg(dir.path()).output().unwrap();
    assert!(out.status.success(), "the Python writer got no answer");
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["ok"], true);
    let (code, said) = serve.stop();
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("2 answered"), "{said}");
    assert!(RealDir::new(dir.path()).relay_files().unwrap().is_empty(), "nothing left behind");
}

#[test]
fn call_exit_codes_say_how_the_call_ended() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path(), &["--error-ratio", "1"]);
    let (code, out) = call(dir.path(), &["--tool", "t"]);
    assert_eq!(code, Some(1), "an error answer exits 1: {out}");
    assert!(out.starts_with(r#"{"ok":false"#), "{out}");
    drop(serve);
    let (code, _) = call(dir.path(), &["--tool", "t", "--args", "{not json"]);
    assert_eq!(code, Some(2), "bad --args is bad input");
    let (code, _) = call(&dir.path().join("missing"), &["--tool", "t"]);
    assert_eq!(code, Some(2), "a missing dir is bad input");
}

#[test]
fn serve_refuses_a_second_runner_a_dir_it_cannot_write_and_every_below_100ms() {
    let dir = tempfile::tempdir().unwrap();
    let first = Serve::start(dir.path(), &[]);
    // The first holds the dir once it prints its banner.
    let (code, out) = call(dir.path(), &["--tool", "t"]);
    assert_eq!(code, Some(0), "{out}");
    let second = Command::new(BIN).args(["serve", "--dir"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains("another runner serves this dir"), "{err}");
    let (code, said) = first.stop();
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains(": 1 answered"), "each call counted once: {said}");
    // Released with the first: a new serve takes the dir.
    let again = Serve::start(dir.path(), &[]);
    assert_eq!(call(dir.path(), &["--tool", "t"]).0, Some(0));
    drop(again);
    let proc_dir = Command::new(BIN).args(["serve", "--dir", "/proc"]).output().unwrap();
    let err = String::from_utf8_lossy(&proc_dir.stderr);
    assert_eq!(proc_dir.status.code(), Some(2), "{err}");
    assert!(err.contains("not a relay dir this runner can write"), "{err}");
    let zero = Command::new(BIN).args(["serve", "--every", "0s", "--dir"]).arg(dir.path()).output().unwrap();
    assert_eq!(zero.status.code(), Some(2), "{}", String::from_utf8_lossy(&zero.stderr));
    // A stat line per nanosecond wrote 85 MB in 3 s: floored at 100 ms.
    let tiny = Command::new(BIN).args(["serve", "--every", "1ns", "--dir"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&tiny.stderr);
    assert_eq!(tiny.status.code(), Some(2), "{err}");
    assert!(err.contains("--every 1ns: a stat line at most every 100.0ms"), "{err}");
}

#[test]
fn call_never_returns_a_stale_answer_nor_replaces_a_call_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // In flight: another caller's request is there. Refused, and left as it was.
    std::fs::write(d.join("busy.req.json"), b"theirs").unwrap();
    let (code, _) = call(d, &["--tool", "t", "--id", "busy"]);
    assert_eq!(code, Some(2), "a second call with an id in flight is refused");
    assert_eq!(std::fs::read(d.join("busy.req.json")).unwrap(), b"theirs");
    std::fs::remove_file(d.join("busy.req.json")).unwrap();
    // Stale: an answer from before this call. Removed, and the call's own answer returned.
    std::fs::write(d.join("old.res.json"), br#"{"ok":true,"text":"STALE"}"#).unwrap();
    let serve = Serve::start(d, &[]);
    let (code, out) = call(d, &["--tool", "t", "--id", "old"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("STALE"), "{out}");
    drop(serve);
    assert!(RealDir::new(d).relay_files().unwrap().is_empty());
}

/// Whether `pid` runs (a zombie waiting for init does not).
fn running(pid: &str) -> bool {
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    state.as_deref().and_then(|s| s.rsplit(") ").next()).is_some_and(|rest| !rest.starts_with('Z'))
}

#[test]
fn an_abort_kills_what_a_black_box_runner_started() {
    // A second signal exits at once, without the case's stop: the runner's process group
    // must still go (here, a background sleep it started).
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let file = dir.path().join("s.toml");
    std::fs::write(&file, sleeper("abort", &pid_file, 2, "120s")).unwrap();
    let child = run_command(&file, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until("the runner's child", || std::fs::read_to_string(&pid_file).is_ok_and(|p| running(p.trim())));
    let pid = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    for _ in 0..2 {
        let kill = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
        assert!(kill.success());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(130), "{}", String::from_utf8_lossy(&done.stderr));
    common::wait_until("the runner's child to be killed", || !running(&pid));
}
