//! Per-call events: what the writers and runners say happened, on one channel.
//!
//! Emitting an event is a timestamp and a channel send (no lock, no I/O); the recorder
//! thread on the other end does the bookkeeping. The "intent" events (`Requesting` before
//! the request rename, `Answering` before the answer rename) are what the pairing check
//! reads: each is sent before the file it announces can be seen by the other side, so the
//! channel carries them in causal order whichever thread sends first.

use std::sync::mpsc::{Receiver, Sender};

use tokio::time::Instant;

use crate::protocol::Outcome;

/// Identifies a call within a case: the sandbox (relay dir) and the call id.
pub type CallKey = (u32, Box<str>);

#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The writer began the call; `at` is the actual start.
    Started { intended: Instant, warmup: bool },
    /// The writer is about to publish the request (pairing: a request).
    Requesting,
    /// The request's rename completed.
    Published,
    /// The runner's wait returned before the scan that found this request (`at` = wake).
    Woke,
    /// The runner read and deleted the request.
    PickedUp,
    HandlerStart,
    HandlerEnd,
    /// The runner is about to publish its answer (pairing: a response).
    Answering,
    /// The answer's rename completed.
    Answered,
    /// The writer read the answer.
    AnswerRead { outcome: Outcome },
    /// The writer gave up on the call.
    Failed { why: FailKind },
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
    pub call: Box<str>,
    pub kind: EventKind,
}

/// Something worth reporting that is not a call's step: survived, but said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub sandbox: u32,
    pub what: String,
}

#[derive(Debug)]
pub enum Msg {
    Call(Event),
    Notice(Notice),
}

/// The sending end; cheap to clone, one per task.
#[derive(Debug, Clone)]
pub struct EventSink {
    tx: Sender<Msg>,
}

impl EventSink {
    pub fn channel() -> (EventSink, Receiver<Msg>) {
        let (tx, rx) = std::sync::mpsc::channel();
        (EventSink { tx }, rx)
    }

    #[inline]
    pub fn emit(&self, sandbox: u32, call: &str, kind: EventKind) {
        self.emit_at(Instant::now(), sandbox, call, kind);
    }

    #[inline]
    pub fn emit_at(&self, at: Instant, sandbox: u32, call: &str, kind: EventKind) {
        // A closed recorder means the case is over; late events have nowhere to go.
        let _ = self.tx.send(Msg::Call(Event { at, sandbox, call: call.into(), kind }));
    }

    pub fn notice(&self, sandbox: u32, what: String) {
        let _ = self.tx.send(Msg::Notice(Notice { sandbox, what }));
    }
}
