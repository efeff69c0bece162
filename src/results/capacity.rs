//! A daemon's own capacity for held execs, as `relay-bench daemon-capacity` measured it: the
//! typed report (`capacity.json`), the facts of the machine and the daemon it ran on, and the
//! arithmetic of the per-held-exec costs (the slope between steps, a least-squares line over
//! all of them, and where that line meets the daemon's open-files limit).
//!
//! The design holds one exec per active agent turn (SPEC §9); how many one daemon takes,
//! and how it fails past that, is what a ramp finds: N held `POST /v1/processes/run` at each
//! step, the next exec's start latency and the daemon's resources read at each.

use serde::{Deserialize, Serialize};

use crate::base::units::round;
use crate::record::recorder::LatencyStats;

/// Bumped when a field changes meaning or goes away.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// One ramp: where it ran, what it did at each step, how it ended, what a held exec costs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CapacityReport {
    /// The version of this report's JSON schema.
    pub schema_version: u32,
    /// When the ramp started (UTC, ISO 8601).
    pub started: String,
    /// Wall time of the whole command so far, in milliseconds.
    pub duration_ms: u64,
    /// The command line, as given.
    pub command: String,
    /// This machine, as a reader needs it to trust the figures.
    pub machine: Machine,
    /// The daemon the ramp ran against.
    pub daemon: DaemonFacts,
    /// What the ramp was asked to do.
    pub ramp: Ramp,
    /// The baseline (no exec held) first, then each step reached, in order.
    pub steps: Vec<Step>,
    /// How the ramp ended.
    pub outcome: Outcome,
    /// Where and how the daemon (or the ramp) failed; `None` when every step was reached.
    pub failure: Option<Failure>,
    /// What one held exec costs the daemon.
    pub costs: Costs,
    /// What the cleanup did; `None` in a report written while the ramp runs.
    pub cleanup: Option<Cleanup>,
}

crate::base::named! {
/// How a ramp ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Still running (a report rewritten after each step).
    Running,
    /// Every step up to `--max` was reached.
    Completed,
    /// The daemon failed at a step: the failure point (found cleanly).
    FailurePoint,
    /// The ramp stopped for a reason of its own, not the daemon's (relay-bench's own
    /// open-files limit, the hold ran out): the daemon's capacity is not known past it.
    Stopped,
    /// Ctrl-C (or SIGTERM, SIGHUP).
    Interrupted,
}
names ["running", "completed", "failure point", "stopped", "interrupted"]
}

/// This machine, as a reader needs it to trust the figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    pub os: String,
    pub arch: String,
    pub kernel: String,
    pub cpus: usize,
    /// `MemTotal` of /proc/meminfo.
    pub mem_total_kib: Option<u64>,
    /// `release` or `debug` (a debug client measures itself more than the daemon).
    pub build: String,
    pub suite_version: String,
    /// relay-bench's own open-files limit during the ramp (its soft limit raised to the
    /// hard one: one connection per held exec must not make the client the limit).
    pub client_open_files: Option<Limit>,
    /// /proc/loadavg (1, 5, 15 min) as the ramp started and as it ended: on a shared
    /// machine, other work's share of the cpus shows in every latency.
    pub load_start: Option<String>,
    pub load_end: Option<String>,
}

/// The 1, 5 and 15 minute load averages now.
pub(crate) fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

impl Machine {
    pub fn probe(client_open_files: Option<Limit>) -> Machine {
        let mem_total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            m.lines().find_map(|l| {
                l.strip_prefix("MemTotal:").and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            })
        });
        Machine {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            kernel: super::env::read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            mem_total_kib,
            build: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
            suite_version: env!("CARGO_PKG_VERSION").into(),
            client_open_files,
            load_start: load_average(),
            load_end: None,
        }
    }
}

/// A resource limit of a process (`/proc/PID/limits`); `None` is `unlimited`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Limit {
    pub soft: Option<u64>,
    pub hard: Option<u64>,
}

impl Limit {
    /// `1024`, `unlimited`, or `1024 (hard 4096)`.
    pub(crate) fn describe(&self) -> String {
        let v = |x: Option<u64>| x.map_or_else(|| "unlimited".to_owned(), |n| n.to_string());
        if self.soft == self.hard {
            v(self.soft)
        } else {
            format!("{} (hard {})", v(self.soft), v(self.hard))
        }
    }
}

/// The daemon the ramp ran against.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DaemonFacts {
    /// What its own binary says to `--version`.
    pub version: String,
    pub url: String,
    /// Started by relay-bench for this ramp (on loopback), or one already running (`--url`).
    pub started_here: bool,
    /// Its process, when it runs on this machine (its /proc readings are known then).
    pub pid: Option<u32>,
    /// Its `Max open files` during the ramp.
    pub open_files: Option<Limit>,
    /// Its `Max open files` as it started, when `--nofile` changed it.
    pub open_files_as_started: Option<Limit>,
    /// Its `Max processes`.
    pub max_processes: Option<Limit>,
    /// `pids.max` of its cgroup (v2), when there is one.
    pub cgroup_pids_max: Option<String>,
}

/// What the ramp was asked to do.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Ramp {
    /// Held execs at each step.
    pub steps: Vec<u32>,
    pub max: u32,
    /// Probe execs per step.
    pub samples: u32,
    /// How long each held exec holds (its program's own duration), in milliseconds.
    pub hold_ms: u64,
    /// The held exec's `timeoutMs`.
    pub hold_timeout_ms: u64,
    /// A probe's bound (its `timeoutMs`; relay-bench waits a second more).
    pub probe_timeout_ms: u64,
    /// The program each held exec runs (its argument marks this ramp's children).
    pub held_argv: Vec<String>,
    /// The program each probe runs.
    pub probe_argv: Vec<String>,
}

/// One step: `held` execs held, and what the daemon looked like then.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Step {
    /// Held execs asked for (0: the baseline).
    pub held: u32,
    /// Held execs seen running (the daemon's children running the held program).
    pub running: Option<u32>,
    /// From sending this step's new held execs to seeing them all running, in milliseconds.
    pub open_ms: f64,
    /// The next exec's start latency: the round trip of a probe on a new connection
    /// (connect included), in microseconds.
    pub probe: LatencyStats,
    pub readings: Readings,
}

/// The daemon's resources at one moment (from /proc, when it runs on this machine).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Readings {
    /// `VmRSS`.
    pub rss_kib: Option<u64>,
    /// Entries of /proc/PID/fd.
    pub fds: Option<u64>,
    /// `Threads`.
    pub threads: Option<u64>,
    /// Its live child processes.
    pub children: Option<u64>,
}

/// Where the ramp stopped short of `--max`, and exactly how.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Failure {
    /// The step being reached.
    pub step: u32,
    /// Held execs running when it failed.
    pub held: u32,
    /// What the ramp was doing (`opening held exec 213`, `probe 3 of 50`, ...).
    pub during: String,
    pub how: How,
    /// The limit it ran into, when one is at hand.
    pub limit: Option<LimitHit>,
    /// The daemon's resources just after.
    pub readings: Readings,
    /// The whole story in a sentence.
    pub said: String,
}

/// How a request or the daemon failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum How {
    /// The daemon answered an error status.
    HttpStatus { status: u16, body: String },
    /// The connection failed: refused, reset, closed before an answer (errno when there is one).
    Connection { errno: Option<String>, error: String },
    /// A probe had no answer within its bound.
    ProbeTimeout { bound_ms: u64 },
    /// The daemon said the probe timed out (`timedOut: true`).
    DaemonTimedOut { timeout_ms: u64 },
    /// A probe ran and failed (a non-zero exit, or none).
    ProbeExit { exit_code: Option<i32>, stderr: String },
    /// A held exec was answered before the ramp let it go.
    HeldEnded { exit_code: Option<i32>, timed_out: bool, after_ms: u64 },
    /// Held execs sent but not running within the bound (the daemon accepted them, or not,
    /// and started no program).
    NotStarted { running: u32, wanted: u32, waited_ms: u64 },
    /// The daemon's process is gone.
    DaemonDied { status: String },
    /// The hold ran out before the ramp did (the ramp's own stop).
    HoldExpired { hold_ms: u64 },
}

/// A limit a failure ran into.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LimitHit {
    /// `open files`, `processes`, ...
    pub what: String,
    /// Whose: `the daemon` or `relay-bench`.
    pub whose: String,
    pub used: Option<u64>,
    pub limit: Option<u64>,
    /// Where the limit was read, or what pointed at it (`/proc/PID/limits: Max open files`,
    /// `errno EMFILE`).
    pub evidence: String,
}

/// The cleanup after the ramp: nothing it started is left.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Cleanup {
    /// Held requests cancelled (their connections closed).
    pub cancelled: u32,
    /// Held programs killed (a closed connection does not end the daemon's child).
    pub killed: u32,
    /// Held programs still running after the cleanup (pids): none, or the command fails.
    pub left: Vec<u32>,
    /// Whether the daemon relay-bench started is gone; `None` for one it did not start.
    pub daemon_stopped: Option<bool>,
}

impl Cleanup {
    pub fn clean(&self) -> bool {
        self.left.is_empty() && self.daemon_stopped != Some(false)
    }
}

/// What one held exec costs the daemon.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Costs {
    /// Between each pair of consecutive steps.
    pub intervals: Vec<Interval>,
    /// A least-squares line over every step (the baseline included).
    pub fit: Fit,
    /// Where the fitted fd line meets the daemon's soft open-files limit: the held execs it
    /// would take (a projection, not a measurement).
    pub fd_limit_at: Option<f64>,
}

/// The cost per held exec between two steps: (reading at `to` − at `from`) / (`to` − `from`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Interval {
    pub from: u32,
    pub to: u32,
    pub rss_kib: Option<f64>,
    pub fds: Option<f64>,
    pub threads: Option<f64>,
}

/// The fitted lines, by resource.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Fit {
    pub rss_kib: Option<Line>,
    pub fds: Option<Line>,
    pub threads: Option<Line>,
}

/// `y = at_zero + per_exec × held`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Line {
    pub per_exec: f64,
    pub at_zero: f64,
}

/// The slope from `a` to `b` (x: held execs); `None` when they share an x.
pub(crate) fn slope(a: (f64, f64), b: (f64, f64)) -> Option<f64> {
    let dx = b.0 - a.0;
    (dx != 0.0).then(|| (b.1 - a.1) / dx)
}

/// The least-squares line through `points`; `None` with fewer than two distinct x.
pub(crate) fn fit_line(points: &[(f64, f64)]) -> Option<Line> {
    let n = points.len() as f64;
    if n < 2.0 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let per_exec = sxy / sxx;
    Some(Line { per_exec, at_zero: my - per_exec * mx })
}

impl Costs {
    /// The costs read from `steps` (ordered by held execs); `fd_soft`: the daemon's soft
    /// open-files limit, for the projection.
    pub fn of(steps: &[Step], fd_soft: Option<u64>) -> Costs {
        let field = |s: &Step, f: fn(&Readings) -> Option<u64>| f(&s.readings).map(|v| (f64::from(s.held), v as f64));
        let per = |a: &Step, b: &Step, f: fn(&Readings) -> Option<u64>| {
            slope(field(a, f)?, field(b, f)?).map(|v| round(v, 2))
        };
        let intervals = steps
            .windows(2)
            .map(|w| Interval {
                from: w[0].held,
                to: w[1].held,
                rss_kib: per(&w[0], &w[1], |r| r.rss_kib),
                fds: per(&w[0], &w[1], |r| r.fds),
                threads: per(&w[0], &w[1], |r| r.threads),
            })
            .collect();
        let line = |f: fn(&Readings) -> Option<u64>| {
            let points: Vec<(f64, f64)> = steps.iter().filter_map(|s| field(s, f)).collect();
            fit_line(&points).map(|l| Line { per_exec: round(l.per_exec, 3), at_zero: round(l.at_zero, 1) })
        };
        let fit = Fit { rss_kib: line(|r| r.rss_kib), fds: line(|r| r.fds), threads: line(|r| r.threads) };
        let fd_limit_at = match (&fit.fds, fd_soft) {
            (Some(l), Some(soft)) if l.per_exec > 0.0 => Some(round((soft as f64 - l.at_zero) / l.per_exec, 0)),
            _ => None,
        };
        Costs { intervals, fit, fd_limit_at }
    }
}

impl CapacityReport {
    /// The highest step reached.
    pub fn reached(&self) -> u32 {
        self.steps.last().map_or(0, |s| s.held)
    }

    /// Reads a `capacity.json`; a schema this build does not know is refused, naming it.
    pub fn from_json(text: &str) -> Result<CapacityReport, ReadError> {
        #[derive(Deserialize)]
        struct Version {
            schema_version: u32,
        }
        let v: Version = serde_json::from_str(text).map_err(ReadError::NotAReport)?;
        if v.schema_version != SCHEMA_VERSION {
            return Err(ReadError::Schema(v.schema_version));
        }
        serde_json::from_str(text).map_err(ReadError::NotAReport)
    }
}

/// A `capacity.json` that does not read: not one at all, or of a schema this build does not
/// know (read it with the relay-bench that wrote it).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a capacity report: {0}")]
    NotAReport(serde_json::Error),
    #[error("schema_version {0} (this build reads {SCHEMA_VERSION})")]
    Schema(u32),
}

/// The `detail` of a daemon's problem+json error body.
fn detail(body: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    v.get("detail")?.as_str().map(str::to_owned)
}

/// A failure's details as a person reads them.
pub(crate) fn how(h: &How) -> String {
    match h {
        How::HttpStatus { status, body } => match detail(body) {
            Some(d) => format!("HTTP {status}: {d:?}"),
            None => format!("HTTP {status}, body {body:?}"),
        },
        How::Connection { errno: Some(e), error } => format!("connection failed ({e}): {error}"),
        How::Connection { errno: None, error } => format!("connection failed: {error}"),
        How::ProbeTimeout { bound_ms } => format!("no answer to the probe within {bound_ms} ms"),
        How::DaemonTimedOut { timeout_ms } => {
            format!("the daemon timed the probe out (timedOut: true, timeoutMs {timeout_ms})")
        }
        How::ProbeExit { exit_code, stderr } => format!("the probe exited {exit_code:?}, stderr {stderr:?}"),
        How::HeldEnded { exit_code, timed_out, after_ms } => {
            format!("a held exec was answered after {after_ms} ms (exitCode {exit_code:?}, timedOut {timed_out})")
        }
        How::NotStarted { running, wanted, waited_ms } => {
            format!("{running} of {wanted} held programs running after {waited_ms} ms")
        }
        How::DaemonDied { status } => format!("the daemon's process is gone ({status})"),
        How::HoldExpired { hold_ms } => format!("the held programs' {hold_ms} ms ran out before the ramp"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(held: u32, rss: u64, fds: u64, threads: u64) -> Step {
        Step {
            held,
            running: Some(held),
            open_ms: 1.0,
            probe: LatencyStats::default(),
            readings: Readings {
                rss_kib: Some(rss),
                fds: Some(fds),
                threads: Some(threads),
                children: Some(held.into()),
            },
        }
    }

    #[test]
    fn a_slope_is_the_rise_over_the_run_and_none_without_a_run() {
        assert_eq!(slope((0.0, 10.0), (4.0, 30.0)), Some(5.0));
        assert_eq!(slope((2.0, 30.0), (4.0, 10.0)), Some(-10.0));
        assert_eq!(slope((3.0, 1.0), (3.0, 9.0)), None);
    }

    #[test]
    fn the_fitted_line_goes_through_points_on_a_line_and_needs_two_xs() {
        let l = fit_line(&[(0.0, 12.0), (1.0, 16.0), (5.0, 32.0), (10.0, 52.0)]).unwrap();
        assert!((l.per_exec - 4.0).abs() < 1e-9 && (l.at_zero - 12.0).abs() < 1e-9, "{l:?}");
        // Noise around y = 2x + 1: the least-squares slope, not the last interval's.
        let l = fit_line(&[(0.0, 1.0), (1.0, 4.0), (2.0, 5.0), (3.0, 7.0)]).unwrap();
        assert!((l.per_exec - 1.9).abs() < 1e-9 && (l.at_zero - 1.4).abs() < 1e-9, "{l:?}");
        assert_eq!(fit_line(&[(1.0, 1.0)]), None);
        assert_eq!(fit_line(&[(2.0, 1.0), (2.0, 5.0)]), None);
    }

    #[test]
    fn costs_per_interval_fit_and_the_fd_limit_projection() {
        let steps = [step(0, 13_000, 12, 4), step(1, 13_100, 16, 4), step(5, 13_500, 32, 5), step(10, 14_000, 52, 5)];
        let c = Costs::of(&steps, Some(1024));
        let fds: Vec<Option<f64>> = c.intervals.iter().map(|i| i.fds).collect();
        assert_eq!(fds, [Some(4.0), Some(4.0), Some(4.0)]);
        assert_eq!((c.intervals[1].from, c.intervals[1].to), (1, 5));
        assert_eq!(c.intervals[1].rss_kib, Some(100.0));
        assert_eq!(c.intervals[0].threads, Some(0.0));
        assert_eq!(c.intervals[1].threads, Some(0.25));
        assert_eq!(c.fit.fds, Some(Line { per_exec: 4.0, at_zero: 12.0 }));
        // (1024 - 12) / 4 held execs to the daemon's limit.
        assert_eq!(c.fd_limit_at, Some(253.0));
        // Unknown readings (a daemon elsewhere) cost nothing known, and project nothing.
        let mut blind = steps.to_vec();
        blind.iter_mut().for_each(|s| s.readings = Readings::default());
        let c = Costs::of(&blind, Some(1024));
        assert!(c.intervals.iter().all(|i| i.fds.is_none() && i.rss_kib.is_none()));
        assert_eq!((c.fit.fds, c.fd_limit_at), (None, None));
        assert_eq!(Costs::of(&steps[..1], None).intervals.len(), 0);
    }

    #[test]
    fn a_limit_says_unlimited_and_a_differing_hard_one() {
        assert_eq!(Limit { soft: Some(1024), hard: Some(1024) }.describe(), "1024");
        assert_eq!(Limit { soft: Some(1024), hard: Some(4096) }.describe(), "1024 (hard 4096)");
        assert_eq!(Limit { soft: None, hard: None }.describe(), "unlimited");
    }
}
