//! The `read-fails` fault of an emulated daemon, and the storm it sets off, counted.
//!
//! While the fault is on, every `/v1/fs/file` GET of a request file (`*.req.json`) fails, and
//! a request whose read failed keeps failing for as long as it is on disk: an unreadable file
//! stays unreadable. With `answer = "fails"` every PUT of a struck request's answer fails too
//! (the failure answer cannot be written either, as when a rate limit rejects it as well). Production's runner answers such a request `{ok:false}` and returns
//! before its delete (relay.ts, `startToolRelay`'s `pickup`); the file stays until the writer
//! reads that answer and deletes both files, and while it is there every watch window
//! finishes at once (the watch program lists once as it starts and finishes on any
//! `*.req.json`): the runner re-arms at network speed.
//!
//! The daemon marks the storm's edges from its own counters ([`Mark`]): when the fault
//! struck, its first failed read, and the first request it served once no struck request
//! was left on disk (a request's start and end both look, so the edge is within one round
//! trip of the delete). A fault's row turns the marks into rates.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use super::RequestCounts;
use crate::base::clock;
use crate::base::protocol::{REQ_SUFFIX, RES_SUFFIX};
use crate::sandbox::dir::RelayDir;

/// What a daemon had counted at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    /// When.
    pub at: Instant,
    /// The daemon's requests so far (and its dir's busy and alive time).
    pub counts: RequestCounts,
    /// Its sandbox's requests the organisation rejected so far.
    pub rejected: u64,
    /// Those of every other sandbox of the organisation.
    pub others_rejected: u64,
}

/// A `read-fails` fault's storm as one daemon counted it.
#[derive(Debug, Clone)]
pub struct ReadStorm {
    /// When the fault (first) struck.
    pub struck: Mark,
    /// The first read that failed; `None`: the fault caught no request.
    pub started: Option<Mark>,
    /// The first request served once no struck request was left on disk; `None`: one still
    /// was at `now`.
    pub ended: Option<Mark>,
    /// When the storm was read (the case's end).
    pub now: Mark,
    /// Request files whose reads failed.
    pub requests: u64,
    /// Writes of their answers that failed (`answer = "fails"`).
    pub answers_failed: u64,
    /// Reads that failed (a struck request read again fails again).
    pub reads_failed: u64,
}

#[derive(Debug, Default)]
struct State {
    /// Until then, a request read for the first time fails (and is struck).
    until: Option<Instant>,
    /// The struck requests' answers fail too.
    answers: bool,
    struck: Vec<String>,
    /// Struck requests not yet seen gone.
    on_disk: Vec<String>,
    first_strike: Option<Mark>,
    started: Option<Mark>,
    ended: Option<Mark>,
    reads_failed: u64,
    answers_failed: u64,
}

/// One daemon's `read-fails` fault: off (and free: one atomic load per request) until struck.
#[derive(Default)]
pub(crate) struct ReadFault {
    struck: AtomicBool,
    dir: OnceLock<Arc<dyn RelayDir>>,
    state: Mutex<State>,
}

impl ReadFault {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The relay dir the daemon serves (where a struck request is looked for).
    pub(crate) fn bind(&self, dir: Arc<dyn RelayDir>) {
        let _ = self.dir.set(dir);
    }

    /// Strikes for `d`: request reads served until then fail.
    pub(crate) fn strike(&self, d: Duration, answers: bool, mark: Mark) {
        let mut s = self.state();
        s.until = Some(mark.at + d);
        s.answers |= answers;
        s.first_strike.get_or_insert(mark);
        self.struck.store(true, Ordering::Release);
    }

    /// Whether the read of `name` fails (served now; `mark` is taken if it starts a storm).
    pub(crate) fn fails(&self, name: &str, mark: impl FnOnce() -> Mark) -> bool {
        if !self.struck.load(Ordering::Acquire) {
            return false;
        }
        let mut s = self.state();
        let known = s.struck.iter().any(|n| n == name);
        let on = s.until.is_some_and(|t| clock::now() < t);
        let strikes = on && name.ends_with(REQ_SUFFIX);
        if !(known || strikes) {
            return false;
        }
        s.reads_failed += 1;
        if !known {
            s.struck.push(name.to_owned());
        }
        if !s.on_disk.iter().any(|n| n == name) {
            s.on_disk.push(name.to_owned());
        }
        s.started.get_or_insert_with(mark);
        // A storm that ended and a new request struck: it goes on (one storm per fault).
        s.ended = None;
        true
    }

    /// Whether the write of `name` fails: a temp name of a struck request's answer, when the
    /// answers fail too.
    pub(crate) fn write_fails(&self, name: &str) -> bool {
        if !self.struck.load(Ordering::Acquire) {
            return false;
        }
        let mut s = self.state();
        let answer_of = |req: &String| {
            let id = req.strip_suffix(REQ_SUFFIX).unwrap_or(req);
            name.strip_prefix(id).is_some_and(|rest| rest.starts_with(RES_SUFFIX))
        };
        let fails = s.answers && s.struck.iter().any(answer_of);
        s.answers_failed += u64::from(fails);
        fails
    }

    /// Looks whether every struck request is gone; the first time they all are, `mark` ends
    /// the storm.
    pub(crate) fn observe(&self, mark: impl FnOnce() -> Mark) {
        if !self.struck.load(Ordering::Acquire) {
            return;
        }
        let Some(dir) = self.dir.get() else { return };
        let mut s = self.state();
        if s.on_disk.is_empty() {
            return;
        }
        s.on_disk.retain(|n| !matches!(dir.stat(n), Err(e) if e.kind() == std::io::ErrorKind::NotFound));
        if s.on_disk.is_empty() && s.ended.is_none() {
            s.ended = Some(mark());
        }
    }

    /// The storm so far, if the fault struck; `now` is the moment it is read.
    pub(crate) fn storm(&self, now: Mark) -> Option<ReadStorm> {
        let s = self.state();
        Some(ReadStorm {
            struck: s.first_strike?,
            started: s.started,
            ended: s.ended,
            now,
            requests: s.struck.len() as u64,
            answers_failed: s.answers_failed,
            reads_failed: s.reads_failed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::dir::SimDir;

    fn mark() -> Mark {
        Mark { at: clock::now(), counts: RequestCounts::default(), rejected: 0, others_rejected: 0 }
    }

    #[tokio::test(start_paused = true)]
    async fn a_struck_request_keeps_failing_until_it_is_gone_and_its_going_ends_the_storm() {
        let sim = SimDir::new("/sb/relay");
        let f = ReadFault::default();
        f.bind(Arc::new(sim.clone()));
        assert!(!f.fails("a.req.json", mark), "not struck: reads succeed");
        f.strike(Duration::from_secs(1), false, mark());
        sim.write("a.req.json", b"{}").unwrap();
        assert!(!f.fails("a.res.json", mark), "only requests");
        assert!(f.fails("a.req.json", mark));
        assert!(!f.write_fails("a.res.json.tmp.1"), "its answer is written");
        f.strike(Duration::from_secs(1), true, mark());
        assert!(f.write_fails("a.res.json.tmp.2"), "now its answer fails too");
        assert!(!f.write_fails("ab.res.json.tmp.2") && !f.write_fails("b.res.json.tmp.1"), "only its own");
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(f.fails("a.req.json", mark), "still failing after the spell: the same file");
        assert!(!f.fails("b.req.json", mark), "a request first read after the spell is read");
        f.observe(mark);
        assert!(f.storm(mark()).unwrap().ended.is_none(), "still on disk");
        sim.remove("a.req.json").unwrap();
        tokio::time::advance(Duration::from_secs(1)).await;
        f.observe(mark);
        let st = f.storm(mark()).unwrap();
        assert_eq!((st.requests, st.reads_failed, st.answers_failed), (1, 2, 1));
        let (from, to) = (st.started.unwrap().at, st.ended.unwrap().at);
        assert_eq!(to - from, Duration::from_secs(6));
    }
}
