//! Running scenarios: every case of a scenario on its clock, the machine's calibration
//! beside them, and the reports rewritten as it goes (each case's histograms as it finishes,
//! the whole report at most every [`REWRITE_EVERY`]: a killed run still leaves one). The library's entry point; the CLI only parses flags and prints.

mod progress;
mod search;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::base::console;
use crate::base::signal::Signal;
use crate::base::units::human;
use crate::engine::points::Job;
use crate::engine::{CaseEnv, EngineError};
use crate::record::recorder::Measure;
use crate::report::output::{Input, Moment};
use crate::report::publish::{publish, publish_case_only, FlagPaths};
use crate::results::calibration::calibrate;
use crate::results::env::Environment;
use crate::results::summary::repeats::combine;
use crate::results::summary::{CaseResult, Summary, SCHEMA_VERSION};
use crate::results::sweep::SweepResult;
use crate::scenario::{CaseSpec, Clock, Scenario};

pub(crate) use super::bench_error::BenchError;

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
    pub event_log: crate::engine::logplan::EventLogFormat,
    /// The largest event log the run may write, in bytes; a run that would write more is refused before it starts.
    pub max_event_log: u64,
    /// Virtual cases run side by side, at most this many at once (1: one at a time).
    pub jobs: usize,
}

/// Runs every case of one scenario, rewriting the report after each. Its hosts are checked
/// first ([`check_available`]) by whoever plans the run (`crate::runs::plan::Plan::new`, once for every
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
    if let Some(p) = &s.shard {
        say(&format!("{}: {}; `relay-bench merge` joins the parts", s.name, p.describe()));
    }
    let mut summary = open_summary(s, opts, started_at, &say).await;
    publish_as(Moment::Progress, &summary, &opts.out_dir, &say)?;
    let (progress, tty) = progress::progress_bar(opts.quiet);
    let (event_log, calls_csv) = open_logs(s, opts, &say)?;
    let env = CaseEnv {
        calls_csv,
        event_log,
        event_log_max: opts.max_event_log,
        relay_root: opts.relay_root.clone(),
        watch_program: opts.watch_program.clone(),
        interrupt: interrupt.clone(),
        progress,
        progress_every: Duration::from_millis(250),
    };
    // The searches' first probes are known before anything runs: they join the cases, so
    // the workers share one queue instead of waiting for the cases' last before a search.
    let (searches, first) = search::start(s, &mut summary)?;
    let s_all = &Scenario { cases: [s.cases.clone(), first].concat(), ..s.clone() };
    let run = Run::new(s_all, opts, env, tty, std::cell::Cell::new((std::time::Instant::now(), false)));
    run.cases(&mut summary).await?;
    // Interrupted, the searches only say where their lines stand (their first probes are
    // points already).
    search::run_searches(&run, &mut summary, searches).await?;
    summary.order_results(&s.cases.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
    // An interrupt during the last batch is one too, whatever its cases' results say.
    summary.interrupted |= interrupt.is_closed();
    summary.recompute_pass();
    // Always at the end: the cases finished since the report was last written are in it.
    if run.written.get().1 {
        run.rewrite_whole(&summary)?;
    }
    if summary.interrupted && summary.results.last().is_none_or(|r| !r.interrupted) {
        // Cut short between two cases: the last report does not say so yet.
        publish_as(Moment::Progress, &summary, &opts.out_dir, &say)?;
    }
    Ok(summary)
}

/// The run's whole report (summary.json, summary.md, the charts) is rewritten after a case
/// at most this often; a case's own histograms after every case. A killed run's report is
/// at most this old; a sweep of hundreds of quick points writes it a few times, not once a
/// point (its size grows with the points: that was quadratic).
pub(crate) const REWRITE_EVERY: Duration = Duration::from_secs(5);

/// One scenario's run under way: what every batch of its cases shares.
pub(super) struct Run<'a> {
    pub(super) s: &'a Scenario,
    pub(super) opts: &'a RunOptions,
    pub(super) env: CaseEnv,
    /// The live bar is on (stderr is a terminal): cleared before a line is said.
    pub(super) tty: bool,
    pub(super) repeats: usize,
    /// Repeat `k`'s scenario (its own seeds) at `k - 1`.
    pub(super) variants: Vec<Scenario>,
    /// When the whole report was last written, and whether a case finished since.
    pub(super) written: std::cell::Cell<(std::time::Instant, bool)>,
}

impl<'a> Run<'a> {
    /// The run of `s`'s cases, each with its repeats (their scenarios made here).
    pub(super) fn new(
        s: &'a Scenario,
        opts: &'a RunOptions,
        env: CaseEnv,
        tty: bool,
        written: std::cell::Cell<(std::time::Instant, bool)>,
    ) -> Run<'a> {
        let repeats = s.repeats() as usize;
        let variants = (1..repeats).map(|k| s.for_repeat(k as u32, repeats as u32)).collect();
        Run { s, opts, env, tty, repeats, variants, written }
    }

    /// Runs every case, batch after batch, until an interrupt. Virtual cases in a row (a
    /// sweep's points among them), and a virtual case's repeats, run side by side, `jobs` at
    /// once; real-clock cases one at a time.
    pub(super) async fn cases(&self, summary: &mut Summary) -> Result<(), BenchError> {
        let mut i = 0;
        while i < self.s.cases.len() {
            if self.env.interrupt.is_closed() {
                summary.interrupted = true;
                break;
            }
            i += self.batch(i, summary).await?;
        }
        Ok(())
    }

    /// After a case: its histograms, and the whole report when [`REWRITE_EVERY`] has passed
    /// since it was last written, or the run is interrupted (its report says so at once).
    fn rewrite(&self, summary: &Summary) -> Result<(), BenchError> {
        let (last, _) = self.written.get();
        if last.elapsed() >= REWRITE_EVERY || self.env.interrupt.is_closed() {
            return self.rewrite_whole(summary);
        }
        let input = Input { summaries: std::slice::from_ref(summary), dir: &self.opts.out_dir };
        let done = publish_case_only(&input)?;
        done.warnings.iter().for_each(|w| self.say(&format!("warning: {w}")));
        self.written.set((last, true));
        Ok(())
    }

    /// The summary changed outside a case (a search's lines settled): the whole report is
    /// rewritten at the next rewrite or at the end.
    pub(super) fn changed(&self) {
        let (last, _) = self.written.get();
        self.written.set((last, true));
    }

    /// The whole report, now.
    pub(super) fn rewrite_whole(&self, summary: &Summary) -> Result<(), BenchError> {
        publish_as(Moment::Case, summary, &self.opts.out_dir, &|m: &str| self.say(m))?;
        self.written.set((std::time::Instant::now(), false));
        Ok(())
    }

    pub(super) fn say(&self, msg: &str) {
        if !self.opts.quiet {
            console::err(msg);
        }
    }

    fn clear_bar(&self) {
        if self.tty {
            console::err_raw("\r\x1b[2K");
        }
    }

    /// Case `i`'s heading, and where it departs from production.
    fn announce(&self, i: usize) {
        self.clear_bar();
        self.say(&heading(self.s, i));
        let departures = self.s.cases[i].departures();
        if !departures.is_empty() {
            self.say(&format!("      departs from production: {}", departures.join(", ")));
        }
    }

    fn scenario_of(&self, k: usize) -> &Scenario {
        if k == 0 {
            self.s
        } else {
            &self.variants[k - 1]
        }
    }

    /// Runs the batch of cases from `i` on (the virtual cases in a row side by side, or case
    /// `i` alone), each with its repeats; how many cases it held.
    async fn batch(&self, i: usize, summary: &mut Summary) -> Result<usize, BenchError> {
        let (s, repeats, workers) = (self.s, self.repeats, self.opts.jobs.max(1));
        let batch = crate::engine::points::batch_at(s, i, workers > 1);
        // Job `j` is repeat `j % repeats` of the batch's case `j / repeats`.
        let jobs: Vec<Job<'_>> = batch
            .iter()
            .flat_map(|&c| (0..repeats).map(move |k| (c, k)))
            .map(|(case, k)| Job { scenario: self.scenario_of(k), case, logs: k == 0 })
            .collect();
        // Points run side by side finish in any order: each is announced with its result,
        // in the scenario's order, so no header stands beside another point's lines.
        let parallel = workers > 1 && jobs.len() > 1 && s.cases[i].clock == Clock::Virtual;
        let mut b = Batch {
            run: self,
            got: vec![vec![None; repeats]; batch.len()],
            walls: vec![Duration::ZERO; batch.len()],
            ready: vec![None; batch.len()],
            said: 0,
            parallel,
            cases: batch,
        };
        if parallel {
            let ran = tokio::task::block_in_place(|| {
                let relay_root = &self.opts.relay_root;
                crate::engine::points::run_parallel(&jobs, workers, &self.env, relay_root, |j, r, wall| {
                    b.take(summary, j, r, wall)
                })
            });
            // What finished before a failure or an interrupt is still said and reported.
            b.say_ready(summary, true)?;
            ran?;
        } else {
            for (j, job) in jobs.iter().enumerate() {
                if self.env.interrupt.is_closed() {
                    break; // a job started now would only be cut off at once
                }
                self.announce_job(&jobs, j);
                let own = CaseEnv {
                    event_log: self.env.event_log.clone().filter(|_| job.logs),
                    calls_csv: self.env.calls_csv.clone().filter(|_| job.logs),
                    ..self.env.clone()
                };
                let wall = std::time::Instant::now();
                let result = crate::engine::points::run_one(job.scenario, &job.scenario.cases[job.case], &own).await;
                b.take(summary, j, result, wall.elapsed())?;
            }
        }
        b.settle_cut_short(summary)?;
        // Points finish in any order; the report keeps the scenario's (a search's probes, run
        // in rounds after the scenario's cases, stay after them, each round in its order).
        summary.results.sort_by_key(|r| s.cases.iter().position(|c| c.name == r.case).map_or((0, 0), |i| (1, i)));
        Ok(b.cases.len())
    }

    /// Announces job `j` of a batch run one at a time: its case's heading before its first
    /// repeat, and which repeat it is.
    fn announce_job(&self, jobs: &[Job<'_>], j: usize) {
        let (case, k, repeats) = (jobs[j].case, j % self.repeats, self.repeats);
        if k == 0 {
            self.announce(case);
        }
        if repeats > 1 {
            let seed = jobs[j].scenario.cases[case].workload.seed;
            self.say(&format!("      {}: repeat {} of {repeats} (seed {seed})", self.s.cases[case].name, k + 1));
        }
    }
}

/// A batch of cases under way: each case's repeats as they come, and the finished cases not
/// yet said (points run side by side wait for those before them).
struct Batch<'r, 'a> {
    run: &'r Run<'a>,
    /// The batch's cases (their indices in the scenario).
    cases: Vec<usize>,
    got: Vec<Vec<Option<CaseResult>>>,
    walls: Vec<Duration>,
    ready: Vec<Option<CaseResult>>,
    said: usize,
    parallel: bool,
}

impl Batch<'_, '_> {
    /// Job `j`'s result: a case is finished once it has all its repeats.
    fn take(
        &mut self,
        summary: &mut Summary,
        j: usize,
        r: Result<CaseResult, EngineError>,
        wall: Duration,
    ) -> Result<(), BenchError> {
        let run = self.run;
        run.clear_bar();
        let (b, k) = (j / run.repeats, j % run.repeats);
        let case = &run.s.cases[self.cases[b]];
        self.got[b][k] = Some(r.map_err(|source| BenchError::Case { case: case.name.clone(), source })?);
        self.walls[b] += wall;
        if self.got[b].iter().any(Option::is_none) {
            return Ok(());
        }
        let result = settle_repeats(case, &mut self.got[b]).expect("every repeat ran");
        // Interrupted: its report says so from now on (and leaves its drawings for later).
        summary.interrupted |= run.env.interrupt.is_closed();
        self.ready[b] = Some(result);
        if !self.parallel {
            self.said = b;
        }
        self.say_ready(summary, false)
    }

    /// Says and reports the finished cases in the scenario's order, up to the first not
    /// finished (`all`: past it, as when the batch is over).
    fn say_ready(&mut self, summary: &mut Summary, all: bool) -> Result<(), BenchError> {
        let run = self.run;
        while self.said < self.ready.len() {
            let Some(result) = self.ready[self.said].take() else {
                if all {
                    self.said += 1;
                    continue;
                }
                break;
            };
            if self.parallel {
                run.announce(self.cases[self.said]);
            }
            finished(summary, run.s, result, self.walls[self.said], &|m: &str| run.say(m))?;
            run.rewrite(summary)?;
            self.said += 1;
        }
        Ok(())
    }

    /// A case the interrupt cut short between its repeats is what the repeats that ran say.
    fn settle_cut_short(&mut self, summary: &mut Summary) -> Result<(), BenchError> {
        let run = self.run;
        for (b, runs) in self.got.iter_mut().enumerate() {
            if let Some(result) = settle_repeats(&run.s.cases[self.cases[b]], runs) {
                summary.interrupted |= run.env.interrupt.is_closed();
                finished(summary, run.s, result, self.walls[b], &|m: &str| run.say(m))?;
                run.rewrite(summary)?;
            }
        }
        Ok(())
    }
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
        calibrate(&opts.relay_root, 200)
            .await
            .inspect_err(|e| say(&format!("calibration failed, reported as not measured: {e}")))
            .ok()
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
        // A part of a split run says what the whole assumes: every part alike.
        assumptions: Some(crate::results::assumptions::of(s.whole.as_deref().unwrap_or(s))),
        interrupted: false,
        pass: false,
        shard: s.shard.clone(),
    }
}

/// The event log (one per run directory: every case appends its lines, or its section) and
/// calls.csv, each made empty when the run writes it.
fn open_logs(
    s: &Scenario,
    opts: &RunOptions,
    say: &impl Fn(&str),
) -> Result<(Option<PathBuf>, Option<PathBuf>), BenchError> {
    // One event log per run directory: every case appends its lines (or its section).
    let plan = (!opts.no_event_log)
        .then(|| crate::engine::logplan::plan(s, opts.event_log, opts.max_event_log))
        .transpose()?;
    if let Some(p) = plan.filter(|p| p.compact) {
        say(&format!("event log: events.bin (compact, about {:.0} MB by the planned calls)", p.estimate as f64 / 1e6));
    }
    let event_log = plan.map(|p| opts.out_dir.join(p.file_name()));
    if let Some(log) = &event_log {
        crate::base::runfiles::note(log);
        crate::base::fsio::open_to_write(log, false)
            .map_err(|source| BenchError::Write { path: log.display().to_string(), source })?;
    }
    let calls_csv = opts.calls_csv.then(|| opts.out_dir.join("calls.csv"));
    if let Some(p) = &calls_csv {
        crate::base::runfiles::note(p);
        crate::base::fsio::open_to_write(p, false)
            .map_err(|source| BenchError::Write { path: p.display().to_string(), source })?;
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

/// A case has finished: its result joins the summary (compared, judged, its sweep settled);
/// the caller rewrites the reports ([`Run::rewrite`]).
fn finished(
    summary: &mut Summary,
    s: &Scenario,
    mut result: CaseResult,
    wall: Duration,
    say: &impl Fn(&str),
) -> Result<(), BenchError> {
    if result.clock == Clock::Virtual {
        let simulated = Duration::from_secs_f64(result.window_secs);
        say(&format!("      {}: simulated {} in {} of wall time", result.case, human(simulated), human(wall)));
    }
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
        crate::report::export::pair(result.latency(Measure::Pickup)),
        if result.interrupted {
            // Not judged: a case cut short neither passes nor fails its gates.
            let held = result.gates.iter().filter(|g| g.pass).count();
            format!("interrupted: not judged ({held} of {} gates held over what ran)", result.gates.len())
        } else if result.pass {
            "gates pass".to_owned()
        } else {
            "GATES FAIL".to_owned()
        }
    ));
    summary.recompute_pass();
    summary.settle_sweeps();
    Ok(())
}

/// Publishes the outputs due at `moment` for one scenario's run directory; an output that
/// is not essential and fails is a warning, said.
fn publish_as(moment: Moment, summary: &Summary, dir: &Path, say: &impl Fn(&str)) -> Result<(), BenchError> {
    let input = Input { summaries: std::slice::from_ref(summary), dir };
    let done = publish(moment, &input, &FlagPaths::default(), None)?;
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
