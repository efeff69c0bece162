//! Agent turns as production runs them (`[workload.agent]`): each sandbox runs sessions,
//! each a sequence of turns separated by the user's think time; a turn starts a relay (its
//! stale sweep, then the loop), makes its calls in steps separated by the model's think
//! time (a step may be a batch of parallel calls), lets the model take its final step (one
//! more think, the answer after the last tool result, with the relay still live), then
//! stops its relay. Demotion, backoff
//! and the seen set are the turn's, as in production (`run-turn.ts`: `startToolRelay` at
//! the turn's start, `stop()` at its end).
//!
//! Every count and duration is drawn from a stated distribution with a seeded generator per
//! sandbox. Production publishes no figures for any of them (no calls per turn, think times
//! or fleet sizes are measured anywhere in its code or design), so the defaults below are
//! plausible assumptions, stated as such, for a scenario to override or sweep.

use std::time::Duration;

use crate::base::fields::{Fields, ScenarioError};
use crate::base::rng::Rng;

/// A distribution of durations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Span {
    Fixed(Duration),
    Uniform(Duration, Duration),
    /// Exponential with this mean.
    Exp(Duration),
    /// Log-normal with this median and 90th percentile.
    LogNormal {
        median: Duration,
        p90: Duration,
    },
}

/// A distribution of counts (at least 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Count {
    Fixed(u32),
    Uniform(u32, u32),
    /// Geometric on 1, 2, ... with this mean.
    Geometric(f64),
}

/// The 90th percentile of a standard normal.
const Z90: f64 = 1.281_551_565_545;
/// No drawn duration is longer than this (a heavy tail stays a run, not a hang).
const SPAN_CAP: Duration = Duration::from_secs(6 * 3600);
const COUNT_CAP: u32 = 10_000;

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut Rng) -> f64 {
    let (u, v) = (1.0 - rng.unit(), rng.unit());
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

impl Span {
    pub(crate) fn draw(&self, rng: &mut Rng) -> Duration {
        let d = match *self {
            Span::Fixed(d) => d,
            Span::Uniform(a, b) => a + b.saturating_sub(a).mul_f64(rng.unit()),
            Span::Exp(m) => Duration::from_secs_f64(rng.exp(m.as_secs_f64()).min(SPAN_CAP.as_secs_f64())),
            Span::LogNormal { median, p90 } => {
                let sigma = (p90.as_secs_f64() / median.as_secs_f64().max(1e-9)).ln().max(0.0) / Z90;
                let x = median.as_secs_f64() * (sigma * normal(rng)).exp();
                Duration::from_secs_f64(x.min(SPAN_CAP.as_secs_f64()))
            }
        };
        d.min(SPAN_CAP)
    }

    /// The mean, for planning (the schedule-size check, the expected wall time).
    pub fn mean(&self) -> Duration {
        match *self {
            Span::Fixed(d) | Span::Exp(d) => d,
            Span::Uniform(a, b) => (a + b) / 2,
            Span::LogNormal { median, p90 } => {
                let sigma = (p90.as_secs_f64() / median.as_secs_f64().max(1e-9)).ln().max(0.0) / Z90;
                Duration::from_secs_f64(
                    (median.as_secs_f64() * (sigma * sigma / 2.0).exp()).min(SPAN_CAP.as_secs_f64()),
                )
            }
        }
    }
}

impl Count {
    pub(crate) fn draw(&self, rng: &mut Rng) -> u32 {
        match *self {
            Count::Fixed(n) => n,
            Count::Uniform(a, b) => a + ((b - a + 1) as f64 * rng.unit()) as u32,
            Count::Geometric(mean) => {
                // P(k) = p (1-p)^(k-1), mean 1/p.
                let p = (1.0 / mean.max(1.0)).min(1.0);
                if p >= 1.0 {
                    return 1;
                }
                let k = ((1.0 - rng.unit()).ln() / (1.0 - p).ln()).floor() as u64 + 1;
                k.min(u64::from(COUNT_CAP)) as u32
            }
        }
    }

    pub fn mean(&self) -> f64 {
        match *self {
            Count::Fixed(n) => f64::from(n),
            Count::Uniform(a, b) => f64::from(a + b) / 2.0,
            Count::Geometric(m) => m.max(1.0),
        }
    }
}

/// The agent-turn workload: what each sandbox's sessions look like.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTurns {
    pub turns_per_session: Count,
    pub steps_per_turn: Count,
    pub calls_per_step: Count,
    /// The model's think time before each step.
    pub think: Span,
    /// The user's think time between two turns of a session.
    pub user_think: Span,
    /// Between two sessions of a sandbox (no relay, no window, no request).
    pub session_gap: Span,
    /// Each sandbox's first session starts uniformly within this much of the schedule's start
    /// (`None`: one mean session cycle, so the fleet reaches its steady state after about one
    /// cycle; a `warmup` that long leaves the ramp out of the fleet's figures).
    pub start_spread: Option<Duration>,
}

impl Default for AgentTurns {
    /// Plausible, not measured (see the module's docs): about 5 calls a turn in 4 steps, a
    /// quarter of steps parallel, 4 s of model think time, 45 s of user think time between
    /// turns, 5 turns a session, 10 minutes between sessions.
    fn default() -> Self {
        let s = Duration::from_secs;
        AgentTurns {
            turns_per_session: Count::Geometric(5.0),
            steps_per_turn: Count::Geometric(4.0),
            calls_per_step: Count::Geometric(1.3),
            think: Span::LogNormal { median: s(4), p90: s(12) },
            user_think: Span::LogNormal { median: s(45), p90: s(300) },
            session_gap: Span::Exp(s(600)),
            start_spread: None,
        }
    }
}

/// One turn, drawn before it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TurnPlan {
    /// Per step: the think time before it and its calls.
    pub steps: Vec<(Duration, u32)>,
    /// The model's final step, after the last tool result: its answer, written with the
    /// relay still live (production stops the relay when the prompt resolves).
    pub last: Duration,
    /// The user's think time after the turn.
    pub after: Duration,
}

impl AgentTurns {
    /// The turns of one session.
    pub(crate) fn session(&self, rng: &mut Rng) -> Vec<TurnPlan> {
        (0..self.turns_per_session.draw(rng))
            .map(|_| {
                let steps = (0..self.steps_per_turn.draw(rng))
                    .map(|_| (self.think.draw(rng), self.calls_per_step.draw(rng)))
                    .collect();
                let last = self.think.draw(rng);
                TurnPlan { steps, last, after: self.user_think.draw(rng) }
            })
            .collect()
    }

    /// About how long one turn lasts, the tool's and relay's time aside: a think before each
    /// step, and the final one after the last tool result.
    fn turn_secs(&self) -> f64 {
        (self.steps_per_turn.mean() + 1.0) * self.think.mean().as_secs_f64()
    }

    /// About how long one session and the gap after it last.
    pub fn cycle(&self) -> Duration {
        let per_session = self.turns_per_session.mean();
        let secs = per_session * (self.turn_secs() + self.user_think.mean().as_secs_f64())
            + self.session_gap.mean().as_secs_f64();
        Duration::from_secs_f64(secs.clamp(1e-3, 1e9))
    }

    /// The spread of the first sessions' starts (see [`AgentTurns::start_spread`]).
    pub(crate) fn spread(&self) -> Duration {
        self.start_spread.unwrap_or_else(|| self.cycle())
    }

    /// About how many turns start per second per sandbox.
    pub(crate) fn turns_per_sec_per_sandbox(&self) -> f64 {
        self.turns_per_session.mean() / self.cycle().as_secs_f64()
    }

    /// About how many calls a turn makes.
    pub fn calls_per_turn(&self) -> f64 {
        self.steps_per_turn.mean() * self.calls_per_step.mean()
    }

    /// Reads `[workload.agent]` over the defaults.
    pub fn parse(t: &mut Fields<'_>) -> Result<AgentTurns, ScenarioError> {
        let d = AgentTurns::default();
        Ok(AgentTurns {
            turns_per_session: count(t, "turns_per_session")?.unwrap_or(d.turns_per_session),
            steps_per_turn: count(t, "steps_per_turn")?.unwrap_or(d.steps_per_turn),
            calls_per_step: count(t, "calls_per_step")?.unwrap_or(d.calls_per_step),
            think: span(t, "think")?.unwrap_or(d.think),
            user_think: span(t, "user_think")?.unwrap_or(d.user_think),
            session_gap: span(t, "session_gap")?.unwrap_or(d.session_gap),
            start_spread: t.duration("start_spread")?.or(d.start_spread),
        })
    }
}

const SPAN_FORMS: &str =
    "a duration (\"4s\"), { min = \"2s\", max = \"8s\" }, { mean = \"45s\" } (exponential) or { median = \"4s\", p90 = \"12s\" } (log-normal)";
const COUNT_FORMS: &str = "an integer (3), { min = 1, max = 4 } or { mean = 4 } (geometric on 1, 2, ...)";

/// A duration distribution under `key`: a duration string or one of the tables.
pub(crate) fn span(t: &mut Fields<'_>, key: &'static str) -> Result<Option<Span>, ScenarioError> {
    if matches!(t.raw_peek(key), None | Some(toml::Value::String(_))) {
        return Ok(t.duration(key)?.map(Span::Fixed));
    }
    let Some(mut f) = t.table(key)? else { return Err(t.err(key, format!("expected {SPAN_FORMS}"))) };
    let got = (f.duration("min")?, f.duration("max")?, f.duration("mean")?, f.duration("median")?, f.duration("p90")?);
    let s = match got {
        (Some(a), Some(b), None, None, None) if a <= b => Span::Uniform(a, b),
        (Some(_), Some(_), None, None, None) => return Err(f.err("max", "must not be shorter than `min`")),
        (None, None, Some(m), None, None) if !m.is_zero() => Span::Exp(m),
        (None, None, None, Some(m), Some(p)) if !m.is_zero() && p >= m => Span::LogNormal { median: m, p90: p },
        (None, None, None, Some(_), Some(_)) => {
            return Err(f.err("p90", "must be at least `median`, and `median` more than 0s"))
        }
        _ => return Err(t.err(key, format!("expected {SPAN_FORMS}"))),
    };
    f.finish().map(|_| Some(s))
}

/// A count distribution under `key`: an integer or one of the tables.
pub(crate) fn count(t: &mut Fields<'_>, key: &'static str) -> Result<Option<Count>, ScenarioError> {
    if matches!(t.raw_peek(key), None | Some(toml::Value::Integer(_))) {
        return Ok(t.int(key, 1, i64::from(COUNT_CAP))?.map(|n| Count::Fixed(n as u32)));
    }
    let Some(mut f) = t.table(key)? else { return Err(t.err(key, format!("expected {COUNT_FORMS}"))) };
    let cap = i64::from(COUNT_CAP);
    let got = (f.int("min", 1, cap)?, f.int("max", 1, cap)?, f.float("mean", 1.0, f64::from(COUNT_CAP))?);
    let c = match got {
        (Some(a), Some(b), None) if a <= b => Count::Uniform(a as u32, b as u32),
        (Some(_), Some(_), None) => return Err(f.err("max", "must not be less than `min`")),
        (None, None, Some(m)) => Count::Geometric(m),
        _ => return Err(t.err(key, format!("expected {COUNT_FORMS}"))),
    };
    f.finish().map(|_| Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_follow_their_distributions() {
        let mut rng = Rng::new(5);
        let n = 20_000;
        let ln = Span::LogNormal { median: Duration::from_secs(4), p90: Duration::from_secs(12) };
        let mut v: Vec<f64> = (0..n).map(|_| ln.draw(&mut rng).as_secs_f64()).collect();
        v.sort_by(f64::total_cmp);
        assert!((v[n / 2] - 4.0).abs() < 0.2, "median {}", v[n / 2]);
        assert!((v[n * 9 / 10] - 12.0).abs() < 0.8, "p90 {}", v[n * 9 / 10]);
        let mean_drawn = v.iter().sum::<f64>() / n as f64;
        assert!((mean_drawn - ln.mean().as_secs_f64()).abs() / ln.mean().as_secs_f64() < 0.05);
        let g = Count::Geometric(4.0);
        let mean = (0..n).map(|_| f64::from(g.draw(&mut rng))).sum::<f64>() / n as f64;
        assert!((mean - 4.0).abs() < 0.1, "mean {mean}");
        assert!((0..1000).all(|_| Count::Geometric(1.0).draw(&mut rng) == 1));
        let u = Count::Uniform(2, 4);
        assert!((0..1000).map(|_| u.draw(&mut rng)).all(|k| (2..=4).contains(&k)));
    }

    #[test]
    fn each_form_parses_and_a_wrong_one_says_the_forms() {
        let table: toml::Table = r#"
            think = { median = "4s", p90 = "12s" }
            user_think = { mean = "30s" }
            session_gap = "0s"
            steps_per_turn = { min = 1, max = 6 }
            calls_per_step = 2
            turns_per_session = { mean = 3 }
        "#
        .parse()
        .unwrap();
        let mut f = Fields::new("t.toml", "workload.agent", &table);
        let a = AgentTurns::parse(&mut f).unwrap();
        f.finish().unwrap();
        assert_eq!(a.user_think, Span::Exp(Duration::from_secs(30)));
        assert_eq!(a.steps_per_turn, Count::Uniform(1, 6));
        assert_eq!(a.calls_per_step, Count::Fixed(2));
        let bad: toml::Table = r#"think = { median = "4s" }"#.parse().unwrap();
        let e = AgentTurns::parse(&mut Fields::new("t.toml", "workload.agent", &bad)).unwrap_err();
        assert_eq!(e.key, "workload.agent.think");
        assert!(e.msg.contains("log-normal"), "{e}");
    }
}
