//! The drain of a case: from its first intended start until every call it fired has ended
//! (each by its deadline; an interrupt ends them now), the fault schedule strikes on time
//! ([`super::faults`]), progress is told every period, and the pacer's end says how many
//! calls there were ([`Drain::run`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::backend::Fire;
use super::faults::Striker;
use super::setup::Parts;
use super::{CaseEnv, EngineError};
use crate::base::signal::Signal;
use crate::base::units::{human, thousands};
use crate::scenario::{CaseSpec, Clock};

/// What a drain works with.
pub(super) struct Drain<'a> {
    pub case: &'a CaseSpec,
    pub env: &'a CaseEnv,
    pub striker: Striker<'a>,
    /// The case's parts: their writers, where the calls run, whether they are agent turns.
    pub parts: &'a Parts,
    pub epoch: Instant,
    pub length: Duration,
    /// How often progress is told (on the case's clock).
    pub progress_every: Duration,
    /// The live pickup p50 (ns) the recorder keeps, for progress.
    pub live_p50: &'a AtomicU64,
    /// When the drain began on this machine's clock: a simulated case's ETA is in wall time.
    pub wall_start: std::time::Instant,
}

/// What a drain ended with.
pub(super) struct Drained {
    pub interrupted: bool,
    /// Per fault, how long a runner restart's stop took.
    pub stops: Vec<Option<Duration>>,
    /// Calls scheduled, bursts included.
    pub total: usize,
}

/// The calls counted so far.
struct Tally {
    /// Scheduled, bursts included.
    total: usize,
    /// Fired, once the pacer has ended (bursts included).
    fired: Option<usize>,
    /// Ended.
    finished: usize,
    /// Fired by bursts.
    burst_calls: usize,
    interrupted: bool,
    stops: Vec<Option<Duration>>,
}

impl<'a> Drain<'a> {
    /// The drain of `case`, over its built `parts` and the calls `fire` fires.
    pub(super) fn of(
        case: &'a CaseSpec,
        env: &'a CaseEnv,
        parts: &'a Parts,
        fire: &'a Fire,
        epoch: Instant,
        live_p50: &'a AtomicU64,
    ) -> Drain<'a> {
        Drain {
            case,
            env,
            striker: Striker { parts, fire, sandboxes: case.workload.sandboxes },
            parts,
            epoch,
            length: case.workload.duration(),
            progress_every: parts.backend.progress_every(env.progress_every),
            live_p50,
            wall_start: std::time::Instant::now(),
        }
    }

    /// Drains the calls of `pacer` (which ends with (fired, stopped early)); `done` gets a
    /// message per call that ended; `total` calls are scheduled; `stop` ends the calls now
    /// (the user's interrupt, or a search probe's cutoff).
    pub(super) async fn run(
        &self,
        mut pacer: JoinHandle<(usize, bool)>,
        done: &mut UnboundedReceiver<()>,
        total: usize,
        stop: &Signal,
    ) -> Result<Drained, EngineError> {
        // The pacer's task ends when its calls have (they follow each other's answers, or
        // run in the sandbox): then every call it fired has finished.
        let settles = self.parts.turns || self.parts.elsewhere;
        let faults = &self.case.faults;
        let mut t = Tally {
            total,
            fired: None,
            finished: 0,
            burst_calls: 0,
            interrupted: false,
            stops: vec![None; faults.len()],
        };
        let every = self.progress_every;
        let mut tick = tokio::time::interval_at(self.epoch + every, every);
        let mut actions = crate::scenario::fault::actions(faults).into_iter().peekable();
        let far = self.epoch + Duration::from_secs(86_400 * 365);
        while t.fired.is_none_or(|n| t.finished < n) {
            let next_action = actions.peek().map_or(far, |a| self.epoch + a.0);
            tokio::select! {
                _ = tick.tick(), if self.env.progress.is_some() => self.progress(&t),
                _ = tokio::time::sleep_until(next_action), if actions.peek().is_some() => {
                    let (_, i, on) = actions.next().expect("peeked");
                    self.strike(&mut t, i, on).await;
                }
                r = &mut pacer, if t.fired.is_none() => {
                    let (n, stopped) = r.map_err(|e| EngineError::Pacer(e.to_string()))?;
                    t.fired = Some(n + t.burst_calls);
                    if settles {
                        t.finished = t.finished.max(n);
                    }
                    if stopped {
                        self.interrupt(&mut t);
                    }
                }
                Some(()) = done.recv() => t.finished += 1,
                () = stop.closed(), if !t.interrupted => self.interrupt(&mut t),
            }
        }
        // Conditions still on at the end are undone, so the stop after is clean.
        self.striker.undo(faults, actions.filter(|a| !a.2).map(|a| a.1));
        Ok(Drained { interrupted: t.interrupted, stops: t.stops, total: t.total })
    }

    /// Strikes (`on`) or ends fault `i`; a burst's calls join the count.
    async fn strike(&self, t: &mut Tally, i: usize, on: bool) {
        let struck = self.striker.strike(i, &self.case.faults[i], on).await;
        t.stops[i] = t.stops[i].or(struck.stop_took);
        t.total += struck.burst_calls;
        t.fired = t.fired.map(|n| n + struck.burst_calls);
        t.burst_calls += struck.burst_calls;
    }

    /// Ends the calls now: the writers close (once).
    fn interrupt(&self, t: &mut Tally) {
        if !t.interrupted {
            t.interrupted = true;
            self.parts.writers.iter().for_each(|w| w.close());
        }
    }

    fn progress(&self, t: &Tally) {
        if let Some(p) = &self.env.progress {
            let done = (!self.parts.elsewhere).then_some(t.finished);
            let total = (!self.parts.turns).then_some(t.total);
            let p50 = self.live_p50.load(Ordering::Relaxed);
            let at = At { elapsed: self.epoch.elapsed(), length: self.length, wall: self.wall_start.elapsed() };
            p(&progress_line(self.case, at, done, total, p50));
        }
    }
}

/// Where a case is: time on its clock since the start, its schedule's length, and the wall
/// time it has taken.
struct At {
    elapsed: Duration,
    length: Duration,
    wall: Duration,
}

/// `done`: calls answered so far, `None` when they are counted only at the end (in the
/// sandbox); `total`: the calls scheduled, `None` for agent turns (their count is known
/// when they end). On the virtual clock the ETA is wall time, at the pace so far.
fn progress_line(case: &CaseSpec, at: At, done: Option<usize>, total: Option<usize>, p50_ns: u64) -> String {
    let p50 = if p50_ns == 0 { "-".to_owned() } else { human(Duration::from_nanos(p50_ns)) };
    let calls = match (done, total) {
        (Some(done), Some(total)) => {
            format!("{}/{} calls answered, pickup p50 {p50}", thousands(done as f64), thousands(total as f64))
        }
        (Some(done), None) => format!("{} calls answered, pickup p50 {p50}", thousands(done as f64)),
        (None, total) => format!(
            "{} calls running in the sandbox (counted when their log comes back)",
            thousands(total.unwrap_or(0) as f64)
        ),
    };
    let left = at.length.saturating_sub(at.elapsed);
    let (clock, eta) = match case.clock {
        Clock::Virtual if at.elapsed.is_zero() => (" simulated", "-".to_owned()),
        Clock::Virtual => (" simulated", human(at.wall.mul_f64(left.as_secs_f64() / at.elapsed.as_secs_f64()))),
        Clock::Real => ("", human(left)),
    };
    format!("  {}: {} / {}{clock} (ETA {eta}), {calls}", case.name, human(at.elapsed), human(at.length))
}
