//! The organisation's state behind its lock: each sandbox's gauges and connection pool, the
//! organisation's own, the per-second request counts, and what each request's admission,
//! opening and closing does to them; what they add up to since the clock's start (started
//! again at the warm-up's end).

use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use super::limits::{Refusal, Side};
use super::rates::Rates;
use super::{Kind, OrgStats};
use crate::base::gauge::{Level, Tally};

/// Requests in flight: the first of the gauges kept per sandbox and for the organisation,
/// by their index in [`Gauges`].
pub(super) const IN_FLIGHT: usize = 0;
/// Execs held.
pub(super) const HELD: usize = 1;
/// Connections open.
pub(super) const CONNS: usize = 2;

/// A level or a tally of each gauge, by [`IN_FLIGHT`], [`HELD`] and [`CONNS`].
pub(super) type Gauges<T> = [T; 3];

/// One sandbox's gauges and connection pool.
#[derive(Debug)]
pub(super) struct SandboxState {
    pub(super) side: Side,
    pub(super) levels: Gauges<Level>,
    /// When each idle pooled connection went idle (most recent last).
    pub(super) idle: Vec<Instant>,
    /// Its requests rejected since the organisation began (never reset with the clock: a
    /// fault's row takes differences of it).
    pub(super) rejected_ever: u64,
}

/// The organisation's gauges and counters.
#[derive(Debug)]
pub(super) struct State {
    pub(super) side: Side,
    pub(super) sandboxes: Vec<SandboxState>,
    pub(super) levels: Gauges<Level>,
    /// Pooled over sandboxes (the per-sandbox distributions), and the organisation's own.
    pub(super) tallies: Tallies,
    /// Requests per second since `start`, by kind, folded into their peaks as they pass.
    pub(super) rates: Rates,
    pub(super) start: Instant,
    pub(super) rejected: u64,
    pub(super) queued: u64,
    pub(super) cut: u64,
    pub(super) queue_wait: Histogram<u64>,
    /// The latency legs the organisation's emulated daemons paid (ns).
    pub(super) legs: Histogram<u64>,
    /// When each idle connection is due to close, and whose (in time order), for the sweep.
    pub(super) expiries: std::collections::VecDeque<(Instant, usize)>,
    pub(super) sweeping: bool,
    /// The connection gauges count real connections ([`Org::connect`]), not a modelled pool.
    pub(super) real_conns: bool,
}

#[derive(Debug, Default, Clone)]
pub(super) struct Tallies {
    pub(super) sandbox: Gauges<Tally>,
    pub(super) org: Gauges<Tally>,
}

/// Settles each of `levels` into its tally at `at`.
fn settle(levels: &mut Gauges<Level>, tallies: &mut Gauges<Tally>, at: Instant) {
    levels.iter_mut().zip(tallies).for_each(|(l, t)| l.settle(at, t));
}

impl State {
    pub(super) fn count(&mut self, kind: Kind, at: Instant) {
        self.rates.count(self.second(at), kind);
    }

    /// Moves gauge `g` of sandbox `i`, then the organisation's, up (`up`) or down by one at `at`.
    pub(super) fn step(&mut self, i: usize, g: usize, up: bool, at: Instant) {
        let t = &mut self.tallies;
        for (level, tally) in
            [(&mut self.sandboxes[i].levels[g], &mut t.sandbox[g]), (&mut self.levels[g], &mut t.org[g])]
        {
            if up {
                level.add(1, at, tally);
            } else {
                level.sub(1, at, tally);
            }
        }
    }

    /// The second of the clock `at` falls in.
    pub(super) fn second(&self, at: Instant) -> usize {
        at.saturating_duration_since(self.start).as_secs() as usize
    }

    /// Takes a place under the sandbox's caps and the organisation's, or neither.
    pub(super) fn take(&mut self, i: usize, held: bool, now: Instant) -> Result<(), Refusal> {
        self.sandboxes[i].side.try_take(held, now)?;
        if let Err(r) = self.side.try_take(held, now) {
            self.sandboxes[i].side.give_back(held);
            return Err(r);
        }
        Ok(())
    }

    /// Closes the sandbox's idle connections that outlived the keep-alive, at the moment
    /// they did (at the latest, `now`).
    pub(super) fn prune(&mut self, i: usize, now: Instant, keepalive: Duration) {
        while self.sandboxes[i].idle.first().is_some_and(|t| *t + keepalive <= now) {
            let at = self.sandboxes[i].idle.remove(0) + keepalive;
            self.step(i, CONNS, false, at.min(now));
        }
    }

    pub(super) fn opened(&mut self, i: usize, held: bool, now: Instant, keepalive: Duration) {
        self.prune(i, now, keepalive);
        self.step(i, IN_FLIGHT, true, now);
        if held {
            self.step(i, HELD, true, now);
        }
        if !self.real_conns && self.sandboxes[i].idle.pop().is_none() {
            self.step(i, CONNS, true, now);
        }
    }

    pub(super) fn closed(&mut self, i: usize, held: bool, now: Instant, keepalive: Duration) {
        if !self.real_conns {
            self.expiries.push_back((now + keepalive, i));
        }
        self.side.give_back(held);
        self.sandboxes[i].side.give_back(held);
        self.step(i, IN_FLIGHT, false, now);
        if held {
            self.step(i, HELD, false, now);
        }
        if !self.real_conns {
            self.sandboxes[i].idle.push(now);
        }
    }
}

impl State {
    /// Starts every gauge's, rate's and count's clock again at `at`. What each level holds
    /// then is where the new period starts: its maximum at least that (execs held across
    /// the warm-up's end are held in the steady state too).
    pub(super) fn restart(&mut self, at: Instant) {
        self.tallies = Tallies::default();
        for sb in &mut self.sandboxes {
            sb.levels.iter_mut().for_each(|l| l.restart(at));
            settle(&mut sb.levels, &mut self.tallies.sandbox, at);
        }
        self.levels.iter_mut().for_each(|l| l.restart(at));
        settle(&mut self.levels, &mut self.tallies.org, at);
        self.rates.clear();
        self.start = at;
        (self.rejected, self.queued, self.cut) = (0, 0, 0);
        self.queue_wait.reset();
    }

    /// Everything measured since the clock's start, settled up to `until`.
    pub(super) fn stats(&mut self, until: Instant, keepalive: Duration) -> OrgStats {
        for i in 0..self.sandboxes.len() {
            self.prune(i, until, keepalive);
            settle(&mut self.sandboxes[i].levels, &mut self.tallies.sandbox, until);
        }
        settle(&mut self.levels, &mut self.tallies.org, until);
        let secs = until.saturating_duration_since(self.start).as_secs_f64().ceil() as usize;
        let (sb, org) = (&self.tallies.sandbox, &self.tallies.org);
        OrgStats {
            held_execs: org[HELD].stats(),
            sandbox_held_execs: sb[HELD].stats(),
            in_flight: org[IN_FLIGHT].stats(),
            sandbox_in_flight: sb[IN_FLIGHT].stats(),
            connections: org[CONNS].stats(),
            sandbox_connections: sb[CONNS].stats(),
            rates: self.rates.stats(secs),
            rejected: self.rejected,
            queued: self.queued,
            cut: self.cut,
            queue_wait: self.queue_wait.clone(),
        }
    }
}
