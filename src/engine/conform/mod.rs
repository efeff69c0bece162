//! `relay-bench conform`: a battery of named cases that grades a relay runner or writer
//! against the file contract (SPEC §2, §7, §8), relay-bench playing the other side.
//!
//! The battery first measures this machine's pace ([`pace`]) and scales every wait from it.
//! Each case then gets a fresh relay dir and a fresh scratch dir beside it, starts the
//! implementation's command ([`proc`]: argv placeholders substituted, never a shell; the
//! same values in the environment), records the dir ([`observe`]) and grades what it saw.
//! The case runs on a thread of its own: a stop (SIGINT, SIGTERM) ends the battery at once,
//! with the cases so far. When a case ends, every process below the battery is killed, a
//! daemon that left the implementation's process group included (the battery is a child
//! subreaper). The cases are two tables, [`runner::CASES`] and [`writer::CASES`]; a case is a
//! name, the SPEC section, a one-line expectation and the function that plays it.
//!
//! A runner needs a tool to run: the battery gives it one, the **conform handler**
//! ([`handler`]), a command (`{handler}`, `$RELAY_CONFORM_HANDLER`) the runner runs once per
//! call with the request's JSON on stdin, publishing what it prints on stdout as the answer.
//! With a daemon ([`Daemon`]), the runner's relay dir is inside a sandbox-agent daemon's
//! filesystem and the runner is given the daemon's URL (`{url}`) to reach it through.

pub(crate) mod handler;
pub(crate) mod observe;
pub(crate) mod pace;
pub(crate) mod proc;
pub(crate) mod runner;
pub(crate) mod writer;

use std::cell::Cell;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use self::observe::Observer;
use self::pace::Pace;
use crate::base::fsio::{remove_if_present, temp_name};
use crate::base::indir::InDir;
use crate::base::protocol::FileKind;
use crate::base::signal::Signal;
use crate::results::conform::{CaseResult, ConformReport, Side, Verdict, SCHEMA_VERSION};

pub(crate) use handler::{handler_main, HANDLER_SUBCOMMAND};

/// The longest `--bound` a case may be given.
pub(crate) const MAX_BOUND: Duration = Duration::from_secs(600);
/// The shortest.
pub(crate) const MIN_BOUND: Duration = Duration::from_secs(2);

/// Where a runner's relay dir lives when it is not a local dir the runner reaches directly.
#[derive(Debug, Clone)]
pub(crate) enum Daemon {
    /// A sandbox-agent daemon the battery starts for each case, from this binary.
    Start(PathBuf),
    /// A sandbox-agent daemon already running on this machine, at this URL.
    At(String),
}

/// What `conform` was asked.
#[derive(Debug, Clone)]
pub(crate) struct ConformOptions {
    pub side: Side,
    /// argv of the implementation, placeholders unsubstituted.
    pub command: Vec<String>,
    /// Only these cases (all when empty).
    pub cases: Vec<String>,
    /// Each case's bound at an unloaded machine's pace.
    pub bound: Duration,
    /// Where the relay and scratch dirs of the cases are made (the system temp dir).
    pub work_root: Option<PathBuf>,
    /// This binary (the conform handler).
    pub handler_program: PathBuf,
    /// The runner reaches its relay dir through this daemon (runner side only).
    pub daemon: Option<Daemon>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConformError {
    #[error("--case {0:?}: no such case (`relay-bench conform --list` names them)")]
    UnknownCase(String),
    #[error("no command given: put the implementation's command after `--`")]
    NoCommand,
    #[error("--bound {0:?}: a case's bound is from 2s to 600s")]
    Bound(Duration),
    #[error("--host and --url grade a runner: a writer lives in the sandbox and reaches its dir directly")]
    DaemonForWriter,
    #[error("the sandbox-agent daemon at {url}: {why}")]
    Daemon { url: String, why: String },
    #[error("cannot make the cases' dirs: {0}")]
    Io(#[from] std::io::Error),
}

/// The value of a step of a case, or the case's grade returned at once when the step gave one.
macro_rules! try_g {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(g) => return g,
        }
    };
}
pub(crate) use try_g;

/// One case of either table.
pub struct Case<C> {
    pub name: &'static str,
    pub section: &'static str,
    pub expectation: &'static str,
    pub play: fn(&C) -> Graded,
}

/// What a case's play concludes.
pub struct Graded {
    pub verdict: Verdict,
    pub reason: String,
    pub evidence: Vec<String>,
}

impl Graded {
    pub fn new(verdict: Verdict, reason: impl Into<String>, evidence: Vec<String>) -> Graded {
        Graded { verdict, reason: reason.into(), evidence }
    }
}

/// What every case's world shares: its dirs and their record, its bound and pace, the stop.
pub(crate) struct World {
    pub dir: PathBuf,
    pub scratch: PathBuf,
    /// The record of the relay dir.
    pub obs: Observer,
    /// When the case's bound started: its waits end by then plus the bound.
    pub begun: Cell<Instant>,
    pub command: Vec<String>,
    pub pace: Pace,
    /// The case's bound at this machine's pace.
    pub bound: Duration,
    pub stop: Halt,
    /// A wait was cut short by the case's bound.
    cut: Cell<bool>,
}

/// Set when the battery abandons a case (a stop): its waits end, it publishes nothing more.
pub(crate) type Halt = Arc<AtomicBool>;

impl World {
    /// Makes the case's relay and scratch dirs under `base` and starts recording the relay
    /// dir, reading the files of kind `read` as they appear.
    pub(crate) fn new(opts: &ConformOptions, pace: Pace, base: &Path, stop: Halt, read: FileKind) -> io::Result<World> {
        let dir = base.join("relay");
        let scratch = base.join("scratch");
        std::fs::create_dir_all(&dir)?;
        std::fs::create_dir_all(&scratch)?;
        let obs = Observer::watch(&dir, read)?;
        let bound = pace.wait(opts.bound).min(MAX_BOUND);
        let begun = Cell::new(Instant::now());
        let command = opts.command.clone();
        Ok(World { dir, scratch, obs, begun, command, pace, bound, stop, cut: Cell::default() })
    }

    /// The battery abandoned the case.
    pub(crate) fn halted(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// `d` at this machine's pace, and at most what is left of the bound since `begun`.
    pub(crate) fn within(&self, d: Duration) -> Duration {
        if self.halted() {
            return Duration::ZERO;
        }
        let want = self.pace.wait(d);
        let left = (self.begun.get() + self.bound).saturating_duration_since(Instant::now());
        if want > left {
            self.cut.set(true);
        }
        want.min(left)
    }

    /// A grade for something the implementation was expected to do and was not seen doing:
    /// FAILED, unless it could not be observed in time ([`World::too_slow`]: INCONCLUSIVE).
    pub(crate) fn unseen(&self, reason: impl Into<String>, mut evidence: Vec<String>) -> Graded {
        let reason = reason.into();
        let Some((why, more)) = self.too_slow() else { return Graded::new(Verdict::Failed, reason, evidence) };
        evidence.extend(more);
        Graded::new(Verdict::Inconclusive, format!("{reason}, {why}"), evidence)
    }

    /// Why a wait that saw nothing is no evidence, if it is not: the case's bound cut it
    /// short, or the machine is markedly slower now than when the battery measured it.
    fn too_slow(&self) -> Option<(&'static str, Vec<String>)> {
        if self.cut.get() {
            let line = format!("the case's bound ({}) ended a wait before its scaled length", ms(self.bound));
            return Some(("within the case's bound", vec![line]));
        }
        let now = self.pace.slowed(&self.scratch.join("pace"))?;
        let lines = vec![format!("at the start, {}", self.pace.line()), format!("now, {}", now.line())];
        Some(("while the machine was slower than its calibration", lines))
    }
}

/// The names of every case of a side, in order.
pub(crate) fn case_names(side: Side) -> Vec<(&'static str, &'static str, &'static str)> {
    match side {
        Side::Runner => runner::CASES.iter().map(|c| (c.name, c.section, c.expectation)).collect(),
        Side::Writer => writer::CASES.iter().map(|c| (c.name, c.section, c.expectation)).collect(),
    }
}

/// Checks what `opts` asks before anything runs.
fn check(opts: &ConformOptions) -> Result<(), ConformError> {
    if opts.command.is_empty() || opts.command[0].is_empty() {
        return Err(ConformError::NoCommand);
    }
    if !(MIN_BOUND..=MAX_BOUND).contains(&opts.bound) {
        return Err(ConformError::Bound(opts.bound));
    }
    if opts.daemon.is_some() && opts.side == Side::Writer {
        return Err(ConformError::DaemonForWriter);
    }
    let names = case_names(opts.side);
    let unknown = opts.cases.iter().find(|c| !names.iter().any(|(n, _, _)| n == *c));
    unknown.map_or(Ok(()), |c| Err(ConformError::UnknownCase(c.clone())))
}

/// Runs the battery; `done` hears each case as it ends. Once `stop` closes, the case under
/// way is abandoned (its processes killed, its dirs removed) and the report says so.
pub(crate) fn run(
    opts: &ConformOptions,
    stop: &Signal,
    started: String,
    mut done: impl FnMut(&CaseResult),
) -> Result<ConformReport, ConformError> {
    check(opts)?;
    let subreaper = proc::become_subreaper();
    let work_root = opts.work_root.clone().unwrap_or_else(std::env::temp_dir);
    let root = tempfile::Builder::new().prefix("relay-conform.").tempdir_in(work_root)?;
    let host = match &opts.daemon {
        Some(Daemon::At(url)) => Some(runner::remote::check_url(url, root.path())?),
        Some(Daemon::Start(bin)) => Some(runner::remote::describe(bin)),
        None => None,
    };
    let pace = Pace::measure(&root.path().join("pace"))?;
    let mut report = ConformReport {
        schema_version: SCHEMA_VERSION,
        started,
        side: opts.side,
        command: opts.command.clone(),
        case_bound_ms: opts.bound.as_millis() as u64,
        counts: Default::default(),
        cases: Vec::new(),
        interrupted: false,
        calibration: Some(pace.calibration()),
        host,
    };
    let chosen = |n: &str| opts.cases.is_empty() || opts.cases.iter().any(|c| c == n);
    for (i, (name, section, expectation)) in case_names(opts.side).into_iter().enumerate() {
        if !chosen(name) {
            continue;
        }
        if stop.is_closed() {
            report.interrupted = true;
            break;
        }
        let t0 = Instant::now();
        let base = root.path().join(format!("{i:02}-{name}"));
        let Some(mut graded) = play_apart(opts, pace, &base, i, stop) else {
            proc::end_descendants(Duration::from_secs(1));
            report.interrupted = true;
            break;
        };
        let left = proc::end_descendants(Duration::from_secs(2));
        if left > 0 {
            graded.evidence.push(format!(
                "{left} process(es) the implementation started were still running at the case's end: killed{}",
                if subreaper { "" } else { " (no subreaper here: ones that left the battery's tree are not found)" }
            ));
        }
        let result = CaseResult {
            name: name.into(),
            section: section.into(),
            expectation: expectation.into(),
            verdict: graded.verdict,
            reason: graded.reason,
            evidence: graded.evidence,
            duration_ms: t0.elapsed().as_millis() as u64,
        };
        done(&result);
        report.cases.push(result);
    }
    report.recount();
    // A case abandoned at a stop may still be writing: the dirs go, a few tries.
    for _ in 0..5 {
        if std::fs::remove_dir_all(root.path()).is_ok() || !root.path().exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(report)
}

/// Plays case `i` on a thread of its own; `None` when `stop` closed first (the thread is
/// left to find its processes killed). A case that panics is INCONCLUSIVE, not a crash.
fn play_apart(opts: &ConformOptions, pace: Pace, base: &Path, i: usize, stop: &Signal) -> Option<Graded> {
    let (tx, rx) = mpsc::channel();
    let (opts, base, case_stop) = (opts.clone(), base.to_path_buf(), Halt::default());
    let thread_stop = case_stop.clone();
    let spawned = std::thread::Builder::new().name("conform-case".into()).spawn(move || {
        let g = match opts.side {
            Side::Runner => runner::play(&opts, pace, &base, i, thread_stop),
            Side::Writer => writer::play(&opts, pace, &base, i, thread_stop),
        };
        let _ = tx.send(g.unwrap_or_else(|e| {
            Graded::new(Verdict::Inconclusive, format!("the battery could not set the case up: {e}"), vec![])
        }));
    });
    if let Err(e) = spawned {
        return Some(Graded::new(Verdict::Inconclusive, format!("the battery could not start the case: {e}"), vec![]));
    }
    loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(g) => return Some(g),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Some(Graded::new(
                    Verdict::Inconclusive,
                    "the battery broke in this case (a panic): no grade",
                    vec![],
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) if stop.is_closed() => {
                case_stop.store(true, Ordering::Release);
                return None;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Publishes `bytes` as `dir/name` the way the contract says: a `.tmp.` name in the same dir,
/// then a rename. Returns the moment just before the rename: whatever follows from it (the
/// other side's events) comes after that, however this thread is scheduled. A rename whose
/// temp name is gone says so ([`Consumed`]). The dir is opened once, never through a link:
/// an implementation that put a link in its place gets nothing written through it
/// ([`Replaced`]).
pub(crate) fn publish(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<Instant> {
    let tmp_name = temp_name(name);
    let d = open_dir(dir)?;
    d.write_new(&tmp_name, bytes)?;
    let at = Instant::now();
    match d.rename(&tmp_name, name) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir.is_dir() => {
            Err(std::io::Error::new(e.kind(), Consumed(tmp_name)))
        }
        r => r.map(|()| at),
    }
}

/// The case's relay dir, opened to make files in: a link in its place is the
/// implementation's doing ([`Replaced`]), never followed.
pub(crate) fn open_dir(dir: &Path) -> std::io::Result<InDir> {
    InDir::open(dir).map_err(|e| {
        if crate::base::fsio::is_refusal(&e) {
            std::io::Error::new(e.kind(), Replaced(dir.display().to_string()))
        } else {
            e
        }
    })
}

/// The relay dir was replaced by a symbolic link: the battery writes nothing through it.
#[derive(Debug, thiserror::Error)]
#[error(
    "the relay dir {0} was replaced by a symbolic link (the implementation's doing): the battery writes nothing through it, and a runner must never move its relay dir elsewhere"
)]
pub(crate) struct Replaced(pub String);

/// The battery's temp name was gone before its rename: the implementation took it.
#[derive(Debug, thiserror::Error)]
#[error(
    "the implementation deleted or renamed the battery's temp name {0:?} before the battery renamed it onto its final name (a `.tmp.` name is no relay file: it must be left alone)"
)]
pub(crate) struct Consumed(pub String);

/// Why a case could not be set up: what the implementation did, when it was its doing.
pub(crate) fn setup_failed(e: &std::io::Error) -> Graded {
    if let Some(i) = e.get_ref().filter(|i| i.is::<Consumed>() || i.is::<Replaced>()) {
        return Graded::new(Verdict::Failed, i.to_string(), vec![]);
    }
    Graded::new(Verdict::Inconclusive, format!("the battery could not set the case up: {e}"), vec![])
}

/// The relay files (and anything else) left in `dir`, sorted, for evidence.
pub(crate) fn left_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

pub(crate) fn left_line(dir: &Path) -> String {
    let left = left_in(dir);
    format!("left in the dir: {}", if left.is_empty() { "nothing".to_owned() } else { left.join(", ") })
}

pub(crate) fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    // Under a millisecond (a local pickup, a rename seen) to the microsecond.
    format!("{v:.*} ms", if v < 1.0 { 3 } else { 1 })
}

/// A figure's p50 and max over `v`, or "not measured" when there is no sample.
pub(crate) fn figure(v: &mut [Duration]) -> String {
    if v.is_empty() {
        return "not measured (no sample)".into();
    }
    v.sort();
    let p50 = v[(v.len() - 1) / 2];
    format!("p50 {} max {}", ms(p50), ms(v[v.len() - 1]))
}

/// The hostile ids both sides are given, one call each: an astral character, a 120-unit
/// cut inside a surrogate pair, path parts, shell metacharacters and a newline, an empty id.
pub(crate) fn hostile() -> Vec<String> {
    vec![
        "astral-🦀-id".into(),
        format!("{}🦀z", "y".repeat(119)),
        "../../etc/passwd".into(),
        "sp ace;$(rm -rf x)\n\"q\"".into(),
        String::new(),
    ]
}

/// Removes a file, ignoring errors (a case's own cleanup).
pub(crate) fn rm(path: &Path) {
    let _ = remove_if_present(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_name_is_unique_and_every_expectation_names_a_section() {
        for side in [Side::Runner, Side::Writer] {
            let names = case_names(side);
            let mut seen = std::collections::HashSet::new();
            for (name, section, expectation) in names {
                assert!(seen.insert(name), "{name} twice");
                assert!(section.starts_with('§') && !expectation.is_empty(), "{name}");
            }
        }
    }

    #[test]
    fn a_figure_over_no_sample_is_not_measured() {
        assert_eq!(figure(&mut []), "not measured (no sample)");
        assert_eq!(
            figure(&mut [Duration::from_millis(3), Duration::from_millis(1), Duration::from_millis(2)]),
            "p50 2.0 ms max 3.0 ms"
        );
    }
}
