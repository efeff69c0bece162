//! The sandbox side of one relay dir: its files, its watches and the programs that run
//! next to it.
//!
//! The writer touches a [`RelayDir`] directly (it lives in the sandbox); hosts reach it
//! through their own cost model (counted locally, through an emulated daemon remotely).
//! [`RealDir`] is a directory on this machine with inotify watches and child processes;
//! [`SimDir`] is its in-memory twin for virtual time, with the same semantics (atomic
//! rename, watches tied to the directory they were armed on, the watch program) and the
//! faults of SPEC §6 that a real machine cannot produce on demand.

mod program;
mod real;
mod sim;

pub use program::{parse_watch_argv, WatchArgs, WatchMode};
pub use real::RealDir;
pub use sim::{SimDir, SimFault, Step};

use std::ffi::OsString;
use std::io;
use std::sync::Arc;

use crate::host::{ExecOutput, Lines};
use crate::protocol::{classify, FileKind};
use crate::source::{ErrorOnce, Seen, WatchFilter};
use crate::BoxFut;

/// A watch callback: told of every relevant name (or a rescan).
pub type OnSeen = Box<dyn Fn(Seen<'_>) + Send + Sync>;

/// A delay paid by every line of a followed program (a remote stream's response leg).
pub type LineDelay = Arc<dyn Fn() -> BoxFut<'static, ()> + Send + Sync>;

/// A live watch; dropping or disarming it stops the callbacks.
pub trait WatchHandle: Send + Sync {
    fn disarm(&self);
}

/// One relay directory and the sandbox around it. Names are plain file names inside the
/// dir; a `RelayDir` never accepts a path.
pub trait RelayDir: Send + Sync {
    /// Names of every entry.
    fn list(&self) -> io::Result<Vec<String>>;
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// Writes a whole file (not atomic on its own: see [`RelayDir::publish`]).
    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()>;
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a file; one already gone is not an error.
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Arms a watch on the directory as it is now (a later replacement of the directory
    /// is not seen by it). Errors after arming are recorded once in `errors`.
    fn watch(&self, filter: WatchFilter, errors: Arc<ErrorOnce>, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>>;
    /// Runs a program in the sandbox; dropping the future kills it.
    fn exec(&self, argv: &[OsString]) -> BoxFut<'static, io::Result<ExecOutput>>;
    /// Starts a program and follows its stdout line by line; dropping the receiver kills it.
    fn exec_follow(&self, argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines>;
    /// The directory's path as the sandbox names it (what goes into a watch program's argv).
    fn path(&self) -> &std::path::Path;

    /// Publishes atomically: a temp name in the same dir, then a rename onto `name`.
    fn publish(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let tmp = crate::fsio::temp_name(name);
        self.write(&tmp, bytes)?;
        if let Err(e) = self.rename(&tmp, name) {
            let _ = self.remove(&tmp);
            return Err(e);
        }
        Ok(())
    }

    /// How the in-sandbox writer publishes: as [`RelayDir::publish`], except that a sim dir
    /// under a chunked-publication fault grows the temp file piece by piece over time.
    fn writer_publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        Box::pin(std::future::ready(self.publish(name, bytes)))
    }

    /// Relay files (requests, responses, their temp names) left in the dir, sorted.
    fn relay_files(&self) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = self.list()?.into_iter().filter(|n| classify(n) != FileKind::Other).collect();
        names.sort();
        Ok(names)
    }
}
