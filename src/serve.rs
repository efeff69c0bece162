//! The suite's reference peers on a real relay dir, for relays written by others:
//! `relay-bench serve` (the reference runner) and `relay-bench call` (the reference writer
//! for one call). Both are the same runner and writer the benchmark measures.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::config::{Fields, ScenarioError};
use crate::dir::{RealDir, RelayDir};
use crate::events::{EventKind, EventSink, Msg};
use crate::handler::HandlerModel;
use crate::host::{Host, LocalHost};
use crate::notice::Say;
use crate::protocol::Response;
use crate::signal::{Signal, Wake};
use crate::source::Reporter;
use crate::strategy::{runner_kind, Parts, RunnerSpec, WriterSpec};
use crate::units::human;
use crate::writer::{writer_deadline, CallEnd, CallSpec, Writer};

/// What `serve` needs.
pub struct ServeOptions {
    pub dir: PathBuf,
    /// The runner strategy; `serve` never sweeps (the dir is shared with other writers).
    pub strategy: Arc<dyn RunnerSpec>,
    pub handler: HandlerModel,
    /// How often a stat line is printed.
    pub every: Duration,
    /// The watch program (this binary), for window-exec.
    pub watch_program: PathBuf,
}

/// The runner `serve --strategy NAME --interval D` stands for: the strategy's defaults
/// (production's), polling every `interval` (growing to 5x when idle, as production's
/// does), and no stale sweep (the dir is shared with other writers). Read through the
/// scenario parser's registry, as a case's table would be.
pub fn serve_runner(strategy: &str, interval: Duration) -> Result<Arc<dyn RunnerSpec>, ScenarioError> {
    let mut table = toml::Table::new();
    let ms = |d: Duration| toml::Value::String(format!("{}ms", d.as_millis()));
    table.insert("interval".into(), ms(interval));
    table.insert("max_interval".into(), ms(interval * 5));
    table.insert("sweep".into(), toml::Value::Boolean(false));
    let mut fields = Fields::new("--strategy", "", &table);
    let kind = runner_kind(strategy).ok_or_else(|| fields.err("strategy", format!("unknown strategy {strategy:?}")))?;
    kind.parse(Some(&mut fields))
}

/// What `serve` did, for its last line (and for tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeReport {
    pub answered: u64,
    pub malformed: u64,
    pub scans: u64,
    pub notices: u64,
}

/// Runs the reference runner on `opts.dir` until `stop` is closed, printing a stat line
/// every `opts.every` to stdout and notices to stderr.
pub async fn serve(opts: ServeOptions, stop: Arc<Signal>) -> std::io::Result<ServeReport> {
    if !opts.dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{}: not a directory", opts.dir.display()),
        ));
    }
    let dir: Arc<dyn RelayDir> = Arc::new(RealDir::new(&opts.dir));
    let host: Arc<dyn Host> = Arc::new(LocalHost::over(dir.clone(), Arc::default()));
    let (sink, mut inbox) = EventSink::channel();
    let stderr_to = std::env::temp_dir().join("relay-bench-serve.stderr");
    let parts = Parts {
        sandbox: 0,
        dir: &dir,
        host: &host,
        watch_program: &opts.watch_program,
        seed: opts.handler.seed,
        handler: Arc::new(opts.handler.clone()),
        sink: &sink,
        reporter: Reporter::new(sink.clone(), 0),
        on_park: None,
        stderr_to: &stderr_to,
    };
    let started = opts.strategy.start(&parts);
    drop(sink);
    println!(
        "serving {} with runner {} ({}); Ctrl-C to stop",
        opts.dir.display(),
        opts.strategy.name(),
        opts.strategy.params()
    );
    let mut report = ServeReport::default();
    let t0 = Instant::now();
    let mut tick = tokio::time::interval_at(t0 + opts.every, opts.every);
    let mut drain = |report: &mut ServeReport| {
        let before = report.answered;
        inbox.take(|m| match m {
            Msg::Call(ev) if ev.kind == EventKind::Answering => report.answered += 1,
            Msg::Call(_) => {}
            Msg::Notice(n) => {
                report.notices += 1;
                report.malformed += u64::from(matches!(n.what, Say::Malformed { .. }));
                eprintln!("  {}", n.what);
            }
        });
        report.answered - before
    };
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let new = drain(&mut report);
                println!("[{:>8}] answered {new:>5} (total {}), malformed {}", human(t0.elapsed()), report.answered, report.malformed);
            }
            w = stop.wait(Duration::from_secs(86_400)) => if w == Wake::Closed { break },
        }
    }
    started.control.stop();
    let runner = started.task.await.map_err(|e| std::io::Error::other(format!("runner task failed: {e}")))?;
    drain(&mut report);
    report.scans = runner.scans;
    println!(
        "stopped after {}: {} answered, {} malformed, {} scans, {} delete retries{}",
        human(t0.elapsed()),
        report.answered,
        report.malformed,
        runner.scans,
        runner.delete_retries,
        runner.degraded.map(|d| format!("; wakes degraded: {d}")).unwrap_or_default()
    );
    Ok(report)
}

/// One call through a real relay dir, as the reference writer makes it.
pub struct CallOptions {
    pub dir: PathBuf,
    pub tool: String,
    pub args: Option<String>,
    pub id: String,
    /// The tool timeout; the writer waits it plus 10 s (60 s without one), SPEC §2.
    pub timeout: Option<Duration>,
    pub wait: Arc<dyn WriterSpec>,
}

/// Publishes one request, waits for its answer and cleans up. Returns how it ended.
pub async fn call(opts: CallOptions) -> std::io::Result<CallEnd> {
    if !opts.dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{}: not a directory", opts.dir.display()),
        ));
    }
    if let Some(a) = &opts.args {
        serde_json::from_str::<serde::de::IgnoredAny>(a)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("--args is not JSON: {e}")))?;
    }
    let dir: Arc<dyn RelayDir> = Arc::new(RealDir::new(&opts.dir));
    let (sink, _inbox) = EventSink::channel();
    let reporter = Reporter::new(sink.clone(), 0);
    let writer = Writer::new(0, dir.clone(), opts.wait.build(&dir, reporter.clone()), sink).with_reporter(reporter);
    let spec = CallSpec {
        id: opts.id,
        tool: opts.tool,
        args: opts.args,
        intended: Instant::now(),
        warmup: false,
        deadline: writer_deadline(opts.timeout),
    };
    let end = writer.call(spec).await;
    writer.close();
    Ok(end)
}

/// The answer as `call` prints it: the response's JSON, one line.
pub fn answer_line(r: &Response) -> String {
    String::from_utf8_lossy(&r.encode()).into_owned()
}
