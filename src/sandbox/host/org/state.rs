//! The organisation's state behind its lock: each sandbox's gauges and connection pool, the
//! organisation's own, the per-second request counts, and what each request's admission,
//! opening and closing does to them.

use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use super::limits::{Refusal, Side};
use super::Kind;
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
    /// Requests per second since `start`, by kind.
    pub(super) per_sec: Vec<[u32; 7]>,
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
        let sec = at.saturating_duration_since(self.start).as_secs() as usize;
        if self.per_sec.len() <= sec {
            self.per_sec.resize(sec + 1, [0; 7]);
        }
        self.per_sec[sec][kind as usize] += 1;
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
