//! The command line: parses flags into a plain config, runs scenarios, writes reports after
//! every case (so a killed run still leaves one), and maps the outcome to an exit code.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::bench::{render_charts, run_scenario, save_baseline, utc_stamps, BenchError, RunOptions};
use crate::eventlog::check_log;
use crate::events::FailKind;
use crate::export::{Exporter, Markdown, Table};
use crate::handler::HandlerModel;
use crate::pairing::BreachKind;
use crate::protocol::Outcome;
use crate::scenario::{Scenario, ScenarioError, SHIPPED};
use crate::serve::{answer_line, CallOptions, ServeOptions};
use crate::signal::Signal;
use crate::strategy::{runner_kind, writer_by_name};
use crate::summary::Summary;
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
    Bench(#[from] BenchError),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl CliError {
    pub fn exit(&self) -> Exit {
        match self {
            CliError::Scenario(_) | CliError::BadInput(_) => Exit::BadInput,
            CliError::Bench(e) if e.is_bad_input() => Exit::BadInput,
            CliError::Bench(_) | CliError::Internal(_) => Exit::Internal,
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
    /// How requests are discovered: poll, watch (inotify, the poll delay racing it),
    /// window-exec or window-exec-inline (production's loop, without its stale sweep).
    #[arg(long, default_value = "watch", value_parser = ["poll", "watch", "window-exec", "window-exec-inline"])]
    pub strategy: String,
    /// The poll interval (it grows to 5x after 5 idle lists, as production's does).
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
pub fn main_with_args<I: Into<std::ffi::OsString>>(args: impl IntoIterator<Item = I>) -> i32 {
    let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    // The in-sandbox watch program (run by the suite itself, hidden from help): its argv is
    // `sandbox-watch [options] -- DIR WINDOW_MS RELIST_MS` (DIR may be any bytes), read by
    // its own parser.
    if args.get(1).is_some_and(|a| a == crate::dir::program::SUBCOMMAND) {
        return crate::dir::program::main(&args[2..]);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { Exit::BadInput as i32 } else { Exit::Pass as i32 };
        }
    };
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
    }
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
    // Baseline names are checked before anything runs, not after a long run.
    for n in args.save_baseline.iter().chain(&args.baseline) {
        baseline_dir(n)?;
    }
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
    // The strategy goes through the scenario parser's registry, as a case's table would.
    let mut table = toml::Table::new();
    let ms = |d: Duration| toml::Value::String(format!("{}ms", d.as_millis()));
    table.insert("interval".into(), ms(a.interval));
    table.insert("max_interval".into(), ms(a.interval * 5));
    table.insert("sweep".into(), toml::Value::Boolean(false));
    let mut fields = crate::config::Fields::new("--strategy", "", &table);
    let kind = runner_kind(&a.strategy).expect("clap checked the name");
    let strategy = kind.parse(Some(&mut fields))?;
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
    let wait = writer_by_name(&a.wait).expect("clap checked the name");
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
        CallEnd::Parked => {
            println!("{}", answer_line(&crate::protocol::Response::Paused));
            Exit::Paused
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

#[cfg(test)]
mod tests {
    use super::*;

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
