//! Per-call events: what the writers and runners say happened, on one channel.
//!
//! A call costs four sends in all. Each side keeps its own timestamps in local variables
//! and sends its half of the timeline once ([`WriterSide`], [`RunnerSide`]); the recorder
//! joins the halves. Besides, each side sends an intent event just before its rename
//! (`Requesting` for the request, `Answering` for the answer): these are what the pairing
//! check reads, and since each is sent before the file it announces can be seen by the
//! other side, the channel carries them in causal order whichever thread sends first.
//!
//! The recorder thread blocks on the channel (it never polls) and hands each batch to every
//! [`Listener`]: the recorder itself, the event log, `calls.csv`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use tokio::time::Instant;

use crate::base::clock;
use crate::base::protocol::Outcome;
use crate::events::pairing::PairingReport;

pub use crate::base::protocol::CallId;

pub(crate) mod pairing;
pub(crate) mod timeline;

/// What happened to a call, as its side reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The writer is about to publish the request (pairing: a request).
    Requesting,
    /// The runner is about to publish its answer (pairing: a response).
    Answering,
    /// The runner is about to publish an error answer for a request it could not read or
    /// parse, known only by its file id (the event's call): a response to the open request
    /// whose call id sanitizes to that file id.
    AnsweringUnread,
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
    /// The writer read an answer of this kind.
    Answered(Outcome),
    /// The call ended without an answer, for this reason.
    Failed(FailKind),
}

impl CallOutcome {
    /// As the event log and `calls.csv` write it: `ok`, `error`, `paused`, or why it failed.
    pub fn name(self) -> &'static str {
        match self {
            CallOutcome::Answered(o) => o.name(),
            CallOutcome::Failed(f) => f.name(),
        }
    }

    /// The outcome of this [`CallOutcome::name`].
    pub fn from_name(name: &str) -> Option<CallOutcome> {
        Outcome::from_name(name)
            .map(CallOutcome::Answered)
            .or_else(|| FailKind::from_name(name).map(CallOutcome::Failed))
    }
}

/// The writer's half of a call's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct WriterSide {
    /// When the pacer meant the call to start (latency is timed from here).
    pub intended: Instant,
    /// When the writer actually started it.
    pub started: Instant,
    /// The call was made during the warm-up: counted, not measured.
    pub warmup: bool,
    /// When the request's rename completed.
    pub published: Option<Instant>,
    /// When the writer had read the answer.
    pub read: Option<Instant>,
    /// How the call ended for the writer.
    pub outcome: CallOutcome,
}

/// The runner's half of a call's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct RunnerSide {
    /// When the runner's wait returned before the scan that found the request.
    pub woke: Instant,
    /// When the request was read and deleted.
    pub picked: Instant,
    /// When the handler started the tool.
    pub handler_start: Instant,
    /// When the handler finished it.
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

crate::base::named! {
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailKind {
    /// No answer before the writer deadline.
    Timeout,
    /// The call id sanitizes to a file id already in flight in this dir.
    IdCollision,
    /// The request could not be published (the dir vanished, its permissions changed, ...).
    PublishError,
    /// The request could not be published because the machine failed the run (a full disk,
    /// a quota, a read-only or failing filesystem: [`crate::base::fsio::environment_failure`]):
    /// never visible, so no runner could answer it; not the relay's loss.
    Environment,
    /// The run was interrupted before the answer arrived.
    Interrupted,
}
names ["timeout", "id_collision", "publish_error", "environment", "interrupted"]
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
    pub what: crate::base::notice::Say,
}

/// An agent turn of one sandbox began or ended (one relay per turn, as production runs it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnMark {
    pub at: Instant,
    pub sandbox: u32,
    pub what: TurnEvent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEvent {
    /// The turn's relay is ready (its stale sweep done) and the turn's first step is next.
    Started,
    /// The turn's relay has stopped; it made `calls` calls.
    Ended { calls: u32 },
}

/// One message on a case's event channel.
#[derive(Debug)]
pub enum Msg {
    /// A call's event (a timeline half, an intent).
    Call(Event),
    /// Something a side said (a typed notice).
    Notice(Notice),
    /// An agent turn began or ended.
    Turn(TurnMark),
}

impl Msg {
    /// A request or an answer about to be published (sent inside the measured steps).
    fn is_intent(&self) -> bool {
        matches!(
            self,
            Msg::Call(Event { kind: EventKind::Requesting | EventKind::Answering | EventKind::AnsweringUnread, .. })
        )
    }
}

/// Something fed by the recorder thread's drain loop: every message of the channel, in
/// channel order. The recorder is one; the event log (`events.ndjson`) and `calls.csv` are
/// others, so the recorder knows nothing of files.
pub trait Listener: Send {
    /// Takes one message, in channel order.
    fn message(&mut self, msg: &Msg);

    /// The channel has closed and `pairing` is the case's verdict: write what remains and
    /// flush. Returns why this listener's output is incomplete, if it is.
    fn close(&mut self, _pairing: &PairingReport) -> Result<(), Incomplete> {
        Ok(())
    }
}

/// A listener's output that could not be written in full: which output, and why (a full
/// disk, a removed directory). The run's other outputs are still written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {output}: {why}")]
pub struct Incomplete {
    pub output: &'static str,
    pub why: std::io::Error,
}

#[derive(Debug, Default)]
struct Buffer {
    msgs: Vec<Msg>,
    /// The receiver waits on the condvar for a message (or for the last sender to go).
    parked: bool,
}

#[derive(Debug, Default)]
struct Shared {
    buf: Mutex<Buffer>,
    wake: Condvar,
    senders: AtomicUsize,
    /// A parked receiver is woken once this many messages wait (1: at every half).
    wake_at: usize,
}

impl Shared {
    #[inline]
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        self.buf.lock().expect("event buffer poisoned")
    }
}

/// The sending end; cheap to clone, one per task. Sending is a lock and a push, and a
/// send's position in the buffer respects happens-before across threads.
///
/// The receiver blocks while the buffer is empty; a send wakes it only if it is parked and
/// only for a timeline half or a notice. Intents (`Requesting`, `Answering`) are sent
/// inside the measured steps and never pay for a wakeup: each is followed by its side's
/// half, sent after the side's last timestamp, which does.
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
        if self.shared.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            // The last sender: a parked receiver must learn that the channel has closed.
            let parked = std::mem::take(&mut self.shared.lock().parked);
            if parked {
                self.shared.wake.notify_one();
            }
        }
    }
}

impl EventSink {
    /// A new channel: the sink the measured tasks send on, the inbox the listeners read.
    pub fn channel() -> (EventSink, EventInbox) {
        Self::batched(1)
    }

    /// A channel whose receiver is woken only once `wake_at` messages wait (and when the
    /// last sender goes): on the virtual clock, where nobody watches the recorder's progress
    /// live, a wake per batch instead of a futex wake and a context switch per call.
    pub fn batched(wake_at: usize) -> (EventSink, EventInbox) {
        let shared = Arc::new(Shared {
            buf: Mutex::new(Buffer { msgs: Vec::with_capacity(wake_at.max(1024)), parked: false }),
            wake: Condvar::new(),
            senders: AtomicUsize::new(1),
            wake_at: wake_at.max(1),
        });
        (EventSink { shared: shared.clone() }, EventInbox { shared, spare: Vec::with_capacity(1024) })
    }

    /// Pushes `msg`, waking a parked receiver unless `msg` is an intent.
    #[inline]
    fn send(&self, msg: Msg) {
        let mut buf = self.shared.lock();
        buf.msgs.push(msg);
        // The flag is read first: while the receiver is busy, a send reads nothing else.
        if buf.parked && buf.msgs.len() >= self.shared.wake_at && !buf.msgs.last().is_some_and(Msg::is_intent) {
            buf.parked = false;
            drop(buf);
            self.shared.wake.notify_one();
        }
    }

    /// Sends `kind` for `call` of `sandbox`, stamped now.
    #[inline]
    pub fn emit(&self, sandbox: u32, call: &CallId, kind: EventKind) {
        self.emit_at(clock::now(), sandbox, call, kind);
    }

    /// Sends `kind` for `call` of `sandbox`, stamped `at`.
    #[inline]
    pub fn emit_at(&self, at: Instant, sandbox: u32, call: &CallId, kind: EventKind) {
        self.send(Msg::Call(Event { at, sandbox, call: call.clone(), kind }));
    }

    /// Sends a message recorded elsewhere (the in-sandbox writer's, brought back), as it is.
    pub(crate) fn forward(&self, msg: Msg) {
        self.send(msg);
    }

    /// Sends a notice from `sandbox`.
    pub fn notice(&self, sandbox: u32, what: impl Into<crate::base::notice::Say>) {
        self.send(Msg::Notice(Notice { at: clock::now(), sandbox, what: what.into() }));
    }

    /// A turn of `sandbox` began or ended, now.
    pub fn turn(&self, sandbox: u32, what: TurnEvent) {
        self.send(Msg::Turn(TurnMark { at: clock::now(), sandbox, what }));
    }
}

/// The receiving end, owned by the recorder thread.
#[derive(Debug)]
pub struct EventInbox {
    shared: Arc<Shared>,
    spare: Vec<Msg>,
}

impl EventInbox {
    /// Hands every message sent so far to `f`, in order, without waiting; returns how many
    /// there were.
    pub fn take(&mut self, mut f: impl FnMut(Msg)) -> usize {
        std::mem::swap(&mut self.shared.lock().msgs, &mut self.spare);
        let n = self.spare.len();
        self.spare.drain(..).for_each(&mut f);
        n
    }

    /// Every message sent so far.
    pub(crate) fn try_iter(&mut self) -> std::vec::IntoIter<Msg> {
        let mut out = Vec::new();
        self.take(|m| out.push(m));
        out.into_iter()
    }

    /// Blocks until a message has been sent or every sender is gone, then swaps every
    /// message sent so far into `batch` (which must be empty). Returns false once the
    /// channel is closed and drained.
    pub(crate) fn recv(&mut self, batch: &mut Vec<Msg>) -> bool {
        debug_assert!(batch.is_empty());
        let mut buf = self.shared.lock();
        loop {
            if !buf.msgs.is_empty() {
                std::mem::swap(&mut buf.msgs, batch);
                return true;
            }
            if self.shared.senders.load(Ordering::Acquire) == 0 {
                return false;
            }
            buf.parked = true;
            buf = self.shared.wake.wait(buf).expect("event buffer poisoned");
            // Woken by a sender (which cleared the flag) or spuriously.
            buf.parked = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer_half() -> EventKind {
        let t = clock::now();
        EventKind::Writer(WriterSide {
            intended: t,
            started: t,
            warmup: false,
            published: None,
            read: None,
            outcome: CallOutcome::Failed(FailKind::Timeout),
        })
    }

    #[test]
    fn a_parked_receiver_wakes_for_a_half_and_the_close_not_for_an_intent() {
        let (sink, mut inbox) = EventSink::channel();
        let id: CallId = Arc::from("c1");
        let receiver = std::thread::spawn(move || {
            let mut sizes = Vec::new();
            let mut batch = Vec::new();
            while inbox.recv(&mut batch) {
                sizes.push(batch.len());
                batch.clear();
            }
            sizes
        });
        // Let the receiver park on the empty buffer.
        while !sink.shared.lock().parked {
            std::thread::yield_now();
        }
        sink.emit(0, &id, EventKind::Requesting);
        assert!(sink.shared.lock().parked, "an intent leaves the receiver parked");
        sink.emit(0, &id, writer_half());
        // A half wakes it, and it takes both messages (the bound is only against a hang).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !sink.shared.lock().msgs.is_empty() {
            assert!(std::time::Instant::now() < deadline, "a half did not wake the receiver");
            std::thread::yield_now();
        }
        drop(sink);
        assert_eq!(receiver.join().unwrap().iter().sum::<usize>(), 2, "both messages, then the close");
    }

    #[test]
    fn recv_returns_false_only_once_closed_and_drained() {
        let (sink, mut inbox) = EventSink::channel();
        let other = sink.clone();
        sink.notice(0, "one".to_owned());
        drop(sink);
        let mut batch = Vec::new();
        assert!(inbox.recv(&mut batch));
        assert_eq!(batch.len(), 1);
        batch.clear();
        other.notice(0, "two".to_owned());
        drop(other);
        assert!(inbox.recv(&mut batch), "what was sent before the close is still handed over");
        batch.clear();
        assert!(!inbox.recv(&mut batch));
    }
}
