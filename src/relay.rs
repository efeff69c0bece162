//! One relay dir's pair: a running runner and its writer, over one host. The engine runs
//! one per sandbox; tests and benchmarks use it to drive a single relay directly.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::events::EventSink;
use crate::handler::HandlerModel;
use crate::host::{Busy, Host};
use crate::runner::{Runner, RunnerReport};
use crate::source::ActivitySource;
use crate::strategy::{Parts, RunnerStrategy, WriterStrategy};
use crate::writer::{CallEnd, CallSpec, Writer};

pub struct Relay {
    pub sandbox: u32,
    pub host: Arc<dyn Host>,
    pub writer: Arc<Writer>,
    source: Arc<dyn ActivitySource>,
    runner: Option<JoinHandle<RunnerReport>>,
}

/// Everything one relay dir's pair is built from.
pub struct RelaySpec<'a> {
    pub sandbox: u32,
    pub dir: &'a Path,
    pub host: Arc<dyn Host>,
    /// The dir's in-flight gauge, shared by the writer and the host.
    pub busy: Arc<Busy>,
    pub runner: &'a RunnerStrategy,
    pub writer: &'a WriterStrategy,
    pub handler: Arc<HandlerModel>,
    /// The relay-bench binary, run in the sandbox by window-exec strategies.
    pub watch_program: &'a Path,
    pub seed: u64,
}

impl Relay {
    /// Builds both sides and starts the runner loop (inside a tokio runtime).
    pub fn start(spec: RelaySpec<'_>, sink: &EventSink) -> Relay {
        let parts = Parts { dir: spec.dir, host: &spec.host, watch_program: spec.watch_program, seed: spec.seed };
        let (source, schedule) = spec.runner.build(&parts);
        let runner = Runner {
            sandbox: spec.sandbox,
            host: spec.host.clone(),
            source: source.clone(),
            schedule,
            handler: spec.handler,
            events: sink.clone(),
        };
        let task = tokio::spawn(runner.run());
        let writer = Writer::new(spec.sandbox, spec.dir.to_path_buf(), spec.writer.build(spec.dir), sink.clone())
            .with_busy(spec.busy);
        Relay { sandbox: spec.sandbox, host: spec.host, writer: Arc::new(writer), source, runner: Some(task) }
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

    /// Closes the runner's source and waits for its in-flight handlers until `deadline`;
    /// a runner still busy then is aborted and reported as such. Closes the writer too.
    pub async fn stop(&mut self, deadline: Instant) -> Result<RunnerReport, String> {
        self.source.close();
        self.writer.close();
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
}
