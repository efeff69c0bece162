//! What a run assumes and does not measure, each with where its value comes from: the
//! workload, the tool's run time, the daemon's latency, the remote side's limits and what it
//! does at one, and the model of production's code. Built from the scenario as it ran, kept
//! in summary.json, and every report ends with it: a figure an operator acts on is only as
//! good as these.

use serde::{Deserialize, Serialize};

use crate::base::units::{human, readable, wall};
use crate::scenario::turns::{Count, Span};
use crate::scenario::{Clock, Scenario};

/// One thing a run takes as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assumption {
    /// What it is about: `workload`, `tool`, `latency profile proxy`, `limits held`, ...
    pub what: String,
    /// Its value in this run, as a person reads it.
    pub value: String,
    /// Where the value comes from (a document, a measured run), or `assumed` and why.
    pub source: String,
}

/// The provider's documented organisation request rates, a minute, by tier, and the source.
pub(crate) const RATE_TIERS: [(u32, f64); 4] = [(1, 10_000.0), (2, 20_000.0), (3, 40_000.0), (4, 50_000.0)];

/// Where [`RATE_TIERS`] come from.
pub(crate) const RATE_TIERS_SOURCE: &str = "the provider's documented tiers, as the design's archived research notes \
     record them (docs/design/agent-workflows/archive/research/open-questions.md in Agenta-AI/agenta at 753af38; \
     docs/production.md)";

fn count(c: &Count) -> String {
    match c {
        Count::Fixed(n) => n.to_string(),
        Count::Uniform(a, b) => format!("{a}-{b}"),
        Count::Geometric(m) => format!("about {}", readable(*m, 2)),
    }
}

fn span(s: &Span) -> String {
    match s {
        Span::Fixed(d) => wall(*d),
        Span::Uniform(a, b) => format!("{}-{}", wall(*a), wall(*b)),
        Span::Exp(m) => format!("about {}", wall(*m)),
        Span::LogNormal { median, p90 } => format!("median {}, p90 {}", wall(*median), wall(*p90)),
    }
}

/// A whole number with thousands separated: `10,000`.
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.round());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The workload as a line.
fn workload(w: &crate::scenario::pacer::Workload) -> (String, String) {
    match &w.agent {
        Some(a) => (
            format!(
                "{} sandboxes of agent turns: {} turns a session, {} steps a turn, {} calls a step; the model thinks \
                 {} before a step, the user {} between turns, {} between sessions; {} measured after a warm-up of {}",
                w.sandboxes,
                count(&a.turns_per_session),
                count(&a.steps_per_turn),
                count(&a.calls_per_step),
                span(&a.think),
                span(&a.user_think),
                span(&a.session_gap),
                wall(w.duration().saturating_sub(w.warmup)),
                wall(w.warmup)
            ),
            "assumed: the suite's turn mix; production measures none of it".into(),
        ),
        None => {
            let phases: Vec<String> = w
                .phases
                .iter()
                .map(|p| {
                    if p.turns_per_sec > 0.0 {
                        format!("{} turns/s for {}", readable(p.turns_per_sec, 2), wall(p.duration))
                    } else {
                        format!("idle for {}", wall(p.duration))
                    }
                })
                .collect();
            (
                format!(
                    "{} sandboxes, turns of {} calls at a fixed rate: {}",
                    w.sandboxes,
                    w.calls_per_turn,
                    phases.join(", then ")
                ),
                "assumed: the scenario's schedule, not a measured workload".into(),
            )
        }
    }
}

/// The documented tier a rate (a second) matches, if any.
fn tier(per_sec: f64) -> Option<(u32, f64)> {
    RATE_TIERS.iter().find(|(_, per_min)| (per_sec * 60.0 - per_min).abs() <= per_min * 0.005).copied()
}

/// What `s` assumes, each once, in the order a reader meets them.
pub(crate) fn of(s: &Scenario) -> Vec<Assumption> {
    let mut out: Vec<Assumption> = Vec::new();
    fn put(out: &mut Vec<Assumption>, what: String, value: String, source: String) {
        if !out.iter().any(|a| a.what == what && a.value == value) {
            out.push(Assumption { what, value, source });
        }
    }

    for c in &s.cases {
        let (value, source) = workload(&c.workload);
        put(&mut out, "workload".into(), value, source);
    }
    let h = &s.handler;
    put(
        &mut out,
        "the tool".into(),
        format!(
            "runs {}-{}; {} % of calls answer an error, {} % pause",
            human(h.duration),
            human(h.duration_max),
            readable(h.error_ratio * 100.0, 1),
            readable(h.pause_ratio * 100.0, 1)
        ),
        "assumed: a model of a tool, not production's tools".into(),
    );
    for c in &s.cases {
        if c.host.name() == "remote" {
            let params = c.host.params();
            let profile = params.split(';').next().unwrap_or(&params).to_owned();
            match out.iter_mut().find(|a| a.what == "the emulated daemon's latency") {
                Some(a) if !a.value.split(" · ").any(|p| p == profile) => a.value += &format!(" · {profile}"),
                Some(_) => {}
                None => put(
                    &mut out,
                    "the emulated daemon's latency".into(),
                    profile,
                    "assumed: every request pays the profile's legs (tokio timers, no netem); the real-daemon \
                     scenario sets the emulation beside the real sandbox-agent daemon behind a delay proxy \
                     (reports/runs/20261130-real-daemon)"
                        .into(),
                ),
            }
        }
        let limits = c.host.limits();
        if let Some(n) = limits.org.held_execs {
            put(
                &mut out,
                "an organisation's held execs".into(),
                format!("{n} at once"),
                "assumed: no provider documents a held-exec limit".into(),
            );
        }
        if let Some(n) = limits.sandbox.held_execs {
            put(
                &mut out,
                "a sandbox's held execs".into(),
                format!("{n} at once"),
                "assumed: no provider documents a held-exec limit".into(),
            );
        }
        if let Some(r) = limits.org.rate {
            let (value, source) = match tier(r.per_sec) {
                Some((t, per_min)) => (
                    format!("{}/s (tier {t}: {}/min)", readable(r.per_sec, 1), thousands(per_min)),
                    RATE_TIERS_SOURCE.to_owned(),
                ),
                None => (
                    format!("{}/s ({}/min)", readable(r.per_sec, 1), thousands(r.per_sec * 60.0)),
                    "assumed: a value around the documented tiers (10,000 to 50,000 a minute)".into(),
                ),
            };
            put(&mut out, "an organisation's request rate".into(), value, source);
            put(
                &mut out,
                "the burst a rate allows".into(),
                format!("{} requests", r.burst),
                "assumed: the provider documents no burst".into(),
            );
        }
        if limits.any() {
            put(
                &mut out,
                "what a request past a limit meets".into(),
                limits.describe(),
                "assumed: the proxy answers 429 (production's client, sandbox-agent 0.4.2 `requestRaw`, throws on any \
                 non-OK status and nothing on the relay's path retries it: docs/production.md)"
                    .into(),
            );
        }
        if c.clock == Clock::Virtual {
            put(
                &mut out,
                "the clock".into(),
                "virtual: simulated time over an in-memory sandbox".into(),
                "the clock-check scenario gates the virtual clock's figures against the real clock's \
                 (reports/runs/20261201-clock-check)"
                    .into(),
            );
        }
    }
    put(
        &mut out,
        "production's relay".into(),
        "modelled as built: its loop, the window source, the watch program, delete-on-pickup, the writer".into(),
        "read from services/runner/src/tools/ in Agenta-AI/agenta (docs/production.md names each path); \
         `relay-bench conform` grades production's own runner and writer (reports/runs/20261201-conform-production)"
            .into(),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ASSUMED: &str = "assumed";

    #[test]
    fn every_assumption_says_where_it_comes_from() {
        for name in ["rollout-gate", "decision-map", "fleet-capacity", "faults", "default"] {
            let s = Scenario::load(name).unwrap();
            let all = of(&s);
            assert!(all.iter().any(|a| a.what == "workload"), "{name}");
            for a in &all {
                assert!(!a.source.is_empty() && !a.value.is_empty(), "{name}: {a:?}");
            }
        }
        let map = of(&Scenario::load("decision-map").unwrap());
        let rate = map.iter().find(|a| a.value.contains("tier 1")).unwrap();
        assert_eq!(rate.value, "166.7/s (tier 1: 10,000/min)");
        assert!(rate.source.starts_with("the provider's documented tiers"), "{rate:?}");
        assert!(map.iter().any(|a| a.what == "the burst a rate allows" && a.source.starts_with(ASSUMED)));
        assert!(map.iter().any(|a| a.what == "workload" && a.value.contains("agent turns")));
    }
}
