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

/// One sandbox's gauges and connection pool.
#[derive(Debug)]
pub(super) struct SandboxState {
    pub(super) side: Side,
    pub(super) in_flight: Level,
    pub(super) held: Level,
    pub(super) conns: Level,
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
    pub(super) in_flight: Level,
    pub(super) held: Level,
    pub(super) conns: Level,
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
    pub(super) sb_in_flight: Tally,
    pub(super) sb_held: Tally,
    pub(super) sb_conns: Tally,
    pub(super) in_flight: Tally,
    pub(super) held: Tally,
    pub(super) conns: Tally,
}

impl State {
    pub(super) fn count(&mut self, kind: Kind, at: Instant) {
        self.rates.count(self.second(at), kind);
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
        let sb = &mut self.sandboxes[i];
        while sb.idle.first().is_some_and(|t| *t + keepalive <= now) {
            let at = sb.idle.remove(0) + keepalive;
            sb.conns.sub(1, at.min(now), &mut self.tallies.sb_conns);
            self.conns.sub(1, at.min(now), &mut self.tallies.conns);
        }
    }

    pub(super) fn opened(&mut self, i: usize, held: bool, now: Instant, keepalive: Duration) {
        self.prune(i, now, keepalive);
        let modelled = !self.real_conns;
        let t = &mut self.tallies;
        let sb = &mut self.sandboxes[i];
        sb.in_flight.add(1, now, &mut t.sb_in_flight);
        self.in_flight.add(1, now, &mut t.in_flight);
        if held {
            sb.held.add(1, now, &mut t.sb_held);
            self.held.add(1, now, &mut t.held);
        }
        if modelled && sb.idle.pop().is_none() {
            sb.conns.add(1, now, &mut t.sb_conns);
            self.conns.add(1, now, &mut t.conns);
        }
    }

    pub(super) fn closed(&mut self, i: usize, held: bool, now: Instant, keepalive: Duration) {
        if !self.real_conns {
            self.expiries.push_back((now + keepalive, i));
        }
        self.side.give_back(held);
        let t = &mut self.tallies;
        let sb = &mut self.sandboxes[i];
        sb.side.give_back(held);
        sb.in_flight.sub(1, now, &mut t.sb_in_flight);
        self.in_flight.sub(1, now, &mut t.in_flight);
        if held {
            sb.held.sub(1, now, &mut t.sb_held);
            self.held.sub(1, now, &mut t.held);
        }
        if !self.real_conns {
            sb.idle.push(now);
        }
    }
}

impl State {
    /// Starts every gauge's, rate's and count's clock again at `at`. What each level holds
    /// then is where the new period starts: its maximum at least that (execs held across
    /// the warm-up's end are held in the steady state too).
    pub(super) fn restart(&mut self, at: Instant) {
        self.tallies = Tallies::default();
        let t = &mut self.tallies;
        for sb in &mut self.sandboxes {
            for (l, tally) in [
                (&mut sb.in_flight, &mut t.sb_in_flight),
                (&mut sb.held, &mut t.sb_held),
                (&mut sb.conns, &mut t.sb_conns),
            ] {
                l.restart(at);
                l.settle(at, tally);
            }
        }
        for (l, tally) in
            [(&mut self.in_flight, &mut t.in_flight), (&mut self.held, &mut t.held), (&mut self.conns, &mut t.conns)]
        {
            l.restart(at);
            l.settle(at, tally);
        }
        self.rates.clear();
        self.start = at;
        (self.rejected, self.queued, self.cut) = (0, 0, 0);
        self.queue_wait.reset();
    }

    /// Everything measured since the clock's start, settled up to `until`.
    pub(super) fn stats(&mut self, until: Instant, keepalive: Duration) -> OrgStats {
        for i in 0..self.sandboxes.len() {
            self.prune(i, until, keepalive);
            let sb = &mut self.sandboxes[i];
            sb.in_flight.settle(until, &mut self.tallies.sb_in_flight);
            sb.held.settle(until, &mut self.tallies.sb_held);
            sb.conns.settle(until, &mut self.tallies.sb_conns);
        }
        self.in_flight.settle(until, &mut self.tallies.in_flight);
        self.held.settle(until, &mut self.tallies.held);
        self.conns.settle(until, &mut self.tallies.conns);
        let secs = until.saturating_duration_since(self.start).as_secs_f64().ceil() as usize;
        OrgStats {
            held_execs: self.tallies.held.stats(),
            sandbox_held_execs: self.tallies.sb_held.stats(),
            in_flight: self.tallies.in_flight.stats(),
            sandbox_in_flight: self.tallies.sb_in_flight.stats(),
            connections: self.tallies.conns.stats(),
            sandbox_connections: self.tallies.sb_conns.stats(),
            rates: self.rates.stats(secs),
            rejected: self.rejected,
            queued: self.queued,
            cut: self.cut,
            queue_wait: self.queue_wait.clone(),
        }
    }
}
