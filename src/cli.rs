//! The command line: parses flags into a plain config, runs scenarios, writes reports after
//! every case (so a killed run still leaves one), and maps the outcome to an exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::calibration::calibrate;
use crate::engine::{run_case, run_case_virtual, CaseEnv, EngineError, Progress};
use crate::env::Environment;
use crate::eventlog::check_log;
use crate::events::FailKind;
use crate::export::{Exporter, Json, Markdown, Table};
use crate::handler::HandlerModel;
use crate::pairing::BreachKind;
use crate::protocol::Outcome;
use crate::scenario::{Clock, Scenario, ScenarioError, SHIPPED};
use crate::serve::{answer_line, CallOptions, ServeOptions};
use crate::source::Signal;
use crate::strategy::{RunnerStrategy, WriterStrategy};
use crate::summary::{Summary, SCHEMA_VERSION};
use crate::units::human;
use crate::writer::CallEnd;

/// Exit codes CI can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
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
    /// Ctrl-C: a partial report was written and marked interrupted.
    Interrupted = 130,
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{0}")]
    BadInput(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl CliError {
    pub fn exit(&self) -> Exit {
        match self {
            CliError::Scenario(_) | CliError::BadInput(_) => Exit::BadInput,
            CliError::Internal(_) => Exit::Internal,
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "relay-bench",
    version,
    about = "Benchmark the file-based tool-call relays of AI agents",
    long_about = "Fires batches of relay calls through poll-only, watch-assisted, bounded-window exec and other \
strategies, on real relay directories (local or behind an emulated remote daemon) or in virtual time, and \
records wake, pickup and completion latency (HDR histograms) plus request counts per minute, \
then checks the scenario's gates. `serve` and `call` are the suite's reference runner and writer on a \
real relay dir; `check` replays the pairing invariant over a run's events.ndjson; `report` re-renders a run \
directory; `compare` puts two runs side by side with a noise-aware verdict.\n\nExit codes: 0 all \
gates passed (call: ok answer; check: no breach), 1 a gate failed (call: error answer; check: breaches \
found), 2 bad input, 3 internal error, 4 call: paused answer, 5 call: timed out, 130 interrupted."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios (the embedded default when none is given) and write their reports.
    Run(RunArgs),
    /// List the shipped scenarios.
    List,
    /// Serve a relay dir with the reference runner until Ctrl-C (a stat line per interval).
    Serve(ServeArgs),
    /// Make one call through a relay dir as the reference writer and print the answer.
    Call(CallArgs),
    /// Compare two run directories case by case, with a noise-aware verdict; exit 1 on any
    /// regression.
    Compare {
        /// The earlier run directory (or a baseline's).
        old: PathBuf,
        /// The later run directory.
        new: PathBuf,
        /// A change counts only if its 95% interval clears this many percent.
        #[arg(long, default_value_t = 5.0)]
        threshold: f64,
        /// Refuse to compare runs whose environments differ (kernel, filesystem, cpus,
        /// build profile, suite version).
        #[arg(long)]
        strict: bool,
    },
    /// Re-render a run directory's summary.md, .hgrm files and charts from its summary.json
    /// and .hlog files.
    Report {
        /// A run directory (where summary.json is).
        dir: PathBuf,
    },
    /// Replay the pairing invariant (SPEC §7) over an events.ndjson; exit 1 on any breach.
    Check {
        /// The event log (a run directory's events.ndjson).
        log: PathBuf,
    },
    /// The in-sandbox watch program of the window-exec strategy (run by the suite itself).
    #[command(hide = true)]
    SandboxWatch {
        dir: PathBuf,
        window_ms: u64,
        relist_ms: u64,
        /// Print the requests found, so the runner skips its list and read.
        #[arg(long)]
        inline: bool,
        /// Stay up for the window, streaming a line per event (the persistent watcher).
        #[arg(long, conflicts_with = "inline")]
        follow: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Scenario files (.toml) or names of shipped scenarios (see `relay-bench list`).
    #[arg(value_name = "SCENARIO")]
    pub scenarios: Vec<String>,
    /// Report directory (default: reports/<timestamp>-<scenario>/); with several scenarios,
    /// one subdirectory per scenario.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print only the final table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Where to make the relay dirs (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    pub relay_root: Option<PathBuf>,
    /// Run only the cases with these names.
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// Skip the calibration of this machine's floor.
    #[arg(long)]
    pub no_calibration: bool,
    /// Also write calls.csv: a row per call with its whole timeline (for small runs).
    #[arg(long)]
    pub calls_csv: bool,
    /// Also keep this run as the baseline NAME (reports/baselines/NAME/).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare this run with the baseline NAME afterwards; a regression exits 1.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    crate::units::parse_duration(s)
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The relay directory to serve.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// How requests are discovered: poll, watch (inotify + safety list) or window-exec.
    #[arg(long, default_value = "watch", value_parser = ["poll", "watch", "window-exec", "window-exec-inline"])]
    pub strategy: String,
    /// Poll interval (poll) or safety list interval (watch).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, default_value = "300ms")]
    pub interval: Duration,
    /// How long the tool takes per call.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, default_value = "0ms")]
    pub handler: Duration,
    /// Share of calls answered {"ok":false,...}.
    #[arg(long, default_value_t = 0.0)]
    pub error_ratio: f64,
    /// How often a stat line is printed.
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, default_value = "5s")]
    pub every: Duration,
}

#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The relay directory.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The tool name.
    #[arg(long)]
    pub tool: String,
    /// The args, as JSON (default {}).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// The call id (default: call-<pid>-<time>).
    #[arg(long)]
    pub id: Option<String>,
    /// The tool timeout: the writer waits it plus 10 s (60 s without one).
    #[arg(long, value_name = "DURATION", value_parser = duration_arg)]
    pub timeout: Option<Duration>,
    /// How to wait for the answer: watch (inotify + 300 ms safety check) or poll (every 300 ms).
    #[arg(long, default_value = "watch", value_parser = ["watch", "poll"])]
    pub wait: String,
}

/// Parses `args`, runs, prints; returns the process exit code.
pub fn main_with_args(args: impl IntoIterator<Item = String>) -> i32 {
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { Exit::BadInput as i32 } else { Exit::Pass as i32 };
        }
    };
    if let Command::SandboxWatch { dir, window_ms, relist_ms, inline, follow } = &cli.command {
        let ms = std::time::Duration::from_millis;
        if *follow {
            return crate::sandbox_watch::follow(dir, ms(*window_ms), ms(*relist_ms));
        }
        return crate::sandbox_watch::run(dir, ms(*window_ms), ms(*relist_ms), *inline);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("Error: cannot start the async runtime: {e}");
            return Exit::Internal as i32;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code as i32,
        Err(e) => {
            eprintln!("Error: {e:#}");
            e.exit() as i32
        }
    }
}

pub async fn run(cli: Cli) -> Result<Exit, CliError> {
    match cli.command {
        Command::List => {
            let width = SHIPPED.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
            for (name, text) in SHIPPED {
                let s = Scenario::parse(&format!("embedded:{name}"), text)?;
                let cases: Vec<&str> = s.cases.iter().map(|c| c.name.as_str()).collect();
                println!("{name:<width$}  {} [{}]", s.description, cases.join(", "));
            }
            Ok(Exit::Pass)
        }
        Command::Run(args) => run_scenarios(args).await,
        Command::Serve(args) => serve_cmd(args).await,
        Command::Call(args) => call_cmd(args).await,
        Command::Check { log } => check_cmd(&log),
        Command::Compare { old, new, threshold, strict } => compare_cmd(&old, &new, threshold, strict),
        Command::Report { dir } => {
            let path = dir.join("summary.json");
            let text =
                std::fs::read_to_string(&path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
            let summary: Summary =
                serde_json::from_str(&text).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
            let md = dir.join(Markdown.file_name());
            std::fs::write(&md, Markdown.render(&summary))
                .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot write {}: {e}", md.display())))?;
            let hgrm = crate::export::hdr::rewrite_hgrm(&dir.join("hdr")).map_err(CliError::BadInput)?;
            let n = render_charts(&dir).map_err(CliError::BadInput)?;
            println!(
                "{} and {hgrm} .hgrm files rewritten; {n} chart files written under {}",
                md.display(),
                dir.join("charts").display()
            );
            Ok(Exit::Pass)
        }
        Command::SandboxWatch { .. } => unreachable!("run before the runtime starts"),
    }
}

/// Options of one scenario run, validated.
pub struct RunOptions {
    pub out_dir: PathBuf,
    pub relay_root: PathBuf,
    pub quiet: bool,
    pub calibrate: bool,
    /// The relay-bench binary that window-exec strategies run in the sandbox.
    pub watch_program: PathBuf,
    /// Write calls.csv beside the report.
    pub calls_csv: bool,
}

async fn run_scenarios(args: RunArgs) -> Result<Exit, CliError> {
    let names = if args.scenarios.is_empty() { vec![crate::scenario::DEFAULT_NAME.to_owned()] } else { args.scenarios };
    let mut scenarios = Vec::new();
    for n in &names {
        let mut s = Scenario::load(n)?;
        if !args.cases.is_empty() {
            let known: Vec<String> = s.cases.iter().map(|c| c.name.clone()).collect();
            if let Some(bad) = args.cases.iter().find(|c| !known.contains(c)) {
                return Err(CliError::BadInput(format!(
                    "--case {bad:?}: scenario {:?} has no such case; its cases: {}",
                    s.name,
                    known.join(", ")
                )));
            }
            s.cases.retain(|c| args.cases.contains(&c.name));
        }
        scenarios.push(s);
    }
    let relay_root = args.relay_root.unwrap_or_else(std::env::temp_dir);
    if !relay_root.is_dir() {
        return Err(CliError::BadInput(format!("--relay-root {}: not a directory", relay_root.display())));
    }
    let interrupt = on_ctrl_c("finishing the current case's report");
    let watch_program = std::env::current_exe()
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot locate the relay-bench binary: {e}")))?;
    let (stamp_iso, stamp_compact) = utc_stamps();
    let several = scenarios.len() > 1;
    let mut worst = Exit::Pass;
    for s in &scenarios {
        let out_dir = match &args.out {
            Some(d) if several => d.join(&s.name),
            Some(d) => d.clone(),
            None => PathBuf::from("reports").join(format!("{stamp_compact}-{}", s.name)),
        };
        let opts = RunOptions {
            out_dir,
            relay_root: relay_root.clone(),
            quiet: args.quiet,
            calibrate: !args.no_calibration,
            watch_program: watch_program.clone(),
            calls_csv: args.calls_csv,
        };
        let summary = run_scenario(s, &opts, &stamp_iso, interrupt.clone()).await?;
        print!("{}", String::from_utf8_lossy(&Table.render(&summary)));
        if !args.quiet {
            println!("report: {}", opts.out_dir.join("summary.md").display());
        }
        let code = if summary.interrupted {
            Exit::Interrupted
        } else if summary.pass {
            Exit::Pass
        } else {
            Exit::GateFailed
        };
        worst = worse(worst, code);
        if summary.interrupted {
            break;
        }
        if let Some(name) = &args.save_baseline {
            let to = baseline_dir(name)?;
            let to = if several { to.join(&s.name) } else { to };
            save_baseline(&opts.out_dir, &to)
                .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot save the baseline {}: {e}", to.display())))?;
            println!("baseline saved: {}", to.display());
        }
        if let Some(name) = &args.baseline {
            let from = baseline_dir(name)?;
            let from = if several { from.join(&s.name) } else { from };
            if !from.join("summary.json").is_file() {
                return Err(CliError::BadInput(format!("--baseline {name}: no baseline at {}", from.display())));
            }
            let c = crate::compare::compare(&from, &opts.out_dir, 0.05).map_err(CliError::BadInput)?;
            println!("against the baseline {name}:");
            print!("{}", crate::compare::render(&c, 0.05));
            if c.regressions() > 0 {
                worst = worse(worst, Exit::GateFailed);
            }
        }
    }
    Ok(worst)
}

/// A signal closed by the first Ctrl-C; a second one exits at once.
fn on_ctrl_c(doing: &'static str) -> Arc<Signal> {
    let interrupt = Arc::new(Signal::new());
    tokio::spawn({
        let interrupt = interrupt.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ninterrupted: {doing} (Ctrl-C again to abort)");
                interrupt.close();
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(Exit::Interrupted as i32);
                }
            }
        }
    });
    interrupt
}

async fn serve_cmd(a: ServeArgs) -> Result<Exit, CliError> {
    let mut strategy = RunnerStrategy::by_name(&a.strategy).expect("clap checked the name");
    match &mut strategy {
        RunnerStrategy::Poll { interval, max_interval, .. } => {
            (*interval, *max_interval) = (a.interval, a.interval * 5)
        }
        RunnerStrategy::Watch { safety_interval } => *safety_interval = a.interval,
        _ => {}
    }
    if !(0.0..=1.0).contains(&a.error_ratio) {
        return Err(CliError::BadInput(format!("--error-ratio {}: must be between 0 and 1", a.error_ratio)));
    }
    let handler = HandlerModel {
        duration: a.handler,
        duration_max: a.handler,
        error_ratio: a.error_ratio,
        ..HandlerModel::default()
    };
    let watch_program = std::env::current_exe()
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot locate the relay-bench binary: {e}")))?;
    let stop = on_ctrl_c("stopping the runner");
    let opts = ServeOptions { dir: a.dir, strategy, handler, every: a.every, watch_program };
    crate::serve::serve(opts, stop).await.map_err(|e| CliError::BadInput(format!("--dir: {e}")))?;
    Ok(Exit::Pass)
}

async fn call_cmd(a: CallArgs) -> Result<Exit, CliError> {
    let interval = Duration::from_millis(300);
    let wait = match a.wait.as_str() {
        "poll" => WriterStrategy::Poll { interval },
        _ => WriterStrategy::Watch { safety_interval: interval },
    };
    let id = a.id.unwrap_or_else(|| format!("call-{}-{}", std::process::id(), utc_stamps().1));
    let opts = CallOptions { dir: a.dir, tool: a.tool, args: a.args, id, timeout: a.timeout, wait };
    let end = crate::serve::call(opts).await.map_err(|e| CliError::BadInput(e.to_string()))?;
    Ok(match end {
        CallEnd::Answered(r) => {
            println!("{}", answer_line(&r));
            match r.outcome() {
                Outcome::Ok => Exit::Pass,
                Outcome::Error => Exit::GateFailed,
                Outcome::Paused => Exit::Paused,
            }
        }
        CallEnd::Failed(FailKind::Timeout) => {
            eprintln!("no answer before the writer deadline");
            Exit::Timeout
        }
        CallEnd::Failed(FailKind::IdCollision) => return Err(CliError::BadInput("--id collides".into())),
        CallEnd::Failed(why) => return Err(CliError::Internal(anyhow::anyhow!("the call failed: {}", why.name()))),
    })
}

/// Where baselines are kept.
fn baseline_dir(name: &str) -> Result<PathBuf, CliError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) || name.starts_with('.')
    {
        return Err(CliError::BadInput(format!("baseline {name:?}: use only A-Z a-z 0-9 - _ .")));
    }
    Ok(PathBuf::from("reports").join("baselines").join(name))
}

/// Copies a run directory's summary.json and hdr/ tree to `to` (replacing it).
fn save_baseline(from: &Path, to: &Path) -> std::io::Result<()> {
    fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                copy_tree(&e.path(), &to.join(e.file_name()))?;
            } else {
                std::fs::copy(e.path(), to.join(e.file_name()))?;
            }
        }
        Ok(())
    }
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    std::fs::copy(from.join("summary.json"), to.join("summary.json"))?;
    if from.join("hdr").is_dir() {
        copy_tree(&from.join("hdr"), &to.join("hdr"))?;
    }
    Ok(())
}

fn compare_cmd(old: &Path, new: &Path, threshold_pct: f64, strict: bool) -> Result<Exit, CliError> {
    if !(0.0..100.0).contains(&threshold_pct) {
        return Err(CliError::BadInput(format!("--threshold {threshold_pct}: must be between 0 and 100")));
    }
    let c = crate::compare::compare(old, new, threshold_pct / 100.0).map_err(CliError::BadInput)?;
    if strict && !c.env_diff.is_empty() {
        let diffs: Vec<String> = c.env_diff.iter().map(|(f, a, b)| format!("{f} {a} -> {b}")).collect();
        return Err(CliError::BadInput(format!("--strict: the environments differ: {}", diffs.join(", "))));
    }
    print!("{}", crate::compare::render(&c, threshold_pct / 100.0));
    Ok(if c.regressions() > 0 { Exit::GateFailed } else { Exit::Pass })
}

fn check_cmd(log: &Path) -> Result<Exit, CliError> {
    let file = std::fs::File::open(log).map_err(|e| CliError::BadInput(format!("{}: {e}", log.display())))?;
    let checks = check_log(&log.display().to_string(), std::io::BufReader::new(file))
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    if checks.is_empty() {
        return Err(CliError::BadInput(format!("{}: no request or response lines", log.display())));
    }
    let mut breaches = 0;
    for c in &checks {
        let r = &c.report;
        breaches += r.total();
        println!("{}: {} requests, {} responses, {} breaches", c.case, c.requests, c.responses, r.total());
        for k in BreachKind::ALL.iter().filter(|k| r.count(**k) > 0) {
            println!("  {}: {}", k.name(), r.count(*k));
        }
        for b in r.breaches.iter().take(20) {
            println!("    {} sandbox {} call {:?}", b.kind.name(), b.sandbox, b.call);
        }
    }
    Ok(if breaches > 0 { Exit::GateFailed } else { Exit::Pass })
}

fn worse(a: Exit, b: Exit) -> Exit {
    let rank = |e: Exit| match e {
        Exit::Pass => 0,
        Exit::GateFailed | Exit::Paused | Exit::Timeout => 1,
        Exit::BadInput => 2,
        Exit::Internal => 3,
        Exit::Interrupted => 4,
    };
    if rank(b) > rank(a) {
        b
    } else {
        a
    }
}

/// Runs every case of one scenario, rewriting the report after each.
pub async fn run_scenario(
    s: &Scenario,
    opts: &RunOptions,
    started_at: &str,
    interrupt: Arc<Signal>,
) -> Result<Summary, CliError> {
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|e| CliError::BadInput(format!("--out {}: cannot create: {e}", opts.out_dir.display())))?;
    let say = |msg: &str| {
        if !opts.quiet {
            eprintln!("{msg}");
        }
    };
    let environment = Environment::probe(&opts.relay_root);
    if environment.build == "debug" {
        say("warning: this is a debug build; use `cargo run --release` for numbers worth quoting");
    }
    // The machine's floor means nothing to a scenario whose every case runs in virtual time.
    let calibration = if opts.calibrate && s.cases.iter().any(|c| c.clock == Clock::Real) {
        say("calibrating this machine's floor (inotify delivery, timer overshoot, dir listing)...");
        match calibrate(&opts.relay_root, 200).await {
            Ok(c) => Some(c),
            Err(e) => {
                say(&format!("calibration failed, reported as not measured: {e}"));
                None
            }
        }
    } else {
        None
    };
    let mut summary = Summary {
        schema_version: SCHEMA_VERSION,
        tool: Summary::tool(),
        scenario: s.name.clone(),
        scenario_origin: s.origin.clone(),
        description: s.description.clone(),
        started_at: started_at.to_owned(),
        environment,
        calibration,
        results: Vec::new(),
        cases_not_run: s.cases.iter().map(|c| c.name.clone()).collect(),
        baseline: s.baseline.clone(),
        interrupted: false,
        pass: false,
    };
    write_reports(&summary, &opts.out_dir)?;
    // A live bar redrawn in place when stderr is a terminal; off otherwise and with --quiet.
    let tty = !opts.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let progress: Progress = if tty {
        Some(Arc::new(|line: &str| {
            let line: String = line.chars().take(99).collect();
            eprint!("\r\x1b[2K{line}");
        }))
    } else {
        None
    };
    let clear_bar = || {
        if tty {
            eprint!("\r\x1b[2K");
        }
    };
    // One event log per run directory: every case appends its lines.
    let event_log = opts.out_dir.join("events.ndjson");
    std::fs::File::create(&event_log)
        .map_err(|e| CliError::Internal(anyhow::anyhow!("cannot create {}: {e}", event_log.display())))?;
    let calls_csv = opts.calls_csv.then(|| opts.out_dir.join("calls.csv"));
    if let Some(p) = &calls_csv {
        let _ = std::fs::remove_file(p);
        let calls: usize = s.workload.schedule().len() * s.cases.len();
        if calls > 100_000 {
            say(&format!("note: calls.csv will hold {calls} rows; it is meant for small runs"));
        }
    }
    let env = CaseEnv {
        calls_csv,
        event_log: Some(event_log),
        relay_root: opts.relay_root.clone(),
        watch_program: opts.watch_program.clone(),
        interrupt: interrupt.clone(),
        progress: progress.clone(),
        progress_every: Duration::from_millis(250),
    };
    let n = s.cases.len();
    for (i, case) in s.cases.iter().enumerate() {
        if interrupt.is_closed() {
            summary.interrupted = true;
            break;
        }
        say(&format!(
            "[{}/{n}] {}: runner {} ({}), writer {} ({}), {} sandboxes, {} schedule",
            i + 1,
            case.name,
            case.runner.name(),
            case.runner.params(),
            case.writer.name(),
            case.writer.params(),
            s.workload.sandboxes,
            crate::units::human(s.workload.duration())
        ));
        let wall = std::time::Instant::now();
        let result = match case.clock {
            Clock::Real => run_case(s, case, &env).await,
            // A paused clock needs a runtime of its own, on a thread of its own.
            Clock::Virtual => tokio::task::block_in_place(|| {
                std::thread::scope(|scope| {
                    let t = std::thread::Builder::new()
                        .name("relay-bench-virtual".into())
                        .spawn_scoped(scope, || run_case_virtual(s, case, &env));
                    match t {
                        Ok(t) => t.join().unwrap_or_else(|_| Err(EngineError::Pacer("virtual case panicked".into()))),
                        Err(source) => Err(EngineError::Setup { root: "(virtual case thread)".into(), source }),
                    }
                })
            }),
        };
        clear_bar();
        let result =
            result.map_err(|e| CliError::Internal(anyhow::Error::new(e).context(format!("case {:?}", case.name))))?;
        if case.clock == Clock::Virtual {
            let simulated = Duration::from_secs_f64(result.window_secs);
            say(&format!("      simulated {} in {} of wall time", human(simulated), human(wall.elapsed())));
        }
        say(&format!(
            "      {} calls answered, {} lost, pickup p50 {}, {}",
            result.calls.completed,
            result.calls.lost,
            crate::export::pair(&result.latency_us.pickup),
            if result.pass { "gates pass" } else { "GATES FAIL" }
        ));
        if let Some(hdr) = &result.hdr {
            let dir = opts.out_dir.join("hdr").join(&case.name);
            if let Err(e) = crate::export::hdr::write_case(&dir, hdr) {
                say(&format!("warning: cannot write the HdrHistogram files under {}: {e}", dir.display()));
            }
        }
        summary.interrupted |= result.interrupted;
        summary.cases_not_run.retain(|c| *c != case.name);
        summary.results.push(result);
        summary.compare(|case| s.cases.iter().find(|c| c.name == case).and_then(|c| c.baseline.clone()));
        summary.recompute_pass();
        write_reports(&summary, &opts.out_dir)?;
    }
    summary.recompute_pass();
    write_reports(&summary, &opts.out_dir)?;
    if let Err(e) = render_charts(&opts.out_dir) {
        say(&format!("warning: charts not drawn: {e}"));
    }
    Ok(summary)
}

/// Draws the run directory's charts from its files; returns how many were written.
pub fn render_charts(dir: &Path) -> Result<usize, String> {
    let data = crate::chart::RunData::load(dir)?;
    crate::chart::render(dir, &data).map(|f| f.len())
}

fn write_reports(summary: &Summary, dir: &Path) -> Result<(), CliError> {
    let exporters: [&dyn Exporter; 2] = [&Json, &Markdown];
    for e in exporters {
        let path = dir.join(e.file_name());
        let tmp = dir.join(format!(".{}.tmp", e.file_name()));
        std::fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&e.render(summary)))
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|err| CliError::Internal(anyhow::anyhow!("cannot write {}: {err}", path.display())))?;
    }
    Ok(())
}

/// Now in UTC: (`2026-11-29T18:30:00Z`, `20261129T183000Z`).
pub fn utc_stamps() -> (String, String) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    (format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"), format!("{y:04}{m:02}{d:02}T{h:02}{mi:02}{s:02}Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_look_right() {
        let (iso, compact) = utc_stamps();
        assert_eq!(iso.len(), 20);
        assert!(iso.starts_with("20") && iso.ends_with('Z'));
        assert_eq!(compact.len(), 16);
    }

    #[test]
    fn flags_parse_into_a_plain_config() {
        let cli = Cli::try_parse_from(["relay-bench", "run", "a.toml", "--case", "x", "-q"]).unwrap();
        match cli.command {
            Command::Run(r) => {
                assert_eq!(r.scenarios, vec!["a.toml".to_string()]);
                assert_eq!(r.cases, vec!["x".to_string()]);
                assert!(r.quiet);
            }
            _ => panic!("parsed as another command"),
        }
        let err = Cli::try_parse_from(["relay-bench", "run", "--bogus"]).unwrap_err();
        assert!(err.use_stderr(), "a bad flag is an error, exit code 2");
    }
}
