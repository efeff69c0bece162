//! Where a case runs: its relay dirs, its clock's pacer, and the sandbox-side faults it
//! can produce. [`Real`] is this machine (directories under a temp root, the pacer on an
//! OS thread, program faults through a symlink to the watch program); [`Virtual`] is the
//! in-memory sandbox on a paused tokio clock. The engine's recipe is the same for both.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::base::signal::Signal;
use crate::base::BoxFut;
use crate::sandbox::dir::{RealDir, RelayDir, SimDir, SimFault};
use crate::sandbox::host::{NotApplied, SandboxControl};
use crate::scenario::pacer::Slot;

/// Starts one call: its sandbox, its id, its intended start, whether it is warm-up.
pub(crate) type Fire = Arc<dyn Fn(u32, String, Instant, bool) + Send + Sync>;

/// Why the sandbox side of a case could not be readied: the step that failed, and why.
#[derive(Debug, thiserror::Error)]
pub enum PrepareError {
    #[error("no daemon to reach the sandbox through")]
    NoDaemon,
    #[error("{what}: {why}")]
    Step { what: &'static str, why: std::io::Error },
}

/// An open-loop schedule to fire: its slots from `epoch`, over `length`, until `stop`.
pub(crate) struct Schedule {
    pub slots: Vec<Slot>,
    pub epoch: Instant,
    pub length: Duration,
    pub stop: Arc<Signal>,
}

/// The part of a case that depends on its clock.
pub(crate) trait Backend: Send + Sync {
    /// Makes the relay dir of one sandbox.
    fn make_dir(&mut self, sandbox: u32) -> io::Result<Arc<dyn RelayDir>>;
    /// The watch program as the sandbox runs it.
    fn watch_program(&self) -> PathBuf;
    /// Where a black-box runner's stderr goes when the run keeps no directory of its own.
    fn scratch(&self) -> PathBuf;
    /// Turns a sandbox-side condition on or off (the daemon's faults are the host's).
    fn switch(&self, sandbox: u32, condition: SimFault, on: bool) -> Result<(), NotApplied>;
    /// Deletes the relay dir (`delete`) and/or creates it again (`recreate`).
    fn replace_dir(&self, sandbox: u32, delete: bool, recreate: bool) -> Result<(), NotApplied>;
    /// Fires every slot at its intended start; ends with (fired, stopped early).
    fn pace(&self, schedule: Schedule, fire: Fire) -> JoinHandle<(usize, bool)>;

    /// The calls run elsewhere (the in-sandbox side in the sandbox): the pacer's task ends
    /// when they all have, and their events arrive at the end ([`Backend::finish`]).
    fn settles_calls(&self) -> bool {
        false
    }
    /// How often progress is reported, given the real-clock period asked for.
    fn progress_every(&self, real: Duration) -> Duration {
        real
    }
    /// Time between the runners being ready and the first intended start.
    fn lead(&self) -> Duration {
        Duration::from_millis(100)
    }
    /// Hands over relay-bench's own way into sandbox `sandbox`, if its host has one.
    fn attach(&mut self, _sandbox: u32, _control: Option<Arc<SandboxControl>>) {}
    /// Readies the sandbox side once every host is built, before any runner starts.
    fn prepare(&mut self) -> BoxFut<'_, Result<(), PrepareError>> {
        Box::pin(std::future::ready(Ok(())))
    }
    /// The case ends before its calls ran (a runner not ready): what `prepare` laid out is
    /// removed.
    fn abandon(&mut self) -> BoxFut<'_, ()> {
        Box::pin(std::future::ready(()))
    }
    /// Once the runners have stopped: their messages (`runner`) joined with what the calls'
    /// side recorded elsewhere; `None` when the calls ran here.
    fn finish(&mut self, _runner: Vec<crate::events::Msg>) -> BoxFut<'_, Option<Finished>> {
        Box::pin(std::future::ready(None))
    }
}

/// What the case's end hands the engine: every message in one order, the relay files left,
/// and what the report says of the sandbox side.
pub(crate) struct Finished {
    pub msgs: Vec<crate::events::Msg>,
    pub leftover: u64,
    pub side: crate::results::summary::SandboxSide,
    /// Problems met (said as notices).
    pub problems: Vec<String>,
    /// A writer whose response watch degraded, by what it said.
    pub degraded: Vec<String>,
}

/// The in-memory sandbox on a paused clock.
#[derive(Default)]
pub(crate) struct Virtual {
    sims: Vec<SimDir>,
}

impl Backend for Virtual {
    fn make_dir(&mut self, sandbox: u32) -> io::Result<Arc<dyn RelayDir>> {
        // A hostile name (SPEC §6): quotes, spaces, a newline, shell metacharacters. It
        // travels to the watch program in argv and must come back intact.
        let sim = SimDir::unlogged(format!("/sandbox-{sandbox}/relay 'q' \"dq\" $(x) ;&\n|"));
        self.sims.push(sim.clone());
        Ok(Arc::new(sim))
    }

    fn watch_program(&self) -> PathBuf {
        PathBuf::from("relay-bench")
    }

    fn scratch(&self) -> PathBuf {
        std::env::temp_dir()
    }

    fn switch(&self, sandbox: u32, condition: SimFault, on: bool) -> Result<(), NotApplied> {
        self.sims.get(sandbox as usize).ok_or(NotApplied::NoSuchSandbox(sandbox))?.set_fault(condition, on);
        Ok(())
    }

    fn replace_dir(&self, sandbox: u32, delete: bool, recreate: bool) -> Result<(), NotApplied> {
        let sim = self.sims.get(sandbox as usize).ok_or(NotApplied::NoSuchSandbox(sandbox))?;
        if delete {
            sim.delete_dir();
        }
        if recreate {
            sim.recreate();
        }
        Ok(())
    }

    fn pace(&self, Schedule { slots, epoch, length, stop }: Schedule, fire: Fire) -> JoinHandle<(usize, bool)> {
        tokio::spawn(async move {
            let fire = |slot: &Slot, at: Instant| fire(slot.sandbox, slot.call_id(), at, slot.warmup);
            crate::scenario::pacer::pace_async(&slots, epoch, length, || stop.is_closed(), fire).await
        })
    }

    /// Every 10 simulated seconds: a tick costs one timer, and the line is shown as often
    /// as its sink lets it (a terminal redraws it, a log takes a line a minute).
    fn progress_every(&self, _real: Duration) -> Duration {
        Duration::from_secs(10)
    }
}

/// This machine: real directories, real processes, the real clock.
pub(crate) struct Real {
    root: tempfile::TempDir,
    paths: Vec<PathBuf>,
    program: PathBuf,
    switch: Option<ProgramSwitch>,
}

impl Real {
    /// Relay dirs under a fresh temp dir in `relay_root`; with `program_faults`, the watch
    /// program is reached through a symlink the schedule can point elsewhere.
    pub(crate) fn new(relay_root: &Path, case: &str, program: &Path, program_faults: bool) -> io::Result<Real> {
        let root = tempfile::Builder::new().prefix(&format!("relay-bench-{case}-")).tempdir_in(relay_root)?;
        let switch = if program_faults { Some(ProgramSwitch::new(root.path(), program)?) } else { None };
        let program = switch.as_ref().map_or_else(|| program.to_path_buf(), |s| s.link.clone());
        Ok(Real { root, paths: Vec::new(), program, switch })
    }
}

impl Backend for Real {
    fn make_dir(&mut self, sandbox: u32) -> io::Result<Arc<dyn RelayDir>> {
        let path = self.root.path().join(format!("sandbox-{sandbox}"));
        std::fs::create_dir(&path)?;
        self.paths.push(path.clone());
        Ok(Arc::new(RealDir::new(path)))
    }

    fn watch_program(&self) -> PathBuf {
        self.program.clone()
    }

    fn scratch(&self) -> PathBuf {
        self.root.path().to_path_buf()
    }

    fn switch(&self, _sandbox: u32, condition: SimFault, on: bool) -> Result<(), NotApplied> {
        let sw = self.switch.as_ref().ok_or(NotApplied::NoProgramSwitch)?;
        let target = match (on, condition) {
            (false, _) => Some(sw.real.as_path()),
            (true, SimFault::ProgramMissing) => None,
            (true, SimFault::ExecHang) => Some(sw.hang.as_path()),
            (true, SimFault::ExecFail) => Some(sw.fail.as_path()),
            (true, other) => return Err(NotApplied::VirtualOnly(format!("{other:?}"))),
        };
        sw.point(target).map_err(|source| NotApplied::Io { what: "switch the watch program".into(), source })
    }

    fn replace_dir(&self, sandbox: u32, delete: bool, recreate: bool) -> Result<(), NotApplied> {
        let path = self.paths.get(sandbox as usize).ok_or(NotApplied::NoSuchSandbox(sandbox))?;
        let res = if delete { std::fs::remove_dir_all(path) } else { Ok(()) };
        let res = res.and_then(|_| if recreate { std::fs::create_dir_all(path) } else { Ok(()) });
        res.map_err(|source| NotApplied::Io { what: format!("replace {}", path.display()), source })
    }

    fn pace(&self, schedule: Schedule, fire: Fire) -> JoinHandle<(usize, bool)> {
        pace_on_a_thread(schedule, fire)
    }
}

/// Fires every slot at its intended start on the real clock (the pacer of this machine,
/// and of the in-sandbox writer). The pacer runs on its own OS thread: tokio's timer wheel
/// ticks in whole milliseconds, a thread sleep is precise to tens of microseconds, and the
/// pacer must not add lag.
pub(crate) fn pace_on_a_thread(
    Schedule { slots, epoch, length, stop }: Schedule,
    fire: Fire,
) -> JoinHandle<(usize, bool)> {
    let epoch_std = epoch.into_std();
    tokio::task::spawn_blocking(move || {
        let fire = |slot: &Slot, at| fire(slot.sandbox, slot.call_id(), Instant::from_std(at), slot.warmup);
        crate::scenario::pacer::pace(&slots, epoch_std, length, || stop.is_closed(), fire)
    })
}

/// The watch program of a real-clock case with program faults: a symlink the schedule
/// points at the real program, at nothing (missing), or at a script that hangs or fails.
struct ProgramSwitch {
    link: PathBuf,
    real: PathBuf,
    hang: PathBuf,
    fail: PathBuf,
}

impl ProgramSwitch {
    /// Sets up `dir/bin/` with the link and the two scripts.
    fn new(dir: &Path, real: &Path) -> io::Result<ProgramSwitch> {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin)?;
        let script = |name: &str, body: &str| -> io::Result<PathBuf> {
            let p = bin.join(name);
            std::fs::write(&p, body)?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
            Ok(p)
        };
        let hang = script("hang.sh", "#!/bin/sh\n# a watch exec that never settles\nexec sleep 86400\n")?;
        let fail = script("fail.sh", "#!/bin/sh\necho 'sandbox-watch: simulated failure' >&2\nexit 1\n")?;
        let sw = ProgramSwitch { link: bin.join("relay-bench"), real: real.to_path_buf(), hang, fail };
        sw.point(Some(&sw.real.clone()))?;
        Ok(sw)
    }

    fn point(&self, to: Option<&Path>) -> io::Result<()> {
        match to {
            None => crate::base::fsio::remove_if_present(&self.link),
            Some(target) => {
                let tmp = self.link.with_extension("new");
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(target, &tmp)?;
                std::fs::rename(&tmp, &self.link)
            }
        }
    }
}
