//! The command line: parses flags into plain values ([`args`]), hands the work to the
//! library ([`crate::runs::plan`], [`crate::app::serve`], [`crate::report::compare`], [`crate::record::eventlog`]),
//! prints what it reports, and maps the outcome to an exit code.

mod args;
mod interrupt;

pub(crate) use args::{CapacityArgs, Cli, Command, ConformArgs, ServeArgs};
use interrupt::on_interrupt;

use std::path::Path;

use clap::Parser;

use crate::base::console;
use crate::base::protocol::Outcome;
use crate::base::units::human;
use crate::engine::capacity::{CapacityError, CapacityPlan};
use crate::engine::serve::{answer_line, serve_runner, CallOptions, Said, ServeError, ServeOptions, Turns};
use crate::events::FailKind;
use crate::record::eventlog::{check_log, render_checks};
use crate::record::logread::read_log;
use crate::relay::handler::HandlerModel;
use crate::relay::writer::CallEnd;
use crate::report::compare::{Format, Threshold};
use crate::report::outdir::utc_stamps;
use crate::runs::capacity::CapacityRunError;
use crate::runs::plan::RunRequest;
use crate::runs::plan::{list_shipped, rerender_until, Plan, RunsError, Step};
use crate::scenario::ScenarioError;

/// `print!` to stdout through [`console::out`] (never a panic; a failure is the exit code
/// [`Exit::OutputLost`]); `out!(line ...)` adds the newline.
macro_rules! out {
    (line $($t:tt)*) => { console::out(&format!("{}\n", format_args!($($t)*))) };
    ($($t:tt)*) => { console::out(&format!($($t)*)) };
}

/// Exit codes CI can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Every gate of every case passed.
    Pass = 0,
    /// The run finished and at least one gate failed.
    GateFailed = 1,
    /// Bad input: a flag, a scenario file, a path.
    BadInput = 2,
    /// Something broke inside relay-bench (not the system under test).
    Internal = 3,
    /// `call`: the answer was a pause (`{"ok":true,"paused":true}`).
    Paused = 4,
    /// `call`: no answer before the writer deadline.
    Timeout = 5,
    /// stdout could not be written (a full disk, an I/O error; a reader that closed the pipe
    /// is not one): what the command printed is lost, its files are written.
    OutputLost = 6,
    /// This machine failed the run (a full disk, a quota, a read-only or failing filesystem
    /// under the relay dirs): its figures are not the relay's; said, with the reports written.
    Environment = 7,
    /// `conform`: no case FAILED, but one could not be graded (INCONCLUSIVE).
    Inconclusive = 8,
    /// Ctrl-C: a partial report was written and marked interrupted.
    Interrupted = 130,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{0}")]
    BadInput(String),
    #[error(transparent)]
    Runs(#[from] RunsError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error(transparent)]
    Capacity(#[from] CapacityRunError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
    /// This machine failed the run's own writes (its reports): said with what to do.
    #[error(
        "{source}\nthis machine failed the run, not the relay: {why}; summary.json is whole as last written, and \
         what could not be written is missing: free the space (or fix the filesystem) and run again"
    )]
    Environment { why: &'static str, source: RunsError },
}

impl CliError {
    pub(crate) fn exit(&self) -> Exit {
        match self {
            CliError::Scenario(_) | CliError::BadInput(_) => Exit::BadInput,
            CliError::Environment { .. } => Exit::Environment,
            CliError::Runs(RunsError::Interrupted) => Exit::Interrupted,
            CliError::Runs(e) if e.is_bad_input() => Exit::BadInput,
            CliError::Serve(e) if e.is_bad_input() => Exit::BadInput,
            CliError::Capacity(e) if e.is_bad_input() => Exit::BadInput,
            CliError::Capacity(CapacityRunError::Capacity(CapacityError::Interrupted(_))) => Exit::Interrupted,
            CliError::Runs(_) | CliError::Serve(_) | CliError::Capacity(_) | CliError::Internal(_) => Exit::Internal,
        }
    }
}

/// Parses `args`, runs, prints; returns the process exit code.
pub fn main_with_args<I: Into<std::ffi::OsString>>(args: impl IntoIterator<Item = I>) -> i32 {
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    use crate::engine::in_sandbox::program as in_sandbox;
    match args.get(1).and_then(|a| a.to_str()) {
        // The in-sandbox watch program (run by the suite itself, hidden from help): its argv is
        // `sandbox-watch [options] -- DIR WINDOW_MS RELIST_MS` (DIR may be any bytes), read by
        // its own parser.
        Some(crate::sandbox::dir::program::SUBCOMMAND) => return crate::sandbox::dir::program::main(&args[2..]),
        // The in-sandbox writer and the clock it is timed by, run in a sandbox through its
        // daemon (`in_sandbox = true`); hidden from help as well.
        Some(in_sandbox::CLOCK_SUBCOMMAND) => return in_sandbox::clock_main(),
        Some(in_sandbox::WRITER_SUBCOMMAND) => return in_sandbox::writer_main(&args[2..]),
        // The tool `conform --runner` gives the runner under test (hidden from help too).
        Some(crate::engine::conform::HANDLER_SUBCOMMAND) => return crate::engine::conform::handler_main(&args[2..]),
        _ => {}
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let printed = e.print().and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
            if e.use_stderr() {
                return Exit::BadInput as i32;
            }
            // `--help` and `--version` are stdout's: one that never reached it is no answer
            // (a reader that closed the pipe early is no error, as for every command).
            return match printed {
                Err(w) if w.kind() != std::io::ErrorKind::BrokenPipe => {
                    console::err(&format!("Error: cannot write to stdout: {w}; what this command printed is lost"));
                    Exit::OutputLost as i32
                }
                _ => Exit::Pass as i32,
            };
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            console::err(&format!("Error: cannot start the async runtime: {e}"));
            return Exit::Internal as i32;
        }
    };
    let code = match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            console::err(&format!("Error: {e:#}"));
            e.exit()
        }
    };
    match console::stdout_failure() {
        // An outcome the output was to tell (a pass, a gate failure, a call's answer) that
        // never reached its reader is no outcome: the output's loss is.
        Some(e) if matches!(code, Exit::Pass | Exit::GateFailed | Exit::Paused | Exit::Timeout) => {
            console::err(&format!("Error: cannot write to stdout: {e}; what this command printed is lost"));
            Exit::OutputLost as i32
        }
        _ => code as i32,
    }
}

pub(crate) async fn run(cli: Cli) -> Result<Exit, CliError> {
    match cli.command {
        Command::List => {
            out!("{}{}", list_shipped()?, crate::runs::plan::list_parts());
            Ok(Exit::Pass)
        }
        Command::Run(args) => run_cmd(args).await,
        Command::Serve(args) => serve_cmd(args).await,
        Command::Call(args) => call_cmd(args).await,
        Command::Check { log, ndjson } => check_cmd(&log, ndjson),
        Command::DaemonCapacity(args) => capacity_cmd(args).await,
        Command::Conform(args) => conform_cmd(args).await,
        Command::Compare { old, new, threshold, strict, format } => compare_cmd(&old, &new, threshold, strict, format),
        Command::Merge { parts, out, junit, quiet } => merge_cmd(&parts, out.as_deref(), junit.as_deref(), quiet),
        Command::Report { dir } => {
            let stop = on_interrupt("stopping: the outputs drawn so far are kept whole");
            let r = tokio::task::block_in_place(|| rerender_until(&dir, Some(stop))).map_err(written)?;
            out!(line
                "{} and {} .hgrm files rewritten; {} chart files written under {}; the page: {}",
                dir.join("summary.md").display(),
                r.files.iter().filter(|(o, f)| *o == "hdr" && f.extension().is_some_and(|e| e == "hgrm")).count(),
                r.count("charts"),
                dir.join("charts").display(),
                dir.join("report.html").display()
            );
            Ok(Exit::Pass)
        }
    }
}

/// The error of a command that writes a run's reports: this machine's failure when it is
/// one ([`CliError::Environment`]), else the run's own.
fn written(e: RunsError) -> CliError {
    match e.environment() {
        Some(why) => CliError::Environment { why, source: e },
        None => CliError::Runs(e),
    }
}

/// Prints what `serve` and `call` say, through [`console`] (neither a closed pipe nor a
/// full disk is a panic).
fn say(line: Said<'_>) {
    match line {
        Said::Out(text) => console::out(&format!("{text}\n")),
        Said::Err(text) => console::err(text),
    }
}

async fn run_cmd(args: RunRequest) -> Result<Exit, CliError> {
    let quiet = args.quiet;
    let plan = Plan::new(args)?;
    let interrupt = on_interrupt("finishing the current case's report");
    let outcome = plan
        .run(interrupt, |step| match step {
            Step::Ran { out_dir, console, warnings } => {
                warnings.iter().for_each(|w| console::err(&format!("warning: {w}")));
                out!("{}", String::from_utf8_lossy(console));
                // The report's path last, under the table and the verdict: where to read on.
                if !quiet {
                    out!(line "report: {}", out_dir.join("summary.md").display());
                }
            }
            Step::BaselineSaved(to) => out!(line "baseline saved: {}", to.display()),
            Step::Compared { name, comparison } => {
                out!(line "against the baseline {name}:");
                out!("{}", crate::report::compare::render(comparison, Format::Table));
            }
        })
        .await
        .map_err(written)?;
    if outcome.environment_failures > 0 {
        console::err(&format!(
            "error: this machine failed {} write(s) of the relay (a full disk, a quota, a read-only or failing \
             filesystem, a relay dir deleted under the run: see the notices); the calls it kept from being \
             published are not counted as lost, and the verdict is not the relay's. Fix it and run again.",
            outcome.environment_failures
        ));
    }
    Ok(first_exit(&[
        (outcome.interrupted, Exit::Interrupted),
        (outcome.environment_failures > 0, Exit::Environment),
        (outcome.gate_failed || outcome.regressions > 0, Exit::GateFailed),
    ]))
}

/// The exit code of the first condition that holds, in order; [`Exit::Pass`] when none does.
fn first_exit(conditions: &[(bool, Exit)]) -> Exit {
    conditions.iter().find(|(holds, _)| *holds).map_or(Exit::Pass, |&(_, code)| code)
}

/// `merge`: the parts joined, the run's table and verdict printed as `run` prints them.
fn merge_cmd(
    parts: &[std::path::PathBuf],
    out: Option<&std::path::Path>,
    junit: Option<&std::path::Path>,
    quiet: bool,
) -> Result<Exit, CliError> {
    let (merged, dir, published) = crate::runs::merge::merge(parts, out, junit).map_err(written)?;
    published.warnings.iter().for_each(|w| console::err(&format!("warning: {w}")));
    out!("{}", String::from_utf8_lossy(&published.console));
    if !quiet {
        out!(line "merged {} parts: {}", parts.len(), dir.join("summary.md").display());
    }
    Ok(first_exit(&[(merged.interrupted, Exit::Interrupted), (!merged.pass, Exit::GateFailed)]))
}

/// A duration flag's value as a person gave it, however small (`1ns`, not `0µs`).
fn as_given(d: std::time::Duration) -> String {
    if d < std::time::Duration::from_micros(1) {
        format!("{}ns", d.as_nanos())
    } else {
        human(d)
    }
}

/// The shortest interval between two stat lines of `serve`.
const MIN_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The shortest turn `serve` takes (each turn stops and starts its runner).
const MIN_TURN: std::time::Duration = std::time::Duration::from_secs(1);

async fn serve_cmd(a: ServeArgs) -> Result<Exit, CliError> {
    let strategy = serve_runner(&a.strategy, a.interval, a.sweep)?;
    if !(0.0..=1.0).contains(&a.error_ratio) {
        return Err(CliError::BadInput(format!("--error-ratio {}: must be between 0 and 1", a.error_ratio)));
    }
    let handler = HandlerModel {
        duration: a.handler,
        duration_max: a.handler,
        error_ratio: a.error_ratio,
        command: a.handler_command,
        command_timeout: a.handler_timeout,
        ..HandlerModel::default()
    };
    let watch_program = std::env::current_exe()
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot locate the relay-bench binary: {e}")))?;
    if a.every < MIN_EVERY {
        let why =
            format!("--every {}: a stat line at most every {} (more is noise)", as_given(a.every), human(MIN_EVERY));
        return Err(CliError::BadInput(why));
    }
    let stop = on_interrupt("stopping the runner");
    for (flag, d) in [("--turn", a.turn), ("--turn-idle", a.turn_idle)] {
        if let Some(d) = d.filter(|d| *d < MIN_TURN) {
            return Err(CliError::BadInput(format!(
                "{flag} {}: a turn lasts at least {}",
                as_given(d),
                human(MIN_TURN)
            )));
        }
    }
    let opts = ServeOptions {
        dir: a.dir,
        strategy,
        handler,
        every: a.every,
        watch_program,
        max_file_bytes: a.max_file_bytes,
        turns: Turns { length: a.turn, idle: a.turn_idle },
    };
    crate::engine::serve::serve(opts, stop, &say).await?;
    Ok(Exit::Pass)
}

async fn call_cmd(opts: CallOptions) -> Result<Exit, CliError> {
    let id = opts.id.clone().unwrap_or_else(|| format!("call-{}-{}", std::process::id(), utc_stamps().1));
    let stop = on_interrupt("removing the request");
    let end = crate::engine::serve::call(opts, id, stop, &say).await.map_err(|e| CliError::BadInput(e.to_string()))?;
    let Some(end) = end else {
        console::err("interrupted: the request was removed");
        return Ok(Exit::Interrupted);
    };
    Ok(match end {
        CallEnd::Answered(r) => {
            out!(line "{}", answer_line(&r));
            match r.outcome() {
                Outcome::Ok => Exit::Pass,
                Outcome::Error => Exit::GateFailed,
                Outcome::Paused => Exit::Paused,
            }
        }
        CallEnd::Parked => {
            out!(line "{}", answer_line(&crate::base::protocol::Response::Paused));
            Exit::Paused
        }
        // Said by `call`, which withdrew the request.
        CallEnd::Failed(FailKind::Timeout) => Exit::Timeout,
        CallEnd::Failed(FailKind::IdCollision) => return Err(CliError::BadInput("--id collides".into())),
        // Said by the writer (the notice names what failed).
        CallEnd::Failed(FailKind::Environment) => {
            console::err(
                "error: this machine could not write the request (a full disk, a quota, or a read-only or failing \
                 filesystem under --dir); no call was made",
            );
            Exit::Environment
        }
        CallEnd::Failed(why) => return Err(CliError::Internal(anyhow::anyhow!("the call failed: {}", why.name()))),
    })
}

async fn conform_cmd(a: ConformArgs) -> Result<Exit, CliError> {
    use crate::engine::conform::{case_names, ConformOptions};
    use crate::results::conform::Side;
    let sides: Vec<Side> = match (a.runner, a.writer) {
        (true, _) => vec![Side::Runner],
        (_, true) => vec![Side::Writer],
        _ => vec![Side::Runner, Side::Writer],
    };
    if a.list {
        for side in sides {
            out!(line "--{}:", side.name());
            for (name, section, expectation) in case_names(side) {
                out!(line "  {name:<20} {section:<7} {expectation}");
            }
        }
        return Ok(Exit::Pass);
    }
    let side = sides[0];
    if a.command.is_empty() {
        return Err(CliError::BadInput(crate::engine::conform::ConformError::NoCommand.to_string()));
    }
    if !(crate::engine::conform::MIN_BOUND..=crate::engine::conform::MAX_BOUND).contains(&a.bound) {
        return Err(CliError::BadInput(format!("--bound {}: a case's bound is from 2s to 600s", as_given(a.bound))));
    }
    if let Some(root) = a.relay_root.as_ref().filter(|r| !r.is_dir()) {
        let why = crate::base::fsio::not_a_dir(root);
        return Err(CliError::BadInput(format!("--relay-root {}: {why}; give an existing directory", root.display())));
    }
    let daemon = conform_daemon(&a)?;
    let (started, stamp) = utc_stamps();
    let lock = conform_dir(&a, side, &started, &stamp)?;
    let dir = lock.dir().to_path_buf();
    let handler_program = std::env::current_exe()
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot locate the relay-bench binary: {e}")))?;
    let opts = ConformOptions {
        side,
        command: a.command,
        cases: a.cases,
        bound: a.bound,
        work_root: a.relay_root,
        handler_program,
        daemon,
    };
    let stop = on_interrupt("ending the battery: the cases so far are reported");
    let report = tokio::task::spawn_blocking(move || {
        crate::engine::conform::run(&opts, &stop, started, |c| {
            console::err(&format!("conform: {:<20} {:<13} {}", c.name, c.verdict.name(), c.reason))
        })
    })
    .await
    .map_err(|e| CliError::Internal(anyhow::anyhow!("the battery failed: {e}")))?
    .map_err(|e| match e {
        crate::engine::conform::ConformError::Io(_) => CliError::Internal(anyhow::anyhow!("{e}")),
        _ => CliError::BadInput(e.to_string()),
    })?;
    if let Some(c) = report.calibration {
        console::err(&format!(
            "conform: this machine: a trivial command {:.1} ms, a rename seen in {:.2} ms: every wait x{:.2}",
            c.trivial_start_us as f64 / 1e3,
            c.rename_seen_us as f64 / 1e3,
            c.factor
        ));
    }
    let done = crate::report::side::publish(crate::report::output::Moment::End, &report, &dir)
        .map_err(|e| CliError::Internal(anyhow::anyhow!("{e}")))?;
    out!("{}", String::from_utf8_lossy(&done.console));
    out!(line "report: {}", dir.join("conform.md").display());
    Ok(first_exit(&[
        (report.interrupted, Exit::Interrupted),
        (report.failed(), Exit::GateFailed),
        (report.inconclusive(), Exit::Inconclusive),
    ]))
}

/// The daemon `conform --host sandbox-agent` starts (checked), or the one at `--url`.
fn conform_daemon(a: &ConformArgs) -> Result<Option<crate::engine::conform::Daemon>, CliError> {
    Ok(match (&a.host, &a.url) {
        (Some(_), _) => Some(crate::engine::conform::Daemon::Start(match &a.sandbox_agent {
            Some(p) => {
                crate::sandbox::host::check_sandbox_agent(p)
                    .map_err(|e| CliError::BadInput(format!("--sandbox-agent: {e}")))?;
                p.clone()
            }
            None => crate::sandbox::host::find_sandbox_agent()
                .map_err(|e| CliError::BadInput(format!("--host sandbox-agent: {e}")))?,
        })),
        (None, Some(url)) => Some(crate::engine::conform::Daemon::At(url.clone())),
        (None, None) => None,
    })
}

/// The report directory of a battery, locked for the run: `--out`, or a new one under
/// `reports/`.
fn conform_dir(
    a: &ConformArgs,
    side: crate::results::conform::Side,
    started: &str,
    stamp: &str,
) -> Result<crate::report::outdir::OutLock, CliError> {
    let holder = crate::report::outdir::this_run(started);
    match &a.out {
        Some(d) => crate::report::outdir::take(d, &holder).map_err(|e| CliError::BadInput(e.to_string())),
        None => crate::report::outdir::take_new(
            std::path::Path::new(crate::runs::plan::DEFAULT_REPORTS),
            &format!("{stamp}-conform-{}", side.name()),
            &holder,
        )
        .map_err(|e| CliError::BadInput(format!("cannot make the report directory under reports/: {e}"))),
    }
}

async fn capacity_cmd(args: CapacityArgs) -> Result<Exit, CliError> {
    use crate::results::capacity::Outcome;
    let plan = CapacityPlan::new(args.request).map_err(CapacityRunError::from)?;
    let interrupt = on_interrupt("cancelling the held execs and stopping the daemon");
    let mut progress = |s: &crate::results::capacity::Step| {
        let rss = s.readings.rss_kib.map_or_else(String::new, |k| format!(", RSS {:.1} MiB", k as f64 / 1024.0));
        let fds = s.readings.fds.map_or_else(String::new, |n| format!(", {n} fds"));
        console::err(&format!(
            "daemon-capacity: {} held: next exec p50 {} p99 {}{rss}{fds}",
            s.held,
            crate::base::units::human_us(s.probe.p50),
            crate::base::units::human_us(s.probe.p99)
        ));
    };
    let done = crate::runs::capacity::run(plan, interrupt, &mut progress).await?;
    out!("{}", String::from_utf8_lossy(&done.console));
    out!(line "report: {}", done.dir.join("capacity.md").display());
    let r = &done.report;
    if let Some(k) = r.cleanup.as_ref().filter(|k| !k.clean()) {
        return Err(CliError::Internal(anyhow::anyhow!(
            "the cleanup left held programs running (pids {:?}) or the daemon up (stopped: {:?})",
            k.left,
            k.daemon_stopped
        )));
    }
    Ok(match r.outcome {
        Outcome::Completed | Outcome::FailurePoint => Exit::Pass,
        Outcome::Interrupted => Exit::Interrupted,
        Outcome::Stopped | Outcome::Running => {
            console::err(
                "daemon-capacity: the ramp stopped for a reason of its own, not the daemon's (see the failure above)",
            );
            Exit::Internal
        }
    })
}

fn compare_cmd(old: &Path, new: &Path, threshold: Threshold, strict: bool, format: Format) -> Result<Exit, CliError> {
    let c = crate::report::compare::compare(old, new, threshold).map_err(|e| CliError::BadInput(e.to_string()))?;
    if strict && !c.env_diff.is_empty() {
        let diffs: Vec<String> = c.env_diff.iter().map(|d| format!("{} {} -> {}", d.field, d.old, d.new)).collect();
        return Err(CliError::BadInput(format!("--strict: the environments differ: {}", diffs.join(", "))));
    }
    out!("{}", crate::report::compare::render(&c, format));
    Ok(if c.fails() { Exit::GateFailed } else { Exit::Pass })
}

fn check_cmd(log: &Path, ndjson: bool) -> Result<Exit, CliError> {
    // Streamed line by line (each line capped); a FIFO or a device is refused, not read.
    let file = crate::base::fsio::open_regular(
        log,
        crate::base::fsio::Bound::new("the event log", u64::MAX).following_links(),
    )
    .map_err(|e| CliError::BadInput(e.to_string()))?;
    if ndjson {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let mut failed = None;
        let warnings = read_log(&log.display().to_string(), std::io::BufReader::new(file), |l| {
            if failed.is_none() {
                let line = serde_json::to_string(&l).expect("a line serializes");
                failed = std::io::Write::write_all(&mut out, format!("{line}\n").as_bytes()).err();
            }
            Ok(())
        })
        .map_err(|e| CliError::BadInput(e.to_string()))?;
        let flushed = std::io::Write::flush(&mut out);
        warnings.iter().for_each(|w| console::err(&format!("warning: {w}")));
        return match failed.map_or(flushed, Err) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Pass),
            Err(_) => Ok(Exit::OutputLost),
            Ok(()) => Ok(Exit::Pass),
        };
    }
    let check = check_log(&log.display().to_string(), std::io::BufReader::new(file))
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    if check.cases.is_empty() {
        return Err(CliError::BadInput(format!("{}: no request or response lines", log.display())));
    }
    out!("{}", render_checks(&check));
    let absent = cases_absent(log, &check);
    for case in &absent {
        out!(line "{case}: in the summary.json beside the log, and no line of it in the log (cut short?)");
    }
    Ok(if absent.is_empty() && !check.cases.iter().any(|c| c.fails()) { Exit::Pass } else { Exit::GateFailed })
}

/// The cases a run's summary.json beside `log` reports that the log holds no line of: a log
/// cut exactly between two cases looks whole on its own.
fn cases_absent(log: &Path, check: &crate::record::eventlog::LogCheck) -> Vec<String> {
    let Some(summary) = log.parent().and_then(|d| crate::results::summary::Summary::read(d).ok()) else {
        return Vec::new();
    };
    summary.results.into_iter().map(|r| r.case).filter(|case| !check.cases.iter().any(|c| c.case == *case)).collect()
}
