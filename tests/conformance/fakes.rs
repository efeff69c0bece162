//! The fakes production's tests use, as ours: a source whose waits resolve only when the
//! test says so, a host that records every operation and can fail or hold some, and a
//! sandbox whose every exec waits for the test to settle it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relay_bench::{
    publish_now, ActivitySource, BoxFut, EventInbox, EventSink, ExecOutput, HandlerModel, Host, Kind, Lines, LocalHost,
    LoopOptions, Msg, RelayDir, Reporter, RequestCounts, Runner, Say, SimDir, Started, Wake, WindowExec,
};
use tokio::sync::{oneshot, Semaphore};

pub const DIR: &str = "/relay";

/// Lets the spawned tasks run (virtual time does not move).
pub async fn tick() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

/// Waits (in virtual time, 5 ms steps) until `cond` holds, at most `bound`.
pub async fn until(what: &str, bound: Duration, mut cond: impl FnMut() -> bool) {
    let t0 = tokio::time::Instant::now();
    while !cond() {
        assert!(t0.elapsed() < bound, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Production's `putRequest`: a request published atomically.
pub fn put_request(dir: &SimDir, id: &str) {
    let body = format!(r#"{{"toolName":"nope","toolCallId":"{id}","args":{{}}}}"#);
    publish_now(dir, &format!("{id}.req.json"), body.as_bytes()).unwrap();
}

/// Production's `fakeSource(suspends)`: waits resolve only through `wake`, `expire` or
/// `close`; each wait's timeout is recorded; misses are counted; `demote` makes it
/// unhealthy.
#[derive(Default)]
pub struct FakeSource {
    pub suspends: bool,
    healthy: AtomicBool,
    closed: AtomicBool,
    pub timeouts: Mutex<Vec<Duration>>,
    waiter: Mutex<Option<oneshot::Sender<Wake>>>,
    pub misses: AtomicU32,
}

impl FakeSource {
    pub fn new(suspends: bool) -> Arc<FakeSource> {
        Arc::new(FakeSource { suspends, healthy: AtomicBool::new(true), ..FakeSource::default() })
    }

    fn resolve(&self, w: Wake) {
        if let Some(tx) = self.waiter.lock().unwrap().take() {
            let _ = tx.send(w);
        }
    }

    pub fn wake(&self) {
        self.resolve(Wake::Activity);
    }

    pub fn expire(&self) {
        self.resolve(Wake::Timeout);
    }

    pub fn demote(&self) {
        self.healthy.store(false, Ordering::SeqCst);
    }

    pub fn waits(&self) -> usize {
        self.timeouts.lock().unwrap().len()
    }
}

impl ActivitySource for FakeSource {
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake> {
        self.timeouts.lock().unwrap().push(timeout);
        let (tx, rx) = oneshot::channel();
        if self.closed.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Wake::Closed));
        }
        *self.waiter.lock().unwrap() = Some(tx);
        Box::pin(async move { rx.await.unwrap_or(Wake::Closed) })
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.resolve(Wake::Closed);
    }

    fn suspends_polling(&self) -> bool {
        self.suspends
    }

    fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::SeqCst) && !self.closed.load(Ordering::SeqCst)
    }

    fn note_miss(&self) -> bool {
        self.misses.fetch_add(1, Ordering::SeqCst);
        true
    }
}

/// Production's `fakeHost`: the relay dir in memory, every operation recorded as
/// (op, name); lists can fail, removes can fail or be held, stats can fail.
pub struct FakeHost {
    inner: LocalHost,
    pub ops: Mutex<Vec<(&'static str, String)>>,
    /// The first `n` lists fail.
    pub list_fails: AtomicU32,
    /// The first `n` removes fail.
    pub remove_fails: AtomicU32,
    /// The first `n` reads fail.
    pub read_fails: AtomicU32,
    /// While set, every remove waits for a permit.
    pub remove_gate: Option<Arc<Semaphore>>,
    pub stat_fails: bool,
    /// Every publish (the answer's write and rename) takes this long first.
    pub publish_delay: Duration,
    pub lists: AtomicUsize,
}

impl FakeHost {
    pub fn new(dir: &SimDir) -> FakeHost {
        FakeHost {
            inner: LocalHost::over(Arc::new(dir.clone()), Arc::default()),
            ops: Mutex::default(),
            list_fails: AtomicU32::new(0),
            remove_fails: AtomicU32::new(0),
            read_fails: AtomicU32::new(0),
            remove_gate: None,
            stat_fails: false,
            publish_delay: Duration::ZERO,
            lists: AtomicUsize::new(0),
        }
    }

    fn log(&self, op: &'static str, name: &str) {
        self.ops.lock().unwrap().push((op, name.to_owned()));
    }

    /// The operations on one name, in order.
    pub fn ops_on(&self, name: &str) -> Vec<&'static str> {
        self.ops.lock().unwrap().iter().filter(|(_, n)| n == name).map(|(o, _)| *o).collect()
    }

    pub fn count(&self, op: &str, name: &str) -> usize {
        self.ops.lock().unwrap().iter().filter(|(o, n)| *o == op && n == name).count()
    }
}

fn take_one(n: &AtomicU32) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| v.checked_sub(1)).is_ok()
}

impl Host for FakeHost {
    fn list(&self) -> BoxFut<'_, io::Result<Vec<String>>> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.log("list", "");
        if take_one(&self.list_fails) {
            return Box::pin(std::future::ready(Err(io::Error::other("relay dir not created yet"))));
        }
        self.inner.list()
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>> {
        self.log("read", name);
        if take_one(&self.read_fails) {
            return Box::pin(std::future::ready(Err(io::Error::other("EACCES: permission denied"))));
        }
        self.inner.read(name)
    }

    fn stat<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<u64>> {
        self.log("stat", name);
        if self.stat_fails {
            return Box::pin(std::future::ready(Err(io::Error::other("stat exploded"))));
        }
        self.inner.stat(name)
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        Box::pin(async move {
            tokio::time::sleep(self.publish_delay).await;
            self.log("write", name);
            self.log("rename", name);
            self.inner.publish(name, bytes).await
        })
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>> {
        Box::pin(async move {
            self.log("remove", name);
            if let Some(g) = &self.remove_gate {
                let _permit = g.acquire().await.unwrap();
            }
            if take_one(&self.remove_fails) {
                return Err(io::Error::other("EBUSY"));
            }
            self.inner.delete(name).await
        })
    }

    fn exec<'a>(&'a self, argv: &'a [OsString], timeout: Duration) -> BoxFut<'a, io::Result<ExecOutput>> {
        self.inner.exec(argv, timeout)
    }

    fn exec_follow<'a>(&'a self, argv: &'a [OsString]) -> BoxFut<'a, io::Result<Lines>> {
        self.inner.exec_follow(argv)
    }

    fn counts(&self) -> RequestCounts {
        self.inner.counts()
    }

    fn label(&self) -> String {
        "fake".into()
    }
}

/// A runner over `host` with `source`, production's loop options unless changed, and a
/// handler that answers at once. Returns it started, with the event receiver.
pub fn start_runner(
    host: Arc<FakeHost>,
    source: Option<Arc<dyn ActivitySource>>,
    opts: LoopOptions,
    handler: HandlerModel,
) -> (Started, EventSink, EventInbox) {
    let (sink, rx) = EventSink::channel();
    let runner = Runner {
        sandbox: 0,
        host,
        source,
        inbox: None,
        opts,
        handler: Arc::new(handler),
        events: sink.clone(),
        reporter: Reporter::new(sink.clone(), 0),
        on_park: None,
    };
    (runner.start(), sink, rx)
}

/// A handler that answers at once.
pub fn instant() -> HandlerModel {
    HandlerModel { duration: Duration::ZERO, duration_max: Duration::ZERO, ..HandlerModel::default() }
}

/// The notices said so far, typed.
pub fn notices(rx: &mut EventInbox) -> Vec<Say> {
    let mut out = Vec::new();
    rx.take(|m| {
        if let Msg::Notice(n) = m {
            out.push(n.what);
        }
    });
    out
}

/// Production's `fakeSandbox()`: every exec waits until the test settles it; what each
/// exec was asked (window and timeout) is kept, and how many ran at once.
#[derive(Default)]
pub struct FakeSandbox {
    calls: Mutex<Vec<(Duration, Duration)>>,
    pending: Mutex<VecDeque<(usize, oneshot::Sender<io::Result<ExecOutput>>)>>,
    running: Arc<AtomicUsize>,
    pub max_running: AtomicUsize,
}

impl FakeSandbox {
    pub fn new() -> Arc<FakeSandbox> {
        Arc::new(FakeSandbox::default())
    }

    pub fn calls(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    /// (window, daemon timeout) of exec `i`.
    pub fn request(&self, i: usize) -> (Duration, Duration) {
        self.calls.lock().unwrap()[i]
    }

    /// Settles exec `i` (if it is still pending) with `out`.
    pub fn settle(&self, i: usize, out: io::Result<ExecOutput>) {
        let mut p = self.pending.lock().unwrap();
        if let Some(pos) = p.iter().position(|(k, _)| *k == i) {
            let (_, tx) = p.remove(pos).unwrap();
            let _ = tx.send(out);
        }
    }

    pub fn exit(&self, i: usize, code: Option<i32>) {
        self.settle(i, Ok(ExecOutput { code, ..ExecOutput::default() }));
    }
}

impl WindowExec for FakeSandbox {
    fn run(&self, window: Duration, timeout: Duration) -> BoxFut<'static, io::Result<ExecOutput>> {
        let (tx, rx) = oneshot::channel();
        let i = {
            let mut c = self.calls.lock().unwrap();
            c.push((window, timeout));
            c.len() - 1
        };
        self.pending.lock().unwrap().push_back((i, tx));
        let n = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_running.fetch_max(n, Ordering::SeqCst);
        let running = self.running.clone();
        Box::pin(async move {
            let out = rx.await.unwrap_or_else(|_| Err(io::Error::other("dropped")));
            running.fetch_sub(1, Ordering::SeqCst);
            out
        })
    }
}

/// A sandbox whose exec ends (exit 0) as soon as any request is in `dir`, like production's
/// "delete-on-pickup" test sandbox; the number of execs is counted.
pub struct EndsOnRequest {
    pub dir: SimDir,
    pub execs: AtomicUsize,
}

impl WindowExec for EndsOnRequest {
    fn run(&self, _: Duration, _: Duration) -> BoxFut<'static, io::Result<ExecOutput>> {
        self.execs.fetch_add(1, Ordering::SeqCst);
        let dir = self.dir.clone();
        Box::pin(async move {
            loop {
                if dir.list()?.iter().any(|n| n.ends_with(".req.json")) {
                    return Ok(ExecOutput::exited(0, "", ""));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
    }
}

/// Discovery and data requests by kind.
pub fn by_kind(c: &RequestCounts, k: Kind) -> u64 {
    c.discovery[k as usize] + c.data[k as usize]
}
