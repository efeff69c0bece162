//! The open-loop pacer: intended start times for every call, fixed before the case runs.
//!
//! Arrivals are turns; each turn is a batch of N parallel calls in one sandbox (N = 1 gives
//! a plain constant or Poisson call rate). Turns go to sandboxes round-robin. Because the
//! schedule never waits for answers, a stalled relay is charged for every call queued
//! behind it (latency from the intended start, as wrk2 does).

use std::time::Duration;

use crate::base::clock;
use crate::base::rng::Rng;

crate::base::named! {
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Constant,
    Poisson,
}
names ["constant", "poisson"]
}

/// A stretch of the schedule at one turn rate; a rate of 0 is an idle phase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phase {
    pub duration: Duration,
    pub turns_per_sec: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub sandboxes: u32,
    pub arrival: Arrival,
    /// The schedule, phase after phase (warm-up included).
    pub phases: Vec<Phase>,
    pub calls_per_turn: u32,
    /// Calls whose intended start falls in the first `warmup` run but are not measured.
    pub warmup: Duration,
    /// Whether the capacity figures (`fleet.worst.*`) take the warm-up in: the higher of
    /// its figure and the steady state's (the default), or the steady state's alone.
    pub warmup_gated: bool,
    pub tool_timeout: Option<Duration>,
    pub seed: u64,
    /// Size of each request's args payload.
    pub payload_bytes: usize,
    /// Agent turns as production runs them (a relay per turn), instead of the open-loop
    /// schedule of `phases` (one relay per sandbox for the whole case).
    pub agent: Option<super::turns::AgentTurns>,
}

/// The most calls one case may schedule. The schedule, the pairing check and the recorder
/// are sized by it before the case starts (some 70 bytes a call), so a rate mistyped in a
/// scenario is refused when it is read rather than becoming gigabytes of allocation.
pub(crate) const MAX_CALLS_PER_CASE: u64 = 10_000_000;
/// The most calls a case of agent turns may make: no schedule is laid out for them, and
/// what the recorder keeps of a call is let go after its turn, so memory follows the
/// sandboxes, not the calls (1,000 sandboxes peak 9 % higher over a week than over a day:
/// reports/runs/20261204-scale-1k-week). The cap
/// is a week of the busiest fleet this suite measures (10,000 sandboxes of the default mix:
/// 111 million calls), with room: a rate mistyped in a scenario is still refused.
pub(crate) const MAX_AGENT_CALLS_PER_CASE: u64 = 250_000_000;

/// One scheduled call.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// Offset of the intended start from the case's epoch.
    pub offset: Duration,
    pub sandbox: u32,
    pub turn: u64,
    pub index: u32,
    pub warmup: bool,
}

impl Slot {
    /// The call id: unique within the case.
    pub(crate) fn call_id(&self) -> String {
        format!("t{}-c{}", self.turn, self.index)
    }
}

impl Workload {
    /// Length of the whole schedule.
    pub fn duration(&self) -> Duration {
        self.phases.iter().map(|p| p.duration).sum()
    }

    /// How many turns the schedule holds, computed without building it: a constant
    /// arrival's count (to within one turn a phase), a Poisson arrival's expectation.
    /// Saturates rather than overflows.
    pub(crate) fn planned_turns(&self) -> u64 {
        if let Some(a) = &self.agent {
            let per_sandbox = a.turns_per_sec_per_sandbox() * self.duration().as_secs_f64();
            return (per_sandbox * f64::from(self.sandboxes)).ceil() as u64;
        }
        let turns: f64 = self.phases.iter().map(|p| (p.duration.as_secs_f64() * p.turns_per_sec).ceil()).sum();
        turns as u64
    }

    /// How many calls the schedule holds ([`Workload::planned_turns`] × calls per turn).
    /// The most calls a case of this workload may plan ([`MAX_CALLS_PER_CASE`], or
    /// [`MAX_AGENT_CALLS_PER_CASE`] for agent turns).
    pub(crate) fn max_calls(&self) -> u64 {
        if self.agent.is_some() {
            MAX_AGENT_CALLS_PER_CASE
        } else {
            MAX_CALLS_PER_CASE
        }
    }

    pub(crate) fn planned_calls(&self) -> u64 {
        if let Some(a) = &self.agent {
            return (self.planned_turns() as f64 * a.calls_per_turn()).ceil() as u64;
        }
        self.planned_turns().saturating_mul(u64::from(self.calls_per_turn))
    }

    /// Every call of the case, in intended-start order (none with agent turns: their calls
    /// follow each other's answers, not a clock).
    pub fn schedule(&self) -> Vec<Slot> {
        if self.agent.is_some() {
            return Vec::new();
        }
        let mut rng = Rng::new(self.seed);
        let mut out = Vec::new();
        let mut turn = 0u64;
        let mut phase_start = 0.0f64;
        for phase in &self.phases {
            let len = phase.duration.as_secs_f64();
            if phase.turns_per_sec > 0.0 {
                let mean = 1.0 / phase.turns_per_sec;
                let mut t = 0.0f64;
                for k in 0u64.. {
                    t = match self.arrival {
                        // Multiplying (not summing) keeps 0.1 s steps exact over long phases.
                        Arrival::Constant => k as f64 * mean,
                        Arrival::Poisson if k == 0 => 0.0,
                        Arrival::Poisson => t + rng.exp(mean),
                    };
                    if t >= len - 1e-9 {
                        break;
                    }
                    let offset = Duration::from_secs_f64(phase_start + t);
                    let sandbox = (turn % u64::from(self.sandboxes)) as u32;
                    for index in 0..self.calls_per_turn {
                        out.push(Slot { offset, sandbox, turn, index, warmup: offset < self.warmup });
                    }
                    turn += 1;
                }
            }
            phase_start += len;
        }
        out
    }
}

/// Fires every slot at `epoch + offset` on the calling (OS) thread, sleeping in between in
/// steps of at most 20 ms so `stop` is seen promptly. Returns how many slots fired and
/// whether `stop` ended the schedule early. `fire` gets the slot and its intended start.
pub(crate) fn pace(
    slots: &[Slot],
    epoch: std::time::Instant,
    length: Duration,
    stop: impl Fn() -> bool,
    mut fire: impl FnMut(&Slot, std::time::Instant),
) -> (usize, bool) {
    const STEP: Duration = Duration::from_millis(20);
    // Sleeps until `at`; false if stopped first.
    let wait_until = |at: std::time::Instant| loop {
        if stop() {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= at {
            return true;
        }
        std::thread::sleep((at - now).min(STEP));
    };
    for (i, slot) in slots.iter().enumerate() {
        let at = epoch + slot.offset;
        if !wait_until(at) {
            return (i, true);
        }
        fire(slot, at);
    }
    // The schedule lasts its whole length: a closing idle phase is part of the case.
    (slots.len(), !wait_until(epoch + length))
}

/// [`pace`] on the tokio clock, for virtual time: the same schedule, with every sleep a
/// timer the paused clock jumps to. `stop` is checked before every slot and once a
/// simulated minute in the closing idle stretch.
pub(crate) async fn pace_async(
    slots: &[Slot],
    epoch: tokio::time::Instant,
    length: Duration,
    stop: impl Fn() -> bool,
    mut fire: impl FnMut(&Slot, tokio::time::Instant),
) -> (usize, bool) {
    for (i, slot) in slots.iter().enumerate() {
        if stop() {
            return (i, true);
        }
        let at = epoch + slot.offset;
        tokio::time::sleep_until(at).await;
        fire(slot, at);
    }
    let end = epoch + length;
    while clock::now() < end {
        if stop() {
            return (slots.len(), true);
        }
        tokio::time::sleep_until(end.min(clock::now() + Duration::from_secs(60))).await;
    }
    (slots.len(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wl(arrival: Arrival) -> Workload {
        Workload {
            sandboxes: 4,
            arrival,
            phases: vec![Phase { duration: Duration::from_secs(10), turns_per_sec: 10.0 }],
            calls_per_turn: 3,
            warmup: Duration::from_secs(1),
            warmup_gated: true,
            tool_timeout: None,
            seed: 42,
            payload_bytes: 64,
            agent: None,
        }
    }

    #[test]
    fn constant_batches() {
        let s = wl(Arrival::Constant).schedule();
        assert_eq!(s.len(), 300);
        assert_eq!(wl(Arrival::Constant).planned_calls(), 300, "counted without building it");
        assert!(s.chunks(3).all(|b| b.iter().all(|c| c.offset == b[0].offset && c.sandbox == b[0].sandbox)));
        assert_eq!(s.iter().filter(|c| c.warmup).count(), 30);
        assert_eq!(s[3].sandbox, 1);
        assert_eq!(s[3].offset, Duration::from_millis(100));
        let ids: std::collections::HashSet<_> = s.iter().map(Slot::call_id).collect();
        assert_eq!(ids.len(), 300);
    }

    #[test]
    fn pace_fires_in_order_and_stops() {
        let mut w = wl(Arrival::Constant);
        w.phases = vec![Phase { duration: Duration::from_millis(20), turns_per_sec: 1000.0 }];
        let slots = w.schedule();
        let epoch = std::time::Instant::now();
        let mut fired = Vec::new();
        let (n, stopped) = pace(
            &slots,
            epoch,
            w.duration(),
            || false,
            |s, at| {
                assert!(std::time::Instant::now() >= at, "never early");
                fired.push(s.turn);
            },
        );
        assert_eq!((n, stopped), (slots.len(), false));
        assert!(epoch.elapsed() >= w.duration(), "the pacer lasts the whole schedule");
        assert!(fired.windows(2).all(|p| p[0] <= p[1]));
        let calls = std::cell::Cell::new(0);
        let (n, stopped) = pace(
            &slots,
            std::time::Instant::now(),
            w.duration(),
            || calls.get() >= 4,
            |_, _| calls.set(calls.get() + 1),
        );
        assert_eq!((n, stopped), (4, true));
    }

    #[test]
    fn phases_follow_each_other_and_idle_phases_are_empty() {
        let mut w = wl(Arrival::Constant);
        w.warmup = Duration::ZERO;
        w.phases = vec![
            Phase { duration: Duration::from_secs(2), turns_per_sec: 2.0 },
            Phase { duration: Duration::from_secs(60), turns_per_sec: 0.0 },
            Phase { duration: Duration::from_secs(1), turns_per_sec: 4.0 },
        ];
        assert_eq!(w.duration(), Duration::from_secs(63));
        let s = w.schedule();
        assert_eq!(s.len(), (4 + 4) * 3);
        assert_eq!(w.planned_calls(), s.len() as u64);
        let offsets: Vec<f64> = s.iter().step_by(3).map(|c| c.offset.as_secs_f64()).collect();
        assert_eq!(offsets, vec![0.0, 0.5, 1.0, 1.5, 62.0, 62.25, 62.5, 62.75]);
    }

    #[test]
    fn poisson_is_seeded_and_near_its_rate() {
        let a = wl(Arrival::Poisson).schedule();
        assert_eq!(a, wl(Arrival::Poisson).schedule());
        let turns = a.len() / 3;
        assert!((70..130).contains(&turns), "{turns} turns");
        assert_eq!(wl(Arrival::Poisson).planned_turns(), 100, "the expectation");
        assert!(a.windows(2).all(|w| w[0].offset <= w[1].offset));
    }
}
