//! The writer: the in-sandbox side that hands a call to the runner and waits for the answer
//! (hop 1). It touches the relay dir directly, as the real writer inside the sandbox does.
//!
//! One call: claim the file id (collisions refused), arm the response wait, publish the
//! request atomically, then check-and-wait until the answer appears or the deadline passes
//! (tool timeout + 10 s, or 60 s without one), read it, and delete both files. Arming before
//! the first check closes the created-before-armed race.

use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::dir::RelayDir;
use crate::events::{CallId, CallOutcome, EventKind, EventSink, FailKind, WriterSide};
use crate::host::Busy;
use crate::protocol::{req_name, res_name, IdRegistry, Request, Response};
use crate::source::{Rearmable, Seen, Signal, SourceHealth, Wake, WatchFilter};

/// The writer deadline of SPEC §2.
pub fn writer_deadline(tool_timeout: Option<Duration>) -> Duration {
    match tool_timeout {
        Some(t) => t + Duration::from_secs(10),
        None => Duration::from_secs(60),
    }
}

/// How the writer learns that its answer is there.
pub trait ResponseWaiter: Send + Sync {
    /// Registers interest in `res_name`; must be called before the first check.
    fn arm(&self, res_name: &str) -> Armed;
    /// The longest wait between two checks (the poll interval or safety timer).
    fn interval(&self) -> Duration;
    fn close(&self);
    fn health(&self) -> SourceHealth;
    /// A timed check found an answer no wake announced (a watch on a replaced directory):
    /// a watching waiter re-arms and returns true.
    fn missed(&self) -> bool {
        false
    }
}

#[derive(Default)]
struct SlotMap {
    waits: HashMap<String, Arc<Signal>>,
    closed: bool,
}

/// The armed waits of one writer, by response name.
#[derive(Default, Clone)]
struct Slots(Arc<Mutex<SlotMap>>);

impl Slots {
    fn arm(&self, res_name: &str) -> Armed {
        let signal = Arc::new(Signal::new());
        let mut g = self.0.lock().expect("slots poisoned");
        if g.closed {
            // Armed after close: resolves as Closed at once.
            signal.close();
        }
        g.waits.insert(res_name.to_owned(), signal.clone());
        Armed { signal, slots: self.clone(), name: res_name.to_owned() }
    }

    fn raise(&self, seen: Seen<'_>) {
        let slots = &self.0.lock().expect("slots poisoned").waits;
        match seen {
            Seen::Name(n) => {
                if let Some(sig) = slots.get(n) {
                    sig.raise();
                }
            }
            Seen::Rescan => slots.values().for_each(|sig| sig.raise()),
        }
    }

    fn close(&self) {
        let mut g = self.0.lock().expect("slots poisoned");
        g.closed = true;
        g.waits.values().for_each(|sig| sig.close());
    }
}

/// One call's armed wait; unregisters itself when dropped.
pub struct Armed {
    signal: Arc<Signal>,
    slots: Slots,
    name: String,
}

impl Armed {
    pub async fn wait(&self, timeout: Duration) -> Wake {
        self.signal.wait(timeout).await
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        self.slots.0.lock().expect("slots poisoned").waits.remove(&self.name);
    }
}

/// Poll-only writer: check every `interval`.
pub struct PollWaiter {
    interval: Duration,
    slots: Slots,
}

impl PollWaiter {
    pub fn new(interval: Duration) -> PollWaiter {
        PollWaiter { interval, slots: Slots::default() }
    }
}

impl ResponseWaiter for PollWaiter {
    fn arm(&self, res_name: &str) -> Armed {
        self.slots.arm(res_name)
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    fn close(&self) {
        self.slots.close();
    }
    fn health(&self) -> SourceHealth {
        SourceHealth::default()
    }
}

/// Watch-assisted writer: one directory watch per relay dir, waking exactly the call whose
/// response name appeared (every call on a rescan); `interval` stays as the safety timer.
/// A timed check that finds an unannounced answer re-arms the watch (the directory may
/// have been replaced under it).
pub struct WatchWaiter {
    slots: Slots,
    watch: Rearmable,
    interval: Duration,
}

impl WatchWaiter {
    pub fn new(dir: Arc<dyn RelayDir>, safety_interval: Duration) -> WatchWaiter {
        let slots = Slots::default();
        let s = slots.clone();
        let watch = Rearmable::new(dir, WatchFilter::Responses, move |seen| s.raise(seen));
        WatchWaiter { slots, watch, interval: safety_interval }
    }
}

impl ResponseWaiter for WatchWaiter {
    fn arm(&self, res_name: &str) -> Armed {
        self.slots.arm(res_name)
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    fn close(&self) {
        self.watch.disarm();
        self.slots.close();
    }
    fn health(&self) -> SourceHealth {
        self.watch.errors().health()
    }
    fn missed(&self) -> bool {
        self.watch.errors().record("a timed check found an answer the watch did not signal; re-armed".into());
        self.watch.arm();
        true
    }
}

/// One call to make.
#[derive(Debug, Clone)]
pub struct CallSpec {
    pub id: String,
    pub tool: String,
    /// Raw JSON args, `None` for `{}`.
    pub args: Option<String>,
    pub intended: Instant,
    pub warmup: bool,
    pub deadline: Duration,
}

/// How a call ended, from the writer's side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallEnd {
    Answered(Response),
    Failed(FailKind),
}

/// The writer of one relay dir.
pub struct Writer {
    pub sandbox: u32,
    pub dir: Arc<dyn RelayDir>,
    pub waiter: Box<dyn ResponseWaiter>,
    pub events: EventSink,
    ids: Mutex<IdRegistry>,
    busy: Arc<Busy>,
}

impl Writer {
    pub fn new(sandbox: u32, dir: Arc<dyn RelayDir>, waiter: Box<dyn ResponseWaiter>, events: EventSink) -> Writer {
        Writer { sandbox, dir, waiter, events, ids: Mutex::new(IdRegistry::default()), busy: Arc::default() }
    }

    /// Shares the relay dir's in-flight gauge with its host (busy/idle request rates).
    pub fn with_busy(mut self, busy: Arc<Busy>) -> Writer {
        self.busy = busy;
        self
    }

    pub async fn call(&self, spec: CallSpec) -> CallEnd {
        self.busy.begin();
        let end = self.call_inner(spec).await;
        self.busy.end();
        end
    }

    async fn call_inner(&self, spec: CallSpec) -> CallEnd {
        let id: CallId = Arc::from(spec.id.as_str());
        let mut times = WriterSide {
            intended: spec.intended,
            started: Instant::now(),
            warmup: spec.warmup,
            published: None,
            read: None,
            outcome: CallOutcome::Failed(FailKind::IdCollision),
        };
        let claimed = self.ids.lock().expect("id registry poisoned").claim(&spec.id);
        let end = match claimed {
            Ok(file_id) => {
                let end = self.exchange(&spec, &id, &file_id, &mut times).await;
                self.ids.lock().expect("id registry poisoned").release(&file_id);
                end
            }
            Err(e) => {
                self.events.notice(self.sandbox, e.to_string());
                CallEnd::Failed(FailKind::IdCollision)
            }
        };
        times.outcome = match &end {
            CallEnd::Answered(r) => CallOutcome::Answered(r.outcome()),
            CallEnd::Failed(why) => CallOutcome::Failed(*why),
        };
        let at = times.read.unwrap_or_else(Instant::now);
        self.events.emit_at(at, self.sandbox, &id, EventKind::Writer(times));
        end
    }

    async fn exchange(&self, spec: &CallSpec, id: &CallId, file_id: &str, times: &mut WriterSide) -> CallEnd {
        let (sb, ev) = (self.sandbox, &self.events);
        let (req, res) = (req_name(file_id), res_name(file_id));
        let body = match Request::new(&spec.tool, &spec.id, spec.args.as_deref()) {
            Ok(r) => r.encode(),
            Err(e) => {
                ev.notice(sb, format!("call {id:?}: {e}"));
                return CallEnd::Failed(FailKind::PublishError);
            }
        };
        let armed = self.waiter.arm(&res);
        let deadline = Instant::now() + spec.deadline;
        ev.emit(sb, id, EventKind::Requesting);
        if let Err(e) = self.dir.writer_publish(&req, &body).await {
            ev.notice(sb, format!("cannot publish request {id:?}: {e}"));
            // Announced but never visible: close the pairing as the runner cannot answer.
            return CallEnd::Failed(FailKind::PublishError);
        }
        times.published = Some(Instant::now());
        // How the last wait ended: an answer found after a timer wake was not announced.
        let mut last = None;
        loop {
            match self.dir.read(&res) {
                Ok(bytes) => {
                    times.read = Some(Instant::now());
                    if last == Some(Wake::Timeout) && self.waiter.missed() {
                        ev.notice(sb, format!("answer for {id:?} found by the safety check; response watch re-armed"));
                    }
                    let _ = self.dir.remove(&res);
                    let _ = self.dir.remove(&req);
                    return match Response::decode(&bytes) {
                        Ok(r) => CallEnd::Answered(r),
                        Err(e) => {
                            ev.notice(sb, format!("malformed answer for {id:?}: {e}; treated as an error"));
                            CallEnd::Answered(Response::Error(e.to_string()))
                        }
                    };
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => ev.notice(sb, format!("cannot read answer for {id:?}: {e}; retrying")),
            }
            let now = Instant::now();
            if now >= deadline {
                let _ = self.dir.remove(&req);
                return CallEnd::Failed(FailKind::Timeout);
            }
            let wait = self.waiter.interval().min(deadline - now);
            let w = armed.wait(wait).await;
            if w == Wake::Closed {
                return CallEnd::Failed(FailKind::Interrupted);
            }
            last = Some(w);
        }
    }

    pub fn close(&self) {
        self.waiter.close();
    }

    pub fn health(&self) -> SourceHealth {
        self.waiter.health()
    }

    /// Calls in flight (claimed file ids).
    pub fn in_flight(&self) -> usize {
        self.ids.lock().expect("id registry poisoned").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadline_rule() {
        assert_eq!(writer_deadline(None), Duration::from_secs(60));
        assert_eq!(writer_deadline(Some(Duration::from_secs(5))), Duration::from_secs(15));
    }

    #[tokio::test(start_paused = true)]
    async fn an_unanswered_call_times_out_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let (sink, mut rx) = EventSink::channel();
        let w = Writer::new(
            0,
            Arc::new(crate::dir::RealDir::new(dir.path())),
            Box::new(PollWaiter::new(Duration::from_millis(300))),
            sink,
        );
        let spec = CallSpec {
            id: "lonely".into(),
            tool: "t".into(),
            args: None,
            intended: Instant::now(),
            warmup: false,
            deadline: Duration::from_secs(2),
        };
        assert_eq!(w.call(spec).await, CallEnd::Failed(FailKind::Timeout));
        assert!(crate::fsio::relay_files(dir.path()).unwrap().is_empty(), "request removed at timeout");
        drop(w);
        let kinds: Vec<_> = rx.try_iter().collect();
        assert!(kinds.iter().any(|m| matches!(m, crate::events::Msg::Call(e)
            if matches!(&e.kind, EventKind::Writer(w) if w.outcome == CallOutcome::Failed(FailKind::Timeout) && w.read.is_none()))));
    }

    #[tokio::test]
    async fn colliding_ids_are_refused_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let (sink, _rx) = EventSink::channel();
        let w = Arc::new(Writer::new(
            0,
            Arc::new(crate::dir::RealDir::new(dir.path())),
            Box::new(PollWaiter::new(Duration::from_millis(20))),
            sink,
        ));
        let spec = |id: &str| CallSpec {
            id: id.into(),
            tool: "t".into(),
            args: None,
            intended: Instant::now(),
            warmup: false,
            deadline: Duration::from_millis(500),
        };
        let first = {
            let w = w.clone();
            let s = spec("a/b");
            tokio::spawn(async move { w.call(s).await })
        };
        while w.in_flight() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(w.call(spec("a:b")).await, CallEnd::Failed(FailKind::IdCollision));
        assert_eq!(first.await.unwrap(), CallEnd::Failed(FailKind::Timeout));
    }
}
