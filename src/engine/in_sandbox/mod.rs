//! The in-sandbox side run in the sandbox itself (`in_sandbox = true` on a sandbox-agent
//! host): the [`Backend`] of a case whose relay dirs, writer and watch program are where the
//! daemon is, reached only through it. Before the runners start it lays the case out under
//! a fresh root in the sandbox (relay dirs, this very binary uploaded, the scenario) and
//! reads the sandbox's clock; at the epoch it starts one writer per sandbox
//! ([`program`], a background process of the daemon) with its start time on the sandbox's
//! clock; when they have ended it brings their logs back, reads the clock again, and puts
//! the writers' events on this machine's clock ([`log`]) to join the runner's.
//!
//! Layout under the root: `bin/relay-bench`, `scenario.toml`, `sandbox-K/` (relay dirs),
//! `writer-K.ndjson` (logs), `stop` (written on an interrupt).

pub(crate) mod log;
pub(crate) mod program;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use self::log::{read_log, ClockFit, WriterLog};
use self::program::WriterArgs;
use super::backend::{Backend, Finished, Fire, PrepareError, Schedule};
use crate::base::clock;
use crate::base::protocol::{classify, FileKind};
use crate::base::signal::Signal;
use crate::base::units::{monotonic_ns, Mono};
use crate::base::BoxFut;
use crate::events::Msg;
use crate::relay::writer::writer_deadline;
use crate::results::summary::SandboxSide;
use crate::sandbox::dir::{ExecOutput, LineDelay, Lines, OnSeen, RelayDir, SimFault, WatchHandle};
use crate::sandbox::host::{ClockReading, NotApplied, ProcessState, SandboxControl};
use crate::scenario::pacer::Workload;

/// Clock readings taken before the case and again after it (the best of each is used).
const READINGS: usize = 5;
/// How long the writers get to be started before the first intended start.
const LEAD: Duration = Duration::from_secs(2);
/// How often the writers' processes are looked at while they run.
const POLL: Duration = Duration::from_millis(50);
/// Beyond the schedule and the writer deadline, how long the writers may take to end.
const END_MARGIN: Duration = Duration::from_secs(30);

/// Where a case's files are in the sandbox, under its root.
#[derive(Debug, Clone)]
struct Layout {
    root: String,
}

impl Layout {
    fn program(&self) -> String {
        format!("{}/bin/relay-bench", self.root)
    }
    fn scenario(&self) -> String {
        format!("{}/scenario.toml", self.root)
    }
    fn dir(&self, sandbox: u32) -> String {
        format!("{}/sandbox-{sandbox}", self.root)
    }
    fn log(&self, sandbox: u32) -> String {
        format!("{}/writer-{sandbox}.ndjson", self.root)
    }
    fn stop(&self) -> String {
        format!("{}/stop", self.root)
    }
}

pub(crate) struct InSandbox {
    /// The sandboxes, the layout and the clock before the case: what the pacer task is given.
    w: Writers,
    scratch: tempfile::TempDir,
    program_local: PathBuf,
    scenario_text: Arc<str>,
    workload: Workload,
    version: Option<String>,
    program_bytes: u64,
    upload: Duration,
}

/// A relay dir in the sandbox: only its path is known here; every operation on it is the
/// daemon's (the runner's through its host, relay-bench's through [`SandboxControl`]).
struct SandboxDir(PathBuf);

fn elsewhere<T>() -> io::Result<T> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "this relay dir is in the sandbox: reached through its daemon only"))
}

impl RelayDir for SandboxDir {
    fn list(&self) -> io::Result<Vec<String>> {
        elsewhere()
    }
    fn read(&self, _: &str) -> io::Result<Vec<u8>> {
        elsewhere()
    }
    fn stat(&self, _: &str) -> io::Result<u64> {
        elsewhere()
    }
    fn write(&self, _: &str, _: &[u8]) -> io::Result<()> {
        elsewhere()
    }
    fn rename(&self, _: &str, _: &str) -> io::Result<()> {
        elsewhere()
    }
    fn remove(&self, _: &str) -> io::Result<()> {
        elsewhere()
    }
    fn watch(&self, _: OnSeen) -> io::Result<Box<dyn WatchHandle>> {
        elsewhere()
    }
    fn exec(&self, _: &[std::ffi::OsString], _: Duration) -> BoxFut<'static, io::Result<ExecOutput>> {
        Box::pin(std::future::ready(elsewhere()))
    }
    fn exec_follow(&self, _: &[std::ffi::OsString], _: Option<LineDelay>) -> io::Result<Lines> {
        elsewhere()
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl InSandbox {
    /// A case laid out under a fresh root in `sandbox_root` (in the sandbox), running
    /// `program` (this binary) there.
    pub(crate) fn new(
        sandbox_root: &str,
        case: &str,
        program: &Path,
        scenario_text: Arc<str>,
        workload: Workload,
    ) -> io::Result<InSandbox> {
        let nonce = monotonic_ns() % 1_000_000_000;
        let root = format!("{}/relay-bench-{case}-{}-{nonce}", sandbox_root.trim_end_matches('/'), std::process::id());
        let w = Writers {
            controls: Vec::new(),
            at: Layout { root },
            case: case.to_owned(),
            before: Vec::new(),
            problems: Arc::default(),
        };
        Ok(InSandbox {
            w,
            scratch: tempfile::Builder::new().prefix("relay-bench-").tempdir()?,
            program_local: program.to_path_buf(),
            scenario_text,
            workload,
            version: None,
            program_bytes: 0,
            upload: Duration::ZERO,
        })
    }

    async fn lay_out(&mut self) -> Result<(), PrepareError> {
        let c = self.w.controls.first().ok_or(PrepareError::NoDaemon)?.clone();
        let ctx = |what: &'static str| move |why: io::Error| PrepareError::Step { what, why };
        c.mkdir(&format!("{}/bin", self.w.at.root)).await.map_err(ctx("making the case's root in the sandbox"))?;
        for k in 0..self.w.controls.len() as u32 {
            c.mkdir(&self.w.at.dir(k)).await.map_err(ctx("making a relay dir in the sandbox"))?;
        }
        let t0 = clock::now();
        self.program_bytes = c
            .upload_program(&self.program_local, &self.w.at.program())
            .await
            .map_err(ctx("uploading relay-bench to the sandbox"))?;
        self.upload = t0.elapsed();
        c.put(&self.w.at.scenario(), self.scenario_text.as_bytes().to_vec())
            .await
            .map_err(ctx("uploading the scenario"))?;
        self.version = c.version().await.ok();
        for _ in 0..READINGS {
            let r = c.read_clock(&self.w.at.program()).await.map_err(ctx("reading the sandbox's clock"))?;
            self.w.before.push(r);
        }
        Ok(())
    }

    /// The clock read again, and the writers' logs brought back and put on this clock.
    async fn bring_back(&self, problems: &mut Vec<String>) -> (Vec<WriterLog>, ClockFit) {
        let mono = Mono::now();
        let program = self.w.at.program();
        let mut after = Vec::new();
        if let Some(c) = self.w.controls.first() {
            for _ in 0..READINGS {
                match c.read_clock(&program).await {
                    Ok(r) => after.push(r),
                    Err(e) => {
                        problems.push(format!("cannot read the sandbox's clock after the case: {e}"));
                        break;
                    }
                }
            }
        }
        let fit = ClockFit::of(&self.w.before, &after).expect("prepare took the readings before");
        let mut logs = Vec::new();
        for (k, ctl) in self.w.controls.iter().enumerate() {
            let text = match ctl.get(&self.w.at.log(k as u32)).await {
                Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                Err(e) => {
                    problems.push(format!("sandbox {k}: cannot bring its writer's log back: {e}"));
                    String::new()
                }
            };
            let log = read_log(&text, k as u32, &fit, &mono);
            if let Some(why) = &log.fatal {
                problems.push(format!("sandbox {k}: its writer could not run: {why}"));
            }
            if log.bad_lines > 0 {
                problems.push(format!("sandbox {k}: {} lines of its writer's log could not be read", log.bad_lines));
            }
            if log.end.is_none() {
                problems.push(format!("sandbox {k}: its writer's log has no end (it did not finish)"));
            }
            logs.push(log);
        }
        (logs, fit)
    }
}

impl Backend for InSandbox {
    fn make_dir(&mut self, sandbox: u32) -> io::Result<Arc<dyn RelayDir>> {
        Ok(Arc::new(SandboxDir(PathBuf::from(self.w.at.dir(sandbox)))))
    }

    fn watch_program(&self) -> PathBuf {
        PathBuf::from(self.w.at.program())
    }

    fn scratch(&self) -> PathBuf {
        self.scratch.path().to_path_buf()
    }

    fn switch(&self, _: u32, _: SimFault, _: bool) -> Result<(), NotApplied> {
        Err(NotApplied::DaemonOnly("no program switch"))
    }

    fn replace_dir(&self, _: u32, _: bool, _: bool) -> Result<(), NotApplied> {
        Err(NotApplied::DaemonOnly("its dirs are not replaced"))
    }

    fn pace(&self, Schedule { slots, epoch, length, stop }: Schedule, _: Fire) -> JoinHandle<(usize, bool)> {
        let run = self.w.clone();
        let fired = slots.len();
        let bound = length + writer_deadline(self.workload.tool_timeout) + END_MARGIN;
        tokio::spawn(async move { run.run(epoch, stop, fired, bound).await })
    }

    fn settles_calls(&self) -> bool {
        true
    }

    fn lead(&self) -> Duration {
        LEAD
    }

    fn attach(&mut self, _sandbox: u32, control: Option<Arc<SandboxControl>>) {
        if let Some(c) = control {
            self.w.controls.push(c);
        }
    }

    fn prepare(&mut self) -> BoxFut<'_, Result<(), PrepareError>> {
        Box::pin(async move {
            let laid = self.lay_out().await;
            if laid.is_err() {
                // Nothing is left half laid out in the sandbox.
                self.abandon().await;
            }
            laid
        })
    }

    fn abandon(&mut self) -> BoxFut<'_, ()> {
        Box::pin(async move {
            if let Some(c) = self.w.controls.first() {
                let _ = c.remove_tree(&self.w.at.root).await;
            }
        })
    }

    fn finish(&mut self, runner: Vec<Msg>) -> BoxFut<'_, Option<Finished>> {
        Box::pin(async move {
            let mut problems = std::mem::take(&mut *self.w.problems.lock().expect("problems poisoned"));
            let (logs, fit) = self.bring_back(&mut problems).await;
            let degraded = logs.iter().filter_map(|l| l.degraded.clone()).collect();
            let msgs = log::merge(runner, logs.into_iter().map(|l| l.msgs).collect());
            let mut leftover = 0u64;
            for (k, ctl) in self.w.controls.iter().enumerate() {
                match ctl.names(&self.w.at.dir(k as u32)).await {
                    Ok(names) => leftover += names.iter().filter(|n| classify(n) != FileKind::Other).count() as u64,
                    Err(e) => problems.push(format!("sandbox {k}: cannot list its relay dir at the end: {e}")),
                }
            }
            if let Some(ctl) = self.w.controls.first() {
                if let Err(e) = ctl.remove_tree(&self.w.at.root).await {
                    problems.push(format!("cannot remove {} in the sandbox: {e}", self.w.at.root));
                }
            }
            let side = SandboxSide {
                root: self.w.at.root.clone(),
                daemon_version: self.version.clone(),
                program_bytes: self.program_bytes,
                upload_ms: crate::base::units::ms_2dp(self.upload),
                clock_offset_ms: (fit.offset_ns() / 1e3).round() / 1e3,
                clock_uncertainty_ms: fit.uncertainty_ns as f64 / 1e6,
                clock_drift_ppm: (fit.drift_ppm() * 10.0).round() / 10.0,
                clock_readings: fit.readings as u32,
            };
            Some(Finished { msgs, leftover, side, problems, degraded })
        })
    }
}

/// The pacer's task: the writers started and watched to their end.
#[derive(Clone)]
struct Writers {
    controls: Vec<Arc<SandboxControl>>,
    at: Layout,
    case: String,
    before: Vec<ClockReading>,
    /// What the pacer task met, for the end.
    problems: Arc<Mutex<Vec<String>>>,
}

impl Writers {
    /// Returns the calls scheduled (all fired unless stopped) and whether it was stopped;
    /// writers still running `bound` after `epoch` are killed.
    async fn run(self, epoch: Instant, stop: Arc<Signal>, fired: usize, bound: Duration) -> (usize, bool) {
        let mono = Mono::now();
        let mut problems = Vec::new();
        let Some(fit0) = ClockFit::of(&self.before, &[]) else {
            self.problems.lock().expect("problems poisoned").push("no clock reading".into());
            return (0, true);
        };
        let start_ns = fit0.to_sandbox(mono.ns_of(epoch));
        let stop_file = self.at.stop();
        let mut ids = Vec::new();
        for (k, ctl) in self.controls.iter().enumerate() {
            let args = WriterArgs {
                scenario: self.at.scenario().into(),
                case: self.case.clone(),
                sandbox: k as u32,
                dir: self.at.dir(k as u32).into(),
                start_ns,
                events: self.at.log(k as u32).into(),
                stop: stop_file.clone().into(),
            };
            let id = ctl.spawn(&args.argv(&self.at.program())).await;
            ids.push(id.inspect_err(|e| problems.push(format!("sandbox {k}: cannot start its writer: {e}"))).ok());
        }
        // Watch them to their end; an interrupt is a stop file they look for.
        let (deadline, mut stop_sent) = (epoch + bound, false);
        loop {
            tokio::select! {
                () = clock::sleep(POLL) => {}
                () = stop.closed(), if !stop_sent => {}
            }
            if stop.is_closed() && !stop_sent {
                stop_sent = true;
                if let Err(e) = self.controls[0].put(&stop_file, b"stop\n".to_vec()).await {
                    problems.push(format!("cannot tell the writers to stop: {e}"));
                }
            }
            let mut running = 0;
            for (k, slot) in ids.iter_mut().enumerate() {
                let Some(id) = slot.as_deref() else { continue };
                match self.controls[k].state(id).await {
                    Ok(ProcessState::Running) => running += 1,
                    Ok(ProcessState::Exited(code)) => {
                        if code != Some(0) {
                            let how = code.map_or_else(|| "by a signal".to_owned(), |c| format!("with {c}"));
                            problems.push(format!("sandbox {k}: its writer exited {how}"));
                        }
                        *slot = None;
                    }
                    // The daemon may be down for a moment (a fault on it): look again.
                    Err(_) => running += 1,
                }
            }
            if running == 0 {
                break;
            }
            if clock::now() > deadline {
                problems.push(format!(
                    "the writers were still running {} after the first intended start: killed",
                    crate::base::units::human(bound)
                ));
                for (k, id) in ids.iter().enumerate() {
                    if let Some(id) = id {
                        let _ = self.controls[k].kill(id).await;
                    }
                }
                break;
            }
        }
        self.problems.lock().expect("problems poisoned").extend(problems);
        (fired, stop.is_closed())
    }
}
