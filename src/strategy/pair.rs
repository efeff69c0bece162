//! One relay dir's pair: a running runner and its writer, over one host. The engine runs
//! one per sandbox; tests and benchmarks use it to drive a single relay directly.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::base::clock;
use crate::events::EventSink;
use crate::relay::handler::HandlerModel;
use crate::relay::runner::{Control, ParkFn, RunnerReport};
use crate::relay::source::Reporter;
use crate::relay::writer::{CallEnd, CallSpec, Writer};
use crate::sandbox::dir::RelayDir;
use crate::sandbox::host::{Busy, Host};
use crate::strategy::{Parts, RunnerSpec, WriterSpec};

/// A runner that could not be stopped cleanly (reported as a stuck runner; the case goes on).
#[derive(Debug, thiserror::Error)]
pub enum StopError {
    #[error("no runner under way (between turns)")]
    NoRunner,
    #[error("runner task failed: {0}")]
    Failed(tokio::task::JoinError),
    #[error("runner did not stop in time; aborted")]
    Timeout,
}

/// Everything one relay dir's pair is built from.
pub struct RelaySpec<'a> {
    /// The sandbox the relay serves.
    pub sandbox: u32,
    /// The relay dir.
    pub dir: Arc<dyn RelayDir>,
    /// The runner's counted view of the dir.
    pub host: Arc<dyn Host>,
    /// The dir's in-flight gauge, shared by the writer and the host.
    pub busy: Arc<Busy>,
    /// The runner strategy.
    pub runner: &'a Arc<RunnerSpec>,
    /// The writer here; `None` when the calls are made elsewhere (a writer in the sandbox).
    pub writer: Option<&'a WriterSpec>,
    /// The tool the runner calls.
    pub handler: Arc<HandlerModel>,
    /// The relay-bench binary, run in the sandbox by window-exec strategies.
    pub watch_program: &'a Path,
    /// Seeds the strategy's draws (window jitter).
    pub seed: u64,
    /// Where a black-box runner's stderr is kept (`None`: the system temp dir).
    pub stderr_to: Option<PathBuf>,
}

/// What it takes to start the runner again (after a stop during a held window).
struct RunnerParts {
    dir: Arc<dyn RelayDir>,
    strategy: Arc<RunnerSpec>,
    handler: Arc<HandlerModel>,
    watch_program: PathBuf,
    seed: u64,
    sink: EventSink,
    stderr_to: PathBuf,
    on_park: ParkFn,
}

/// A started relay on one dir: its runner (restartable) and its writer.
pub struct Relay {
    /// The sandbox the relay serves.
    pub sandbox: u32,
    /// The runner's counted view of the dir.
    pub host: Arc<dyn Host>,
    /// `None` when the calls are made elsewhere.
    pub writer: Option<Arc<Writer>>,
    parts: RunnerParts,
    runner: Mutex<Runners>,
    /// The dir's gauge: calls in flight, and whether a relay is alive on it.
    busy: Arc<Busy>,
}

/// The runner of the turn under way, if any, and every runner this relay ran before.
#[derive(Default)]
struct Runners {
    live: Option<(Arc<Control>, JoinHandle<RunnerReport>)>,
    /// The runners stopped (a turn's end, a restart), their reports summed
    /// ([`RunnerReport::add`]), so a fleet's day of turns keeps one report a relay.
    earlier: Option<RunnerReport>,
    /// Their controls, kept while a closed source's abandoned exec runs on (until it ends,
    /// at the latest the case's end): a fleet's day of turns keeps only the few still running.
    lingering: Vec<Arc<Control>>,
}

impl Runners {
    fn stopped(&mut self, report: RunnerReport, control: Arc<Control>) {
        match &mut self.earlier {
            Some(sum) => sum.add(report),
            None => self.earlier = Some(report),
        }
        self.lingering.retain(|c| !c.settled());
        self.lingering.push(control);
    }
}

impl Relay {
    /// Builds both sides and starts the runner loop (inside a tokio runtime): one turn that
    /// lasts until [`Relay::stop`].
    pub fn start(spec: RelaySpec<'_>, sink: &EventSink) -> Relay {
        let relay = Relay::idle(spec, sink);
        relay.begin_turn();
        relay
    }

    /// Builds both sides with no runner yet: each agent turn starts one
    /// ([`Relay::begin_turn`]) and stops it ([`Relay::end_turn`]), as production does.
    pub fn idle(spec: RelaySpec<'_>, sink: &EventSink) -> Relay {
        let writer = spec.writer.map(|w| {
            let waiter = w.build(&spec.dir, Reporter::new(sink.clone(), spec.sandbox));
            let writer = Writer::new(spec.sandbox, spec.dir.clone(), waiter, sink.clone())
                .with_busy(spec.busy.clone())
                .with_cleanup(w.cleanup());
            Arc::new(writer)
        });
        // A pause with no answer ends the call's turn: its writer is told out of band.
        let w = writer.as_ref().map(Arc::downgrade);
        let on_park: ParkFn = Arc::new(move |file_id: &str| {
            if let Some(w) = w.as_ref().and_then(std::sync::Weak::upgrade) {
                w.park(file_id);
            }
        });
        let stderr_to =
            spec.stderr_to.unwrap_or_else(|| std::env::temp_dir().join(format!("relay-bench-{}.stderr", spec.sandbox)));
        let parts = RunnerParts {
            dir: spec.dir,
            strategy: spec.runner.clone(),
            handler: spec.handler,
            watch_program: spec.watch_program.to_path_buf(),
            seed: spec.seed,
            sink: sink.clone(),
            stderr_to,
            on_park,
        };
        Relay { sandbox: spec.sandbox, host: spec.host, writer, parts, runner: Mutex::default(), busy: spec.busy }
    }

    fn runners(&self) -> std::sync::MutexGuard<'_, Runners> {
        self.runner.lock().expect("relay runners poisoned")
    }

    fn control(&self) -> Option<Arc<Control>> {
        self.runners().live.as_ref().map(|(c, _)| c.clone())
    }

    /// Starts a runner: a turn begins (its stale sweep first, then the loop). A runner
    /// already under way is left as it is.
    pub(crate) fn begin_turn(&self) {
        let mut r = self.runners();
        if r.live.is_none() {
            r.live = Some(start_runner(self.sandbox, &self.host, &self.parts));
            self.busy.relay_up();
        }
    }

    /// Stops the turn's runner (its source closed, a held exec abandoned) and waits for its
    /// handlers until `deadline`; returns its report (kept for [`Relay::stop`] as well).
    pub(crate) async fn end_turn(&self, deadline: Instant) -> Result<RunnerReport, StopError> {
        let (control, report) = self.stop_runner(deadline).await?;
        self.runners().stopped(report.clone(), control);
        Ok(report)
    }

    /// Waits until the runner is ready (its start-up done), at most `bound`.
    pub async fn ready(&self, bound: Duration) -> bool {
        match self.control() {
            Some(c) => c.ready(bound).await,
            None => false,
        }
    }

    /// Why the runner could not start, when it said so.
    pub(crate) fn start_failure(&self) -> Option<String> {
        self.control().and_then(|c| c.start_failure())
    }

    /// One call through the relay, started now. Panics on a relay whose calls are made
    /// elsewhere (built without a writer).
    pub async fn call(&self, id: &str, args: Option<&str>, deadline: Duration) -> CallEnd {
        let spec = CallSpec {
            id: id.into(),
            tool: "bench".into(),
            args: args.map(str::to_owned),
            intended: clock::now(),
            warmup: false,
            deadline,
        };
        self.writer.as_ref().expect("a relay with its writer here").call(spec).await
    }

    /// Stops the runner alone (its source closed, a held exec abandoned) and starts a
    /// fresh one, as a runner restarted between turns would be. The writer is untouched:
    /// requests published meanwhile wait in the dir. Returns how long the stop took.
    pub(crate) async fn restart_runner(&self, deadline: Instant) -> Result<Duration, StopError> {
        let t0 = clock::now();
        let (control, report) = self.stop_runner(deadline).await?;
        let took = t0.elapsed();
        let mut r = self.runners();
        r.stopped(report, control);
        r.live = Some(start_runner(self.sandbox, &self.host, &self.parts));
        self.busy.relay_up();
        Ok(took)
    }

    async fn stop_runner(&self, deadline: Instant) -> Result<(Arc<Control>, RunnerReport), StopError> {
        let Some((control, mut task)) = self.runners().live.take() else {
            return Err(StopError::NoRunner);
        };
        control.stop();
        let stopped = match tokio::time::timeout_at(deadline, &mut task).await {
            Ok(Ok(report)) => Ok((control, report)),
            Ok(Err(e)) => Err(StopError::Failed(e)),
            Err(_) => {
                task.abort();
                Err(StopError::Timeout)
            }
        };
        // The relay lived until its loop ended (or was cut off).
        self.busy.relay_down();
        stopped
    }

    /// Stops the runner (if a turn is under way) and waits for its in-flight handlers until
    /// `deadline`; a runner still busy then is aborted and reported as such. Closes the
    /// writer too. Returns the reports of every runner this relay ran.
    pub async fn stop(&self, deadline: Instant) -> Result<Vec<RunnerReport>, StopError> {
        if let Some(w) = &self.writer {
            w.close();
        }
        let last = if self.runners().live.is_some() { Some(self.stop_runner(deadline).await?) } else { None };
        let mut r = self.runners();
        let mut all: Vec<RunnerReport> = r.earlier.take().into_iter().collect();
        // The relay's end: what still lingers is stopped now.
        r.lingering.clear();
        all.extend(last.map(|(_, rep)| rep));
        Ok(all)
    }
}

fn start_runner(sandbox: u32, host: &Arc<dyn Host>, p: &RunnerParts) -> (Arc<Control>, JoinHandle<RunnerReport>) {
    let parts = Parts {
        sandbox,
        dir: &p.dir,
        host,
        watch_program: &p.watch_program,
        seed: p.seed,
        handler: p.handler.clone(),
        sink: &p.sink,
        // A fresh reporter per runner: what degraded one turn's wakes is that turn's.
        reporter: Reporter::new(p.sink.clone(), sandbox),
        on_park: Some(p.on_park.clone()),
        stderr_to: &p.stderr_to,
    };
    let started = p.strategy.start(&parts);
    (started.control, started.task)
}
