//! Per-call events: what the writers and runners say happened, on one channel.
//!
//! A call costs four sends in all. Each side keeps its own timestamps in local variables
//! and sends its half of the timeline once ([`WriterSide`], [`RunnerSide`]); the recorder
//! joins the halves. Besides, each side sends an intent event just before its rename
//! (`Requesting` for the request, `Answering` for the answer): these are what the pairing
//! check reads, and since each is sent before the file it announces can be seen by the
//! other side, the channel carries them in causal order whichever thread sends first.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::Instant;

use crate::protocol::Outcome;

/// A call id, shared by every event of the call (one allocation per call, not per event).
pub type CallId = Arc<str>;

#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The writer is about to publish the request (pairing: a request).
    Requesting,
    /// The runner is about to publish its answer (pairing: a response).
    Answering,
    /// The runner parked the call with no answer: its turn ends (pairing: it closes the
    /// request as a response would).
    Parked,
    /// The writer's half of the timeline, sent once when the call ends.
    Writer(WriterSide),
    /// The runner's half of the timeline, sent once when its answer is out.
    Runner(RunnerSide),
}

/// How a call ended for the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    Answered(Outcome),
    Failed(FailKind),
}

#[derive(Debug, Clone, PartialEq)]
pub struct WriterSide {
    /// When the pacer meant the call to start (latency is timed from here).
    pub intended: Instant,
    /// When the writer actually started it.
    pub started: Instant,
    pub warmup: bool,
    /// When the request's rename completed.
    pub published: Option<Instant>,
    /// When the writer had read the answer.
    pub read: Option<Instant>,
    pub outcome: CallOutcome,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunnerSide {
    /// When the runner's wait returned before the scan that found the request.
    pub woke: Instant,
    /// When the request was read and deleted.
    pub picked: Instant,
    pub handler_start: Instant,
    pub handler_end: Instant,
    /// When the answer's rename completed (`None`: it could not be published).
    pub answered: Option<Instant>,
    /// Seen from outside (a black-box runner): `picked` is when the request vanished (or
    /// the answer appeared), and `woke` is not known.
    pub observed: bool,
    /// The handler's time is known (always inside the suite; for a black-box runner only
    /// when the scenario states it): relay overhead can be computed.
    pub handler_known: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailKind {
    /// No answer before the writer deadline.
    Timeout,
    /// The call id sanitizes to a file id already in flight in this dir.
    IdCollision,
    /// The request could not be published (the dir vanished, the disk is full, ...).
    PublishError,
    /// The run was interrupted before the answer arrived.
    Interrupted,
}

impl FailKind {
    pub fn name(self) -> &'static str {
        match self {
            FailKind::Timeout => "timeout",
            FailKind::IdCollision => "id_collision",
            FailKind::PublishError => "publish_error",
            FailKind::Interrupted => "interrupted",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: Instant,
    pub sandbox: u32,
    pub call: CallId,
    pub kind: EventKind,
}

/// Something worth reporting that is not a call's step: survived, but said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub at: Instant,
    pub sandbox: u32,
    pub what: crate::notice::Say,
}

#[derive(Debug)]
pub enum Msg {
    Call(Event),
    Notice(Notice),
}

#[derive(Debug, Default)]
struct Shared {
    buf: Mutex<Vec<Msg>>,
    senders: AtomicUsize,
}

/// The sending end; cheap to clone, one per task. Sending is a lock and a push: the
/// recorder swaps the whole buffer out every millisecond or so, so the measured tasks never
/// wait on it, and a send's position in the buffer respects happens-before across threads.
#[derive(Debug)]
pub struct EventSink {
    shared: Arc<Shared>,
}

impl Clone for EventSink {
    fn clone(&self) -> Self {
        self.shared.senders.fetch_add(1, Ordering::AcqRel);
        EventSink { shared: self.shared.clone() }
    }
}

impl Drop for EventSink {
    fn drop(&mut self) {
        self.shared.senders.fetch_sub(1, Ordering::AcqRel);
    }
}

impl EventSink {
    pub fn channel() -> (EventSink, EventInbox) {
        let shared = Arc::new(Shared { buf: Mutex::new(Vec::with_capacity(1024)), senders: AtomicUsize::new(1) });
        (EventSink { shared: shared.clone() }, EventInbox { shared, spare: Vec::with_capacity(1024) })
    }

    #[inline]
    fn send(&self, msg: Msg) {
        self.shared.buf.lock().expect("event buffer poisoned").push(msg);
    }

    #[inline]
    pub fn emit(&self, sandbox: u32, call: &CallId, kind: EventKind) {
        self.emit_at(Instant::now(), sandbox, call, kind);
    }

    #[inline]
    pub fn emit_at(&self, at: Instant, sandbox: u32, call: &CallId, kind: EventKind) {
        self.send(Msg::Call(Event { at, sandbox, call: call.clone(), kind }));
    }

    pub fn notice(&self, sandbox: u32, what: impl Into<crate::notice::Say>) {
        self.send(Msg::Notice(Notice { at: Instant::now(), sandbox, what: what.into() }));
    }
}

/// The receiving end, owned by the recorder.
#[derive(Debug)]
pub struct EventInbox {
    shared: Arc<Shared>,
    spare: Vec<Msg>,
}

/// How long the recorder sleeps when the buffer is empty.
const TICK: std::time::Duration = std::time::Duration::from_millis(1);

impl EventInbox {
    /// Hands every message sent so far to `f`, in order; returns how many there were.
    pub fn take(&mut self, mut f: impl FnMut(Msg)) -> usize {
        std::mem::swap(&mut *self.shared.buf.lock().expect("event buffer poisoned"), &mut self.spare);
        let n = self.spare.len();
        self.spare.drain(..).for_each(&mut f);
        n
    }

    /// Every message sent so far.
    pub fn try_iter(&mut self) -> std::vec::IntoIter<Msg> {
        let mut out = Vec::new();
        self.take(|m| out.push(m));
        out.into_iter()
    }

    /// True once every sender is gone.
    pub fn is_closed(&self) -> bool {
        self.shared.senders.load(Ordering::Acquire) == 0
    }

    /// Hands every message to `f` until every sender is gone (blocking this thread).
    pub fn drain(mut self, mut f: impl FnMut(Msg)) {
        loop {
            let closed = self.is_closed();
            let n = self.take(&mut f);
            if closed {
                return;
            }
            if n == 0 {
                std::thread::sleep(TICK);
            }
        }
    }
}
