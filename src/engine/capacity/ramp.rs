//! The ramp: at each step, hold N execs at once (each a task with a connection of its own,
//! its end reported on a channel), wait until the daemon runs them all, then time the next
//! exec and read the daemon. The first thing that goes wrong ends it, said exactly: a held
//! exec answered or cut early, an error status, a refused or reset connection, a probe with
//! no answer in its bound, held execs the daemon never starts, the daemon's process gone.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::daemon::Target;
use crate::base::clock;
use crate::base::signal::Signal;
use crate::base::units::record;
use crate::record::recorder::{new_histogram, LatencyStats};
use crate::results::capacity::{Failure, How, Limit, LimitHit, Outcome, Ramp as RampFacts, Readings, Step};
use crate::sandbox::host::{errno_label, ExecError, RunAnswer};

/// What the ramp does, validated: as its report states it, and its two durations.
#[derive(Debug, Clone)]
pub(super) struct RampPlan {
    pub facts: RampFacts,
    pub hold: Duration,
    pub probe_timeout: Duration,
}

/// How the ramp stopped before its last step was measured.
#[derive(Debug)]
pub(super) enum Stop {
    /// [`Outcome::FailurePoint`] (the daemon's) or [`Outcome::Stopped`] (the ramp's own).
    Failed(Outcome, Box<Failure>),
    Interrupted,
}

/// One held exec's end.
struct HeldEnd {
    index: u32,
    after: Duration,
    result: Result<RunAnswer, ExecError>,
}

/// How long a step's new held execs get to be running: this, plus [`PER_NEW_EXEC`] each.
const OPEN_BOUND: Duration = Duration::from_secs(10);
const PER_NEW_EXEC: Duration = Duration::from_millis(20);
/// How often a step looks whether its held execs run: every millisecond at first, twice
/// as long after each look up to this (the open time is read to within about a look).
const LOOK_EVERY: Duration = Duration::from_millis(20);
/// A probe's bound beyond its own timeoutMs (the daemon's answer to a timeout goes first).
const PROBE_GRACE: Duration = Duration::from_secs(1);

/// What a ramp runs against: the daemon, the plan, the interrupt, both sides' limits.
pub(super) struct Setup {
    pub target: Target,
    pub plan: RampPlan,
    pub interrupt: Arc<Signal>,
    /// The daemon's and relay-bench's open-files limits, for the failure's limit.
    pub daemon_nofile: Option<Limit>,
    pub client_nofile: Option<Limit>,
}

pub(super) struct Ramp<'a> {
    s: &'a Setup,
    held: Vec<tokio::task::JoinHandle<()>>,
    ends_tx: mpsc::UnboundedSender<HeldEnd>,
    ends: mpsc::UnboundedReceiver<HeldEnd>,
    /// Held execs whose connection is made.
    connected: Arc<AtomicU32>,
    /// Held execs last seen running (what a daemon that died was holding).
    running: u32,
}

impl<'a> Ramp<'a> {
    pub(super) fn new(s: &'a Setup) -> Ramp<'a> {
        let (ends_tx, ends) = mpsc::unbounded_channel();
        Ramp { s, held: Vec::new(), ends_tx, ends, connected: Arc::default(), running: 0 }
    }

    /// Runs the baseline and every step, pushing each into `steps` and telling `after`; how
    /// it stopped when it stopped short.
    pub(super) async fn run(&mut self, steps: &mut Vec<Step>, after: &mut dyn FnMut(&[Step])) -> Result<(), Stop> {
        steps.push(self.measure(0, Duration::ZERO).await?);
        after(steps);
        for &n in &self.s.plan.facts.steps {
            let open = self.open(n).await?;
            steps.push(self.measure(n, open).await?);
            after(steps);
        }
        Ok(())
    }

    /// Cancels every held request (its connection closed); returns how many were held.
    pub(crate) async fn cancel(&mut self) -> u32 {
        let mut cancelled = 0;
        for h in self.held.drain(..) {
            if !h.is_finished() {
                cancelled += 1;
            }
            h.abort();
            let _ = h.await;
        }
        cancelled
    }

    fn spawn_held(&mut self, index: u32) {
        let (ep, argv, timeout_ms) =
            (self.s.target.endpoint.clone(), self.s.plan.facts.held_argv.clone(), self.s.plan.facts.hold_timeout_ms);
        let (tx, connected) = (self.ends_tx.clone(), self.connected.clone());
        self.held.push(tokio::spawn(async move {
            let t0 = Instant::now();
            let result = ep.run_alone(&argv, timeout_ms, Some(&connected)).await;
            let _ = tx.send(HeldEnd { index, after: t0.elapsed(), result });
        }));
    }

    /// Sends the step's new held execs and waits until the daemon runs them all.
    async fn open(&mut self, n: u32) -> Result<Duration, Stop> {
        let t0 = Instant::now();
        let from = self.held.len() as u32;
        for index in from..n {
            self.spawn_held(index);
        }
        let bound = OPEN_BOUND + PER_NEW_EXEC * (n - from);
        let during = format!("opening held execs {}–{}", from + 1, n);
        let mut look = Duration::from_millis(1);
        loop {
            self.check(n, &during).await?;
            let running = self.s.target.held_running(&self.s.plan.facts.held_argv);
            let connected = self.connected.load(Ordering::Acquire);
            self.running = running.unwrap_or(self.running).max(self.running);
            match running {
                Some(r) if r >= n => return Ok(t0.elapsed()),
                // A daemon elsewhere: its children unseen, the connections made and a moment
                // to start them is all there is.
                None if connected >= n => {
                    clock::sleep(Duration::from_millis(100) + Duration::from_millis(u64::from(n - from))).await;
                    self.check(n, &during).await?;
                    return Ok(t0.elapsed());
                }
                _ => {}
            }
            if t0.elapsed() >= bound {
                let waited_ms = t0.elapsed().as_millis() as u64;
                let how = How::NotStarted { running: running.unwrap_or(connected), wanted: n, waited_ms };
                return Err(self.fail(n, &during, how, false));
            }
            tokio::select! {
                _ = clock::sleep(look) => {}
                _ = self.s.interrupt.closed() => return Err(Stop::Interrupted),
            }
            look = (look * 2).min(LOOK_EVERY);
        }
    }

    /// The probes and the readings at `n` held execs.
    async fn measure(&mut self, n: u32, open: Duration) -> Result<Step, Stop> {
        let mut h = new_histogram();
        let bound = self.s.plan.probe_timeout + PROBE_GRACE;
        let timeout_ms = self.s.plan.facts.probe_timeout_ms;
        for i in 1..=self.s.plan.facts.samples {
            let during = format!("probe {i} of {} at {n} held", self.s.plan.facts.samples);
            self.check(n, &during).await?;
            let t0 = Instant::now();
            let answer = tokio::select! {
                r = clock::timeout(bound, self.s.target.endpoint.run_alone(&self.s.plan.facts.probe_argv, timeout_ms, None)) => r,
                _ = self.s.interrupt.closed() => return Err(Stop::Interrupted),
            };
            let took = t0.elapsed();
            let how = match answer {
                Err(_) => How::ProbeTimeout { bound_ms: bound.as_millis() as u64 },
                Ok(Err(e)) => return Err(self.exec_failed(n, &during, &e).await),
                Ok(Ok(a)) if a.timed_out => How::DaemonTimedOut { timeout_ms },
                Ok(Ok(a)) if a.exit_code != Some(0) => How::ProbeExit { exit_code: a.exit_code, stderr: a.stderr },
                Ok(Ok(_)) => {
                    record(&mut h, took);
                    continue;
                }
            };
            return Err(self.fail(n, &during, how, false));
        }
        self.check(n, &format!("reading the daemon at {n} held")).await?;
        Ok(Step {
            held: n,
            running: self.s.target.held_running(&self.s.plan.facts.held_argv),
            open_ms: (open.as_secs_f64() * 1e4).round() / 10.0,
            probe: LatencyStats::of(&h),
            readings: self.s.target.readings(),
        })
    }

    /// Interrupted, a held exec that ended, the daemon gone: each ends the ramp.
    async fn check(&mut self, n: u32, during: &str) -> Result<(), Stop> {
        if self.s.interrupt.is_closed() {
            return Err(Stop::Interrupted);
        }
        if let Err(status) = self.s.target.alive() {
            return Err(self.fail(n, during, How::DaemonDied { status: status.to_string() }, false));
        }
        if let Ok(end) = self.ends.try_recv() {
            return Err(self.held_ended(n, end).await);
        }
        Ok(())
    }

    async fn held_ended(&mut self, n: u32, end: HeldEnd) -> Stop {
        let during = format!("held exec {} of {n}", end.index + 1);
        match end.result {
            Err(e) => self.exec_failed(n, &during, &e).await,
            Ok(a) => {
                let after_ms = end.after.as_millis() as u64;
                if a.exit_code == Some(0) && !a.timed_out && end.after + Duration::from_secs(1) >= self.s.plan.hold {
                    let how = How::HoldExpired { hold_ms: self.s.plan.facts.hold_ms };
                    return self.fail(n, &during, how, true);
                }
                let how = How::HeldEnded { exit_code: a.exit_code, timed_out: a.timed_out, after_ms };
                self.fail(n, &during, how, false)
            }
        }
    }

    /// A request that failed: relay-bench's own limit, the daemon gone (its connections go
    /// with it: said as its death), or the daemon's failure.
    async fn exec_failed(&self, n: u32, during: &str, e: &ExecError) -> Stop {
        if e.client_limit() {
            return self.fail(n, during, how(e), true);
        }
        // A daemon that died resets its connections a moment before it reads as gone.
        clock::sleep(Duration::from_millis(100)).await;
        if let Err(status) = self.s.target.alive() {
            let during = format!("{during} ({e})");
            return self.fail(n, &during, How::DaemonDied { status: status.to_string() }, false);
        }
        self.fail(n, during, how(e), false)
    }

    /// The ramp's end at step `n`, with the daemon read just after; `ours`: the ramp's own
    /// stop, not the daemon's failure.
    fn fail(&self, n: u32, during: &str, how: How, ours: bool) -> Stop {
        let readings = self.s.target.readings();
        let held = match (&how, self.s.target.held_running(&self.s.plan.facts.held_argv)) {
            (How::DaemonDied { .. }, _) => self.running,
            (_, Some(r)) => r,
            (_, None) => self.held.iter().filter(|h| !h.is_finished()).count() as u32,
        };
        let client_side = matches!(&how, How::Connection { errno: Some(e), .. } if e.starts_with("EMFILE") || e.starts_with("ENFILE"))
            && ours;
        let limit = if client_side {
            Some(LimitHit {
                what: "open files".into(),
                whose: "relay-bench".into(),
                used: own_fds(),
                limit: self.s.client_nofile.and_then(|l| l.soft),
                evidence: "its own socket() failed; raise `ulimit -n` (the hard limit) to go further".into(),
            })
        } else {
            attribute(&how, &readings, self.s.daemon_nofile, self.s.target.pid)
        };
        let limit_said = limit.as_ref().map_or_else(String::new, |l| {
            let of = match (l.used, l.limit) {
                (Some(u), Some(m)) => format!(" ({u} of {m})"),
                (None, Some(m)) => format!(" (limit {m})"),
                _ => String::new(),
            };
            format!("; {}'s {} limit{of}", l.whose, l.what)
        });
        let said = format!("{during}, {held} held execs running: {}{limit_said}", crate::results::capacity::how(&how));
        let failure = Failure { step: n, held, during: during.to_owned(), how, limit, readings, said };
        Stop::Failed(if ours { Outcome::Stopped } else { Outcome::FailurePoint }, Box::new(failure))
    }
}

fn own_fds() -> Option<u64> {
    std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as u64)
}

/// The limit a failure points at: the errno the daemon names (EMFILE: open files; EAGAIN
/// from a spawn: processes; ENOMEM: memory), else its fds at its open-files limit.
pub(super) fn attribute(how: &How, r: &Readings, nofile: Option<Limit>, pid: Option<u32>) -> Option<LimitHit> {
    let text = match how {
        How::HttpStatus { body, .. } => body.as_str(),
        How::Connection { error, errno } => errno.as_deref().unwrap_or(error.as_str()),
        How::ProbeExit { stderr, .. } => stderr.as_str(),
        _ => "",
    };
    let says = |needles: &[&str]| needles.iter().any(|n| text.contains(n));
    let limits = pid.map_or_else(|| "its limits".to_owned(), |p| format!("/proc/{p}/limits"));
    let soft = nofile.and_then(|l| l.soft);
    let hit = |what: &str, used: Option<u64>, limit: Option<u64>, evidence: String| {
        Some(LimitHit { what: what.into(), whose: "the daemon".into(), used, limit, evidence })
    };
    if says(&["os error 24", "Too many open files", "EMFILE"]) {
        return hit(
            "open files",
            r.fds,
            soft,
            format!("it said EMFILE (Too many open files); Max open files in {limits}"),
        );
    }
    if says(&["os error 23", "ENFILE"]) {
        return hit("open files (system-wide)", None, None, "it said ENFILE: the system's file table is full".into());
    }
    if says(&["os error 11", "Resource temporarily unavailable"]) {
        return hit(
            "processes",
            r.children,
            None,
            format!("a spawn failed with EAGAIN: Max processes in {limits}, or its cgroup's pids.max"),
        );
    }
    if says(&["os error 12", "Cannot allocate memory"]) {
        return hit("memory", r.rss_kib, None, "it said ENOMEM".into());
    }
    match (r.fds, soft) {
        // At its limit (a few descriptors short: a failed accept or spawn frees what it took).
        (Some(fds), Some(soft)) if fds + 8 >= soft => {
            hit("open files", Some(fds), Some(soft), format!("its fds at Max open files in {limits}"))
        }
        _ => None,
    }
}

/// How an exec failed, as a capacity report says it.
fn how(e: &ExecError) -> How {
    match e {
        ExecError::Status { status, body } => How::HttpStatus { status: *status, body: body.clone() },
        ExecError::Answer(why) => How::Connection { errno: None, error: format!("unexpected answer: {why}") },
        other => How::Connection { errno: other.errno().map(errno_label), error: other.to_string() },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exec_failure_is_said_with_its_status_or_its_errno() {
        let s = ExecError::Status { status: 502, body: "spawn failed".into() };
        assert_eq!(how(&s), How::HttpStatus { status: 502, body: "spawn failed".into() });
        match how(&ExecError::Connect(std::io::Error::from_raw_os_error(libc::ECONNREFUSED))) {
            How::Connection { errno: Some(n), error } => {
                assert!(n.starts_with("ECONNREFUSED"), "{n}");
                assert!(error.starts_with("cannot connect"), "{error}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_failure_points_at_the_limit_it_names_or_the_fds_at_the_limit() {
        let r = Readings { rss_kib: Some(20_000), fds: Some(1020), threads: Some(4), children: Some(250) };
        let nofile = Some(Limit { soft: Some(1024), hard: Some(1024) });
        let spawn = How::HttpStatus {
            status: 502,
            body: "stream error: failed to spawn process: Too many open files (os error 24)".into(),
        };
        let l = attribute(&spawn, &r, nofile, Some(7)).unwrap();
        assert_eq!((l.what.as_str(), l.used, l.limit), ("open files", Some(1020), Some(1024)));
        assert!(l.evidence.contains("/proc/7/limits"), "{}", l.evidence);
        let fork = How::HttpStatus {
            status: 502,
            body: "failed to spawn: Resource temporarily unavailable (os error 11)".into(),
        };
        assert_eq!(attribute(&fork, &r, nofile, None).unwrap().what, "processes");
        // No errno said, the fds at the limit: a refused accept, a connection never answered.
        let silent = How::NotStarted { running: 250, wanted: 500, waited_ms: 20_000 };
        assert_eq!(attribute(&silent, &r, nofile, None).unwrap().what, "open files");
        let room = Readings { fds: Some(500), ..r };
        assert_eq!(attribute(&silent, &room, nofile, None), None);
        assert_eq!(attribute(&silent, &r, None, None), None, "no limit known, none claimed");
    }
}
