//! The in-memory twin of a relay dir, for virtual time.
//!
//! Files live in a sorted map (listings come back in one deterministic order); every
//! change (a write, a rename, a removal, of any name) is told to every watch armed on the
//! *same* directory, as inotify does; a directory that is deleted and recreated is a new
//! directory, and the watches armed on the old one stay silent. Operations take no time:
//! every delay of a case comes from the host model (the emulated daemon) and the strategy
//! code, on the paused tokio clock. A program run here is the watch program itself
//! ([`super::program`]), the very function `relay-bench sandbox-watch` runs.
//!
//! The faults of SPEC §6 that live in the sandbox are switches here ([`SimFault`]): the
//! watch program missing, watch creation failing (ENOSPC / EMFILE), the watch queue
//! overflowing, watch execs that hang or fail at once, publication in slow chunks, the
//! directory replaced, made read-only or on a full disk. [`Step`] hooks let a test act at each boundary of the watch program.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::program::{self, Step, WatchArgs};
use super::{Change, ExecOutput, LineDelay, Lines, OnSeen, RelayDir, Seen, WatchHandle};
use crate::base::clock;
use crate::base::BoxFut;

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
    /// The directory is read-only (`chmod a-w`): writes, renames and removes fail with EACCES.
    ReadOnly,
    /// The disk is full: writes fail with ENOSPC (renames and removes still work).
    DiskFull,
}

type Hook = Arc<dyn Fn(Step) + Send + Sync>;

struct Watch {
    id: u64,
    generation: u64,
    on_seen: Arc<OnSeen>,
    /// Told when the directory is replaced under the watch.
    on_stale: Option<Arc<dyn Fn() + Send + Sync>>,
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
    /// When each exec of the watch program started (`None`: not kept, a case's dir: a
    /// fleet's day of execs would grow without end).
    execs: Option<Vec<tokio::time::Instant>>,
}

/// An in-memory relay dir; clones share it.
#[derive(Clone)]
pub struct SimDir {
    path: Arc<Path>,
    state: Arc<Mutex<State>>,
}

impl SimDir {
    /// An empty, existing directory named `path` (the name the sandbox knows it by).
    pub fn new(path: impl Into<PathBuf>) -> SimDir {
        let state = State { exists: true, execs: Some(Vec::new()), ..State::default() };
        SimDir { path: path.into().into(), state: Arc::new(Mutex::new(state)) }
    }

    /// A dir that keeps no log of its execs ([`SimDir::exec_times`] is empty): a case's,
    /// whose memory must not grow with simulated time.
    pub(crate) fn unlogged(path: impl Into<PathBuf>) -> SimDir {
        let sim = SimDir::new(path);
        sim.state().execs = None;
        sim
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("sim dir poisoned")
    }

    /// Turns `fault` on or off for every later operation.
    pub fn set_fault(&self, fault: SimFault, on: bool) {
        let mut s = self.state();
        s.faults.retain(|f| *f != fault);
        if on {
            s.faults.push(fault);
        }
    }

    pub(crate) fn has_fault(&self, fault: SimFault) -> bool {
        self.state().faults.contains(&fault)
    }

    /// Deletes the directory and everything in it; watches on it go silent (and those that
    /// asked are told so).
    pub(crate) fn delete_dir(&self) {
        let stale: Vec<_> = {
            let mut s = self.state();
            s.files.clear();
            s.exists = false;
            let gone = s.generation;
            s.generation += 1;
            s.watches.iter().filter(|w| w.generation == gone).filter_map(|w| w.on_stale.clone()).collect()
        };
        stale.iter().for_each(|f| f());
    }

    /// Creates the directory again (empty) if it is gone.
    pub(crate) fn recreate(&self) {
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

    /// When each exec of the watch program started (window or follow), in order (none for
    /// a dir built [`SimDir::unlogged`]).
    pub fn exec_times(&self) -> Vec<tokio::time::Instant> {
        self.state().execs.clone().unwrap_or_default()
    }
}

/// The error a change to the directory meets under a fault, if any (`write`: it adds bytes).
fn refused(s: &State, write: bool) -> Option<io::Error> {
    if s.faults.contains(&SimFault::ReadOnly) {
        return Some(io::Error::from_raw_os_error(libc::EACCES));
    }
    (write && s.faults.contains(&SimFault::DiskFull)).then(|| io::Error::from_raw_os_error(libc::ENOSPC))
}

impl SimDir {
    /// The state, if the dir is there (else its ENOENT).
    fn present(&self) -> io::Result<std::sync::MutexGuard<'_, State>> {
        let s = self.state();
        if !s.exists {
            return Err(io::Error::new(io::ErrorKind::NotFound, format!("{:?}: no such directory", self.path)));
        }
        Ok(s)
    }

    /// The state, if the dir is there and takes a change (`write`: one that adds bytes).
    fn changeable(&self, write: bool) -> io::Result<std::sync::MutexGuard<'_, State>> {
        let s = self.present()?;
        refused(&s, write).map_or(Ok(s), Err)
    }

    fn log_exec(&self) {
        if let Some(execs) = self.state().execs.as_mut() {
            execs.push(clock::now());
        }
    }

    /// Stores `bytes` under `name` and tells the watches.
    fn put(&self, name: &str, bytes: Vec<u8>, append: bool) -> io::Result<()> {
        let (tell, change) = {
            let mut s = self.changeable(true)?;
            let existed = s.files.contains_key(name);
            let slot = s.files.entry(name.to_owned()).or_default();
            if append {
                slot.extend_from_slice(&bytes);
            } else {
                *slot = bytes;
            }
            (watchers(&s), if existed { Change::Modified } else { Change::Appeared })
        };
        tell(&[(name, change)]);
        Ok(())
    }
}

/// The watches to tell of changes, read under the lock: the returned function tells them,
/// once the caller has released it. Under a queue overflow every change is a rescan.
fn watchers(s: &State) -> impl Fn(&[(&str, Change)]) {
    let cbs: Vec<Arc<OnSeen>> =
        s.watches.iter().filter(|w| w.generation == s.generation).map(|w| w.on_seen.clone()).collect();
    let overflow = s.faults.contains(&SimFault::QueueOverflow);
    move |changes: &[(&str, Change)]| {
        for cb in &cbs {
            for (name, change) in changes {
                cb(if overflow { Seen::Rescan } else { Seen::Name(name, *change) });
            }
        }
    }
}

struct SimWatch {
    dir: SimDir,
    id: u64,
    armed: std::sync::atomic::AtomicBool,
}

impl WatchHandle for SimWatch {
    fn disarm(&self) {
        if self.armed.swap(false, std::sync::atomic::Ordering::AcqRel) {
            let mut s = self.dir.state();
            if let Some(i) = s.watches.iter().position(|w| w.id == self.id) {
                s.watches.remove(i);
            }
        }
    }

    fn on_stale(&self, on_stale: Box<dyn Fn() + Send + Sync>) -> bool {
        let mut s = self.dir.state();
        let live = s.generation;
        match s.watches.iter_mut().find(|w| w.id == self.id) {
            Some(w) if w.generation == live => {
                w.on_stale = Some(Arc::from(on_stale));
                true
            }
            _ => false,
        }
    }
}

impl Drop for SimWatch {
    fn drop(&mut self) {
        self.disarm();
    }
}

impl RelayDir for SimDir {
    fn list(&self) -> io::Result<Vec<String>> {
        let s = self.present()?;
        Ok(s.files.keys().cloned().collect())
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        let s = self.present()?;
        s.files.get(name).cloned().ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{name}: not found")))
    }

    fn read_present(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        let s = self.present()?;
        Ok(s.files.get(name).cloned())
    }

    fn stat(&self, name: &str) -> io::Result<u64> {
        self.read(name).map(|b| b.len() as u64)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.put(name, bytes.to_vec(), false)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let tell = {
            let mut s = self.changeable(false)?;
            let bytes = s
                .files
                .remove(from)
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{from}: not found")))?;
            s.files.insert(to.to_owned(), bytes);
            watchers(&s)
        };
        tell(&[(from, Change::Removed), (to, Change::Appeared)]);
        Ok(())
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        let tell = {
            let mut s = self.changeable(false)?;
            if s.files.remove(name).is_none() {
                return Ok(());
            }
            watchers(&s)
        };
        tell(&[(name, Change::Removed)]);
        Ok(())
    }

    fn watch(&self, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>> {
        let mut s = self.present()?;
        if s.faults.contains(&SimFault::WatchLimit) {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "inotify watch limit reached (ENOSPC)"));
        }
        if s.faults.contains(&SimFault::WatchInstances) {
            return Err(io::Error::other("too many inotify instances (EMFILE)"));
        }
        let id = s.next_watch;
        s.next_watch += 1;
        let generation = s.generation;
        s.watches.push(Watch { id, generation, on_seen: Arc::new(on_seen), on_stale: None });
        Ok(Box::new(SimWatch { dir: self.clone(), id, armed: std::sync::atomic::AtomicBool::new(true) }))
    }

    fn exec(&self, argv: &[OsString], timeout: Duration) -> BoxFut<'static, io::Result<ExecOutput>> {
        // The argv is only read: read now (the program's name, what it is asked) instead of
        // copied into the exec.
        let (dir, asked) = (self.clone(), (argv.first().cloned(), WatchArgs::parse_argv(argv)));
        Box::pin(async move {
            Ok(clock::timeout(timeout, dir.run_program(asked)).await.unwrap_or_else(|_| ExecOutput::timed_out()))
        })
    }

    fn exec_follow(&self, argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines> {
        self.log_exec();
        if self.has_fault(SimFault::ProgramMissing) {
            return Err(io::Error::new(io::ErrorKind::NotFound, "the watch program is not installed"));
        }
        let args = WatchArgs::parse_argv(argv).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let (raw_tx, mut raw) = tokio::sync::mpsc::channel::<String>(64);
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let (hang, fail) = (self.has_fault(SimFault::ExecHang), self.has_fault(SimFault::ExecFail));
        let dir = self.clone();
        tokio::spawn(async move {
            if fail {
                return; // the stream ends without `end`: a drop
            }
            if hang {
                tx.closed().await;
                return;
            }
            let view = dir.view_at(&args.dir);
            let program = async move { program::follow(view.as_ref(), &args, raw_tx).await };
            let forward = async move {
                while let Some(line) = raw.recv().await {
                    if let Some(d) = &delay {
                        d().await;
                    }
                    if tx.send(line).await.is_err() {
                        return;
                    }
                }
            };
            tokio::join!(program, forward);
        });
        Ok(rx)
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        Box::pin(async move {
            if !self.has_fault(SimFault::ChunkedPublish) {
                return super::publish_now(self, name, bytes);
            }
            // Four chunks 50 ms apart: the temp name holds partial bytes meanwhile.
            let tmp = crate::base::fsio::temp_name(name);
            for (i, chunk) in bytes.chunks(bytes.len().div_ceil(4).max(1)).enumerate() {
                if i > 0 {
                    clock::sleep(Duration::from_millis(50)).await;
                }
                self.put(&tmp, chunk.to_vec(), true)?;
            }
            self.rename(&tmp, name)
        })
    }
}

impl SimDir {
    /// The sandbox's answer to running a program (its name, and its argv read as the watch
    /// program's): the watch program, unless a fault says otherwise.
    async fn run_program(
        &self,
        (prog, asked): (Option<OsString>, Result<WatchArgs, program::WatchArgsError>),
    ) -> ExecOutput {
        self.log_exec();
        // Starting a program gives the CPU away: the runner's other work runs before it
        // lists, as it would while a real process starts (here it costs no simulated time).
        tokio::task::yield_now().await;
        if self.has_fault(SimFault::ProgramMissing) {
            let prog = prog.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            return ExecOutput::exited(127, "", format!("sh: {prog}: not found"));
        }
        let args = match asked {
            Ok(a) if !a.follow => a,
            Ok(_) => return ExecOutput::exited(2, "", "sandbox-watch: --follow streams; use a followed exec"),
            Err(e) => return ExecOutput::exited(2, "", format!("sandbox-watch: {e}")),
        };
        if self.has_fault(SimFault::ExecHang) {
            std::future::pending::<()>().await;
        }
        if self.has_fault(SimFault::ExecFail) {
            return ExecOutput::exited(1, "", "sandbox-watch: killed (simulated failure)");
        }
        let hook = self.state().hook.clone();
        let step = move |s: Step| hook.iter().for_each(|h| h(s));
        let view = self.view_at(&args.dir);
        program::run(view.as_ref(), &args, &step).await
    }

    /// What a program sees at `path`: this directory, or nothing (a path that is not it: a
    /// directory that does not exist).
    fn view_at(&self, path: &Path) -> Box<dyn RelayDir> {
        if path == &*self.path {
            Box::new(self.clone())
        } else {
            Box::new(SimDir { path: path.into(), state: Arc::default() })
        }
    }
}
