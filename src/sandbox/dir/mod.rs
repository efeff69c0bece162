//! The sandbox side of one relay dir: its files, its watches and the programs that run
//! next to it.
//!
//! The writer touches a [`RelayDir`] directly (it lives in the sandbox); hosts reach it
//! through their own cost model (counted locally, through a daemon remotely). [`RealDir`] is
//! a directory on this machine with inotify watches and child processes; [`SimDir`] is its
//! in-memory twin for virtual time, with the same semantics (atomic rename, every change
//! told to the watches armed on that directory, the watch program) and the faults of
//! SPEC §6 that a real machine cannot produce on demand. The in-sandbox watch program is
//! one async function over this trait ([`program`]): the `sandbox-watch` subcommand runs it
//! over a [`RealDir`], the twin over a [`SimDir`]. A runner's lock on a real dir it serves
//! is a [`claim::ClaimedDir`] around it.

pub(crate) mod claim;
pub(crate) mod program;
mod real;
mod sim;
mod watch;

pub use program::Step;
pub use real::RealDir;
pub(crate) use real::UnsafeEntry;
pub use sim::{SimDir, SimFault};
pub(crate) use watch::{DirWatch, Raw};

use std::ffi::OsString;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::base::protocol::{classify, FileKind};
use crate::base::BoxFut;

/// What changed in a watched directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A name appeared: created, or renamed onto.
    Appeared,
    /// A file's bytes or metadata changed.
    Modified,
    /// A name went away: removed, or renamed from.
    Removed,
}

/// What a watch callback is told: every change in the directory, whatever the name (temp
/// names and other files included, as an inotify or `fs.watch` watch sees them). Consumers
/// filter with [`EventFilter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen<'a> {
    Name(&'a str, Change),
    /// The kernel dropped events (queue overflow): anything may have happened.
    Rescan,
    /// The watch failed after arming (it delivers nothing more).
    Failed,
}

crate::base::named! {
/// Which events a consumer of a watch acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventFilter {
    /// Any change in the directory, any name (production's local watch and watch program).
    Any,
    /// A request name appearing (or a rescan, or a failure).
    Requests,
    /// A response name appearing (or a rescan, or a failure).
    Responses,
}
names ["any", "requests", "responses"]
}

impl EventFilter {
    pub(crate) fn wants(self, seen: Seen<'_>) -> bool {
        match (self, seen) {
            (EventFilter::Any, _) | (_, Seen::Rescan | Seen::Failed) => true,
            (EventFilter::Requests, Seen::Name(n, Change::Appeared)) => classify(n) == FileKind::Request,
            (EventFilter::Responses, Seen::Name(n, Change::Appeared)) => classify(n) == FileKind::Response,
            _ => false,
        }
    }
}

/// A watch callback.
pub(crate) type OnSeen = Box<dyn Fn(Seen<'_>) + Send + Sync>;

/// A delay paid by every line of a followed program (a remote stream's response leg).
pub(crate) type LineDelay = Arc<dyn Fn() -> BoxFut<'static, ()> + Send + Sync>;

/// A followed program's stdout, line by line; ends when the program does.
pub type Lines = tokio::sync::mpsc::Receiver<String>;

/// A live watch; dropping or disarming it stops the callbacks.
pub trait WatchHandle: Send + Sync {
    fn disarm(&self);
    /// Asks to be told (`on_stale`) when the watch stops seeing the directory now at its
    /// path (the directory replaced under it). Returns whether this watch can tell: the
    /// in-memory sandbox's can, a kernel watch cannot (and its user must assume the worst).
    fn on_stale(&self, _on_stale: Box<dyn Fn() + Send + Sync>) -> bool {
        false
    }
}

/// What a finished program left (the shape of a daemon's process-run answer).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// The exit code; `None` when killed by a signal (or by the timeout).
    pub code: Option<i32>,
    /// What the command printed on standard output.
    pub stdout: Vec<u8>,
    /// What the command printed on standard error.
    pub stderr: Vec<u8>,
    /// The run's timeout expired and the program was killed.
    pub timed_out: bool,
}

impl ExecOutput {
    /// A command that exited with `code`.
    pub fn exited(code: i32, stdout: impl Into<Vec<u8>>, stderr: impl Into<Vec<u8>>) -> ExecOutput {
        ExecOutput { code: Some(code), stdout: stdout.into(), stderr: stderr.into(), timed_out: false }
    }

    /// A command ended by its timeout, with no output.
    pub fn timed_out() -> ExecOutput {
        ExecOutput { timed_out: true, ..ExecOutput::default() }
    }
}

/// One relay directory and the sandbox around it. Names are plain file names inside the
/// dir; a `RelayDir` never accepts a path.
pub trait RelayDir: Send + Sync {
    /// Names of every entry.
    fn list(&self) -> io::Result<Vec<String>>;
    /// The bytes of the entry `name`.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// The bytes of one file, `None` when it is not there (the writer's check for its
    /// answer, which mostly finds none).
    fn read_present(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        match self.read(name) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    /// The size of a file (the runner's pickup telemetry stats each request).
    fn stat(&self, name: &str) -> io::Result<u64>;
    /// Writes a whole new file (not atomic on its own: see [`RelayDir::publish`]). On a real
    /// directory the name must be free: an entry already there (a link, a FIFO, a file) is
    /// never written through, opened or waited on, but refused as taken
    /// ([`crate::base::fsio::is_taken`]); a failed write leaves no file behind.
    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()>;
    /// Renames within the dir, replacing `to`.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a file; one already gone is not an error.
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Arms a watch on the directory as it is now (a later replacement of the directory is
    /// not seen by it): every change is told to `on_seen`.
    fn watch(&self, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>>;
    /// Runs a program in the sandbox; it is killed after `timeout` (the answer then says
    /// `timed_out`), or when the future is dropped.
    fn exec(&self, argv: &[OsString], timeout: Duration) -> BoxFut<'static, io::Result<ExecOutput>>;
    /// Starts a program and follows its stdout line by line; dropping the receiver kills it.
    fn exec_follow(&self, argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines>;
    /// The directory's path as the sandbox names it (what goes into a watch program's argv).
    fn path(&self) -> &std::path::Path;

    /// Publishes atomically: a temp name in the same dir, then a rename onto `name`. (The
    /// in-memory twin can publish in slow chunks under a fault, hence a future.)
    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        Box::pin(std::future::ready(publish_now(self, name, bytes)))
    }

    /// Relay files (requests, responses, their temp names) left in the dir, sorted.
    fn relay_files(&self) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = self.list()?.into_iter().filter(|n| classify(n) != FileKind::Other).collect();
        names.sort();
        Ok(names)
    }
}

/// A fresh unpredictable temp name, then a rename; a temp name already taken (an entry
/// someone planted) is tried again under a new one ([`crate::base::fsio::TEMP_TRIES`]); the
/// temp file is removed if the write or the rename fails.
pub fn publish_now<D: RelayDir + ?Sized>(dir: &D, name: &str, bytes: &[u8]) -> io::Result<()> {
    use crate::base::fsio::{is_taken, taken_every_time, temp_name, TEMP_TRIES};
    let mut last = None;
    for _ in 0..TEMP_TRIES {
        let tmp = temp_name(name);
        match dir.write(&tmp, bytes) {
            Ok(()) => {}
            // Not this writer's entry: left alone.
            Err(e) if is_taken(&e) => {
                last = Some(e);
                continue;
            }
            Err(e) => {
                let _ = dir.remove(&tmp);
                return Err(e);
            }
        }
        if let Err(e) = dir.rename(&tmp, name) {
            let _ = dir.remove(&tmp);
            return Err(e);
        }
        return Ok(());
    }
    Err(taken_every_time(last))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_pick_their_events() {
        let req = Seen::Name("a.req.json", Change::Appeared);
        let res = Seen::Name("a.res.json", Change::Appeared);
        let tmp = Seen::Name("a.req.json.tmp.1", Change::Appeared);
        let gone = Seen::Name("a.req.json", Change::Removed);
        for s in [req, res, tmp, gone, Seen::Rescan, Seen::Failed] {
            assert!(EventFilter::Any.wants(s), "{s:?}");
        }
        assert!(EventFilter::Requests.wants(req) && !EventFilter::Requests.wants(res));
        assert!(!EventFilter::Requests.wants(tmp) && !EventFilter::Requests.wants(gone));
        assert!(EventFilter::Responses.wants(res) && !EventFilter::Responses.wants(req));
        assert!(EventFilter::Requests.wants(Seen::Rescan) && EventFilter::Responses.wants(Seen::Failed));
    }
}
