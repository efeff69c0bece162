//! `serve` and `call` on a real relay dir that others share and may replace (issue 19):
//! one runner per dir, also after the dir is deleted and made again.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

mod common;
use common::{wait_until, BIN};

fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// `relay-bench serve --dir DIR EXTRA...`, both outputs piped; killed when dropped.
struct Serve(Option<Child>, Option<std::thread::JoinHandle<String>>);

impl Serve {
    /// Started, and returned once it printed its banner (it holds the dir by then).
    fn start(dir: &Path, extra: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "--every", "1s", "--dir"])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut banner = String::new();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut banner).unwrap();
        assert!(banner.starts_with("serving "), "{banner}");
        // Stat lines go on being read, so a full pipe never stalls the runner.
        let rest = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut s);
            s
        });
        Serve(Some(child), Some(rest))
    }

    /// Its whole output, once it ended.
    fn output(&mut self, child: Child) -> Output {
        let mut out = child.wait_with_output().unwrap();
        out.stdout = self.1.take().unwrap().join().unwrap().into_bytes();
        out
    }

    fn stop(mut self) -> Output {
        let child = self.0.take().unwrap();
        let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
        self.output(child)
    }

    /// Waits (generously) for it to end by itself.
    fn wait(mut self) -> Output {
        let mut child = self.0.take().unwrap();
        let t0 = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t0.elapsed() > Duration::from_secs(120) {
                let _ = child.kill();
                panic!("serve did not stop: {}", said(&self.output(child)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.output(child)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn call(dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN).args(["call", "--dir"]).arg(dir).args(args).output().unwrap()
}

fn replace(dir: &Path) {
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::create_dir(dir).unwrap();
}

#[test]
fn a_replaced_dir_is_locked_again_and_a_second_runner_is_still_refused() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("relay");
    std::fs::create_dir(&d).unwrap();
    let first = Serve::start(&d, &[]);
    replace(&d);
    // Answered by the first runner, whose list before the pickup took the new dir's lock.
    let out = call(&d, &["--tool", "t", "--id", "after"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let second = Command::new(BIN).args(["serve", "--dir"]).arg(&d).output().unwrap();
    assert_eq!(second.status.code(), Some(2), "a second runner is refused: {}", said(&second));
    assert!(said(&second).contains("another runner serves this dir"), "{}", said(&second));
    let done = first.stop();
    assert_eq!(done.status.code(), Some(0), "{}", said(&done));
    assert!(said(&done).contains("the directory was replaced (inode "), "{}", said(&done));
    assert!(said(&done).contains("its lock is taken again, serving the new one"), "{}", said(&done));
    assert!(said(&done).contains(": 1 answered"), "{}", said(&done));
}

#[test]
fn a_runner_whose_replaced_dir_another_runner_took_stops_with_an_error() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("relay");
    std::fs::create_dir(&d).unwrap();
    // A request there before the first runner starts: its answer shows the first list is
    // done, and the next is 15 s away (poll, idle after a list that found work).
    std::fs::write(d.join("early.req.json"), r#"{"toolName":"t","toolCallId":"early","args":{}}"#).unwrap();
    let first = Serve::start(&d, &["--strategy", "poll", "--interval", "15s"]);
    wait_until("the first answer", || d.join("early.res.json").exists());
    replace(&d);
    let second = Serve::start(&d, &[]);
    let done = first.wait();
    assert_eq!(done.status.code(), Some(2), "{}", said(&done));
    let err = said(&done);
    assert!(err.contains("the directory was replaced (inode "), "{err}");
    assert!(err.contains("another runner holds the new one's lock: this runner stopped"), "{err}");
    // The dir is the second runner's alone.
    let out = call(&d, &["--tool", "t"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let done = second.stop();
    assert!(said(&done).contains(": 1 answered"), "{}", said(&done));
}

#[test]
fn a_call_withdraws_its_request_at_its_deadline_and_says_when_no_runner_serves() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    // No runner: the deadline is the tool timeout + 10 s.
    let out = call(d, &["--tool", "t", "--id", "retry1", "--timeout", "1ms"]);
    assert_eq!(out.status.code(), Some(5), "{}", said(&out));
    let err = said(&out);
    assert!(err.contains(&format!("no answer in 10.00s; is a runner serving {}?", d.display())), "{err}");
    assert!(!d.join("retry1.req.json").exists(), "withdrawn: no later runner runs it");
    // The retry is not refused as in flight, and a runner answers it.
    let serve = Serve::start(d, &[]);
    let out = call(d, &["--tool", "t", "--id", "retry1"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let done = serve.stop();
    assert!(said(&done).contains(": 1 answered"), "the withdrawn call never ran: {}", said(&done));
}

#[test]
fn a_reused_id_is_said_once_and_answered_in_the_next_turn() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let serve = Serve::start(d, &["--turn-idle", "1s"]);
    assert_eq!(call(d, &["--tool", "t", "--id", "same"]).status.code(), Some(0));
    // The same id again in the same turn: skipped (production's seen set), said once, and
    // answered once the turn has ended (1 s after its last call) and the next one lists.
    let out = call(d, &["--tool", "t", "--id", "same", "--timeout", "20s"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let done = serve.stop();
    let all = said(&done);
    assert_eq!(
        all.matches("skipped \"same.req.json\": a request of that name was already handled this turn").count(),
        1,
        "{all}"
    );
    assert!(all.contains("turn 1 ended after ") && all.contains("--turn-idle 1.00s: no call since"), "{all}");
    assert!(all.contains(": 2 answered") && all.contains("turn(s)"), "{all}");
    let refused = Command::new(BIN).args(["serve", "--turn", "10ms", "--dir"]).arg(d).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", said(&refused));
    assert!(said(&refused).contains("--turn 10.0ms: a turn lasts at least 1.00s"), "{}", said(&refused));
}

#[test]
fn a_dir_that_takes_no_files_is_said_to_be_no_relay_dir() {
    for cmd in [&["serve", "--dir", "/proc"][..], &["call", "--tool", "t", "--dir", "/proc"]] {
        let out = Command::new(BIN).args(cmd).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{cmd:?}: {}", said(&out));
        let who = if cmd[0] == "serve" { "runner" } else { "writer" };
        assert!(said(&out).contains(&format!("/proc: not a relay dir this {who} can write")), "{}", said(&out));
    }
}
