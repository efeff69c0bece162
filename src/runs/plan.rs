//! What `relay-bench run`, `report` and `list` do below the command line: scenarios loaded
//! by name or path and narrowed to the chosen cases, every input checked before anything
//! runs ([`Plan::new`]); each scenario run and reported ([`crate::runs::scenario`]), kept as a
//! baseline or compared with one ([`Plan::run`], which says each step to its caller, who
//! prints it); a run directory's reports drawn again ([`rerender`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::fsio::BoundedReadError;
use crate::base::signal::Signal;
use crate::report::compare::{compare, CompareError, Comparison, Threshold};
use crate::report::outdir::{save_baseline, take_new, this_run, utc_stamps};
use crate::report::outdir::{OutDirError, OutLock};
use crate::report::output::{Input, Moment};
use crate::report::publish::{publish, FlagPaths, OutputError};
use crate::results::summary::{Summary, SummaryError};
use crate::runs::scenario::{run_scenario, BenchError, RunOptions};
use crate::scenario::sweep::SweepArg;

use super::merge_error::MergeError;
pub(crate) use super::request::RunRequest;
use crate::scenario::{Overrides, Scenario, ScenarioError, DEFAULT_NAME, SHIPPED};

/// A run compared with a baseline counts a change only past this (5%).
pub(crate) const BASELINE_THRESHOLD: Threshold = Threshold::DEFAULT;

#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("--case {case:?}: scenario {scenario:?} has no such case{hint}; its cases: {known}")]
    UnknownCase { case: String, scenario: String, hint: String, known: String },
    #[error("--relay-root {path}: {why}; give an existing directory")]
    RelayRoot { path: String, why: String },
    #[error(
        "--relay-root {path}: cannot write there: {source}; the relay dirs' request and answer files go there \
         (free space there, or give another --relay-root)"
    )]
    RelayRootUnwritable { path: String, source: std::io::Error },
    #[error("baseline {0:?}: allowed: {allowed}", allowed = crate::scenario::NAME_ALLOWED)]
    BaselineName(String),
    #[error("--baseline {name}: no baseline of scenario {scenario:?} at {path}")]
    NoBaseline { name: String, scenario: String, path: String },
    #[error("--save-baseline {0} --baseline {0}: the run would be compared with itself")]
    SameBaseline(String),
    /// A run directory or baseline that cannot be read.
    #[error(transparent)]
    Unreadable(#[from] SummaryError),
    /// ... or compared.
    #[error(transparent)]
    Compare(#[from] CompareError),
    #[error("cannot create the report directory {path} (give one with --out DIR): {source}")]
    ReportDir { path: String, source: std::io::Error },
    #[error("cannot locate the relay-bench binary: {0}")]
    CurrentExe(std::io::Error),
    #[error("--sandbox-agent {0}")]
    SandboxAgent(crate::sandbox::host::SandboxAgentBinaryError),
    #[error("--junit {path}: {why}; give the path of a file to write")]
    JUnitPath { path: String, why: &'static str },
    #[error("--junit {path}: its directory takes no file ({source}); give a path in a directory this user can write")]
    JUnitUnwritable { path: String, source: std::io::Error },
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("cannot save the baseline {path}: {source}")]
    SaveBaseline { path: String, source: std::io::Error },
    #[error(transparent)]
    Bench(#[from] BenchError),
    #[error(transparent)]
    EventLog(#[from] crate::engine::logplan::TooLarge),
    #[error(transparent)]
    OutDir(#[from] OutDirError),
    /// A run directory's file that is not read (a FIFO, a link, a device, too large).
    #[error(transparent)]
    Input(#[from] BoundedReadError),
    #[error("interrupted: the outputs drawn so far are whole, the rest were left as they were")]
    Interrupted,
    #[error("{dir}: cannot remove the temp files a killed report left: {source}")]
    Stale { dir: String, source: std::io::Error },
    /// Parts that do not make one run, or a merged run that could not be written.
    #[error(transparent)]
    Merge(#[from] super::merge_error::MergeError),
    #[error("two scenarios are named {name:?} ({first} and {second}); their reports would overwrite each other: run them apart or rename one")]
    DuplicateScenario { name: String, first: String, second: String },
}

impl RunsError {
    /// Whether the user can fix it (a flag, a file, a path), rather than something broken
    /// inside relay-bench.
    pub(crate) fn is_bad_input(&self) -> bool {
        match self {
            RunsError::Output(e) => e.refused(),
            RunsError::CurrentExe(_) | RunsError::SaveBaseline { .. } | RunsError::Interrupted => false,
            RunsError::Stale { .. } | RunsError::Merge(MergeError::Copy { .. }) => false,
            RunsError::Bench(e) => e.is_bad_input(),
            _ => true,
        }
    }

    /// This machine's failure while the run wrote its reports (a full disk, a quota, a
    /// read-only or failing filesystem under `--out`), if it is one: why.
    pub(crate) fn environment(&self) -> Option<&'static str> {
        match self {
            RunsError::Output(e) => e.environment(),
            RunsError::Bench(e) => e.environment(),
            RunsError::SaveBaseline { source, .. }
            | RunsError::Stale { source, .. }
            | RunsError::Merge(MergeError::Copy { source, .. }) => crate::base::fsio::environment_failure(source),
            _ => None,
        }
    }
}

/// A request checked and its scenarios loaded: ready to run.
pub(crate) struct Plan {
    scenarios: Vec<Scenario>,
    request: RunRequest,
    relay_root: PathBuf,
    watch_program: PathBuf,
    /// `--out`, taken for this run ([`crate::report::outdir`]) while the plan lives.
    out: Option<OutLock>,
}

/// One step of a run, for the caller to print.
pub(crate) enum Step<'a> {
    /// A scenario ran; its reports are in `out_dir`; `console` is what the console outputs
    /// rendered, `warnings` the outputs that could not be written.
    Ran { out_dir: &'a Path, console: &'a [u8], warnings: &'a [String] },
    /// The run was kept as a baseline, here.
    BaselineSaved(&'a Path),
    /// The run was compared with the baseline `name` ([`BASELINE_THRESHOLD`]).
    Compared { name: &'a str, comparison: &'a Comparison },
}

/// How a whole run ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Ctrl-C: the last report is partial and marked so; later scenarios did not run.
    pub interrupted: bool,
    /// A gate failed in some case.
    pub gate_failed: bool,
    /// Changes against the baseline that count as regressions.
    pub regressions: usize,
    /// Writes of the relay this machine failed (a full disk, ...), over every case: the
    /// run's verdict is not the relay's.
    pub environment_failures: u64,
}

impl Plan {
    /// Loads the scenarios, keeps the chosen cases, and checks the paths and baseline names,
    /// all before anything runs.
    pub(crate) fn new(request: RunRequest) -> Result<Plan, RunsError> {
        if let Some(bin) = &request.sandbox_agent {
            crate::sandbox::host::check_sandbox_agent(bin).map_err(RunsError::SandboxAgent)?;
        }
        let overrides = request.overrides();
        let names =
            if request.scenarios.is_empty() { vec![DEFAULT_NAME.to_owned()] } else { request.scenarios.clone() };
        let sweeps = request.sweeps.iter().map(|a| SweepArg::parse(a)).collect::<Result<Vec<_>, _>>()?;
        let mut scenarios =
            names.iter().map(|n| load(n, &request.cases, &sweeps, &overrides)).collect::<Result<Vec<_>, _>>()?;
        if let Some(part) = request.shard {
            for s in &mut scenarios {
                s.shard(part);
            }
        }
        for (i, s) in scenarios.iter().enumerate() {
            if let Some(first) = scenarios[..i].iter().find(|f| f.name == s.name) {
                return Err(RunsError::DuplicateScenario {
                    name: s.name.clone(),
                    first: first.origin.clone(),
                    second: s.origin.clone(),
                });
            }
        }
        scenarios.iter().try_for_each(crate::runs::scenario::check_available)?;
        if !request.no_event_log {
            let max = request.max_event_log.unwrap_or(crate::engine::logplan::DEFAULT_MAX);
            for s in &scenarios {
                crate::engine::logplan::plan(s, request.event_log, max)?;
            }
        }
        let relay_root = request.relay_root.clone().unwrap_or_else(std::env::temp_dir);
        if !relay_root.is_dir() {
            let why = crate::base::fsio::not_a_dir(&relay_root);
            return Err(RunsError::RelayRoot { path: relay_root.display().to_string(), why });
        }
        crate::base::fsio::probe_write(&relay_root, crate::report::outdir::PROBE_BYTES)
            .map_err(|source| RunsError::RelayRootUnwritable { path: relay_root.display().to_string(), source })?;
        for n in request.save_baseline.iter().chain(&request.baseline) {
            baseline_dir(n)?;
        }
        if let (Some(save), Some(against)) = (&request.save_baseline, &request.baseline) {
            if save == against {
                return Err(RunsError::SameBaseline(save.clone()));
            }
        }
        if let Some(name) = &request.baseline {
            for s in &scenarios {
                baseline_of(name, &s.name)?;
            }
        }
        if let Some(j) = &request.junit {
            check_junit(j)?;
        }
        let watch_program = std::env::current_exe().map_err(RunsError::CurrentExe)?;
        // Last: a plan refused for another reason leaves the directory as it was.
        let out =
            request.out.as_ref().map(|d| crate::report::outdir::take(d, &this_run(&utc_stamps().0))).transpose()?;
        Ok(Plan { scenarios, request, relay_root, watch_program, out })
    }

    /// Where scenario `s` writes: `--out` (its own folder there when there are `several`), or
    /// a new directory under `reports/`, taken and kept in `made` while the run writes it.
    fn out_dir(&self, s: &Scenario, several: bool, stamp: &str, made: &mut Vec<OutLock>) -> Result<PathBuf, RunsError> {
        Ok(match &self.request.out {
            // A scenario's folder is a real one: a link planted at its name is refused.
            Some(d) if several => crate::base::fsio::dirs_under(d, Path::new(&s.name)).map_err(|source| {
                RunsError::Bench(BenchError::OutDir { path: d.join(&s.name).display().to_string(), source })
            })?,
            Some(d) => d.clone(),
            None => {
                made.push(new_report_dir(Path::new(DEFAULT_REPORTS), stamp, &s.name)?);
                made.last().expect("just made").dir().to_path_buf()
            }
        })
    }

    /// A scenario's run options, writing to `out_dir`.
    fn options(&self, out_dir: PathBuf) -> RunOptions {
        let req = &self.request;
        RunOptions {
            out_dir,
            relay_root: self.relay_root.clone(),
            quiet: req.quiet,
            calibrate: !req.no_calibration,
            watch_program: self.watch_program.clone(),
            calls_csv: req.calls_csv,
            no_event_log: req.no_event_log,
            event_log: req.event_log,
            max_event_log: req.max_event_log.unwrap_or(crate::engine::logplan::DEFAULT_MAX),
            jobs: req.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |n| n as usize),
        }
    }

    #[cfg(test)]
    pub(crate) fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    /// Runs every scenario in turn, telling `step` what happened; stops after an
    /// interrupted one.
    pub(crate) async fn run(
        &self,
        interrupt: Arc<Signal>,
        mut step: impl FnMut(Step<'_>),
    ) -> Result<Outcome, RunsError> {
        let req = &self.request;
        let (stamp_iso, stamp_compact) = utc_stamps();
        let several = self.scenarios.len() > 1;
        let mut outcome = Outcome::default();
        let mut done: Vec<Summary> = Vec::new();
        // The run directories made here (no --out), locked while the run writes them.
        let mut made: Vec<OutLock> = Vec::new();
        let flags = FlagPaths(req.junit.iter().map(|p| ("--junit", p.clone())).collect());
        if let Some(lock) = &self.out {
            crate::report::outdir::clear(lock)?;
        }
        for s in &self.scenarios {
            let opts = self.options(self.out_dir(s, several, &stamp_compact, &mut made)?);
            match run_scenario(s, &opts, &stamp_iso, interrupt.clone()).await {
                Ok(summary) => done.push(summary),
                Err(e) => {
                    // A run that failed (a disk that filled) leaves no empty log behind.
                    for f in crate::report::outdir::RUN_FILES {
                        let p = opts.out_dir.join(f);
                        if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file() && m.len() == 0) {
                            let _ = std::fs::remove_file(p);
                        }
                    }
                    return Err(e.into());
                }
            }
            let published = publish(Moment::End, &Input { summaries: &done, dir: &opts.out_dir }, &flags, None)?;
            let summary = done.last().expect("just pushed");
            step(Step::Ran { out_dir: &opts.out_dir, console: &published.console, warnings: &published.warnings });
            outcome.interrupted |= summary.interrupted;
            outcome.gate_failed |= !summary.interrupted && !summary.pass;
            outcome.environment_failures += summary.results.iter().map(|r| r.environment_failures).sum::<u64>();
            if summary.interrupted {
                break;
            }
            // With several scenarios, a baseline keeps one subdirectory each.
            let per_scenario = |dir: PathBuf| if several { dir.join(&s.name) } else { dir };
            if let Some(name) = &req.save_baseline {
                let to = per_scenario(baseline_dir(name)?);
                save_baseline(&opts.out_dir, &to)
                    .map_err(|source| RunsError::SaveBaseline { path: to.display().to_string(), source })?;
                step(Step::BaselineSaved(&to));
            }
            if let Some(name) = &req.baseline {
                let from = baseline_of(name, &s.name)?;
                let comparison = compare(&from, &opts.out_dir, BASELINE_THRESHOLD)?;
                outcome.regressions += comparison.regressions();
                // A baseline's case this run lacks fails it too, unless `--case` narrowed the run.
                if req.cases.is_empty() {
                    outcome.regressions += comparison.missing_from_new.len();
                }
                step(Step::Compared { name, comparison: &comparison });
            }
        }
        Ok(outcome)
    }
}

/// Refuses a `--junit` path that is not a file this user can write (a link, a FIFO, a
/// device such as `/dev/null`, a socket are never written over; a missing or unwritable
/// directory), before anything runs: the file is written at the end.
pub(crate) fn check_junit(j: &Path) -> Result<(), RunsError> {
    let parent = j.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let there = std::fs::symlink_metadata(j).ok().map(|m| m.file_type());
    let why = there.filter(|k| !k.is_file()).map(crate::base::fsio::kind_name);
    let why = why.or_else(|| (!parent.is_dir()).then_some("its directory does not exist"));
    if let Some(why) = why {
        return Err(RunsError::JUnitPath { path: j.display().to_string(), why });
    }
    crate::base::fsio::probe_write(parent, 1)
        .map_err(|source| RunsError::JUnitUnwritable { path: j.display().to_string(), source })
}

/// Where a run's reports go unless `--out` says.
pub(crate) const DEFAULT_REPORTS: &str = "reports";

/// A new report directory `<reports>/<stamp>-<scenario>` (with `-2`, `-3`, ... when a run of
/// the same second has it), created and taken here so no other run can take it. `--out DIR`
/// is not made here: a directory the user names is taken by [`crate::report::outdir::take`].
pub(super) fn new_report_dir(reports: &Path, stamp: &str, scenario: &str) -> Result<OutLock, RunsError> {
    let stem = format!("{stamp}-{scenario}");
    take_new(reports, &stem, &this_run(&utc_stamps().0))
        .map_err(|source| RunsError::ReportDir { path: reports.join(stem).display().to_string(), source })
}

/// A scenario by file path or shipped name, with `run`'s overrides and the command line's
/// sweeps put into the cases `cases` names (every case when it names none), narrowed to
/// `cases` when any are given (a swept case's name keeps all its points).
fn load(name: &str, cases: &[String], sweeps: &[SweepArg], overrides: &Overrides) -> Result<Scenario, RunsError> {
    let over = Overrides { sweeps: sweeps.to_vec(), cases: cases.to_vec(), ..overrides.clone() };
    let mut s = Scenario::load_with(name, &over)?;
    if !cases.is_empty() {
        if let Err(crate::scenario::UnknownCase(bad)) = s.retain_cases(cases) {
            let mut known: Vec<String> = s.sweeps.iter().map(|w| w.case.clone()).collect();
            known.extend(s.cases.iter().map(|c| c.name.clone()));
            let hint = crate::base::suggest::did_you_mean(&bad, known.iter().map(String::as_str));
            return Err(RunsError::UnknownCase { case: bad, scenario: s.name, hint, known: known.join(", ") });
        }
    }
    Ok(s)
}

/// Where the baseline `name` is kept: `reports/baselines/NAME/`.
pub(crate) fn baseline_dir(name: &str) -> Result<PathBuf, RunsError> {
    // The rule of scenario and case names: one plain file name, not read as an option.
    crate::scenario::check_name(name).map_err(|_| RunsError::BaselineName(name.to_owned()))?;
    Ok(Path::new(DEFAULT_REPORTS).join("baselines").join(name))
}

/// Where the baseline `name` keeps scenario `scenario`: its own subdirectory when it was
/// saved by a run of several scenarios, the baseline's root when saved by a run of that one
/// alone — so a baseline is found however the run that saved it was composed.
fn baseline_of(name: &str, scenario: &str) -> Result<PathBuf, RunsError> {
    let root = baseline_dir(name)?;
    let sub = root.join(scenario);
    if sub.join("summary.json").is_file() {
        return Ok(sub);
    }
    match Summary::read(&root) {
        Ok(saved) if saved.scenario == scenario => Ok(root),
        _ => Err(RunsError::NoBaseline {
            name: name.to_owned(),
            scenario: scenario.to_owned(),
            path: sub.display().to_string(),
        }),
    }
}

/// The shipped scenarios, a line each: name, clock, expected wall time, description, cases.
pub(crate) fn list_shipped() -> Result<String, ScenarioError> {
    let width = SHIPPED.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut rows = Vec::new();
    for (name, text) in SHIPPED {
        let s = Scenario::parse(&format!("embedded:{name}"), text)?;
        let e = s.estimate();
        let mut cases: Vec<String> = s.cases.iter().map(|c| c.name.clone()).collect();
        // A searched case's probes are made as it runs: it is listed by its own name.
        cases.extend(s.sweeps.iter().filter_map(|w| Some(format!("{} (search {})", w.case, w.search.as_ref()?.path))));
        let clock = if e.clocks() == "real and virtual" { "both" } else { e.clocks() };
        let time = format!("~{}", crate::base::units::wall(e.total()));
        rows.push((name, clock, time, format!("{} [{}]", s.description, cases.join(", "))));
    }
    let tw = rows.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let mut out = format!("{:<width$}  {:<7}  {:<tw$}  description [cases]\n", "scenario", "clock", "time");
    for (name, clock, time, about) in rows {
        out += &format!("{name:<width$}  {clock:<7}  {time:<tw$}  {about}\n");
    }
    Ok(out)
}

/// The registered parts a case can name, one line each: runner and writer strategies,
/// hosts and the measures a gate reads (what `relay-bench list` prints after the scenarios).
pub(crate) fn list_parts() -> String {
    let mut out = String::new();
    let mut section = |title: &str, rows: Vec<(&str, &str)>| {
        let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        out += &format!("\n{title}:\n");
        for (name, about) in rows {
            out += &format!("  {name:<width$}  {about}\n");
        }
    };
    section("runner strategies", crate::strategy::RUNNERS.iter().map(|k| (k.name(), k.about())).collect());
    section("writer strategies", crate::strategy::WRITERS.iter().map(|k| (k.name(), k.about())).collect());
    section("hosts", crate::sandbox::host::HOSTS.iter().map(|k| (k.name(), k.about())).collect());
    section(
        "measures (of every call; a gate reads <measure>.<stat>)",
        crate::record::measure::Measure::all().map(|m| (m.name(), m.about())).collect(),
    );
    out
}

/// Draws a run directory's outputs again from its summary.json and .hlog files (summary.md,
/// the .hgrm files, the charts); returns what was written.
pub fn rerender(dir: &Path) -> Result<crate::report::publish::Published, RunsError> {
    rerender_until(dir, None)
}

/// [`rerender`], stopped once `stop` is closed (each output lands whole or not at all). The
/// directory is locked while it is drawn when a run marked it (a run writing there is
/// refused, not raced), and the temp files a killed `report` left beside the files it draws
/// are removed.
pub(crate) fn rerender_until(
    dir: &Path,
    stop: Option<Arc<Signal>>,
) -> Result<crate::report::publish::Published, RunsError> {
    let summary = Summary::read(dir)?;
    let cases: Vec<&str> = summary.results.iter().map(|r| r.case.as_str()).collect();
    crate::report::export::hdr::check_logs(dir, &cases)?;
    let _lock = crate::report::outdir::lock_for_rerender(dir, &this_run(&utc_stamps().0))?;
    let input = Input { summaries: std::slice::from_ref(&summary), dir };
    let done = match publish(Moment::Rerender, &input, &FlagPaths::default(), stop.clone()) {
        Err(_) if stop.as_ref().is_some_and(|s| s.is_closed()) => return Err(RunsError::Interrupted),
        r => r?,
    };
    let written: Vec<PathBuf> = done.files.iter().map(|(_, f)| f.clone()).collect();
    crate::base::runfiles::remove_stale_temps(&written)
        .map_err(|source| RunsError::Stale { dir: dir.display().to_string(), source })?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_are_chosen_by_name_and_an_unknown_one_is_named() {
        let last = Scenario::load(DEFAULT_NAME).unwrap().cases.pop().unwrap().name;
        let p = Plan::new(RunRequest { cases: vec![last.clone()], ..Default::default() }).unwrap();
        let s = &p.scenarios()[0];
        assert_eq!((s.name.as_str(), s.cases.len(), &s.cases[0].name), (DEFAULT_NAME, 1, &last));
        let e = Plan::new(RunRequest { cases: vec!["nope".into()], ..Default::default() }).err().unwrap();
        assert!(e.is_bad_input());
        assert!(
            e.to_string().starts_with("--case \"nope\": scenario \"default\" has no such case; its cases: "),
            "{e}"
        );
    }

    #[test]
    fn a_command_line_sweep_runs_each_value_as_a_point_of_the_cases_named() {
        let sweep = |sweeps: &[&str], cases: &[&str]| {
            let r = RunRequest {
                sweeps: sweeps.iter().map(|s| s.to_string()).collect(),
                cases: cases.iter().map(|s| s.to_string()).collect(),
                ..Default::default()
            };
            Plan::new(r)
        };
        let p = sweep(&["runner.window=5s,10s"], &["remote-window-exec"]).unwrap();
        let names: Vec<&str> = p.scenarios()[0].cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["remote-window-exec@window=5s", "remote-window-exec@window=10s"]);
        // Over every case, the poll runners cannot take a window: refused, naming the path.
        let e = sweep(&["runner.window=5s,10s"], &[]).err().unwrap();
        assert!(e.is_bad_input());
        assert!(e.to_string().contains("`case[0].sweep.runner.window`: does not apply to this case"), "{e}");
        let e = sweep(&["runner.window"], &[]).err().unwrap();
        assert!(e.to_string().starts_with("--sweep: `runner.window`: expected PATH=V1,V2"), "{e}");
    }

    #[test]
    fn inputs_are_checked_before_anything_runs() {
        let bad = |r: RunRequest| Plan::new(r).err().unwrap().to_string();
        let e = bad(RunRequest { relay_root: Some("/nonexistent/root".into()), ..Default::default() });
        assert_eq!(e, "--relay-root /nonexistent/root: does not exist; give an existing directory");
        let file = tempfile::NamedTempFile::new().unwrap();
        let e = bad(RunRequest { relay_root: Some(file.path().into()), ..Default::default() });
        assert!(e.ends_with(": not a directory (a regular file); give an existing directory"), "{e}");
        let e = bad(RunRequest { baseline: Some("../x".into()), ..Default::default() });
        assert!(e.starts_with("baseline \"../x\": allowed: letters"), "{e}");
        assert!(baseline_dir(".hidden").is_err() && baseline_dir("").is_err());
        assert!(baseline_dir("-x").is_err(), "read as an option by a shell tool");
        assert_eq!(baseline_dir("nightly-1.2").unwrap(), Path::new("reports/baselines/nightly-1.2"));
    }

    #[test]
    fn two_runs_of_one_scenario_in_one_second_get_a_report_directory_each() {
        let t = tempfile::tempdir().unwrap();
        let reports = t.path().join("reports");
        let first = new_report_dir(&reports, "20261129T183000Z", "default").unwrap().dir().to_path_buf();
        let second = new_report_dir(&reports, "20261129T183000Z", "default").unwrap().dir().to_path_buf();
        assert_eq!(first, reports.join("20261129T183000Z-default"));
        assert_eq!(second, reports.join("20261129T183000Z-default-2"));
        assert!(first.is_dir() && second.is_dir());
        let blocked = t.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let e = new_report_dir(&blocked, "s", "default").unwrap_err();
        assert!(e.is_bad_input() && e.to_string().starts_with("cannot create the report directory "), "{e}");
    }

    #[test]
    fn every_shipped_scenario_is_listed() {
        let parts = list_parts();
        for name in ["poll", "window-exec", "external", "watch", "remote"] {
            assert!(parts.contains(&format!("  {name} ")), "{parts}");
        }
        let text = list_shipped().unwrap();
        assert_eq!(text.lines().count(), SHIPPED.len() + 1, "a header, a line each");
        assert!(text.lines().any(|l| l.starts_with(DEFAULT_NAME)), "{text}");
        let line = |name: &str| text.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap().to_owned();
        assert!(line("clock-check").contains("  both     ~6m"), "{text}");
        assert!(line("request-budget").contains("  virtual  ~"), "{text}");
        assert!(line("default").contains("  real     ~"), "{text}");
    }
}
