//! The in-memory twin of a relay dir, for virtual time.
//!
//! Files live in a sorted map (listings come back in one deterministic order); a rename
//! is atomic and tells every watch armed on the *same* directory, as inotify does; a
//! directory that is deleted and recreated is a new directory, and the watches armed on the
//! old one stay silent. Operations take no time: every delay of a case comes from the host
//! model (the emulated daemon) and the strategy code, on the paused tokio clock.
//!
//! The faults of SPEC §6 that live in the sandbox are switches here ([`SimFault`]): the
//! watch program missing, watch creation failing (ENOSPC / EMFILE), the watch queue
//! overflowing, watch execs that hang or fail at once, publication in slow chunks, the
//! directory replaced. [`Step`] hooks let a test act at each boundary of the watch program.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{program, LineDelay, OnSeen, RelayDir, WatchHandle};
use crate::host::{ExecOutput, Lines};
use crate::protocol::is_temp;
use crate::source::{ErrorOnce, Seen, WatchFilter};
use crate::BoxFut;

/// A boundary inside the watch program twin, where a test hook may act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Started, before the watch is armed.
    BeforeArm,
    /// Armed, before the first list.
    ArmedBeforeList,
    /// Listed (nothing found), before waiting.
    ListedBeforeWait,
}

/// A sandbox-side fault, switched on and off by the fault schedule or a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimFault {
    /// The watch program is not installed: its exec exits 127.
    ProgramMissing,
    /// Arming a watch fails with ENOSPC (inotify watch limit).
    WatchLimit,
    /// Arming a watch fails with EMFILE (inotify instance limit).
    WatchInstances,
    /// Watch events are lost; each is delivered as a rescan with no path.
    QueueOverflow,
    /// Watch execs never settle (they ignore their window).
    ExecHang,
    /// Watch execs fail at once (exit 1).
    ExecFail,
    /// The writer publishes in chunks: the temp file grows piece by piece before the rename.
    ChunkedPublish,
}

type Hook = Arc<dyn Fn(Step) + Send + Sync>;

struct Watch {
    id: u64,
    generation: u64,
    filter: WatchFilter,
    on_seen: Arc<OnSeen>,
}

#[derive(Default)]
struct State {
    files: BTreeMap<String, Vec<u8>>,
    exists: bool,
    /// Bumped when the directory is replaced: a watch belongs to one generation.
    generation: u64,
    watches: Vec<Watch>,
    next_watch: u64,
    faults: Vec<SimFault>,
    hook: Option<Hook>,
    /// When each exec of the watch program started.
    execs: Vec<tokio::time::Instant>,
}

pub(super) struct Inner {
    path: PathBuf,
    state: Mutex<State>,
}

/// An in-memory relay dir; clones share it.
#[derive(Clone)]
pub struct SimDir {
    inner: Arc<Inner>,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{path:?}: no such directory"))
}

impl SimDir {
    /// An empty, existing directory named `path` (the name the sandbox knows it by).
    pub fn new(path: impl Into<PathBuf>) -> SimDir {
        let state = State { exists: true, ..State::default() };
        SimDir { inner: Arc::new(Inner { path: path.into(), state: Mutex::new(state) }) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state()
    }

    pub fn set_fault(&self, fault: SimFault, on: bool) {
        let mut s = self.state();
        s.faults.retain(|f| *f != fault);
        if on {
            s.faults.push(fault);
        }
    }

    pub fn has_fault(&self, fault: SimFault) -> bool {
        self.state().faults.contains(&fault)
    }

    /// Deletes the directory and everything in it; watches on it go silent.
    pub fn delete_dir(&self) {
        let mut s = self.state();
        s.files.clear();
        s.exists = false;
        s.generation += 1;
    }

    /// Creates the directory again (empty) if it is gone.
    pub fn recreate(&self) {
        let mut s = self.state();
        if !s.exists {
            s.exists = true;
            s.generation += 1;
        }
    }

    /// Runs `hook` at every [`Step`] of the watch program.
    pub fn on_step(&self, hook: impl Fn(Step) + Send + Sync + 'static) {
        self.state().hook = Some(Arc::new(hook));
    }

    /// When each exec of the watch program started (window or follow), in order.
    pub fn exec_times(&self) -> Vec<tokio::time::Instant> {
        self.state().execs.clone()
    }

    /// Live watches (armed on any generation).
    pub fn watches(&self) -> usize {
        self.state().watches.len()
    }
}

impl Inner {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("sim dir poisoned")
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    pub(super) fn log_exec(&self) {
        self.state().execs.push(tokio::time::Instant::now());
    }

    pub(super) fn has_fault(&self, fault: SimFault) -> bool {
        self.state().faults.contains(&fault)
    }

    pub(super) fn step(&self, step: Step) {
        let hook = self.state().hook.clone();
        if let Some(h) = hook {
            h(step);
        }
    }

    pub(super) fn list(&self) -> io::Result<Vec<String>> {
        let s = self.state();
        if !s.exists {
            return Err(not_found(&self.path));
        }
        Ok(s.files.keys().cloned().collect())
    }

    pub(super) fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        let s = self.state();
        if !s.exists {
            return Err(not_found(&self.path));
        }
        s.files.get(name).cloned().ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}: not found")))
    }

    /// Stores `bytes` under `name` and tells the watches it appeared.
    fn put(&self, name: &str, bytes: Vec<u8>, append: bool) -> io::Result<()> {
        let seen = {
            let mut s = self.state();
            if !s.exists {
                return Err(not_found(&self.path));
            }
            let slot = s.files.entry(name.to_owned()).or_default();
            if append {
                slot.extend_from_slice(&bytes);
            } else {
                *slot = bytes;
            }
            self.to_tell(&s, name)
        };
        tell(seen, name);
        Ok(())
    }

    pub(super) fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.put(name, bytes.to_vec(), false)
    }

    pub(super) fn append(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.put(name, bytes.to_vec(), true)
    }

    pub(super) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let seen = {
            let mut s = self.state();
            if !s.exists {
                return Err(not_found(&self.path));
            }
            let bytes = s
                .files
                .remove(from)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{from}: not found")))?;
            s.files.insert(to.to_owned(), bytes);
            self.to_tell(&s, to)
        };
        tell(seen, to);
        Ok(())
    }

    pub(super) fn remove(&self, name: &str) -> io::Result<()> {
        let mut s = self.state();
        if !s.exists {
            return Err(not_found(&self.path));
        }
        s.files.remove(name);
        Ok(())
    }

    /// The callbacks to run for `name`, and whether the queue overflowed (called under the
    /// lock; the callbacks run after it is released).
    fn to_tell(&self, s: &State, name: &str) -> (Vec<Arc<OnSeen>>, bool) {
        if is_temp(name) {
            return (Vec::new(), false);
        }
        let overflow = s.faults.contains(&SimFault::QueueOverflow);
        let cbs = s
            .watches
            .iter()
            .filter(|w| w.generation == s.generation && (overflow || w.filter.wants(name)))
            .map(|w| w.on_seen.clone())
            .collect();
        (cbs, overflow)
    }

    pub(super) fn watch(self: &Arc<Self>, filter: WatchFilter, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>> {
        let mut s = self.state();
        if !s.exists {
            return Err(not_found(&self.path));
        }
        if s.faults.contains(&SimFault::WatchLimit) {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "inotify watch limit reached (ENOSPC)"));
        }
        if s.faults.contains(&SimFault::WatchInstances) {
            return Err(io::Error::other("too many inotify instances (EMFILE)"));
        }
        let id = s.next_watch;
        s.next_watch += 1;
        let generation = s.generation;
        s.watches.push(Watch { id, generation, filter, on_seen: Arc::new(on_seen) });
        Ok(Box::new(SimWatch { dir: self.clone(), id }))
    }
}

fn tell((cbs, overflow): (Vec<Arc<OnSeen>>, bool), name: &str) {
    for cb in cbs {
        if overflow {
            cb(Seen::Rescan);
        } else {
            cb(Seen::Name(name));
        }
    }
}

struct SimWatch {
    dir: Arc<Inner>,
    id: u64,
}

impl WatchHandle for SimWatch {
    fn disarm(&self) {
        self.dir.state().watches.retain(|w| w.id != self.id);
    }
}

impl Drop for SimWatch {
    fn drop(&mut self) {
        self.disarm();
    }
}

impl RelayDir for SimDir {
    fn list(&self) -> io::Result<Vec<String>> {
        self.inner.list()
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        self.inner.read(name)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.inner.write(name, bytes)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.inner.rename(from, to)
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.inner.remove(name)
    }

    fn watch(&self, filter: WatchFilter, errors: Arc<ErrorOnce>, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>> {
        let _ = errors; // a sim watch has no error after arming other than going silent
        self.inner.watch(filter, on_seen)
    }

    fn exec(&self, argv: &[OsString]) -> BoxFut<'static, io::Result<ExecOutput>> {
        Box::pin(program::exec(self.inner.clone(), argv.to_vec()))
    }

    fn exec_follow(&self, argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines> {
        program::follow(self.inner.clone(), argv.to_vec(), delay)
    }

    fn path(&self) -> &Path {
        &self.inner.path
    }

    fn writer_publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        Box::pin(async move {
            if !self.inner.has_fault(SimFault::ChunkedPublish) {
                return self.publish(name, bytes);
            }
            // Four chunks 50 ms apart: the temp name holds partial bytes meanwhile.
            let tmp = crate::fsio::temp_name(name);
            for (i, chunk) in bytes.chunks(bytes.len().div_ceil(4).max(1)).enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                self.inner.append(&tmp, chunk)?;
            }
            self.rename(&tmp, name)
        })
    }
}
