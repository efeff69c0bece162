//! The in-sandbox side of a case, as it runs in the sandbox: `relay-bench sandbox-writer`
//! (hidden) reads the uploaded scenario, paces its sandbox's calls from the start time it is
//! given (on the sandbox's clock), makes them through the case's writer over the real
//! relay dir, and logs its side of every call ([`super::log::Line`]) for relay-bench to
//! bring back. `relay-bench sandbox-clock` prints the sandbox's clock.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::base::clock;
use crate::base::signal::Signal;
use crate::base::units::Mono;
use crate::events::EventSink;
use crate::relay::source::Reporter;
use crate::relay::writer::Writer;
use crate::sandbox::dir::{RealDir, RelayDir};
use crate::scenario::Scenario;

use super::log::Line;

pub(crate) const WRITER_SUBCOMMAND: &str = "sandbox-writer";
pub(crate) const CLOCK_SUBCOMMAND: &str = "sandbox-clock";
/// How often the writer looks for the stop file.
const STOP_EVERY: Duration = Duration::from_millis(50);

/// `sandbox-writer`'s arguments, as the driver passes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WriterArgs {
    pub scenario: PathBuf,
    pub case: String,
    pub sandbox: u32,
    pub dir: PathBuf,
    /// The first intended start, on the sandbox's `CLOCK_MONOTONIC` (ns).
    pub start_ns: u64,
    pub events: PathBuf,
    /// Its appearance stops the pacer and ends the calls in flight (an interrupted run).
    pub stop: PathBuf,
}

impl WriterArgs {
    pub(crate) fn argv(&self, program: &str) -> Vec<String> {
        let p = |p: &PathBuf| p.to_string_lossy().into_owned();
        vec![
            program.to_owned(),
            WRITER_SUBCOMMAND.to_owned(),
            p(&self.scenario),
            self.case.clone(),
            self.sandbox.to_string(),
            p(&self.dir),
            self.start_ns.to_string(),
            p(&self.events),
            p(&self.stop),
        ]
    }

    /// The arguments after the subcommand, in [`WriterArgs::argv`]'s order.
    pub(crate) fn parse(args: &[std::ffi::OsString]) -> Result<WriterArgs, WriterArgsError> {
        let [scenario, case, sandbox, dir, start_ns, events, stop] = args else {
            return Err(WriterArgsError::Usage);
        };
        let text = |a: &std::ffi::OsString| a.to_str().map(str::to_owned).ok_or(WriterArgsError::Usage);
        Ok(WriterArgs {
            scenario: scenario.into(),
            case: text(case)?,
            sandbox: text(sandbox)?.parse().map_err(|_| WriterArgsError::NotANumber("SANDBOX"))?,
            dir: dir.into(),
            start_ns: text(start_ns)?.parse().map_err(|_| WriterArgsError::NotANumber("START_NS"))?,
            events: events.into(),
            stop: stop.into(),
        })
    }
}

/// How `sandbox-writer` is called, as its errors say it.
const USAGE: &str = "usage: sandbox-writer SCENARIO CASE SANDBOX DIR START_NS EVENTS STOP";

/// Arguments `sandbox-writer` refuses. relay-bench writes them ([`WriterArgs::argv`]), so
/// one means the sandbox holds another build: run the same relay-bench on both sides.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WriterArgsError {
    #[error("{USAGE}")]
    Usage,
    #[error("{0}: not a number; {USAGE}")]
    NotANumber(&'static str),
}

/// Why the sandbox writer could not run its calls (its log's `fatal` line).
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriterError {
    #[error("{path}: {why}")]
    File { path: String, why: std::io::Error },
    #[error(transparent)]
    Scenario(#[from] crate::base::fields::ScenarioError),
    #[error("no case {0:?}")]
    NoCase(String),
    #[error("sandbox {sandbox} of {sandboxes}")]
    NoSandbox { sandbox: u32, sandboxes: u32 },
    #[error("cannot start the log thread: {0}")]
    LogThread(std::io::Error),
    #[error("the pacer failed: {0}")]
    Pacer(tokio::task::JoinError),
    #[error("the log thread panicked")]
    LogPanicked,
    #[error("writing the log: {0}")]
    Log(std::io::Error),
}

/// `sandbox-clock`: prints this machine's monotonic clock (ns).
pub(crate) fn clock_main() -> i32 {
    println!("{}", crate::base::units::monotonic_ns());
    0
}

/// `sandbox-writer ARGS`: exit 0 when its calls ran (whatever became of them: the log
/// says), 2 on bad arguments, 3 when it could not run (the log's `fatal` line says why).
pub(crate) fn writer_main(args: &[std::ffi::OsString]) -> i32 {
    let Ok(args) = WriterArgs::parse(args).inspect_err(|e| eprintln!("{e}")) else { return 2 };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return fatal(&args, &format!("cannot start the async runtime: {e}")),
    };
    match rt.block_on(run_writer(&args)) {
        Ok(()) => 0,
        Err(e) => fatal(&args, &e.to_string()),
    }
}

fn fatal(args: &WriterArgs, msg: &str) -> i32 {
    eprintln!("sandbox-writer: {msg}");
    let _ = append_line(&args.events, &Line::Fatal { msg: msg.to_owned() }, true);
    3
}

/// Appends `line` to the writer's log at `path` (made first when `create`).
fn append_line(path: &std::path::Path, line: &Line, create: bool) -> std::io::Result<()> {
    let text = serde_json::to_string(line)?;
    std::fs::OpenOptions::new().create(create).append(true).open(path).and_then(|mut f| writeln!(f, "{text}"))
}

/// The writer's events, as lines of `file`, written on a thread of their own.
fn log_on_a_thread(
    file: std::fs::File,
    mono: Mono,
    mut inbox: crate::events::EventInbox,
) -> Result<std::thread::JoinHandle<std::io::Result<()>>, WriterError> {
    std::thread::Builder::new()
        .name("sandbox-writer-log".into())
        .spawn(move || -> std::io::Result<()> {
            let mut out = std::io::BufWriter::new(file);
            let mut batch = Vec::new();
            while inbox.recv(&mut batch) {
                for line in batch.drain(..).filter_map(|m| Line::of(&m, &mono)) {
                    serde_json::to_writer(&mut out, &line)?;
                    out.write_all(b"\n")?;
                }
            }
            out.flush()
        })
        .map_err(WriterError::LogThread)
}

/// Closes `stop` when the stop file `path` appears or the process that started this one
/// is gone.
fn watch_stop(stop: Arc<Signal>, path: std::path::PathBuf) -> tokio::task::JoinHandle<()> {
    // SAFETY: getppid cannot fail.
    let parent = unsafe { libc::getppid() };
    tokio::spawn(async move {
        while !stop.is_closed() {
            // SAFETY: as above.
            if path.exists() || unsafe { libc::getppid() } != parent {
                stop.close();
            }
            clock::sleep(STOP_EVERY).await;
        }
    })
}

async fn run_writer(args: &WriterArgs) -> Result<(), WriterError> {
    let at = |path: &std::path::Path| {
        let path = path.display().to_string();
        move |why| WriterError::File { path, why }
    };
    let text = std::fs::read_to_string(&args.scenario).map_err(at(&args.scenario))?;
    let scenario = Scenario::parse(&args.scenario.to_string_lossy(), &text)?;
    let case =
        scenario.cases.iter().find(|c| c.name == args.case).ok_or_else(|| WriterError::NoCase(args.case.clone()))?;
    let wl = &case.workload;
    if args.sandbox >= wl.sandboxes {
        return Err(WriterError::NoSandbox { sandbox: args.sandbox, sandboxes: wl.sandboxes });
    }
    let file = std::fs::File::create(&args.events).map_err(at(&args.events))?;
    let mono = Mono::now();
    let (sink, inbox) = EventSink::channel();
    let logger = log_on_a_thread(file, mono, inbox)?;

    let k = args.sandbox;
    let dir: Arc<dyn RelayDir> = Arc::new(RealDir::new(args.dir.clone()));
    let waiter = case.writer.build(&dir, Reporter::new(sink.clone(), k));
    let writer = Arc::new(Writer::new(k, dir, waiter, sink.clone()).with_cleanup(case.writer.cleanup()));
    let slots: Vec<_> = wl.schedule().into_iter().filter(|s| s.sandbox == k).collect();
    let epoch = mono.instant_of(args.start_ns);

    // Stopped by the stop file (an interrupted run), or when the daemon that started it is
    // gone (relay-bench killed outright takes the daemons it started with it): no writer
    // paces on for nobody.
    let stop = Arc::new(Signal::new());
    let watcher = watch_stop(stop.clone(), args.stop.clone());
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    // Its one writer stands at index 0 of the writers the calls are fired on.
    let counted = Arc::new(vec![std::sync::atomic::AtomicU32::new(0)]);
    let told = super::super::drive::Told { done: done_tx, cutoff: None };
    let on_writer = super::super::drive::firing(vec![writer.clone()], wl, told, counted);
    let fire: super::super::backend::Fire = Arc::new(move |_sandbox, id, at, warmup| on_writer(0, id, at, warmup));
    let pacer = super::super::backend::pace_on_a_thread(
        super::super::backend::Schedule { slots, epoch, length: wl.duration(), stop: stop.clone() },
        fire,
    );
    let mut pacer = std::pin::pin!(pacer);
    let (mut fired, mut finished, mut closed) = (None::<usize>, 0usize, false);
    while fired.is_none_or(|n| finished < n) {
        tokio::select! {
            r = &mut pacer, if fired.is_none() => fired = Some(r.map_err(WriterError::Pacer)?.0),
            Some(()) = done_rx.recv() => finished += 1,
            () = stop.closed(), if !closed => {
                closed = true;
                writer.close();
            }
        }
    }
    let stopped = stop.is_closed();
    stop.close();
    let _ = watcher.await;
    writer.close();
    let end = Line::End { fired: fired.unwrap_or(0) as u64, stopped };
    drop((writer, sink));
    logger.join().map_err(|_| WriterError::LogPanicked)?.map_err(WriterError::Log)?;
    append_line(&args.events, &end, false).map_err(at(&args.events))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_and_parse_agree() {
        let a = WriterArgs {
            scenario: "/s/scenario.toml".into(),
            case: "c-1".into(),
            sandbox: 2,
            dir: "/s/relay 'q'".into(),
            start_ns: 123_456_789,
            events: "/s/events-2.ndjson".into(),
            stop: "/s/stop".into(),
        };
        let argv: Vec<std::ffi::OsString> = a.argv("/s/bin/relay-bench").into_iter().map(Into::into).collect();
        assert_eq!(argv[1], WRITER_SUBCOMMAND);
        assert_eq!(WriterArgs::parse(&argv[2..]), Ok(a));
        assert!(WriterArgs::parse(&argv[2..5]).unwrap_err().to_string().starts_with("usage"));
    }
}
