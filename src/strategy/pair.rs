//! One relay dir's pair: a running runner and its writer, over one host. The engine runs
//! one per sandbox; tests and benchmarks use it to drive a single relay directly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::events::EventSink;
use crate::relay::handler::HandlerModel;
use crate::relay::runner::{Control, ParkFn, RunnerReport};
use crate::relay::source::Reporter;
use crate::relay::writer::{CallEnd, CallSpec, Writer};
use crate::sandbox::dir::RelayDir;
use crate::sandbox::host::{Busy, Host};
use crate::strategy::{Parts, RunnerSpec, WriterSpec};

/// Everything one relay dir's pair is built from.
pub struct RelaySpec<'a> {
    pub sandbox: u32,
    pub dir: Arc<dyn RelayDir>,
    pub host: Arc<dyn Host>,
    /// The dir's in-flight gauge, shared by the writer and the host.
    pub busy: Arc<Busy>,
    pub runner: &'a Arc<dyn RunnerSpec>,
    /// The writer here; `None` when the calls are made elsewhere (a writer in the sandbox).
    pub writer: Option<&'a Arc<dyn WriterSpec>>,
    pub handler: Arc<HandlerModel>,
    /// The relay-bench binary, run in the sandbox by window-exec strategies.
    pub watch_program: &'a Path,
    pub seed: u64,
    /// Where a black-box runner's stderr is kept (`None`: the system temp dir).
    pub stderr_to: Option<PathBuf>,
}

/// What it takes to start the runner again (after a stop during a held window).
struct RunnerParts {
    dir: Arc<dyn RelayDir>,
    strategy: Arc<dyn RunnerSpec>,
    handler: Arc<HandlerModel>,
    watch_program: PathBuf,
    seed: u64,
    sink: EventSink,
    reporter: Reporter,
    stderr_to: PathBuf,
    on_park: ParkFn,
}

pub struct Relay {
    pub sandbox: u32,
    pub host: Arc<dyn Host>,
    /// `None` when the calls are made elsewhere.
    pub writer: Option<Arc<Writer>>,
    parts: RunnerParts,
    control: Arc<Control>,
    runner: Option<JoinHandle<RunnerReport>>,
    /// Runners stopped and replaced during the case: their reports, and their controls,
    /// kept so a closed source's abandoned exec runs on until the case ends.
    earlier: Vec<(RunnerReport, Arc<Control>)>,
}

impl Relay {
    /// Builds both sides and starts the runner loop (inside a tokio runtime).
    pub fn start(spec: RelaySpec<'_>, sink: &EventSink) -> Relay {
        let reporter = Reporter::new(sink.clone(), spec.sandbox);
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
            reporter,
            stderr_to,
            on_park,
        };
        let (control, task) = start_runner(spec.sandbox, &spec.host, &parts);
        Relay {
            sandbox: spec.sandbox,
            host: spec.host,
            writer,
            parts,
            control,
            runner: Some(task),
            earlier: Vec::new(),
        }
    }

    /// Waits until the runner is ready (its start-up done), at most `bound`.
    pub async fn ready(&self, bound: Duration) -> bool {
        self.control.ready(bound).await
    }

    /// Why the runner could not start, when it said so.
    pub fn start_failure(&self) -> Option<String> {
        self.control.start_failure()
    }

    /// One call through the relay, started now. Panics on a relay whose calls are made
    /// elsewhere (built without a writer).
    pub async fn call(&self, id: &str, args: Option<&str>, deadline: Duration) -> CallEnd {
        let spec = CallSpec {
            id: id.into(),
            tool: "bench".into(),
            args: args.map(str::to_owned),
            intended: Instant::now(),
            warmup: false,
            deadline,
        };
        self.writer.as_ref().expect("a relay with its writer here").call(spec).await
    }

    /// Stops the runner alone (its source closed, a held exec abandoned) and starts a
    /// fresh one, as a runner restarted between turns would be. The writer is untouched:
    /// requests published meanwhile wait in the dir. Returns how long the stop took.
    pub async fn restart_runner(&mut self, deadline: Instant) -> Result<Duration, String> {
        let t0 = Instant::now();
        let report = self.stop_runner(deadline).await?;
        let took = t0.elapsed();
        let (control, task) = start_runner(self.sandbox, &self.host, &self.parts);
        let old = std::mem::replace(&mut self.control, control);
        self.earlier.push((report, old));
        self.runner = Some(task);
        Ok(took)
    }

    async fn stop_runner(&mut self, deadline: Instant) -> Result<RunnerReport, String> {
        self.control.stop();
        let Some(mut task) = self.runner.take() else {
            return Err("already stopped".into());
        };
        match tokio::time::timeout_at(deadline, &mut task).await {
            Ok(Ok(report)) => Ok(report),
            Ok(Err(e)) => Err(format!("runner task failed: {e}")),
            Err(_) => {
                task.abort();
                Err("runner did not stop in time; aborted".into())
            }
        }
    }

    /// Stops the runner and waits for its in-flight handlers until `deadline`; a runner
    /// still busy then is aborted and reported as such. Closes the writer too. Returns the
    /// reports of every runner this relay ran.
    pub async fn stop(&mut self, deadline: Instant) -> Result<Vec<RunnerReport>, String> {
        if let Some(w) = &self.writer {
            w.close();
        }
        let last = self.stop_runner(deadline).await?;
        let mut all: Vec<RunnerReport> = std::mem::take(&mut self.earlier).into_iter().map(|(r, _)| r).collect();
        all.push(last);
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
        reporter: p.reporter.clone(),
        on_park: Some(p.on_park.clone()),
        stderr_to: &p.stderr_to,
    };
    let started = p.strategy.start(&parts);
    (started.control, started.task)
}
