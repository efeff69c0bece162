//! What a run assumes and does not measure, each with where its value comes from: the
//! workload, the tool's run time, the daemon's latency, the remote side's limits and what it
//! does at one, and the model of production's code. Built from the scenario as it ran, kept
//! in summary.json, and every report ends with it: a figure an operator acts on is only as
//! good as these.

use serde::{Deserialize, Serialize};

use crate::base::units::{human, readable, thousands, wall};
use crate::scenario::turns::{Count, Span};
use crate::scenario::{CaseSpec, Clock, Scenario};

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

/// The documented tier whose rate a rate (a second) is, within half a percent, if any.
fn tier(per_sec: f64) -> Option<&'static crate::results::tiers::Tier> {
    crate::results::tiers::TIERS
        .iter()
        .find(|t| t.requests_per_min.is_some_and(|m| (per_sec * 60.0 - f64::from(m)).abs() <= f64::from(m) * 0.005))
}

/// An emulated daemon's latency profile, added to the one row that lists every profile.
fn latency(out: &mut Vec<Assumption>, profile: String) {
    const WHAT: &str = "the emulated daemon's latency";
    match out.iter_mut().find(|a| a.what == WHAT) {
        Some(a) if !a.value.split(" · ").any(|p| p == profile) => a.value += &format!(" · {profile}"),
        Some(_) => {}
        None => out.push(Assumption {
            what: WHAT.into(),
            value: profile,
            source:
                "assumed: every request pays the profile's legs (tokio timers, no netem); the real-daemon scenario \
                     sets the emulation beside the real sandbox-agent daemon behind a delay proxy \
                     (reports/runs/20261130-real-daemon)"
                    .into(),
        }),
    }
}

fn put(out: &mut Vec<Assumption>, what: &str, value: String, source: impl Into<String>) {
    if !out.iter().any(|a| a.what == what && a.value == value) {
        out.push(Assumption { what: what.into(), value, source: source.into() });
    }
}

/// What `s` assumes, each once, in the order a reader meets them.
pub(crate) fn of(s: &Scenario) -> Vec<Assumption> {
    let mut out: Vec<Assumption> = Vec::new();
    // The cases, and each searched case as its first probe runs it.
    let cases: Vec<(&CaseSpec, Option<&str>)> = s
        .cases
        .iter()
        .map(|c| (c, None))
        .chain(s.probes.iter().map(|(name, p)| {
            let path =
                s.sweeps.iter().find(|w| w.case == *name).and_then(|w| w.search.as_ref()).map(|x| x.path.as_str());
            (p, path)
        }))
        .collect();
    for (c, _) in &cases {
        let (value, source) = workload(&c.workload);
        put(&mut out, "workload", value, source);
    }
    let h = &s.handler;
    let tool = format!(
        "runs {}-{}; {} % of calls answer an error, {} % pause",
        human(h.duration),
        human(h.duration_max),
        readable(h.error_ratio * 100.0, 1),
        readable(h.pause_ratio * 100.0, 1)
    );
    put(&mut out, "the tool", tool, "assumed: a model of a tool, not production's tools");
    for (c, searched) in &cases {
        case_rows(&mut out, c, *searched);
    }
    for w in &s.sweeps {
        let Some(x) = &w.search else { continue };
        let unit = x.unit();
        let value = format!("`{}` from {}{unit} to {}{unit}", x.path, readable(x.from, 3), readable(x.to, 3));
        let source =
            format!("measured: searched to {} for where every rollout gate holds with margin", x.precision.text(unit));
        put(&mut out, &format!("{}'s searched value", w.case), value, source);
    }
    put(
        &mut out,
        "production's relay",
        "modelled as built: its loop, the window source, the watch program, delete-on-pickup, the writer".into(),
        "read from services/runner/src/tools/ in Agenta-AI/agenta (docs/production.md names each path); \
         `relay-bench conform` grades production's own runner and writer (reports/runs/20261201-conform-production)",
    );
    out
}

/// A case's host, limits and clock (a searched limit is measured, not assumed: left out).
fn case_rows(out: &mut Vec<Assumption>, c: &CaseSpec, searched: Option<&str>) {
    if let Some(profile) = c.host.emulated_latency() {
        latency(out, profile);
    }
    let limits = c.host.limits();
    let undocumented = crate::results::tiers::HELD_EXECS_SOURCE;
    if let Some(n) = limits.org.held_execs.filter(|_| searched != Some("limits.org_held_execs")) {
        put(out, "an organisation's held execs", format!("{n} at once"), undocumented);
    }
    if let Some(n) = limits.sandbox.held_execs.filter(|_| searched != Some("limits.sandbox_held_execs")) {
        put(out, "a sandbox's held execs", format!("{n} at once"), undocumented);
    }
    if let Some(r) = limits.org.rate {
        if searched != Some("limits.org_rate") {
            let (value, source) = match tier(r.per_sec) {
                Some(t) => (
                    format!(
                        "{}/s ({}: {}/min)",
                        readable(r.per_sec, 1),
                        t.name,
                        thousands(f64::from(t.requests_per_min.unwrap_or_default()))
                    ),
                    t.source.to_owned(),
                ),
                None => (
                    format!("{}/s ({}/min)", readable(r.per_sec, 1), thousands(r.per_sec * 60.0)),
                    "assumed: a value around the documented tiers (10,000 to 50,000 a minute)".into(),
                ),
            };
            put(out, "an organisation's request rate", value, source);
        }
        put(
            out,
            "the burst a rate allows",
            format!("{} requests", r.burst),
            "assumed: the provider documents no burst",
        );
    }
    if limits.any() {
        let at_limit = match limits.on_limit {
            crate::sandbox::host::org::OnLimit::Reject => "rejected at once (429)".to_owned(),
            crate::sandbox::host::org::OnLimit::Queue(w) => format!("queued up to {}, then rejected (429)", human(w)),
        };
        put(
            out,
            "what a request past a limit meets",
            at_limit,
            "assumed: the proxy answers 429 (production's client, sandbox-agent 0.4.2 `requestRaw`, throws on any \
             non-OK status and nothing on the relay's path retries it: docs/production.md)",
        );
    }
    if c.clock == Clock::Virtual {
        put(
            out,
            "the clock",
            "virtual: simulated time over an in-memory sandbox".into(),
            "the clock-check scenario gates the virtual clock's figures against the real clock's \
             (reports/runs/20261201-clock-check)",
        );
    }
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
        assert!(!map.iter().any(|a| a.what == "an organisation's request rate"), "searched, not assumed: {map:?}");
        let searched = map.iter().find(|a| a.what == "rate-1000's searched value").unwrap();
        assert_eq!(searched.value, "`limits.org_rate` from 212 to 222");
        assert!(searched.source.starts_with("measured: searched to 5 %"), "{searched:?}");
        let capacity = of(&Scenario::load("fleet-capacity").unwrap());
        let rate = capacity.iter().find(|a| a.value.contains("tier 1")).unwrap();
        assert_eq!(rate.value, "166.7/s (tier 1: 10,000/min)");
        assert!(rate.source.starts_with("Daytona's published limits"), "{rate:?}");
        assert!(map.iter().any(|a| a.what == "the burst a rate allows" && a.source.starts_with(ASSUMED)));
        assert!(map.iter().any(|a| a.what == "workload" && a.value.contains("agent turns")));
    }
}
