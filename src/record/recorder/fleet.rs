//! Agent turns across a fleet, from the turn marks and what each turn's source says: turns
//! started and ended, calls per turn, turns demoted and the time they spent in fallback
//! polling, and the fleet's health over time — a turn is healthy while its source wakes it
//! (no window failure pending, not demoted). For each fleet-wide fault it follows how long
//! the fleet took, after the fault ended, until 95 % of the active turns were healthy again.

use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::base::gauge::{GaugeStats, Level, Tally};
use crate::base::notice::{Health, Say};
use crate::events::{TurnEvent, TurnMark};

/// The share of active turns that counts as a recovered fleet.
pub(crate) const RECOVERED: f64 = 0.95;

#[derive(Debug, Clone, Copy, Default)]
struct Turn {
    active: bool,
    healthy: bool,
    demoted_at: Option<Instant>,
    /// Started after the warm-up: counted in `started`, so its demotion is counted too (a
    /// turn of the ramp demoted after it would make more demoted turns than started ones).
    measured: bool,
    /// Demoted once already: a turn that is promoted back and demoted again (`after_demotion
    /// = "retry"`) is one demoted turn, not two.
    counted: bool,
}

/// A fleet-wide fault whose recovery is followed: struck at `from`, over at `to`.
#[derive(Debug, Clone, Copy)]
struct Watch {
    from: Instant,
    to: Instant,
    recovered: Option<Instant>,
    worst: f64,
    demoted: u64,
}

/// The fleet's turns, fed in channel order.
#[derive(Debug)]
pub(crate) struct Fleet {
    epoch: Instant,
    step: Duration,
    turns: Vec<Turn>,
    active: Level,
    healthy: Level,
    demoted: Level,
    t_active: Tally,
    t_healthy: Tally,
    t_demoted: Tally,
    started: u64,
    ended: u64,
    calls_in_turns: u64,
    demoted_turns: u64,
    /// Windows (or streams) that failed, each said once by its source.
    window_failures: u64,
    fallback: Duration,
    calls: Histogram<u64>,
    timeline: Vec<HealthPoint>,
    watches: Vec<Watch>,
    last: Instant,
    /// The warm-up's end: counts and gauges measure from here (the timeline covers it all).
    measure_from: Instant,
    measuring: bool,
    /// The ramp's counts: `started` and `window_failures` taken when the warm-up ends,
    /// `demoted` counted for its turns whenever they are demoted.
    ramp: Option<RampCounts>,
}

/// The fleet's health at the end of one step of the schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct HealthPoint {
    pub active: u64,
    pub healthy: u64,
    pub demoted: u64,
}

/// A fleet-wide fault's recovery.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Recovery {
    /// From the fault's end until 95 % of active turns were healthy; `None`: not by the end.
    pub after: Option<Duration>,
    /// The lowest share of healthy active turns from the strike on.
    pub worst_healthy: f64,
    /// Turns demoted from the strike until the recovery (or the end).
    pub demoted: u64,
}

/// What [`Fleet`] learned.
#[derive(Debug, Clone, Default)]
pub struct FleetRecording {
    pub started: u64,
    pub ended: u64,
    /// Calls the ended turns made.
    pub calls: u64,
    pub demoted: u64,
    /// Windows (or followed streams) that failed: rejected, cut, timed out, exited non-zero.
    pub window_failures: u64,
    /// Time demoted turns spent polling, summed.
    pub fallback: Duration,
    /// Calls per ended turn.
    pub calls_per_turn: Option<Histogram<u64>>,
    pub active: GaugeStats,
    pub healthy: GaugeStats,
    pub demoted_now: GaugeStats,
    pub timeline: Vec<HealthPoint>,
    /// Per fleet-wide fault given to [`Fleet::new`], in order.
    pub recoveries: Vec<Recovery>,
    /// What the warm-up's ramp counted before the figures above began (`None`: no warm-up,
    /// or the case ended within it).
    pub ramp: Option<RampCounts>,
}

/// The warm-up's counts: the fleet ramping up (sessions starting) is a load of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RampCounts {
    pub started: u64,
    pub demoted: u64,
    pub window_failures: u64,
}

impl Fleet {
    /// Follows turns from `epoch`, a timeline point every `step`, and the recovery of each
    /// fleet-wide fault `(from, to)`; counts and gauges measure from `measure_from` (the end
    /// of the workload's warm-up).
    pub(crate) fn new(epoch: Instant, step: Duration, faults: &[(Instant, Instant)], measure_from: Instant) -> Fleet {
        Fleet {
            epoch,
            step: step.max(Duration::from_millis(1)),
            turns: Vec::new(),
            active: Level::new(epoch),
            healthy: Level::new(epoch),
            demoted: Level::new(epoch),
            t_active: Tally::default(),
            t_healthy: Tally::default(),
            t_demoted: Tally::default(),
            started: 0,
            ended: 0,
            calls_in_turns: 0,
            demoted_turns: 0,
            window_failures: 0,
            fallback: Duration::ZERO,
            calls: Histogram::new_with_bounds(1, 1 << 20, 3).expect("valid bounds"),
            timeline: Vec::new(),
            watches: faults
                .iter()
                .map(|&(from, to)| Watch { from, to, recovered: None, worst: 1.0, demoted: 0 })
                .collect(),
            last: epoch,
            measure_from,
            measuring: measure_from <= epoch,
            ramp: None,
        }
    }

    fn turn(&mut self, sandbox: u32) -> &mut Turn {
        let i = sandbox as usize;
        if self.turns.len() <= i {
            self.turns.resize(i + 1, Turn::default());
        }
        &mut self.turns[i]
    }

    fn share(&self) -> f64 {
        let a = self.active.value();
        if a == 0 {
            1.0
        } else {
            self.healthy.value() as f64 / a as f64
        }
    }

    /// Time moves on to `t`: timeline points for the steps passed, and the recoveries the
    /// state held since the last event settles.
    fn advance(&mut self, t: Instant) {
        if t <= self.last {
            return;
        }
        if !self.measuring && t >= self.measure_from {
            // The warm-up is over: what the gauges held until now is not the steady state.
            self.measuring = true;
            let at = self.measure_from;
            for (l, tally) in [
                (&mut self.active, &mut self.t_active),
                (&mut self.healthy, &mut self.t_healthy),
                (&mut self.demoted, &mut self.t_demoted),
            ] {
                l.settle(at, tally);
                *tally = Tally::default();
                let v = l.value();
                l.set(v, at, tally);
            }
            let demoted = self.ramp.map_or(0, |r| r.demoted);
            self.ramp = Some(RampCounts { started: self.started, demoted, window_failures: self.window_failures });
            (self.started, self.ended, self.calls_in_turns, self.demoted_turns) = (0, 0, 0, 0);
            self.window_failures = 0;
            self.fallback = Duration::ZERO;
            self.calls.reset();
        }
        let share = self.share();
        for w in self.watches.iter_mut().filter(|w| w.recovered.is_none() && t > w.to) {
            if share >= RECOVERED {
                w.recovered = Some(self.last.max(w.to));
            }
        }
        let point =
            HealthPoint { active: self.active.value(), healthy: self.healthy.value(), demoted: self.demoted.value() };
        while self.epoch + self.step * (self.timeline.len() as u32 + 1) <= t {
            self.timeline.push(point);
        }
        self.last = t;
    }

    /// After a change at `t`: the watches see the new share.
    fn changed(&mut self, t: Instant) {
        let share = self.share();
        for w in self.watches.iter_mut().filter(|w| w.recovered.is_none() && t >= w.from) {
            w.worst = w.worst.min(share);
        }
    }

    fn set_healthy(&mut self, sandbox: u32, healthy: bool, t: Instant) {
        let turn = self.turn(sandbox);
        if !turn.active || turn.healthy == healthy {
            return;
        }
        turn.healthy = healthy;
        if healthy {
            self.healthy.add(1, t, &mut self.t_healthy);
        } else {
            self.healthy.sub(1, t, &mut self.t_healthy);
        }
        self.changed(t);
    }

    pub(crate) fn mark(&mut self, m: &TurnMark) {
        self.advance(m.at);
        let t = m.at;
        match m.what {
            TurnEvent::Started => {
                let measured = self.measuring;
                let turn = self.turn(m.sandbox);
                if turn.active {
                    return;
                }
                *turn = Turn { active: true, healthy: true, demoted_at: None, measured, counted: false };
                self.started += 1;
                self.active.add(1, t, &mut self.t_active);
                self.healthy.add(1, t, &mut self.t_healthy);
            }
            TurnEvent::Ended { calls } => {
                let turn = *self.turn(m.sandbox);
                if !turn.active {
                    return;
                }
                self.ended += 1;
                self.calls_in_turns += u64::from(calls);
                let _ = self.calls.record(u64::from(calls).max(1));
                self.active.sub(1, t, &mut self.t_active);
                if turn.healthy {
                    self.healthy.sub(1, t, &mut self.t_healthy);
                }
                if let Some(d) = turn.demoted_at {
                    self.fallback += t.saturating_duration_since(d);
                    self.demoted.sub(1, t, &mut self.t_demoted);
                }
                *self.turn(m.sandbox) = Turn::default();
            }
        }
        self.changed(t);
    }

    /// What a source said of its turn's health.
    pub(crate) fn notice(&mut self, sandbox: u32, what: &Say, t: Instant) {
        match what.health() {
            Some(Health::Failed) => {
                self.advance(t);
                self.window_failures += 1;
                self.set_healthy(sandbox, false, t);
            }
            Some(h @ (Health::Recovered | Health::Promoted)) => {
                self.advance(t);
                let turn = self.turn(sandbox);
                if turn.active && h == Health::Promoted {
                    if let Some(d) = turn.demoted_at.take() {
                        self.fallback += t.saturating_duration_since(d);
                        self.demoted.sub(1, t, &mut self.t_demoted);
                    }
                }
                self.set_healthy(sandbox, true, t);
            }
            None if what.degraded() => {
                self.advance(t);
                let turn = self.turn(sandbox);
                if !turn.active || turn.demoted_at.is_some() {
                    return;
                }
                turn.demoted_at = Some(t);
                let first = !std::mem::replace(&mut turn.counted, true);
                if first && turn.measured {
                    self.demoted_turns += 1;
                } else if first {
                    // A turn of the ramp, demoted during it or after it.
                    self.ramp.get_or_insert_with(RampCounts::default).demoted += 1;
                }
                self.demoted.add(1, t, &mut self.t_demoted);
                for w in self.watches.iter_mut().filter(|w| t >= w.from && w.recovered.is_none()) {
                    w.demoted += 1;
                }
                self.set_healthy(sandbox, false, t);
            }
            None => {}
        }
    }

    /// Settles everything at `end`: turns still active count their fallback up to it.
    pub(crate) fn finish(mut self, end: Instant) -> FleetRecording {
        self.advance(end);
        for i in 0..self.turns.len() {
            if let Some(d) = self.turns[i].demoted_at.filter(|_| self.turns[i].active) {
                self.fallback += end.saturating_duration_since(d);
            }
        }
        for (l, t) in [
            (&mut self.active, &mut self.t_active),
            (&mut self.healthy, &mut self.t_healthy),
            (&mut self.demoted, &mut self.t_demoted),
        ] {
            l.settle(end, t);
        }
        FleetRecording {
            started: self.started,
            ended: self.ended,
            calls: self.calls_in_turns,
            demoted: self.demoted_turns,
            window_failures: self.window_failures,
            fallback: self.fallback,
            calls_per_turn: (!self.calls.is_empty()).then_some(self.calls),
            active: self.t_active.stats(),
            healthy: self.t_healthy.stats(),
            demoted_now: self.t_demoted.stats(),
            timeline: self.timeline,
            recoveries: self
                .watches
                .iter()
                .map(|w| Recovery {
                    after: w.recovered.map(|r| r.saturating_duration_since(w.to)),
                    worst_healthy: (w.worst * 1e4).round() / 1e4,
                    demoted: w.demoted,
                })
                .collect(),
            // A case that ended within its warm-up measured nothing past it: no ramp apart.
            ramp: self.ramp.filter(|_| self.measuring),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::strategy::window::{WindowFailure, WindowNotice};

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[tokio::test(start_paused = true)]
    async fn turns_demotions_and_fallback_time() {
        let t0 = Instant::now();
        let mut f = Fleet::new(t0, s(10), &[], t0);
        let mark = |f: &mut Fleet, sandbox, at, what| f.mark(&TurnMark { at, sandbox, what });
        mark(&mut f, 0, t0, TurnEvent::Started);
        mark(&mut f, 1, t0, TurnEvent::Started);
        let demoted =
            Say::strategy(WindowNotice::Demoted { n: 3, why: WindowFailure::DaemonTimeout, for_the_turn: true });
        f.notice(1, &demoted, t0 + s(5));
        f.notice(1, &demoted, t0 + s(6));
        mark(&mut f, 1, t0 + s(25), TurnEvent::Ended { calls: 4 });
        mark(&mut f, 0, t0 + s(30), TurnEvent::Ended { calls: 2 });
        let r = f.finish(t0 + s(40));
        assert_eq!((r.started, r.ended, r.demoted), (2, 2, 1), "one demotion counted once");
        assert_eq!(r.fallback, s(20));
        assert_eq!(r.active.max, 2);
        assert_eq!(r.timeline.len(), 4);
        assert_eq!(r.timeline[0], HealthPoint { active: 2, healthy: 1, demoted: 1 });
        assert_eq!(r.calls_per_turn.unwrap().max(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn recovery_is_timed_from_the_faults_end_to_95_percent_healthy() {
        let t0 = Instant::now();
        let mut f = Fleet::new(t0, s(60), &[(t0 + s(10), t0 + s(10)), (t0 + s(100), t0 + s(100))], t0);
        for sb in 0..20 {
            f.mark(&TurnMark { at: t0, sandbox: sb, what: TurnEvent::Started });
        }
        let failed = Say::strategy(WindowNotice::WindowFailed { n: 1, why: WindowFailure::Rejected("cut".into()) });
        for sb in 0..4 {
            f.notice(sb, &failed, t0 + s(10));
        }
        // Back one by one: 17 of 20 (85 %) at 12 s, 19 of 20 (95 %) at 15 s.
        f.notice(0, &Say::strategy(WindowNotice::Recovered), t0 + s(12));
        f.notice(1, &Say::strategy(WindowNotice::Recovered), t0 + s(15));
        f.notice(2, &Say::strategy(WindowNotice::Recovered), t0 + s(15));
        let r = f.finish(t0 + s(120));
        assert_eq!(r.window_failures, 4, "each failed window counted once");
        assert_eq!(r.recoveries[0].after, Some(s(5)));
        assert_eq!(r.recoveries[0].worst_healthy, 0.8);
        assert_eq!(r.recoveries[1].after, Some(Duration::ZERO), "a fault nothing felt recovers at once");
    }
}
