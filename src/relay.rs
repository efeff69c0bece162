//! One relay dir's pair: a running runner and its writer, over one host. The engine runs
//! one per sandbox; tests and benchmarks use it to drive a single relay directly.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::dir::RelayDir;
use crate::events::EventSink;
use crate::handler::HandlerModel;
use crate::host::{Busy, Host};
use crate::runner::RunnerReport;
use crate::source::ActivitySource;
use crate::strategy::{Parts, RunnerStrategy, WriterStrategy};
use crate::writer::{CallEnd, CallSpec, Writer};

/// Everything one relay dir's pair is built from.
pub struct RelaySpec<'a> {
    pub sandbox: u32,
    pub dir: Arc<dyn RelayDir>,
    pub host: Arc<dyn Host>,
    /// The dir's in-flight gauge, shared by the writer and the host.
    pub busy: Arc<Busy>,
    pub runner: &'a RunnerStrategy,
    pub writer: &'a WriterStrategy,
    pub handler: Arc<HandlerModel>,
    /// The relay-bench binary, run in the sandbox by window-exec strategies.
    pub watch_program: &'a Path,
    pub seed: u64,
    /// Where an external runner's stderr is kept (`None`: the system temp dir).
    pub stderr_to: Option<PathBuf>,
}

/// What it takes to start the runner again (after a stop during a held window).
struct RunnerParts {
    dir: Arc<dyn RelayDir>,
    strategy: RunnerStrategy,
    handler: Arc<HandlerModel>,
    watch_program: PathBuf,
    seed: u64,
    sink: EventSink,
    stderr_to: Option<PathBuf>,
}

pub struct Relay {
    pub sandbox: u32,
    pub host: Arc<dyn Host>,
    pub writer: Arc<Writer>,
    parts: RunnerParts,
    source: Arc<dyn ActivitySource>,
    runner: Option<JoinHandle<RunnerReport>>,
    /// Reports of runners stopped and replaced during the case.
    earlier: Vec<RunnerReport>,
}

impl Relay {
    /// Builds both sides and starts the runner loop (inside a tokio runtime).
    pub fn start(spec: RelaySpec<'_>, sink: &EventSink) -> Relay {
        let writer = Writer::new(spec.sandbox, spec.dir.clone(), spec.writer.build(&spec.dir), sink.clone())
            .with_busy(spec.busy);
        let parts = RunnerParts {
            dir: spec.dir,
            strategy: spec.runner.clone(),
            handler: spec.handler,
            watch_program: spec.watch_program.to_path_buf(),
            seed: spec.seed,
            sink: sink.clone(),
            stderr_to: spec.stderr_to,
        };
        let (source, task) = start_runner(spec.sandbox, &spec.host, &parts);
        Relay {
            sandbox: spec.sandbox,
            host: spec.host,
            writer: Arc::new(writer),
            parts,
            source,
            runner: Some(task),
            earlier: Vec::new(),
        }
    }

    /// One call through the relay, started now.
    pub async fn call(&self, id: &str, args: Option<&str>, deadline: Duration) -> CallEnd {
        let spec = CallSpec {
            id: id.into(),
            tool: "bench".into(),
            args: args.map(str::to_owned),
            intended: Instant::now(),
            warmup: false,
            deadline,
        };
        self.writer.call(spec).await
    }

    /// Stops the runner alone (its source closed, a held exec abandoned) and starts a
    /// fresh one, as a runner restarted between turns would be. The writer is untouched:
    /// requests published meanwhile wait in the dir. Returns how long the stop took.
    pub async fn restart_runner(&mut self, deadline: Instant) -> Result<Duration, String> {
        let t0 = Instant::now();
        let report = self.stop_runner(deadline).await?;
        let took = t0.elapsed();
        self.earlier.push(report);
        let (source, task) = start_runner(self.sandbox, &self.host, &self.parts);
        (self.source, self.runner) = (source, Some(task));
        Ok(took)
    }

    async fn stop_runner(&mut self, deadline: Instant) -> Result<RunnerReport, String> {
        self.source.close();
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

    /// Closes the runner's source and waits for its in-flight handlers until `deadline`;
    /// a runner still busy then is aborted and reported as such. Closes the writer too.
    /// Returns the reports of every runner this relay ran.
    pub async fn stop(&mut self, deadline: Instant) -> Result<Vec<RunnerReport>, String> {
        self.writer.close();
        let last = self.stop_runner(deadline).await?;
        let mut all = std::mem::take(&mut self.earlier);
        all.push(last);
        Ok(all)
    }
}

fn start_runner(
    sandbox: u32,
    host: &Arc<dyn Host>,
    p: &RunnerParts,
) -> (Arc<dyn ActivitySource>, JoinHandle<RunnerReport>) {
    let parts = Parts { dir: &p.dir, host, watch_program: &p.watch_program, seed: p.seed };
    let stderr_to =
        p.stderr_to.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("relay-bench-{sandbox}.stderr")));
    p.strategy.start(&parts, sandbox, p.handler.clone(), &p.sink, &stderr_to)
}
