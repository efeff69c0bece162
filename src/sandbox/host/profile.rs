//! How far a sandbox's daemon is: the latency profiles of the `remote` host, shipped
//! (`lan`, `proxy`, `far`) or a scenario's own (`[profile.NAME]`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::base::fields::{Fields, ScenarioError};
use crate::base::rng::Rng;
use crate::base::units::human;

/// One leg of a round trip: uniform between `min` and `max`, and with probability
/// `tail_ratio` an extra exponential delay of mean `tail_mean` (capped at `tail_max`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Leg {
    pub min: Duration,
    pub max: Duration,
    pub tail_ratio: f64,
    pub tail_mean: Duration,
    pub tail_max: Duration,
}

impl Leg {
    pub const fn uniform(min: Duration, max: Duration) -> Leg {
        Leg { min, max, tail_ratio: 0.0, tail_mean: Duration::ZERO, tail_max: Duration::ZERO }
    }

    pub(crate) fn draw(&self, rng: &mut Rng) -> Duration {
        let base = self.min + self.max.saturating_sub(self.min).mul_f64(rng.unit());
        if self.tail_ratio > 0.0 && rng.unit() < self.tail_ratio {
            let extra = Duration::from_secs_f64(rng.exp(self.tail_mean.as_secs_f64()));
            return base + extra.min(self.tail_max);
        }
        base
    }
}

/// How far the sandbox's daemon is: one leg each way, and how many requests it serves at
/// once per sandbox.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyProfile {
    /// The profile's name (`local`, `lan`, `remote`, ...).
    pub name: String,
    /// One leg of a request's round trip.
    pub leg: Leg,
    /// Requests the emulated daemon serves at once.
    pub concurrency: usize,
    /// What each exec the sandbox's daemon holds adds to its answer to any request: the real
    /// daemon's next exec started 2.4 µs later per held exec (1.51 ms at none, 3.92 ms at
    /// 1,000: reports/runs/20261201-daemon-capacity).
    pub held_exec_cost: Duration,
}

/// The real daemon's measured cost of a held exec to the next request (see
/// [`LatencyProfile::held_exec_cost`]).
pub(crate) const HELD_EXEC_COST: Duration = Duration::from_nanos(2_410);

pub(super) const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

impl LatencyProfile {
    /// The shipped profiles: `lan` (~1 ms round trip), `proxy` (20–50 ms round trip, as the
    /// production design assumes), `far` (~150 ms with a heavy tail).
    pub fn shipped(name: &str) -> Option<LatencyProfile> {
        let (leg, concurrency) = match name {
            "lan" => (Leg::uniform(Duration::from_micros(300), Duration::from_micros(700)), 16),
            "proxy" => (Leg::uniform(ms(10), ms(25)), 8),
            "far" => (Leg { min: ms(70), max: ms(80), tail_ratio: 0.05, tail_mean: ms(200), tail_max: ms(2000) }, 8),
            _ => return None,
        };
        Some(LatencyProfile { name: name.to_owned(), leg, concurrency, held_exec_cost: HELD_EXEC_COST })
    }

    pub(crate) const SHIPPED: &'static [&'static str] = &["lan", "proxy", "far"];

    pub(crate) fn describe(&self) -> String {
        let l = &self.leg;
        let mut s = format!(
            "{}: round trip {}–{}, {} concurrent",
            self.name,
            human(l.min * 2),
            human(l.max * 2),
            self.concurrency
        );
        if l.tail_ratio > 0.0 {
            s += &format!(
                ", {:.0}% of legs +exp({}) up to {}",
                l.tail_ratio * 100.0,
                human(l.tail_mean),
                human(l.tail_max)
            );
        }
        if !self.held_exec_cost.is_zero() {
            s += &format!(", +{} per exec held", human(self.held_exec_cost));
        }
        s
    }
}

/// The longest round trip a profile may take at its worst: a runner's start takes a few
/// round trips and must end within the engine's 60 s ready bound (a profile past it would
/// validate, then fail every case as a runner that "did not start").
pub(crate) const MAX_ROUND_TRIP: Duration = Duration::from_secs(20);

/// Latency profiles a scenario defines (`[profile.NAME]`), by name.
pub(crate) type Profiles = BTreeMap<String, LatencyProfile>;

/// Reads a `[profile.NAME]` table: `leg_min`, `leg_max`, `tail_ratio`, `tail_mean`,
/// `tail_max`, `concurrency`, `held_exec_cost` (missing keys from the `proxy` profile).
pub(crate) fn parse_profile(f: &mut Fields<'_>, name: &str) -> Result<LatencyProfile, ScenarioError> {
    let base = LatencyProfile::shipped("proxy").expect("shipped");
    let min = f.duration("leg_min")?.unwrap_or(base.leg.min);
    let max = f.duration("leg_max")?.unwrap_or(min.max(base.leg.max));
    if max < min {
        return Err(f.err("leg_max", "must not be shorter than `leg_min`"));
    }
    let leg = Leg {
        min,
        max,
        tail_ratio: f.float("tail_ratio", 0.0, 1.0)?.unwrap_or(0.0),
        tail_mean: f.duration("tail_mean")?.unwrap_or(Duration::ZERO),
        tail_max: f.duration("tail_max")?.unwrap_or(Duration::from_secs(2)),
    };
    let worst = (leg.max + leg.tail_max) * 2;
    if leg.tail_ratio > 0.0 && worst > MAX_ROUND_TRIP || leg.max * 2 > MAX_ROUND_TRIP {
        let why = format!(
            "a round trip takes up to {} (twice `leg_max`{}); allowed: at most {}, or a runner that needs a few \
             round trips to start does not start within its 60 s bound",
            human(if leg.tail_ratio > 0.0 { worst } else { leg.max * 2 }),
            if leg.tail_ratio > 0.0 { " plus `tail_max`" } else { "" },
            human(MAX_ROUND_TRIP)
        );
        return Err(f.err(if leg.tail_ratio > 0.0 { "tail_max" } else { "leg_max" }, why));
    }
    let concurrency = f.int("concurrency", 1, 1024)?.unwrap_or(8) as usize;
    let held_exec_cost = f.duration("held_exec_cost")?.unwrap_or(base.held_exec_cost);
    Ok(LatencyProfile { name: name.to_owned(), leg, concurrency, held_exec_cost })
}
