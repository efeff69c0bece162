//! The real sandbox-agent daemon (0.4.2) as the runner's host. Skipped, and said so, when
//! the binary is not installed (scripts/install-sandbox-agent.sh); run by `.ci/run`, which
//! installs it.

use std::sync::Arc;
use std::time::Duration;

use relay_bench::Measure;
use relay_bench::{find_sandbox_agent, AgentHost, AgentProcess, Host};

mod common;

use common::daemon_or_skip;

/// One test at a time: the last one checks that this process has no child left.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_is_a_daemon_request_and_counted() {
    let Some(bin) = daemon_or_skip("every_operation_is_a_daemon_request_and_counted") else { return };
    let _one = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let process = Arc::new(AgentProcess::start(&bin).unwrap());
    let host = AgentHost::new(process.base.clone(), d.to_path_buf(), Arc::default(), Some(process.clone()));
    host.publish("a.req.json", br#"{"x":1}"#).await.unwrap();
    assert_eq!(std::fs::read(d.join("a.req.json")).unwrap(), br#"{"x":1}"#, "written through the daemon");
    assert_eq!(host.list().await.unwrap(), vec!["a.req.json".to_owned()], "no temp name left");
    assert_eq!(host.read("a.req.json").await.unwrap(), br#"{"x":1}"#);
    assert_eq!(host.stat("a.req.json").await.unwrap(), 7);
    host.delete("a.req.json").await.unwrap();
    host.delete("a.req.json").await.unwrap(); // already gone: not an error
    assert_eq!(host.read("a.req.json").await.unwrap_err().kind(), std::io::ErrorKind::NotFound);
    let out = host.exec(&["sh".into(), "-c".into(), "echo hi; exit 3".into()], Duration::from_secs(10)).await.unwrap();
    assert_eq!((out.code, out.stdout.as_slice(), out.timed_out), (Some(3), &b"hi\n"[..], false));
    let hung = host.exec(&["sleep".into(), "30".into()], Duration::from_millis(200)).await.unwrap();
    assert!(hung.timed_out && hung.code.is_none(), "the daemon's own timeout: {hung:?}");
    let refused = host.exec(&["/nonexistent/program".into()], Duration::from_secs(10)).await.unwrap_err();
    // The daemon refuses the spawn (a 502): the window source calls that a rejected exec.
    assert!(refused.to_string().contains("502"), "{refused}");
    // A missing dir lists as empty, as production's `ls -1` with its exit code ignored.
    let gone = AgentHost::new(process.base.clone(), d.join("missing"), Arc::default(), None);
    assert!(gone.list().await.unwrap().is_empty());
    let by: Vec<(String, u64)> = host.counts().by_kind().0;
    let count = |k: &str| by.iter().find(|(n, _)| n == k).unwrap().1;
    assert_eq!(
        [count("list"), count("read"), count("write"), count("rename"), count("delete"), count("stat"), count("exec")],
        [1, 2, 1, 1, 2, 1, 3]
    );
    // Every request went to the daemon: with it gone, each one fails.
    drop(host);
    drop(gone);
    let base = process.base.clone();
    drop(process);
    let dead = AgentHost::new(base, d.to_path_buf(), Arc::default(), None);
    let e = dead.list().await.unwrap_err();
    assert!(e.to_string().contains("cannot connect"), "{e}");
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_case_on_the_real_daemon_loses_nothing_and_leaves_no_daemon() {
    if daemon_or_skip("a_case_on_the_real_daemon_loses_nothing_and_leaves_no_daemon").is_none() {
        return;
    }
    let _one = SERIAL.lock().await;
    let text = r#"
name = "daemon"
[workload]
sandboxes = 2
turns_per_sec = 4
calls_per_turn = 2
duration = "3s"
[[case]]
name = "poll"
host = "sandbox-agent"
runner = "poll"
writer = "poll"
[[case]]
name = "window-exec"
host = "sandbox-agent"
runner = "window-exec"
writer = "watch"
[[case]]
name = "window-exec-in-sandbox"
host = "sandbox-agent"
profile = "proxy"
in_sandbox = true
runner = "window-exec"
writer = "watch"
"#;
    let (summary, _out, _relay) = common::run("daemon.toml", text, false, false).await;
    for r in &summary.results {
        assert!(r.pass, "{}: {:?} {:?}", r.case, r.gates, r.notices);
        assert_eq!(r.calls.lost, 0);
        assert!(r.host.starts_with("sandbox-agent 0.4.2"), "the report names the daemon: {}", r.host);
        assert_eq!(r.sandbox_side.is_some(), r.case.ends_with("in-sandbox"), "{}", r.case);
    }
    let r = &summary.results[2];
    in_sandbox_side_checks(r);
    assert_eq!(r.calls.completed, summary.results[1].calls.completed, "the same schedule, paced in the sandbox");
    let left = common::live_children();
    assert!(left.is_empty(), "daemon and watch programs reaped: {left:?}");
}

/// What every case whose in-sandbox side ran in the sandbox shows: its writers' calls all
/// joined with the runner's (no breach, nothing left), the sandbox's clock joined to this
/// one (here the two are one clock, so the estimated offset must lie within the bound the
/// report gives), its files removed and no writer left running.
fn in_sandbox_side_checks(r: &relay_bench::CaseResult) {
    let side = r.sandbox_side.as_ref().unwrap();
    assert_eq!(side.daemon_version.as_deref(), Some("sandbox-agent 0.4.2"), "asked of the daemon's own binary");
    assert!(side.program_bytes > 1_000_000 && side.clock_readings == 10, "{side:?}");
    assert!(
        side.clock_offset_ms.abs() <= side.clock_uncertainty_ms + 0.002,
        "one machine, one clock: the offset found ({} ms) must be within its bound ({} ms)",
        side.clock_offset_ms,
        side.clock_uncertainty_ms
    );
    assert_eq!((r.pairing_violations.total, r.leftover_files, r.calls.unmeasured), (0, 0, 0), "{:?}", r.notices);
    assert!(r.calls.completed > 0 && r.latency(Measure::Pickup).count > 0);
    assert!(r.requests.idle.rate().is_none(), "busy and idle are not known here when the writer ran elsewhere");
    let root = std::path::Path::new(&side.root);
    assert!(!root.exists(), "{} removed after the case", root.display());
    assert!(common::processes_naming(root).is_empty(), "no writer left running");
}

#[test]
fn a_scenario_on_a_missing_daemon_names_the_package() {
    let _one = SERIAL.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        "name = \"x\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"d\"\nhost = \"sandbox-agent\"\nrunner = \"poll\"\nwriter = \"poll\"\n",
    )
    .unwrap();
    let out = std::process::Command::new(common::BIN)
        .arg("run")
        .arg(&file)
        .env("SANDBOX_AGENT_BIN", "/nonexistent/sandbox-agent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("@sandbox-agent/cli-linux-x64@0.4.2") && err.contains("install-sandbox-agent.sh"), "{err}");
    // --sandbox-agent names it: a missing file is bad input; a real one wins over the env.
    let flagged = |bin: &std::path::Path| {
        std::process::Command::new(common::BIN)
            .arg("run")
            .arg(&file)
            .args(["--no-calibration", "--quiet", "--out"])
            .arg(dir.path().join("out"))
            .arg("--sandbox-agent")
            .arg(bin)
            .env("SANDBOX_AGENT_BIN", "/nonexistent/sandbox-agent")
            .output()
            .unwrap()
    };
    let out = flagged(std::path::Path::new("/nonexistent/flagged"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--sandbox-agent /nonexistent/flagged") && err.contains("no such file"), "{err}");
    if let Ok(bin) = find_sandbox_agent() {
        let out = flagged(&bin);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // The shipped scenario that needs it is still listed.
    let list = std::process::Command::new(common::BIN)
        .arg("list")
        .env("SANDBOX_AGENT_BIN", "/nonexistent/sandbox-agent")
        .output()
        .unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", String::from_utf8_lossy(&list.stderr));
    assert!(String::from_utf8_lossy(&list.stdout).contains("real-daemon"));
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_strike_the_real_daemon_and_its_wire() {
    if daemon_or_skip("faults_strike_the_real_daemon_and_its_wire").is_none() {
        return;
    }
    let _one = SERIAL.lock().await;
    // A restart kills the process and starts it again on its port; a disconnect cuts the
    // proxy's connections; a pause SIGSTOPs the daemon; a blackhole darkens the proxy's wire.
    // Each is survived, nothing lost.
    let text = r#"
name = "daemon-faults"
[workload]
sandboxes = 1
turns_per_sec = 4
duration = "5s"
[[case]]
name = "restart"
host = "sandbox-agent"
profile = "lan"
runner = "poll"
writer = "watch"
[[case.fault]]
kind = "daemon-restart"
at = "2s"
duration = "1s"
[[case]]
name = "disconnect"
host = "sandbox-agent"
profile = "lan"
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "proxy-disconnect"
at = "2s"
[[case]]
name = "pause"
host = "sandbox-agent"
profile = "lan"
runner = "poll"
writer = "watch"
[[case.fault]]
kind = "sandbox-pause"
at = "2s"
duration = "1s"
[[case]]
name = "blackhole-in-sandbox"
host = "sandbox-agent"
profile = "lan"
in_sandbox = true
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "proxy-blackhole"
at = "2s"
duration = "1500ms"
"#;
    let (summary, _out, _relay) = common::run("daemon-faults.toml", text, false, false).await;
    for r in &summary.results {
        assert_eq!(r.calls.lost, 0, "{}: {:?}", r.case, r.notices);
        let f = &r.faults[0];
        assert!(f.ok && f.failed == 0 && f.calls > 0, "{}: {f:?}", r.case);
        assert!(!r.notices.iter().any(|n| n.contains("not applied")), "{}: {:?}", r.case, r.notices);
    }
    let restart = &summary.results[0];
    assert!(
        restart.notices.iter().any(|n| n.contains("cannot connect") || n.contains("cannot list")),
        "{:?}",
        restart.notices
    );
    let disconnect = &summary.results[1].faults[0];
    assert!(disconnect.detected.contains("watch failure"), "the held window's exec broke: {disconnect:?}");
    let pause = &summary.results[2].faults[0];
    assert!(pause.worst_pickup_ms.unwrap_or(0.0) >= 500.0, "calls waited for the frozen daemon: {pause:?}");
    // The dark wire: the runner's requests crossed only once it healed; the writers in the
    // sandbox, reached around the proxy, went on publishing meanwhile.
    let dark = &summary.results[3];
    let f = &dark.faults[0];
    assert!(f.worst_pickup_ms.unwrap_or(0.0) >= 1_000.0, "calls waited for the wire to heal: {f:?}");
    in_sandbox_side_checks(dark);
}

/// A daemon started here on a port of its own with `args` after its address, killed when
/// dropped; once it listens.
struct Started(std::process::Child, u16);

impl Started {
    fn new(bin: &std::path::Path, args: &[&str]) -> Started {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = std::process::Command::new(bin)
            .args(["server", "--no-telemetry", "-H", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Started(child, port);
        let t0 = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(30), "the daemon listens");
            std::thread::sleep(Duration::from_millis(20));
        }
        started
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `run FILE --no-calibration --quiet --out OUT`, which must exit 0; its summary.
fn run_passing(file: &std::path::Path, out: &std::path::Path) -> relay_bench::Summary {
    let run = std::process::Command::new(common::BIN)
        .arg("run")
        .arg(file)
        .args(["--no-calibration", "--quiet", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap()
}

/// A daemon started by someone else, with a token: `url` + the token from the environment.
#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[test]
fn a_running_daemon_by_url_and_token_never_written_to_a_report() {
    let Some(bin) = daemon_or_skip("a_running_daemon_by_url_and_token_never_written_to_a_report") else { return };
    let _one = SERIAL.blocking_lock();
    let token = "tok-5f1e-never-in-reports";
    let daemon = Started::new(&bin, &["--token", token]);
    let port = daemon.1;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"mine\"\n[workload]\nturns_per_sec = 4\nduration = \"2s\"\n[[case]]\nname = \"mine\"\n\
             host = \"sandbox-agent\"\nurl = \"http://127.0.0.1:{port}\"\ntoken_env = \"MY_DAEMON_TOKEN\"\n\
             runner = \"window-exec\"\nwriter = \"watch\"\n\
             [[case]]\nname = \"mine-in-sandbox\"\nhost = \"sandbox-agent\"\nurl = \"http://127.0.0.1:{port}\"\n\
             token_env = \"MY_DAEMON_TOKEN\"\nin_sandbox = true\nrunner = \"window-exec\"\nwriter = \"watch\"\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let run = |with_token: bool| {
        let mut c = std::process::Command::new(common::BIN);
        c.arg("run").arg(&file).args(["--no-calibration", "--quiet", "--out"]).arg(&out_dir);
        if with_token {
            c.env("MY_DAEMON_TOKEN", token);
        } else {
            c.env_remove("MY_DAEMON_TOKEN");
        }
        c.output().unwrap()
    };
    let refused = run(false);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(err.contains("refused the token") && err.contains("MY_DAEMON_TOKEN"), "{err}");
    let ok = run(true);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stderr));
    let json = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(summary["results"][0]["host"], format!("sandbox-agent 0.4.2 @ 127.0.0.1:{port}"), "asked of its binary");
    // The in-sandbox side went up, ran and came back through the daemon, token and all.
    let mine: relay_bench::CaseResult = serde_json::from_value(summary["results"][1].clone()).unwrap();
    assert!(mine.pass, "{:?} {:?}", mine.gates, mine.notices);
    in_sandbox_side_checks(&mine);
    for f in ["summary.json", "summary.md", "events.ndjson"] {
        let text = std::fs::read_to_string(out_dir.join(f)).unwrap();
        assert!(!text.contains(token), "{f} holds the token");
    }
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[test]
fn an_interrupted_run_stops_the_writers_in_the_sandbox_and_removes_their_files() {
    let Some(_) = daemon_or_skip("an_interrupted_run_stops_the_writers_in_the_sandbox_and_removes_their_files") else {
        return;
    };
    let _one = SERIAL.blocking_lock();
    let tmp = tempfile::tempdir().unwrap();
    let sandbox_root = tmp.path().join("sandbox");
    std::fs::create_dir(&sandbox_root).unwrap();
    let file = tmp.path().join("s.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"cut\"\n[workload]\nsandboxes = 2\nturns_per_sec = 6\nduration = \"120s\"\n\
             [[case]]\nname = \"in-sandbox\"\nhost = \"sandbox-agent\"\nin_sandbox = true\n\
             sandbox_root = {:?}\nrunner = \"window-exec\"\nwriter = \"watch\"\n",
            sandbox_root.to_str().unwrap()
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let child = std::process::Command::new(common::BIN)
        .arg("run")
        .arg(&file)
        .args(["--no-calibration", "--quiet", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Under way once both writers run in the sandbox (their argv names its root).
    common::wait_until("the writers in the sandbox", || {
        common::processes_naming(&sandbox_root).iter().filter(|c| c.contains("sandbox-writer")).count() == 2
    });
    std::thread::sleep(Duration::from_secs(3));
    let kill = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    let summary: relay_bench::Summary = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap())
        .unwrap_or_else(|e| panic!("{e}: {err}"));
    let r = &summary.results[0];
    assert!(r.interrupted, "{:?}", r.notices);
    assert!(r.calls.completed > 0, "calls ran before the interrupt: {:?}", r.calls);
    assert_eq!(r.calls.lost, 0, "calls cut off are interrupted, not lost: {:?} {:?}", r.calls, r.notices);
    assert!(r.calls.started < r.calls.scheduled, "the writers stopped pacing: {:?}", r.calls);
    let left = common::processes_naming(&sandbox_root);
    assert!(left.is_empty(), "the writers stopped: {left:?}");
    assert_eq!(std::fs::read_dir(&sandbox_root).unwrap().count(), 0, "the case's files removed from the sandbox");
}

/// A daemon in a mount namespace of its own, with a fresh tmpfs over `hidden` (an empty dir
/// here): a sandbox whose files there this machine cannot see. `None` (said) when namespaces
/// are not permitted here.
struct Elsewhere(std::process::Child);

impl Elsewhere {
    fn start(bin: &std::path::Path, port: u16, hidden: &std::path::Path) -> Option<Elsewhere> {
        let probe = std::process::Command::new("unshare").args(["-m", "sh", "-c", "mount -t tmpfs none /mnt"]).output();
        if !probe.as_ref().is_ok_and(|o| o.status.success()) {
            eprintln!("skipped: `unshare -m` with a tmpfs mount is not permitted here: {probe:?}");
            return None;
        }
        let script = format!(
            "mount -t tmpfs none {:?} && exec {:?} server --no-token --no-telemetry -H 127.0.0.1 -p {port}",
            hidden.display().to_string(),
            bin.display().to_string()
        );
        let mut child = std::process::Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let t0 = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(st) = child.try_wait().unwrap() {
                let mut err = String::new();
                let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
                panic!("the daemon in its namespace exited ({st}): {err}");
            }
            assert!(t0.elapsed() < Duration::from_secs(30), "the daemon listens");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Elsewhere(child))
    }

    /// The names the daemon lists in `dir` (a path of plain characters).
    fn names(port: u16, dir: &std::path::Path) -> Vec<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let path = dir.display();
        write!(s, "GET /v1/fs/entries?path={path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        let entries: Vec<serde_json::Value> = serde_json::from_str(body).unwrap();
        entries.iter().map(|e| e["name"].as_str().unwrap().to_owned()).collect()
    }
}

impl Drop for Elsewhere {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[test]
fn a_sandbox_whose_files_this_machine_cannot_see_is_benchmarked_through_its_daemon_alone() {
    let Some(bin) = daemon_or_skip("a_sandbox_whose_files_this_machine_cannot_see") else { return };
    let _one = SERIAL.blocking_lock();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let hidden = dir.path().join("sandbox");
    std::fs::create_dir(&hidden).unwrap();
    std::fs::write(hidden.join("marker"), "here").unwrap();
    let Some(_daemon) = Elsewhere::start(&bin, port, &hidden) else { return };
    // Its `hidden` is not this one: a file made here is not there.
    assert!(!Elsewhere::names(port, &hidden).contains(&"marker".to_owned()), "the daemon sees its own dir");
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"elsewhere\"\n[workload]\nsandboxes = 2\nturns_per_sec = 4\nduration = \"3s\"\n\
             [[case]]\nname = \"elsewhere\"\nhost = \"sandbox-agent\"\nurl = \"http://127.0.0.1:{port}\"\n\
             in_sandbox = true\nsandbox_root = {:?}\nrunner = \"window-exec\"\nwriter = \"watch\"\n",
            hidden.display().to_string()
        ),
    )
    .unwrap();
    let summary = run_passing(&file, &dir.path().join("out"));
    let r = &summary.results[0];
    assert!(r.pass && r.calls.completed > 0 && r.calls.lost == 0, "{:?} {:?}", r.calls, r.notices);
    in_sandbox_side_checks(r);
    assert!(Elsewhere::names(port, &hidden).is_empty(), "its root removed there too");
    let here: Vec<_> = std::fs::read_dir(&hidden).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(here, ["marker"], "nothing of the case ever showed here");
}

/// A counting proxy of the test's own, in front of a daemon: every request's method and
/// route as it crosses the wire (HTTP/1.1, bodies by Content-Length, as hyper sends them),
/// counted apart from anything relay-bench counts.
mod wire_count {
    use std::collections::BTreeMap;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    pub type Counts = Arc<Mutex<BTreeMap<String, u64>>>;

    /// `/v1/processes/<id>[/kill]` as its route; a query cut off.
    fn route(method: &str, target: &str) -> String {
        let path = target.split('?').next().unwrap_or("");
        let path = match path.strip_prefix("/v1/processes/") {
            Some("run") | None => path.to_owned(),
            Some(rest) if rest.ends_with("/kill") => "/v1/processes/{id}/kill".to_owned(),
            Some(_) => "/v1/processes/{id}".to_owned(),
        };
        format!("{method} {path}")
    }

    /// Reads the requests in `bytes` as they stream by: `head` holds a head not yet whole,
    /// `body` the bytes of the current request's body still to come.
    struct Parser {
        head: Vec<u8>,
        body: usize,
    }

    impl Parser {
        fn feed(&mut self, mut bytes: &[u8], counts: &Counts) {
            while !bytes.is_empty() {
                if self.body > 0 {
                    let n = self.body.min(bytes.len());
                    self.body -= n;
                    bytes = &bytes[n..];
                    continue;
                }
                self.head.extend_from_slice(bytes);
                bytes = &[];
                let Some(end) = self.head.windows(4).position(|w| w == b"\r\n\r\n") else { return };
                let head = String::from_utf8_lossy(&self.head[..end]).into_owned();
                let rest = self.head[end + 4..].to_vec();
                self.head.clear();
                let mut lines = head.lines();
                let mut first = lines.next().unwrap_or("").split(' ');
                let (method, target) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
                *counts.lock().unwrap().entry(route(method, target)).or_default() += 1;
                self.body = lines
                    .filter_map(|l| l.split_once(':'))
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.trim().parse().ok())
                    .unwrap_or(0);
                self.feed(&rest, counts);
            }
        }
    }

    /// Listens on a port of its own; returns it and the counts.
    pub fn start(upstream: u16) -> (u16, Counts) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let counts: Counts = Arc::default();
        let c = counts.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                let (mut from_client, mut to_server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut from_server, mut to_client) = (server, client);
                let c = c.clone();
                std::thread::spawn(move || {
                    let mut p = Parser { head: Vec::new(), body: 0 };
                    let mut buf = [0u8; 64 * 1024];
                    while let Ok(n) = from_client.read(&mut buf) {
                        if n == 0 || to_server.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        p.feed(&buf[..n], &c);
                    }
                    let _ = to_server.shutdown(std::net::Shutdown::Write);
                });
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_server, &mut to_client);
                    let _ = to_client.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        (port, counts)
    }
}

/// What a daemon was sent, counted on the wire by a proxy of the test's own, is exactly the
/// report's runners' requests over the whole case plus relay-bench's own, route by route:
/// with the writer here and with the in-sandbox side uploaded, followed and brought back.
#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[test]
fn a_daemons_own_count_of_its_requests_reconciles_with_the_report() {
    let Some(bin) = daemon_or_skip("a_daemons_own_count_of_its_requests_reconciles_with_the_report") else { return };
    let _one = SERIAL.blocking_lock();
    let daemon = Started::new(&bin, &["--no-token"]);
    let (port, seen) = wire_count::start(daemon.1);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"counted\"\n[workload]\nturns_per_sec = 4\nduration = \"2s\"\n[[case]]\nname = \"here\"\n\
             host = \"sandbox-agent\"\nurl = \"http://127.0.0.1:{port}\"\nrunner = \"window-exec\"\nwriter = \"watch\"\n\
             [[case]]\nname = \"there\"\nhost = \"sandbox-agent\"\nurl = \"http://127.0.0.1:{port}\"\n\
             in_sandbox = true\nrunner = \"window-exec\"\nwriter = \"watch\"\n"
        ),
    )
    .unwrap();
    let out_dir = dir.path().join("out");
    let summary = run_passing(&file, &out_dir);
    let mut reported = std::collections::BTreeMap::<String, u64>::new();
    let runner_route = |kind: &str| match kind {
        "list" | "exec" => "POST /v1/processes/run",
        "read" => "GET /v1/fs/file",
        "write" => "PUT /v1/fs/file",
        "rename" => "POST /v1/fs/move",
        "delete" => "DELETE /v1/fs/entry",
        "stat" => "GET /v1/fs/stat",
        other => panic!("a runner request of kind {other}"),
    };
    for r in &summary.results {
        assert!(r.pass, "{}: {:?} {:?}", r.case, r.gates, r.notices);
        assert!(!r.requests.bench_requests.is_empty(), "{}: relay-bench's own requests counted", r.case);
        for (kind, n) in &r.requests.whole_case_by_kind.0 {
            *reported.entry(runner_route(kind).to_owned()).or_default() += n;
        }
        for (name, n) in &r.requests.bench_requests.0 {
            let request = relay_bench::BenchRequest::ALL.iter().find(|b| b.name() == name).unwrap();
            *reported.entry(request.route().to_owned()).or_default() += n;
        }
    }
    reported.retain(|_, n| *n > 0);
    // Give the last answers' connections a moment to be read to their end by the proxy.
    std::thread::sleep(Duration::from_millis(200));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, reported, "the daemon's count, route by route, against the report's");
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("relay-bench's own") && md.contains("health 1"), "summary.md lists both counts");
}
