//! One relay dir's pair: a running runner and its writer, over one host. The engine runs
//! one per sandbox; tests and benchmarks use it to drive a single relay directly.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::events::EventSink;
use crate::handler::HandlerModel;
use crate::host::Host;
use crate::runner::{Runner, RunnerReport};
use crate::source::ActivitySource;
use crate::strategy::{RunnerStrategy, WriterStrategy};
use crate::writer::{CallEnd, CallSpec, Writer};

pub struct Relay {
    pub sandbox: u32,
    pub host: Arc<dyn Host>,
    pub writer: Arc<Writer>,
    source: Arc<dyn ActivitySource>,
    runner: Option<JoinHandle<RunnerReport>>,
}

impl Relay {
    /// Builds both sides on `dir` and starts the runner loop (inside a tokio runtime).
    pub fn start(
        sandbox: u32,
        dir: &Path,
        host: Arc<dyn Host>,
        runner: &RunnerStrategy,
        writer: &WriterStrategy,
        handler: Arc<HandlerModel>,
        sink: &EventSink,
    ) -> Relay {
        let (source, schedule) = runner.build(dir);
        let task = tokio::spawn(
            Runner {
                sandbox,
                host: host.clone(),
                source: source.clone(),
                schedule,
                handler,
                events: sink.clone(),
            }
            .run(),
        );
        let writer = Arc::new(Writer::new(
            sandbox,
            dir.to_path_buf(),
            writer.build(dir),
            sink.clone(),
        ));
        Relay {
            sandbox,
            host,
            writer,
            source,
            runner: Some(task),
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
