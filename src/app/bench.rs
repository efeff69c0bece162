//! Running scenarios: every case of a scenario on its clock, the machine's calibration
//! beside them, and the reports rewritten after each case (so a killed run still leaves
//! one). The library's entry point; the CLI only parses flags and prints.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::app::console;
use crate::app::points::Job;
use crate::base::signal::Signal;
use crate::base::units::human;
use crate::engine::{run_case, run_case_virtual, CaseEnv, EngineError, Progress};
use crate::report::output::{Input, Moment};
use crate::report::publish::{publish, FlagPaths, OutputError};
use crate::results::calibration::calibrate;
use crate::results::env::Environment;
use crate::results::summary::repeats::combine;
use crate::results::summary::{CaseResult, Summary, SCHEMA_VERSION};
use crate::results::sweep::SweepResult;
use crate::scenario::{CaseSpec, Clock, Scenario};

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("--out {path}: cannot create: {source}")]
    OutDir { path: String, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("case {case:?}: {source}")]
    Case { case: String, source: EngineError },
    /// A sweep's point's own event log or calls.csv.
    #[error(transparent)]
    Part(#[from] crate::app::points::PartFailed),
    #[error("case {case:?}: {part}: {why}")]
    Unavailable { case: String, part: String, why: String },
    #[error(transparent)]
    EventLog(#[from] crate::app::logplan::TooLarge),
}

impl BenchError {
    /// Whether the user can fix it (a path, a runner command), rather than something broken
    /// inside.
    pub(crate) fn is_bad_input(&self) -> bool {
        // A runner that cannot start is the case's command (a black-box runner), not us.
        matches!(
            self,
            BenchError::OutDir { .. }
                | BenchError::Unavailable { .. }
                | BenchError::EventLog(_)
                | BenchError::Case { source: EngineError::NotReady { said_why: true, .. }, .. }
        )
    }
}

/// Refuses a scenario with a case whose host or runner this machine lacks (a daemon not
/// installed, no node): said before anything runs, not after the cases before it.
pub(crate) fn check_available(s: &Scenario) -> Result<(), BenchError> {
    for c in &s.cases {
        let lacking =
            [("host", c.host.name(), c.host.missing_here()), ("runner", c.runner.name(), c.runner.missing_here())];
        if let Some((kind, name, Some(why))) = lacking.into_iter().find(|(_, _, why)| why.is_some()) {
            return Err(BenchError::Unavailable { case: c.name.clone(), part: format!("{kind} {name}"), why });
        }
    }
    Ok(())
}

/// Options of one scenario run, validated.
pub struct RunOptions {
    /// The run directory the reports go to.
    pub out_dir: PathBuf,
    /// Where the relay dirs are made.
    pub relay_root: PathBuf,
    /// No progress and no console table.
    pub quiet: bool,
    /// Measure this machine's floor before the cases (real clock).
    pub calibrate: bool,
    /// The relay-bench binary that window-exec strategies run in the sandbox.
    pub watch_program: PathBuf,
    /// Write calls.csv beside the report.
    pub calls_csv: bool,
    /// Write no events.ndjson (a fleet's log runs to gigabytes; `check` has nothing to read).
    pub no_event_log: bool,
    /// The event log's form, and the largest its estimate may be (bytes).
    pub event_log: crate::app::logplan::EventLogFormat,
    /// The largest event log the run may write, in bytes; a run that would write more is refused before it starts.
    pub max_event_log: u64,
    /// Virtual cases run side by side, at most this many at once (1: one at a time).
    pub jobs: usize,
}

/// Runs every case of one scenario, rewriting the report after each. Its hosts are checked
/// first ([`check_available`]) by whoever plans the run (`runs::Plan::new`, once for every
/// scenario); a host that turns out to be missing here fails its case when it is built.
pub async fn run_scenario(
    s: &Scenario,
    opts: &RunOptions,
    started_at: &str,
    interrupt: Arc<Signal>,
) -> Result<Summary, BenchError> {
    std::fs::create_dir_all(&opts.out_dir)
        .map_err(|source| BenchError::OutDir { path: opts.out_dir.display().to_string(), source })?;
    let say = |msg: &str| {
        if !opts.quiet {
            console::err(msg);
        }
    };
    if let Some(o) = &s.overrides {
        say(&format!("{}: overridden: {}", s.name, o.given.join(" ")));
    }
    let mut summary = open_summary(s, opts, started_at, &say).await;
    publish_as(Moment::Progress, &summary, &opts.out_dir, &say)?;
    let (progress, tty) = progress_bar(opts.quiet);
    let clear_bar = || {
        if tty {
            console::err_raw("\r\x1b[2K");
        }
    };
    let (event_log, calls_csv) = open_logs(s, opts, &say)?;
    let env = CaseEnv {
        calls_csv,
        event_log,
        event_log_max: opts.max_event_log,
        relay_root: opts.relay_root.clone(),
        watch_program: opts.watch_program.clone(),
        interrupt: interrupt.clone(),
        progress: progress.clone(),
        progress_every: Duration::from_millis(250),
    };
    let n = s.cases.len();
    let announce = |i: usize| {
        let case = &s.cases[i];
        clear_bar();
        say(&heading(s, i));
        let departures = case.departures();
        if !departures.is_empty() {
            say(&format!("      departs from production: {}", departures.join(", ")));
        }
    };
    // Virtual cases in a row (a sweep's points among them), and a virtual case's repeats,
    // run side by side, `jobs` at once; real-clock cases one at a time.
    let workers = opts.jobs.max(1);
    let repeats = s.repeats() as usize;
    let variants: Vec<Scenario> = (1..repeats).map(|k| s.for_repeat(k as u32, repeats as u32)).collect();
    let scenario_of = |k: usize| if k == 0 { s } else { &variants[k - 1] };
    let mut i = 0;
    while i < n {
        if interrupt.is_closed() {
            summary.interrupted = true;
            break;
        }
        let batch = crate::app::points::batch_at(s, i, workers > 1);
        // Job `j` is repeat `j % repeats` of the batch's case `j / repeats`.
        let jobs: Vec<Job<'_>> = batch
            .iter()
            .flat_map(|&c| (0..repeats).map(move |k| (c, k)))
            .map(|(case, k)| Job { scenario: scenario_of(k), case, logs: k == 0 })
            .collect();
        // Points run side by side finish in any order: each is announced with its result,
        // in the scenario's order, so no header stands beside another point's lines.
        let parallel = workers > 1 && jobs.len() > 1 && s.cases[i].clock == Clock::Virtual;
        let announce_job = |j: usize| {
            let (case, k) = (jobs[j].case, j % repeats);
            if parallel {
                return;
            }
            if k == 0 {
                announce(case);
            }
            if repeats > 1 {
                let seed = jobs[j].scenario.cases[case].workload.seed;
                say(&format!("      {}: repeat {} of {repeats} (seed {seed})", s.cases[case].name, k + 1));
            }
        };
        // Each case's repeats as they come; a case is finished once it has them all.
        let mut got: Vec<Vec<Option<CaseResult>>> = vec![vec![None; repeats]; batch.len()];
        let mut walls = vec![Duration::ZERO; batch.len()];
        // Finished cases not yet said (parallel points wait for those before them).
        let mut ready: Vec<Option<CaseResult>> = vec![None; batch.len()];
        let mut said = 0;
        let say_ready = |ready: &mut Vec<Option<CaseResult>>,
                         said: &mut usize,
                         summary: &mut Summary,
                         walls: &[Duration],
                         all: bool|
         -> Result<(), BenchError> {
            while *said < ready.len() {
                let Some(result) = ready[*said].take() else {
                    if all {
                        *said += 1;
                        continue;
                    }
                    break;
                };
                if parallel {
                    announce(batch[*said]);
                }
                finished(summary, s, result, walls[*said], &say, &opts.out_dir)?;
                *said += 1;
            }
            Ok(())
        };
        let mut take = |j: usize, r: Result<CaseResult, EngineError>, wall: Duration| -> Result<(), BenchError> {
            clear_bar();
            let (b, k) = (j / repeats, j % repeats);
            let case = &s.cases[batch[b]];
            got[b][k] = Some(r.map_err(|source| BenchError::Case { case: case.name.clone(), source })?);
            walls[b] += wall;
            if got[b].iter().any(Option::is_none) {
                return Ok(());
            }
            let result = settle_repeats(case, &mut got[b]).expect("every repeat ran");
            // Interrupted: its report says so from now on (and leaves its drawings for later).
            summary.interrupted |= interrupt.is_closed();
            ready[b] = Some(result);
            if !parallel {
                said = b;
            }
            say_ready(&mut ready, &mut said, &mut summary, &walls, false)
        };
        if parallel {
            let ran = tokio::task::block_in_place(|| {
                crate::app::points::run_parallel(&jobs, workers, &env, &opts.relay_root, &announce_job, &mut take)
            });
            // What finished before a failure or an interrupt is still said and reported.
            say_ready(&mut ready, &mut said, &mut summary, &walls, true)?;
            ran?;
        } else {
            for (j, job) in jobs.iter().enumerate() {
                if interrupt.is_closed() {
                    break; // a job started now would only be cut off at once
                }
                announce_job(j);
                let own = CaseEnv {
                    event_log: env.event_log.clone().filter(|_| job.logs),
                    calls_csv: env.calls_csv.clone().filter(|_| job.logs),
                    ..env.clone()
                };
                let wall = std::time::Instant::now();
                let result = run_one(job.scenario, &job.scenario.cases[job.case], &own).await;
                take(j, result, wall.elapsed())?;
            }
        }
        // A case the interrupt cut short between its repeats is what the repeats that ran say.
        for (b, runs) in got.iter_mut().enumerate() {
            if let Some(result) = settle_repeats(&s.cases[batch[b]], runs) {
                summary.interrupted |= interrupt.is_closed();
                finished(&mut summary, s, result, walls[b], &say, &opts.out_dir)?;
            }
        }
        // Points finish in any order; the report keeps the scenario's.
        summary.results.sort_by_key(|r| s.cases.iter().position(|c| c.name == r.case));
        i += batch.len();
    }
    // An interrupt during the last batch is one too, whatever its cases' results say.
    summary.interrupted |= interrupt.is_closed();
    summary.recompute_pass();
    if summary.interrupted && summary.results.last().is_none_or(|r| !r.interrupted) {
        // Cut short between two cases: the last report does not say so yet.
        publish_as(Moment::Progress, &summary, &opts.out_dir, &say)?;
    }
    Ok(summary)
}

/// The run's first report: where and how it runs, this machine's floor when a real-clock
/// case needs it, every case still to run.
async fn open_summary(s: &Scenario, opts: &RunOptions, started_at: &str, say: &impl Fn(&str)) -> Summary {
    say(&format!("{}: estimate {}", s.name, s.estimate().describe()));
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
    Summary {
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
        sweeps: s.sweeps.iter().map(SweepResult::of).collect(),
        baseline: s.baseline.clone(),
        overrides: s.overrides.clone(),
        verdict: Some(Default::default()),
        interrupted: false,
        pass: false,
    }
}

/// The live bar, redrawn in place when stderr is a terminal (off otherwise and with
/// `--quiet`), and whether it is on.
fn progress_bar(quiet: bool) -> (Progress, bool) {
    let tty = !quiet && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let progress: Progress = tty.then(|| {
        Arc::new(|line: &str| {
            let line: String = line.chars().take(99).collect();
            console::err_raw(&format!("\r\x1b[2K{line}"));
        }) as Arc<dyn Fn(&str) + Send + Sync>
    });
    (progress, tty)
}

/// The event log (one per run directory: every case appends its lines, or its section) and
/// calls.csv, each made empty when the run writes it.
fn open_logs(
    s: &Scenario,
    opts: &RunOptions,
    say: &impl Fn(&str),
) -> Result<(Option<PathBuf>, Option<PathBuf>), BenchError> {
    // One event log per run directory: every case appends its lines (or its section).
    let plan =
        if opts.no_event_log { None } else { Some(crate::app::logplan::plan(s, opts.event_log, opts.max_event_log)?) };
    if let Some(p) = plan.filter(|p| p.compact) {
        say(&format!("event log: events.bin (compact, about {:.0} MB by the planned calls)", p.estimate as f64 / 1e6));
    }
    let event_log = plan.map(|p| opts.out_dir.join(p.file_name()));
    if let Some(log) = &event_log {
        std::fs::File::create(log).map_err(|source| BenchError::Write { path: log.display().to_string(), source })?;
    }
    let calls_csv = opts.calls_csv.then(|| opts.out_dir.join("calls.csv"));
    if let Some(p) = &calls_csv {
        let _ = std::fs::remove_file(p);
        let calls: u64 = s.cases.iter().map(|c| c.workload.planned_calls()).sum();
        if calls > 100_000 {
            say(&format!("note: calls.csv will hold {calls} rows; it is meant for small runs"));
        }
    }
    Ok((event_log, calls_csv))
}

/// One case's result from its repeats run so far (taken out of `runs`), `None` when none
/// ran: one run as it is, several combined ([`combine`]) with the seeds they ran with. A
/// repeat an interrupt cut off before it answered a call measured nothing: left out (unless
/// no other repeat ran), so it is not a zero in the median.
fn settle_repeats(case: &CaseSpec, runs: &mut [Option<CaseResult>]) -> Option<CaseResult> {
    let seeds = crate::base::rng::seeds(case.workload.seed, runs.len() as u32);
    let mut ran: Vec<(CaseResult, u64)> =
        runs.iter_mut().zip(seeds).filter_map(|(r, s)| Some((r.take()?, s))).collect();
    if ran.is_empty() {
        return None;
    }
    if runs.len() == 1 {
        return ran.pop().map(|(r, _)| r);
    }
    // Fewer repeats than asked: cut short, whatever each one that ran says.
    let short = ran.len() < runs.len();
    let measured = |r: &CaseResult| !(r.interrupted && r.calls.completed == 0);
    if ran.iter().any(|(r, _)| measured(r)) {
        ran.retain(|(r, _)| measured(r));
    } else {
        ran.truncate(1);
    }
    let (results, seeds) = ran.into_iter().unzip();
    let mut r = combine(results, seeds);
    r.interrupted |= short;
    Some(r)
}

/// Runs one case on its clock: a real one here, a virtual one on a paused clock of its own
/// (a runtime of its own, on a thread of its own).
async fn run_one(s: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    match case.clock {
        Clock::Real => run_case(s, case, env).await,
        Clock::Virtual => tokio::task::block_in_place(|| {
            std::thread::scope(|scope| {
                let t = std::thread::Builder::new()
                    .name("relay-bench-virtual".into())
                    .spawn_scoped(scope, || run_case_virtual(s, case, env));
                match t {
                    Ok(t) => t.join().unwrap_or_else(|_| Err(EngineError::Pacer("virtual case panicked".into()))),
                    Err(source) => Err(EngineError::Setup { root: "(virtual case thread)".into(), source }),
                }
            })
        }),
    }
}

/// The line that announces case `i` as it starts: its place in the run, its name, what it
/// runs; for a sweep's point, which point of which sweep (several run at once).
fn heading(s: &Scenario, i: usize) -> String {
    let case = &s.cases[i];
    let point = s
        .sweep_of(&case.name)
        .and_then(|w| {
            let k = w.points.iter().position(|p| p.case == case.name)?;
            Some(format!(" (sweep {}: point {} of {})", w.case, k + 1, w.points.len()))
        })
        .unwrap_or_default();
    format!(
        "[{}/{}] {}{point}: runner {} ({}), writer {} ({}), {} sandboxes, {} schedule",
        i + 1,
        s.cases.len(),
        case.name,
        case.runner.name(),
        case.runner.params(),
        case.writer.name(),
        case.writer.params(),
        case.workload.sandboxes,
        human(case.workload.duration())
    )
}

/// A case has finished: its result joins the summary (compared, judged, its sweep settled)
/// and the reports are rewritten.
fn finished(
    summary: &mut Summary,
    s: &Scenario,
    result: CaseResult,
    wall: Duration,
    say: &impl Fn(&str),
    out_dir: &Path,
) -> Result<(), BenchError> {
    if result.clock == Clock::Virtual.name() {
        let simulated = Duration::from_secs_f64(result.window_secs);
        say(&format!("      {}: simulated {} in {} of wall time", result.case, human(simulated), human(wall)));
    }
    let mut result = result;
    result.wall_secs = Some((wall.as_secs_f64() * 1000.0).round() / 1000.0);
    summary.interrupted |= result.interrupted;
    summary.cases_not_run.retain(|c| *c != result.case);
    summary.results.push(result);
    summary.compare(|case| s.cases.iter().find(|c| c.name == case).and_then(|c| c.baseline.clone()));
    // Gates on a baseline ratio read the comparison just made: judged again.
    for r in summary.results.iter_mut() {
        if let Some(spec) = s.cases.iter().find(|c| c.name == r.case) {
            r.judge(&spec.gates, &spec.rollout);
        }
    }
    let result = summary.results.last().expect("just pushed");
    say(&format!(
        "      {} calls answered, {} lost, pickup p50 {}, {}",
        result.calls.completed,
        result.calls.lost,
        crate::report::export::pair(&result.latency_us.pickup),
        if result.pass { "gates pass" } else { "GATES FAIL" }
    ));
    summary.recompute_pass();
    settle_sweeps(summary);
    publish_as(Moment::Case, summary, out_dir, say)
}

/// Each sweep's points from the cases run so far, and its best.
fn settle_sweeps(summary: &mut Summary) {
    let results = &summary.results;
    for w in &mut summary.sweeps {
        w.settle(|case, figures| {
            let r = results.iter().find(|r| r.case == case)?;
            Some((r.pass, figures.iter().map(|m| r.metric(*m)).collect()))
        });
    }
}

/// Publishes the outputs due at `moment` for one scenario's run directory; an output that
/// is not essential and fails is a warning, said.
fn publish_as(moment: Moment, summary: &Summary, dir: &Path, say: &impl Fn(&str)) -> Result<(), BenchError> {
    let input = Input { summaries: std::slice::from_ref(summary), dir };
    let done = publish(moment, &input, &FlagPaths::default())?;
    done.warnings.iter().for_each(|w| say(&format!("warning: {w}")));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweeps_point_is_announced_as_the_point_it_is() {
        let text = r#"
name = "s"
[workload]
duration = "1m"
[[case]]
name = "plain"
runner = "poll"
writer = "poll"
[[case]]
name = "w"
host = "remote"
profile = "lan"
runner = "window-exec"
writer = "watch"
sweep = { "runner.window" = ["10s", "25s"], "workload.sandboxes" = [1, 3] }
"#;
        let s = Scenario::parse("s.toml", text).unwrap();
        assert!(heading(&s, 0).starts_with("[1/5] plain: runner "), "{}", heading(&s, 0));
        let third = heading(&s, 3);
        assert!(
            third.starts_with("[4/5] w@window=25s,sandboxes=1 (sweep w: point 3 of 4): runner window-exec"),
            "{third}"
        );
        assert!(third.contains("window 25.00s") && third.contains(", 1 sandboxes,"), "{third}");
    }
}
