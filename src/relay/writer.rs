//! The writer: the in-sandbox side that hands a call to the runner and waits for the answer
//! (hop 1). It touches the relay dir directly, as the real writer inside the sandbox does.
//!
//! One call: claim the file id (collisions refused), arm the response wait, publish the
//! request atomically, then check-and-wait until the answer appears or the deadline passes
//! (tool timeout + 10 s, or 60 s without one), read it, and delete both files. Arming before
//! the first check closes the created-before-armed race.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::base::clock;
use crate::base::notice::Say;
use crate::base::protocol::{req_name, res_name, IdRegistry, Outcome, Request, Response};
use crate::base::signal::{Signal, Wake};
use crate::events::{CallId, CallOutcome, EventKind, EventSink, FailKind, WriterSide};
use crate::relay::source::Reporter;
use crate::sandbox::dir::{EventFilter, RelayDir, Seen};
use crate::sandbox::host::Busy;

/// The writer deadline of SPEC §2.
pub(crate) fn writer_deadline(tool_timeout: Option<Duration>) -> Duration {
    tool_timeout.map_or(Duration::from_secs(60), |t| t + Duration::from_secs(10))
}

/// How the writer learns that its answer is there.
pub trait ResponseWaiter: Send + Sync {
    /// Registers interest in `res_name`; must be called before the first check.
    fn arm(&self, res_name: &str) -> Armed;
    /// The longest wait between two checks (the poll interval or safety timer).
    fn interval(&self) -> Duration;
    fn close(&self);
    /// Tells the call waiting for `res_name` that its turn ended with no answer (a pause).
    fn park(&self, res_name: &str);
    /// A timed check found an answer no wake announced (a watch on a replaced directory).
    /// A watching waiter re-arms and says whether that worked; a polling waiter, whose every
    /// answer is found by a timed check, returns `None`: nothing was missed.
    fn missed(&self) -> Option<bool> {
        None
    }
}

#[derive(Default)]
struct SlotMap {
    /// In name order: a change that wakes every call wakes them in one order, run after run
    /// (the event log's order of the same instant's events follows it).
    waits: BTreeMap<String, Arc<Wait>>,
    closed: bool,
}

/// One armed wait: what wakes it, and whether the runner parked its call (read by the
/// waiting call at every check, so it is a flag of its own, not a lookup under the lock).
#[derive(Default)]
struct Wait {
    signal: Signal,
    parked: AtomicBool,
}

/// The armed waits of one writer, by response name: what a [`ResponseWaiter`] arms, wakes,
/// parks and closes (the waiters themselves are the writer strategies', in
/// [`crate::strategy`]).
#[derive(Default, Clone)]
pub(crate) struct Slots(Arc<Mutex<SlotMap>>);

impl Slots {
    pub(crate) fn arm(&self, res_name: &str) -> Armed {
        let wait = Arc::new(Wait::default());
        let mut g = self.0.lock().expect("slots poisoned");
        if g.closed {
            // Armed after close: resolves as Closed at once.
            wait.signal.close();
        }
        g.waits.insert(res_name.to_owned(), wait.clone());
        Armed { wait, slots: self.clone(), name: res_name.to_owned() }
    }

    /// Wakes the calls `seen` concerns: with `wake_on = Responses` the call whose answer
    /// appeared (every call on a rescan or a failure), otherwise every waiting call.
    pub(crate) fn raise(&self, seen: Seen<'_>, wake_on: EventFilter) {
        if !wake_on.wants(seen) {
            return;
        }
        let slots = &self.0.lock().expect("slots poisoned").waits;
        match (wake_on, seen) {
            (EventFilter::Responses, Seen::Name(n, _)) => slots.get(n).into_iter().for_each(|w| w.signal.raise()),
            _ => slots.values().for_each(|w| w.signal.raise()),
        }
    }

    pub(crate) fn park(&self, res_name: &str) {
        let g = self.0.lock().expect("slots poisoned");
        if let Some(w) = g.waits.get(res_name) {
            w.parked.store(true, Ordering::Release);
            w.signal.raise();
        }
    }

    pub(crate) fn close(&self) {
        let mut g = self.0.lock().expect("slots poisoned");
        g.closed = true;
        g.waits.values().for_each(|w| w.signal.close());
    }
}

/// One call's armed wait; unregisters itself when dropped.
pub struct Armed {
    wait: Arc<Wait>,
    slots: Slots,
    name: String,
}

impl Armed {
    pub async fn wait(&self, timeout: Duration) -> Wake {
        self.wait.signal.wait(timeout).await
    }

    /// The runner said this call's turn ended with no answer.
    pub fn parked(&self) -> bool {
        self.wait.parked.load(Ordering::Acquire)
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        let mut g = self.slots.0.lock().expect("slots poisoned");
        g.waits.remove(&self.name);
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
    /// The writer read this answer.
    Answered(Response),
    /// The runner parked the call with no answer: the turn ended (a pause).
    Parked,
    /// The call ended without an answer, for this reason.
    Failed(FailKind),
}

/// When the writer deletes its request file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleanup {
    /// After an answer (or a pause) only; a timed-out request stays for the next turn's
    /// sweep (production).
    OnAnswer,
    /// At a timeout too.
    Always,
}

/// The writer of one relay dir.
pub struct Writer {
    pub sandbox: u32,
    pub dir: Arc<dyn RelayDir>,
    pub waiter: Box<dyn ResponseWaiter>,
    pub events: EventSink,
    pub cleanup: Cleanup,
    reporter: Reporter,
    ids: Mutex<IdRegistry>,
    busy: Arc<Busy>,
    /// Answers of calls an interrupt cut off: the runner may still publish them.
    cut_off: Mutex<Vec<String>>,
}

impl Writer {
    pub fn new(sandbox: u32, dir: Arc<dyn RelayDir>, waiter: Box<dyn ResponseWaiter>, events: EventSink) -> Writer {
        Writer {
            sandbox,
            dir,
            waiter,
            reporter: Reporter::new(events.clone(), sandbox),
            events,
            cleanup: Cleanup::OnAnswer,
            ids: Mutex::new(IdRegistry::default()),
            busy: Arc::default(),
            cut_off: Mutex::default(),
        }
    }

    /// Says what happens through `reporter` (shared with the waiter that reports too).
    pub(crate) fn with_reporter(mut self, reporter: Reporter) -> Writer {
        self.reporter = reporter;
        self
    }

    pub(crate) fn with_cleanup(mut self, cleanup: Cleanup) -> Writer {
        self.cleanup = cleanup;
        self
    }

    /// The runner parked the call of `file_id` with no answer.
    pub(crate) fn park(&self, file_id: &str) {
        self.waiter.park(&res_name(file_id));
    }

    /// Why this writer's response watch degraded, if it did.
    pub fn degraded(&self) -> Option<String> {
        self.reporter.degraded()
    }

    /// Shares the relay dir's in-flight gauge with its host (busy/idle request rates).
    pub(crate) fn with_busy(mut self, busy: Arc<Busy>) -> Writer {
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
            started: clock::now(),
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
                self.reporter.say(Say::IdCollision(e.to_string()));
                CallEnd::Failed(FailKind::IdCollision)
            }
        };
        times.outcome = match &end {
            CallEnd::Answered(r) => CallOutcome::Answered(r.outcome()),
            CallEnd::Parked => CallOutcome::Answered(Outcome::Paused),
            CallEnd::Failed(why) => CallOutcome::Failed(*why),
        };
        let at = times.read.unwrap_or_else(Instant::now);
        self.events.emit_at(at, self.sandbox, &id, EventKind::Writer(times));
        end
    }

    /// The request could not be published: announced but never visible, its pairing closed
    /// as the runner cannot answer it (the machine's failure, or the relay's).
    fn unpublished(&self, id: &CallId, e: io::Error) -> CallEnd {
        if let Some(why) = crate::base::fsio::environment_failure(&e) {
            let what = format!("the request of {id:?} was not published");
            self.reporter.say(Say::Environment { what, why, error: e.to_string(), then: String::new() });
            return CallEnd::Failed(FailKind::Environment);
        }
        self.reporter.say(Say::PublishFailed { call: id.to_string(), error: e.to_string() });
        CallEnd::Failed(FailKind::PublishError)
    }

    /// The answer read: both files removed, its bytes decoded (a malformed answer is an
    /// error answer, said). `last`: how the wait before the read ended; an answer a timer
    /// wake found was not announced, and is said so.
    fn answered(&self, id: &CallId, (req, res): (&str, &str), bytes: &[u8], last: Option<Wake>) -> CallEnd {
        if last == Some(Wake::Timeout) {
            if let Some(rearmed) = self.waiter.missed() {
                self.reporter.say(Say::AnswerByTimer { call: id.to_string(), rearmed });
            }
        }
        let _ = self.dir.remove(req);
        let _ = self.dir.remove(res);
        match Response::decode(bytes) {
            Ok(r) => CallEnd::Answered(r),
            Err(e) => {
                self.reporter.say(Say::MalformedAnswer { call: id.to_string(), error: e.to_string() });
                CallEnd::Answered(Response::Error(e.to_string()))
            }
        }
    }

    /// No answer by the deadline: a lost call, unless the relay dir itself is gone (deleted
    /// under the run, its answer never publishable): then the machine's failure, said as such.
    fn timed_out(&self, id: &CallId) -> CallEnd {
        let gone = self.dir.list().err().and_then(|e| crate::base::fsio::environment_failure(&e).map(|why| (why, e)));
        let Some((why, e)) = gone else { return CallEnd::Failed(FailKind::Timeout) };
        let what = format!("the answer to {id:?} could not be published");
        self.reporter.say(Say::Environment { what, why, error: e.to_string(), then: String::new() });
        CallEnd::Failed(FailKind::Environment)
    }

    async fn exchange(&self, spec: &CallSpec, id: &CallId, file_id: &str, times: &mut WriterSide) -> CallEnd {
        let (sb, ev, say) = (self.sandbox, &self.events, &self.reporter);
        let (req, res) = (req_name(file_id), res_name(file_id));
        let body = match Request::new(&spec.tool, &spec.id, spec.args.as_deref()) {
            Ok(r) => r.encode(),
            Err(e) => {
                say.say(Say::PublishFailed { call: id.to_string(), error: e.to_string() });
                return CallEnd::Failed(FailKind::PublishError);
            }
        };
        let armed = self.waiter.arm(&res);
        let deadline = clock::now() + spec.deadline;
        ev.emit(sb, id, EventKind::Requesting);
        if let Err(e) = self.dir.publish(&req, &body).await {
            return self.unpublished(id, e);
        }
        times.published = Some(clock::now());
        // How the last wait ended: an answer found after a timer wake was not announced.
        let mut last = None;
        loop {
            match self.dir.read_present(&res) {
                Ok(Some(bytes)) => {
                    times.read = Some(clock::now());
                    return self.answered(id, (&req, &res), &bytes, last);
                }
                Ok(None) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => say.say(Say::AnswerReadFailed { call: id.to_string(), error: e.to_string() }),
            }
            if armed.parked() {
                // The turn ended with no answer: the request was already deleted on pickup.
                times.read = Some(clock::now());
                let _ = self.dir.remove(&req);
                return CallEnd::Parked;
            }
            let now = clock::now();
            if now >= deadline {
                if self.cleanup == Cleanup::Always {
                    let _ = self.dir.remove(&req);
                }
                return self.timed_out(id);
            }
            let wait = self.waiter.interval().min(deadline - now);
            let w = armed.wait(wait).await;
            if w == Wake::Timeout {
                // A timer fires after its deadline, never on it: what was due by then (an
                // answer published in this instant) is there when the check looks. The
                // virtual clock moves in whole milliseconds, so an answer due a fraction of
                // one before the check wakes in the check's instant; without this the check
                // runs first and the call waits a whole interval more.
                tokio::task::yield_now().await;
            }
            if w == Wake::Closed {
                // Interrupted: the harness leaves nothing behind (the answer a runner may still
                // publish is removed once the runners have stopped: [`Writer::tidy`]).
                let _ = self.dir.remove(&req);
                self.cut_off.lock().expect("cut-off list poisoned").push(res);
                return CallEnd::Failed(FailKind::Interrupted);
            }
            last = Some(w);
        }
    }

    pub fn close(&self) {
        self.waiter.close();
    }

    /// Once the runners have stopped: removes the answers they published for calls an
    /// interrupt cut off (nobody reads them); returns how many there were.
    pub(crate) fn tidy(&self) -> usize {
        let names = std::mem::take(&mut *self.cut_off.lock().expect("cut-off list poisoned"));
        names.iter().filter(|n| self.dir.read(n).is_ok() && self.dir.remove(n).is_ok()).count()
    }

    /// Calls in flight (claimed file ids).
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.ids.lock().expect("id registry poisoned").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiter woken by its timer alone (the poll writer's, which lives with the writer
    /// strategies above this layer).
    struct Timed(Duration, Slots);

    impl Timed {
        fn new(interval: Duration) -> Timed {
            Timed(interval, Slots::default())
        }
    }

    impl ResponseWaiter for Timed {
        fn arm(&self, res_name: &str) -> Armed {
            self.1.arm(res_name)
        }
        fn interval(&self) -> Duration {
            self.0
        }
        fn close(&self) {
            self.1.close();
        }
        fn park(&self, res_name: &str) {
            self.1.park(res_name);
        }
    }

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
            Arc::new(crate::sandbox::dir::RealDir::new(dir.path())),
            Box::new(Timed::new(Duration::from_millis(300))),
            sink,
        )
        .with_cleanup(Cleanup::Always);
        let spec = CallSpec {
            id: "lonely".into(),
            tool: "t".into(),
            args: None,
            intended: clock::now(),
            warmup: false,
            deadline: Duration::from_secs(2),
        };
        assert_eq!(w.call(spec).await, CallEnd::Failed(FailKind::Timeout));
        assert!(
            crate::sandbox::dir::RealDir::new(dir.path()).relay_files().unwrap().is_empty(),
            "request removed at timeout"
        );
        // Production's writer (the default) leaves it for the next turn's sweep.
        let (sink, _rx2) = EventSink::channel();
        let w2 = Writer::new(
            0,
            Arc::new(crate::sandbox::dir::RealDir::new(dir.path())),
            Box::new(Timed::new(Duration::from_millis(300))),
            sink,
        );
        let spec = CallSpec {
            id: "left".into(),
            tool: "t".into(),
            args: None,
            intended: clock::now(),
            warmup: false,
            deadline: Duration::from_secs(2),
        };
        assert_eq!(w2.call(spec).await, CallEnd::Failed(FailKind::Timeout));
        assert_eq!(
            crate::sandbox::dir::RealDir::new(dir.path()).relay_files().unwrap(),
            vec!["left.req.json".to_owned()]
        );
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
            Arc::new(crate::sandbox::dir::RealDir::new(dir.path())),
            Box::new(Timed::new(Duration::from_millis(20))),
            sink,
        ));
        let spec = |id: &str| CallSpec {
            id: id.into(),
            tool: "t".into(),
            args: None,
            intended: clock::now(),
            warmup: false,
            deadline: Duration::from_millis(500),
        };
        let first = {
            let w = w.clone();
            let s = spec("a/b");
            tokio::spawn(async move { w.call(s).await })
        };
        while w.in_flight() == 0 {
            clock::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(w.call(spec("a:b")).await, CallEnd::Failed(FailKind::IdCollision));
        assert_eq!(first.await.unwrap(), CallEnd::Failed(FailKind::Timeout));
    }

    fn one_call(id: &str) -> CallSpec {
        CallSpec {
            id: id.into(),
            tool: "t".into(),
            args: None,
            intended: clock::now(),
            warmup: false,
            deadline: Duration::from_secs(5),
        }
    }

    /// Answers `id` after `after`, as a runner would: the answer published atomically.
    fn answer_later(dir: &crate::sandbox::dir::SimDir, id: &str, after: Duration) {
        let (dir, name) = (dir.clone(), res_name(id));
        tokio::spawn(async move {
            clock::sleep(after).await;
            crate::sandbox::dir::publish_now(&dir, &name, br#"{"ok":true,"text":"x"}"#).unwrap();
        });
    }

    /// On the virtual clock (whole milliseconds), an answer due at or just before a timed
    /// check is read by that check, as on a real clock; one due just after waits for the next.
    #[tokio::test(start_paused = true)]
    async fn a_timed_check_reads_the_answer_published_in_its_instant() {
        for (due_us, read_ms) in [(299_600, 300), (300_000, 300), (300_400, 600)] {
            let dir = crate::sandbox::dir::SimDir::new("/sb/relay");
            let (sink, _rx) = EventSink::channel();
            let w = Writer::new(0, Arc::new(dir.clone()), Box::new(Timed::new(Duration::from_millis(300))), sink);
            let t0 = clock::now();
            answer_later(&dir, "p1", Duration::from_micros(due_us));
            assert!(matches!(w.call(one_call("p1")).await, CallEnd::Answered(_)));
            assert_eq!(t0.elapsed(), Duration::from_millis(read_ms), "an answer due at {due_us} µs");
        }
    }
}
