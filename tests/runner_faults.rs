//! The runner and writer against bad input and a hostile environment: malformed and
//! truncated request files, hostile call ids, a relay dir that vanishes, failing deletes.
//! Each is reported and survived; the pairing check proves nothing was lost or doubled.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relay_bench::{
    runner_from_toml, writer_from_toml, BoxFut, CallEnd, EventInbox, EventSink, ExecOutput, HandlerModel, Host, Lines,
    LocalHost, RealDir, Recorder, Recording, Relay, RelaySpec, Request, RequestCounts, Response, RunnerReport,
};
use std::ffi::OsString;

const MS: fn(u64) -> Duration = Duration::from_millis;

struct Rig {
    relay: Relay,
    sink: EventSink,
    rx: EventInbox,
}

impl Rig {
    /// `runner` and `writer` in their scenario form (`"watch"`, `{ strategy = ... }`).
    /// Starts the pair and waits until the runner is ready (its stale sweep done: files
    /// put in the dir before that are swept, as production's are).
    async fn start(dir: &Path, host: Arc<dyn Host>, runner: &str, writer: &str) -> Rig {
        let (runner, writer) = (runner_from_toml(runner).unwrap(), writer_from_toml(writer).unwrap());
        let (sink, rx) = EventSink::channel();
        let handler = HandlerModel { duration: MS(1), duration_max: MS(1), ..HandlerModel::default() };
        let spec = RelaySpec {
            sandbox: 0,
            dir: Arc::new(RealDir::new(dir)),
            host,
            busy: Arc::default(),
            runner: &runner,
            writer: Some(&writer),
            handler: Arc::new(handler),
            watch_program: Path::new(env!("CARGO_BIN_EXE_relay-bench")),
            seed: 1,
            stderr_to: None,
        };
        let relay = Relay::start(spec, &sink);
        assert!(relay.ready(Duration::from_secs(30)).await, "the runner started");
        Rig { relay, sink, rx }
    }

    async fn call(&self, id: &str) -> CallEnd {
        self.relay.call(id, Some(r#"{"q":1}"#), Duration::from_secs(30)).await
    }

    async fn stop(self) -> (RunnerReport, Recording) {
        let mut reports = self.relay.stop(tokio::time::Instant::now() + Duration::from_secs(30)).await.unwrap();
        let report = reports.pop().expect("one runner");
        drop(self.relay);
        drop(self.sink);
        (report, Recorder::run(self.rx))
    }
}

/// Polling at a fixed `ms` (no idle growth).
fn poll(ms: u64) -> String {
    format!(r#"{{ strategy = "poll", interval = "{ms}ms", max_interval = "{ms}ms" }}"#)
}

const POLL_20MS: &str = r#"{ strategy = "poll", interval = "20ms" }"#;

async fn wait_for_file(path: &Path) -> Vec<u8> {
    for _ in 0..2000 {
        if let Ok(b) = std::fs::read(path) {
            return b;
        }
        tokio::time::sleep(MS(10)).await;
    }
    panic!("{} never appeared", path.display());
}

/// Whether `path` is gone within the bound `wait_for_file` waits (the pickup's delete runs
/// beside the handler, so an answer may land before the request's delete does).
async fn gone_soon(path: &Path) -> bool {
    for _ in 0..2000 {
        if !path.exists() {
            return true;
        }
        tokio::time::sleep(MS(10)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_truncated_requests_are_answered_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rig = Rig::start(d, Arc::new(LocalHost::new(d)), "watch", POLL_20MS).await;
    let golden = Request::new("x", "call-1", Some(r#"{"b":2,"a":"1"}"#)).unwrap().encode();
    std::fs::write(d.join("garbage.req.json"), b"{not json at all").unwrap();
    std::fs::write(d.join("trunc.req.json"), &golden[..golden.len() / 2]).unwrap();
    std::fs::write(d.join("empty.req.json"), b"").unwrap();
    for name in ["garbage", "trunc", "empty"] {
        let bytes = wait_for_file(&d.join(format!("{name}.res.json"))).await;
        match Response::decode(&bytes).unwrap() {
            Response::Error(e) => assert!(e.contains("malformed"), "{name}: {e}"),
            other => panic!("{name}: {other:?}"),
        }
        assert!(gone_soon(&d.join(format!("{name}.req.json"))).await, "{name}: deleted on pickup");
    }
    // The runner keeps going: a good call right after is answered.
    assert!(matches!(rig.call("after-garbage").await, CallEnd::Answered(Response::Ok(_))));
    let (report, rec) = rig.stop().await;
    assert_eq!(report.malformed, 3);
    assert_eq!(rec.calls.completed, 1);
    assert_eq!(rec.pairing.total(), 0);
    let notices = rec.notices.join("\n");
    for name in ["garbage.req.json", "trunc.req.json", "empty.req.json"] {
        assert!(notices.contains(name), "notice for {name} in:\n{notices}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_call_ids_stay_inside_the_relay_dir() {
    let outer = tempfile::tempdir().unwrap();
    let d = outer.path().join("relay");
    std::fs::create_dir(&d).unwrap();
    let rig = Rig::start(&d, Arc::new(LocalHost::new(&d)), &poll(10), "watch").await;
    let long = "L".repeat(500);
    let ids = ["../../etc/passwd", long.as_str(), "héllo/wörld 🦀", "a\nb;$(rm -rf /) `x` 'q' \"d\"", ""];
    for id in ids {
        match rig.call(id).await {
            CallEnd::Answered(Response::Ok(_)) => {}
            other => panic!("{id:?}: {other:?}"),
        }
    }
    let (report, rec) = rig.stop().await;
    assert_eq!(report.requests, 5);
    assert_eq!(rec.calls.completed, 5);
    assert_eq!(rec.pairing.total(), 0, "{:?}", rec.pairing.breaches);
    // Nothing was written outside the relay dir, and nothing is left inside it.
    let outside: Vec<_> = std::fs::read_dir(outer.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(outside, vec![std::ffi::OsString::from("relay")]);
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vanished_relay_dir_is_reported_and_survived() {
    let outer = tempfile::tempdir().unwrap();
    let d = outer.path().join("relay");
    std::fs::create_dir(&d).unwrap();
    // Watch runner: after the dir is replaced its watch sits on the old inode, and the
    // poll delay racing it must carry discovery.
    let rig = Rig::start(
        &d,
        Arc::new(LocalHost::new(&d)),
        r#"{ strategy = "watch", interval = "20ms", max_interval = "20ms" }"#,
        POLL_20MS,
    )
    .await;
    assert!(matches!(rig.call("before").await, CallEnd::Answered(_)));
    std::fs::remove_dir_all(&d).unwrap();
    tokio::time::sleep(MS(200)).await;
    std::fs::create_dir(&d).unwrap();
    assert!(matches!(rig.call("after").await, CallEnd::Answered(_)));
    let (report, rec) = rig.stop().await;
    assert!(report.list_errors > 0);
    assert_eq!(rec.calls.completed, 2);
    assert_eq!(rec.pairing.total(), 0);
    let notices = rec.notices.join("\n");
    assert!(notices.contains("cannot list relay dir"), "{notices}");
    assert!(notices.contains("readable again"), "{notices}");
}

/// A local host whose first `fail` deletes fail.
struct FlakyDeletes {
    inner: LocalHost,
    fail: AtomicU32,
}

impl Host for FlakyDeletes {
    fn list(&self) -> BoxFut<'_, io::Result<Vec<String>>> {
        self.inner.list()
    }
    fn read<'a>(&'a self, n: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>> {
        self.inner.read(n)
    }
    fn stat<'a>(&'a self, n: &'a str) -> BoxFut<'a, io::Result<u64>> {
        self.inner.stat(n)
    }
    fn publish<'a>(&'a self, n: &'a str, b: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        self.inner.publish(n, b)
    }
    fn delete<'a>(&'a self, n: &'a str) -> BoxFut<'a, io::Result<()>> {
        if self.fail.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |f| f.checked_sub(1)).is_ok() {
            return Box::pin(std::future::ready(Err(io::Error::other("injected delete failure"))));
        }
        self.inner.delete(n)
    }
    fn exec<'a>(&'a self, argv: &'a [OsString], t: Duration) -> BoxFut<'a, io::Result<ExecOutput>> {
        self.inner.exec(argv, t)
    }
    fn exec_follow<'a>(&'a self, argv: &'a [OsString]) -> BoxFut<'a, io::Result<Lines>> {
        self.inner.exec_follow(argv)
    }
    fn counts(&self) -> RequestCounts {
        self.inner.counts()
    }
    fn label(&self) -> String {
        "flaky".into()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_delete_is_retried_and_the_call_answered_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let host = Arc::new(FlakyDeletes { inner: LocalHost::new(d), fail: AtomicU32::new(3) });
    // A slow writer leaves the request in place for many runner passes.
    let rig = Rig::start(d, host, &poll(5), r#"{ strategy = "poll", interval = "500ms" }"#).await;
    assert!(matches!(rig.call("sticky").await, CallEnd::Answered(Response::Ok(_))));
    let (report, rec) = rig.stop().await;
    assert_eq!(report.requests, 1, "the undeleted request was not picked up again");
    assert!(report.delete_retries >= 1);
    assert_eq!(rec.pairing.total(), 0, "{:?}", rec.pairing.breaches);
    assert!(rec.notices.iter().any(|n| n.contains("injected delete failure")));
    assert_eq!(std::fs::read_dir(d).unwrap().count(), 0);
}

/// Entries a hostile user can put under request names. Each is said once, skipped, left in
/// place and never answered; the runner neither blocks nor reads through a link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_entries_under_request_names_are_skipped_once_and_block_nothing() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let host = Arc::new(LocalHost::over(Arc::new(RealDir::new(d).with_max_bytes(4096)), Arc::default()));
    let rig = Rig::start(d, host, &poll(10), POLL_20MS).await;
    let status = std::process::Command::new("mkfifo").arg(d.join("fifo.req.json")).status().unwrap();
    assert!(status.success(), "mkfifo");
    std::os::unix::fs::symlink("/etc/passwd", d.join("passwd.req.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.req.json")).unwrap();
    std::fs::create_dir(d.join("dir.req.json")).unwrap();
    // Published whole (a temp name, then a rename): written in place, a busy machine's runner
    // can list it part-written, under the cap, and read it.
    std::fs::write(d.join("big.tmp"), vec![b' '; 4097]).unwrap();
    std::fs::rename(d.join("big.tmp"), d.join("big.req.json")).unwrap();
    std::fs::write(d.join(std::ffi::OsStr::from_bytes(b"\xff\xfe.req.json")), b"{}").unwrap();
    // Many lists later the runner is still answering.
    tokio::time::sleep(MS(300)).await;
    assert!(matches!(rig.call("after-hostile").await, CallEnd::Answered(Response::Ok(_))));
    let (report, rec) = rig.stop().await;
    assert_eq!(rec.calls.completed, 1);
    assert_eq!(rec.pairing.total(), 0);
    assert_eq!(report.requests, 1, "only the real call was read");
    let notices = rec.notices.join("\n");
    for (name, why) in [
        ("fifo.req.json", "a FIFO"),
        ("passwd.req.json", "symbolic link"),
        ("zero.req.json", "symbolic link"),
        ("dir.req.json", "a directory"),
        ("big.req.json", "4096-byte cap"),
        ("\u{fffd}\u{fffd}.req.json", "not UTF-8"),
    ] {
        let said: Vec<&str> =
            rec.notices.iter().filter(|n| n.contains(&format!("{name:?}"))).map(|s| s.as_str()).collect();
        assert_eq!(said.len(), 1, "{name}: said once, in:\n{notices}");
        assert!(said[0].contains(why) && said[0].contains("skipped"), "{name}: {}", said[0]);
        let id = name.trim_end_matches(".req.json");
        assert!(!d.join(format!("{id}.res.json")).exists(), "{name}: never answered");
    }
    assert!(d.join("fifo.req.json").exists() && d.join("big.req.json").exists(), "left in place");
    assert!(!notices.contains("missed") && !notices.contains("re-armed"), "no watch blamed:\n{notices}");
}
