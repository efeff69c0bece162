//! `relay-bench daemon-capacity`: the real daemon's own capacity for held execs, measured.
//! The design holds one watch-window exec (a held `POST /v1/processes/run`) per active agent
//! turn; this ramps N of them at once on one daemon, step by step, and at each step times
//! the next exec and reads the daemon's RSS, fds, threads and children, until `--max` or
//! the point where the daemon fails (said exactly: status and body, errno, the limit hit).
//!
//! The flags are validated into a [`CapacityPlan`] before anything starts; then a
//! [`Session`] starts the daemon ([`daemon`]: one of its own on loopback, or `--url`) and,
//! once its caller has somewhere to write, runs the ramp ([`ramp`], every request on a
//! connection of its own) and the cleanup (every held request cancelled, every held program
//! killed, the daemon stopped), handing the caller the report after every step.

mod daemon;
mod ramp;

use crate::sandbox::host::AGENT_BINARY;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::base::signal::Signal;
use crate::base::units::human;
use crate::results::capacity::{
    CapacityReport, Cleanup, Costs, DaemonFacts, Limit, Machine, Outcome, Ramp as RampFacts, SCHEMA_VERSION,
};
use crate::sandbox::host::Url;

use daemon::Target;
use ramp::{Ramp, RampPlan, Setup, Stop};

/// The steps when `--steps` is not given.
pub(crate) const DEFAULT_STEPS: &str = "1,2,5,10,20,50,100,200,500,1000";
/// The most held execs a ramp asks for.
pub(crate) const MAX_HELD: u32 = 100_000;
/// The daemon caps a run's timeoutMs at 300 s, silently: a hold and its grace stay under it.
pub(crate) const MAX_HOLD: Duration = Duration::from_secs(295);
/// A held exec's timeoutMs is its hold plus this.
const HOLD_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub(crate) enum CapacityError {
    #[error("--steps {given:?}: {why}")]
    Steps { given: String, why: String },
    #[error("--max {0}: must be between 1 and {MAX_HELD}")]
    Max(u32),
    #[error("--samples {0}: must be between 1 and 1000")]
    Samples(u32),
    #[error("--hold {0}: must be between 5s and {max} (the daemon caps a run's timeoutMs at 300 s, silently)", max = human(MAX_HOLD))]
    Hold(String),
    #[error("--probe-timeout {0}: must be between 100ms and 60s")]
    ProbeTimeout(String),
    #[error("--nofile {given:?}: {why}")]
    NoFile { given: String, why: String },
    #[error("--pid {pid}: {why}")]
    Pid { pid: u32, why: String },
    #[error("--url {given:?}: {why}")]
    Url { given: String, why: String },
    #[error("{0}")]
    Binary(crate::sandbox::host::SandboxAgentBinaryError),
    #[error("cannot start the daemon {bin}: {source}")]
    Start { bin: String, source: std::io::Error },
    #[error("the daemon at {url} cannot run an exec: {why}")]
    Unusable { url: String, why: String, ours: bool },
    /// A signal came before the ramp began: nothing was measured, no report written.
    #[error("interrupted while {0}, before the ramp began: nothing measured, no report written")]
    Interrupted(&'static str),
}

impl CapacityError {
    /// Whether the flags (or what they name) were wrong, not relay-bench.
    pub(crate) fn is_bad_input(&self) -> bool {
        match self {
            CapacityError::Start { source, .. } => crate::sandbox::host::is_not_a_daemon(source),
            CapacityError::Interrupted(_) => false,
            CapacityError::Unusable { ours, .. } => !ours,
            _ => true,
        }
    }
}

/// What `--nofile` asks of the started daemon's soft open-files limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoFile {
    /// Raised to its hard limit.
    Hard,
    /// Set to this (at most the hard limit).
    To(u64),
}

impl NoFile {
    /// As `--nofile` takes it: `hard`, or the number.
    fn given(self) -> String {
        match self {
            NoFile::Hard => "hard".into(),
            NoFile::To(n) => n.to_string(),
        }
    }
}

/// What `daemon-capacity` was asked: its flags, declared here once (clap reads their docs
/// as the `--help` text).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CapacityRequest {
    /// The sandbox-agent binary to start (before $SANDBOX_AGENT_BIN, the project-local
    /// install and PATH). It runs on loopback, `server --no-token`, with relay-bench's own
    /// limits (see --nofile).
    #[arg(long, value_name = "PATH", conflicts_with = "url")]
    pub sandbox_agent: Option<PathBuf>,
    /// A daemon already running, http://HOST:PORT (its token from $SANDBOX_AGENT_TOKEN).
    /// Its resources are read only with --pid; its held programs are killed through it.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// The process of the daemon at --url, when it runs on this machine: its /proc readings.
    #[arg(long, value_name = "PID", requires = "url")]
    pub pid: Option<u32>,
    /// The most held execs: the last step.
    #[arg(long, value_name = "N", default_value_t = 1000)]
    pub max: u32,
    /// Held execs at each step, increasing (those above --max dropped, --max the last).
    #[arg(long, value_name = "LIST", default_value = DEFAULT_STEPS)]
    pub steps: String,
    /// Probe execs timed at each step (and at the baseline, no exec held).
    #[arg(long, value_name = "K", default_value_t = 50)]
    pub samples: u32,
    /// How long each held exec holds (its `sleep`); its timeoutMs is this plus 5s. The daemon
    /// caps a timeoutMs at 300s silently, so at most 295s: the ramp must end within it.
    #[arg(long, value_name = "DURATION", value_parser = crate::base::units::parse_duration, default_value = "280s")]
    pub hold: Duration,
    /// A probe's timeoutMs; no answer within it (and a second) is a failure.
    #[arg(long, value_name = "DURATION", value_parser = crate::base::units::parse_duration, default_value = "10s")]
    pub probe_timeout: Duration,
    /// Set the started daemon's soft open-files limit (prlimit): `hard` raises it to its
    /// hard limit, a number sets it (at most the hard one; lower emulates a smaller
    /// sandbox). Without it the daemon keeps the limit relay-bench was started with.
    #[arg(long, value_name = "hard|N")]
    pub nofile: Option<String>,
    /// Report directory (default: reports/<timestamp>-daemon-capacity/). It must be new,
    /// empty, or a previous run's; one run at a time writes it (a lock).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Which daemon.
#[derive(Debug)]
enum Which {
    Start(PathBuf),
    Running { url: Url, pid: Option<u32> },
}

/// A validated request: nothing has started.
#[derive(Debug)]
pub(crate) struct CapacityPlan {
    which: Which,
    /// What the ramp does (its held execs' argv marked for this run).
    ramp: RampPlan,
    nofile: Option<NoFile>,
    out: Option<PathBuf>,
}

/// `1,2,5,10`: strictly increasing held counts from 1; those above `max` dropped, and `max`
/// itself the last step.
pub(crate) fn parse_steps(given: &str, max: u32) -> Result<Vec<u32>, CapacityError> {
    let err = |why: String| CapacityError::Steps { given: given.to_owned(), why };
    let mut steps: Vec<u32> = Vec::new();
    for part in given.split(',').map(str::trim) {
        let n: u32 = part.parse().map_err(|_| err(format!("{part:?} is not a whole number of held execs")))?;
        if n == 0 {
            return Err(err("a step holds at least 1 exec (the baseline, 0, is always measured)".into()));
        }
        if steps.last().is_some_and(|&last| n <= last) {
            return Err(err(format!("{n} after {}: the steps must increase", steps[steps.len() - 1])));
        }
        steps.push(n);
    }
    steps.retain(|&n| n <= max);
    if steps.last() != Some(&max) {
        steps.push(max);
    }
    Ok(steps)
}

/// `hard` or a number of open files.
pub(crate) fn parse_nofile(given: &str) -> Result<NoFile, CapacityError> {
    let err = |why: &str| CapacityError::NoFile { given: given.to_owned(), why: why.to_owned() };
    match given {
        "hard" => Ok(NoFile::Hard),
        n => match n.parse::<u64>() {
            Ok(n) if n >= 16 => Ok(NoFile::To(n)),
            Ok(_) => Err(err("below 16 the daemon cannot even start its listener and logs")),
            Err(_) => Err(err("expected `hard` or a number of open files")),
        },
    }
}

impl CapacityPlan {
    /// Checks every flag (and the binary, the pid) before anything starts.
    pub(crate) fn new(r: CapacityRequest) -> Result<CapacityPlan, CapacityError> {
        if r.max == 0 || r.max > MAX_HELD {
            return Err(CapacityError::Max(r.max));
        }
        let steps = parse_steps(&r.steps, r.max)?;
        if r.samples == 0 || r.samples > 1000 {
            return Err(CapacityError::Samples(r.samples));
        }
        if r.hold < Duration::from_secs(5) || r.hold > MAX_HOLD {
            return Err(CapacityError::Hold(human(r.hold)));
        }
        if r.probe_timeout < Duration::from_millis(100) || r.probe_timeout > Duration::from_secs(60) {
            return Err(CapacityError::ProbeTimeout(human(r.probe_timeout)));
        }
        let nofile = r.nofile.as_deref().map(parse_nofile).transpose()?;
        let which = match (&r.url, r.pid) {
            (Some(u), pid) => {
                let url = Url::parse(u).map_err(|why| CapacityError::Url { given: u.clone(), why: why.to_string() })?;
                if let Some(n) = &r.nofile {
                    return Err(CapacityError::NoFile {
                        given: n.clone(),
                        why: "sets the limit of a daemon relay-bench starts, not of one at --url".into(),
                    });
                }
                pid.map(check_pid).transpose()?;
                Which::Running { url, pid }
            }
            (None, Some(pid)) => {
                return Err(CapacityError::Pid {
                    pid,
                    why: "names the process of a daemon at --url; give --url too".into(),
                })
            }
            (None, None) => {
                let bin = match &r.sandbox_agent {
                    Some(bin) => crate::sandbox::host::check_sandbox_agent(bin).map(|()| bin.clone()),
                    None => crate::sandbox::host::find_sandbox_agent(),
                };
                Which::Start(bin.map_err(CapacityError::Binary)?)
            }
        };
        if let (Some(NoFile::To(n)), Some(hard)) = (nofile, daemon::own_nofile_hard()) {
            if n > hard {
                return Err(CapacityError::NoFile {
                    given: n.to_string(),
                    why: format!("above the hard limit ({hard}) the daemon inherits; raise `ulimit -Hn` first"),
                });
            }
        }
        let facts = RampFacts {
            steps,
            max: r.max,
            samples: r.samples,
            hold_ms: r.hold.as_millis() as u64,
            hold_timeout_ms: (r.hold + HOLD_GRACE).as_millis() as u64,
            probe_timeout_ms: r.probe_timeout.as_millis() as u64,
            held_argv: held_argv(r.hold),
            probe_argv: vec!["true".into()],
        };
        let ramp = RampPlan { facts, hold: r.hold, probe_timeout: r.probe_timeout };
        Ok(CapacityPlan { which, ramp, nofile, out: r.out })
    }

    /// Where the report goes (`--out`), when the flags said.
    pub(crate) fn out(&self) -> Option<&Path> {
        self.out.as_deref()
    }
}

/// The report before the first step: the machine, the daemon as found, the ramp's plan.
fn first_report(
    plan: &CapacityPlan,
    target: &Target,
    (version, ours): (String, bool),
    (client_nofile, open_files_as_started): (Option<Limit>, Option<Limit>),
    started: String,
) -> CapacityReport {
    let daemon = DaemonFacts {
        version,
        url: target.url.clone(),
        started_here: ours,
        pid: target.pid,
        open_files: target.limit("Max open files"),
        open_files_as_started,
        max_processes: target.limit("Max processes"),
        cgroup_pids_max: target.cgroup_pids_max(),
    };
    CapacityReport {
        schema_version: SCHEMA_VERSION,
        started,
        duration_ms: 0,
        command: std::env::args().collect::<Vec<_>>().join(" "),
        machine: Machine::probe(client_nofile),
        daemon,
        ramp: plan.ramp.facts.clone(),
        steps: Vec::new(),
        outcome: Outcome::Running,
        failure: None,
        costs: Costs::default(),
        cleanup: None,
    }
}

fn check_pid(pid: u32) -> Result<(), CapacityError> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).map_err(|e| CapacityError::Pid {
        pid,
        why: format!("no such process on this machine that relay-bench can read ({e})"),
    })?;
    if !exe.file_name().is_some_and(|n| n.to_string_lossy().contains(AGENT_BINARY)) {
        return Err(CapacityError::Pid { pid, why: format!("runs {}, not {AGENT_BINARY}", exe.display()) });
    }
    Ok(())
}

/// A marker unique to this ramp, in the held program's argument (`sleep 280.NNNNNNNNN`):
/// its children are told from anyone else's by their argv, and killed by their pid.
fn held_argv(hold: Duration) -> Vec<String> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let nonce = (u64::from(nanos) ^ (u64::from(std::process::id()) * 2_654_435_761)) % 1_000_000_000;
    // A nonce of 0 would print as `.000000000`: fine, still exact.
    vec!["sleep".into(), format!("{}.{nonce:09}", hold.as_secs())]
}

/// A daemon ready to be ramped: started (or found at `--url`), its open-files limit set as
/// asked, its version known. A daemon it started stops when it is dropped unramped, as
/// [`Session::abandon`] says outright.
pub(crate) struct Session {
    s: Setup,
    report: CapacityReport,
    t0: Instant,
}

impl Session {
    /// Starts (or reaches) the daemon and asks its version; `started` is the ramp's start as
    /// its report says it. A daemon it started that fails any step (its limit, its version)
    /// is stopped before this returns: dropped with the `Target` holding it.
    pub(crate) async fn start(
        plan: CapacityPlan,
        interrupt: Arc<Signal>,
        started: String,
    ) -> Result<Session, CapacityError> {
        let t0 = Instant::now();
        let target = match &plan.which {
            Which::Start(bin) => {
                Target::start(bin).map_err(|source| CapacityError::Start { bin: bin.display().to_string(), source })?
            }
            Which::Running { url, pid } => {
                let token = std::env::var(crate::sandbox::host::AGENT_TOKEN_ENV).ok();
                Target::running(url, *pid, token)
                    .map_err(|e| CapacityError::Url { given: url.base(), why: e.to_string() })?
            }
        };
        let ours = target.started_here();
        // After the daemon started (it keeps the limit it was given): relay-bench's own.
        let client_nofile = daemon::raise_own_nofile();
        let open_files_as_started = match plan.nofile {
            None => None,
            Some(n) => {
                let as_started = target.limit("Max open files");
                if let Err(e) = target.set_nofile(n) {
                    let why = format!("prlimit on the daemon: {e}");
                    return Err(CapacityError::NoFile { given: n.given(), why });
                }
                as_started
            }
        };
        let asked = tokio::select! {
            v = target.version() => v,
            () = interrupt.closed() => return Err(CapacityError::Interrupted("asking the daemon its version")),
        };
        let version =
            asked.map_err(|why| CapacityError::Unusable { url: target.url.clone(), why: why.to_string(), ours })?;
        let daemon_nofile = target.limit("Max open files");
        let report = first_report(&plan, &target, (version, ours), (client_nofile, open_files_as_started), started);
        let s = Setup { target, plan: plan.ramp, interrupt, daemon_nofile, client_nofile };
        Ok(Session { s, report, t0 })
    }

    /// Stops a daemon this session started, never ramped (its caller had nowhere to write).
    pub(crate) fn abandon(mut self) {
        self.s.target.stop();
    }

    /// Runs the ramp and the cleanup: `after` hears the report after every step (the steps
    /// so far, their costs), and the finished report is returned.
    pub(crate) async fn ramp(mut self, after: &mut dyn FnMut(&CapacityReport)) -> CapacityReport {
        let fd_soft = self.s.daemon_nofile.and_then(|l| l.soft);
        let mut ramp = Ramp::new(&self.s);
        let mut steps = Vec::new();
        let stop = {
            let (report, t0) = (&mut self.report, self.t0);
            let mut each = |done: &[crate::results::capacity::Step]| {
                report.steps = done.to_vec();
                report.costs = Costs::of(done, fd_soft);
                report.duration_ms = t0.elapsed().as_millis() as u64;
                after(report);
            };
            ramp.run(&mut steps, &mut each).await
        };
        let cancelled = ramp.cancel().await;
        drop(ramp);
        let (killed, mut left) = self.s.target.kill_held(&self.s.plan.facts.held_argv).await;
        let daemon_stopped = self.s.target.stop();
        // A last look, the daemon gone: no held program of this ramp anywhere.
        for p in self.s.target.left(&self.s.plan.facts.held_argv) {
            if !left.contains(&p) {
                left.push(p);
            }
        }
        let mut report = self.report;
        report.cleanup = Some(Cleanup { cancelled, killed, left, daemon_stopped });
        report.costs = Costs::of(&steps, fd_soft);
        report.steps = steps;
        (report.outcome, report.failure) = match stop {
            Ok(()) => (Outcome::Completed, None),
            Err(Stop::Interrupted) => (Outcome::Interrupted, None),
            Err(Stop::Failed(o, f)) => (o, Some(*f)),
        };
        report.duration_ms = self.t0.elapsed().as_millis() as u64;
        report.machine.load_end = crate::results::capacity::load_average();
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> CapacityRequest {
        CapacityRequest {
            sandbox_agent: None,
            url: Some("http://127.0.0.1:9".into()),
            pid: None,
            max: 1000,
            steps: DEFAULT_STEPS.into(),
            samples: 20,
            hold: Duration::from_secs(280),
            probe_timeout: Duration::from_secs(10),
            nofile: None,
            out: None,
        }
    }

    #[test]
    fn steps_increase_from_one_and_end_at_max() {
        assert_eq!(parse_steps(DEFAULT_STEPS, 1000).unwrap(), [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]);
        assert_eq!(parse_steps("1,2,5", 5).unwrap(), [1, 2, 5]);
        assert_eq!(parse_steps(DEFAULT_STEPS, 30).unwrap(), [1, 2, 5, 10, 20, 30], "max is the last step");
        assert_eq!(parse_steps(" 3 , 7 ", 7).unwrap(), [3, 7]);
        for (bad, says) in [
            ("1,5,2", "2 after 5"),
            ("1,1", "must increase"),
            ("0,1", "at least 1"),
            ("1,,2", "not a whole number"),
            ("1,-2", "not a whole number"),
            ("ten", "\"ten\""),
        ] {
            let e = parse_steps(bad, 10).unwrap_err().to_string();
            assert!(e.starts_with("--steps") && e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn nofile_is_hard_or_a_number() {
        assert_eq!(parse_nofile("hard").unwrap(), NoFile::Hard);
        assert_eq!(parse_nofile("1024").unwrap(), NoFile::To(1024));
        // An error names it as it was given, not as the type is spelled.
        assert_eq!((NoFile::Hard.given(), NoFile::To(1024).given()), ("hard".into(), "1024".into()));
        assert!(parse_nofile("8").unwrap_err().to_string().contains("below 16"));
        assert!(parse_nofile("max").unwrap_err().to_string().contains("`hard` or a number"));
    }

    #[test]
    fn a_plan_refuses_what_does_not_apply_naming_the_flag() {
        assert!(CapacityPlan::new(request()).is_ok());
        let bad = |f: fn(&mut CapacityRequest)| {
            let mut r = request();
            f(&mut r);
            let e = CapacityPlan::new(r).unwrap_err();
            assert!(e.is_bad_input(), "{e}");
            e.to_string()
        };
        assert!(bad(|r| r.max = 0).starts_with("--max 0"));
        assert!(bad(|r| r.samples = 0).starts_with("--samples"));
        assert!(bad(|r| r.hold = Duration::from_secs(300)).contains("caps"));
        assert!(bad(|r| r.probe_timeout = Duration::from_millis(1)).starts_with("--probe-timeout"));
        assert!(bad(|r| r.nofile = Some("hard".into())).contains("not of one at --url"));
        assert!(bad(|r| r.url = Some("https://x:1".into())).starts_with("--url"));
        assert!(bad(|r| r.pid = Some(std::process::id())).contains("not sandbox-agent"));
        assert!(bad(|r| {
            r.url = None;
            r.pid = Some(1);
        })
        .contains("give --url too"));
    }

    #[test]
    fn the_held_argv_is_a_sleep_of_the_hold_marked_by_a_nonce() {
        let a = held_argv(Duration::from_secs(280));
        assert_eq!(a[0], "sleep");
        let (secs, nonce) = a[1].split_once('.').unwrap();
        assert_eq!((secs, nonce.len()), ("280", 9));
        assert!(a[1].parse::<f64>().is_ok_and(|s| (280.0..281.0).contains(&s)));
    }
}
