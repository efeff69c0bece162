//! The rollout verdict: the gates a scenario declares as its rollout gates (`rollout = [...]`),
//! and for each, whether production's relay as built meets it (every case that departs from
//! nothing) and which named option sets (the cases that depart with named options) do.
//!
//! Built from the cases' rollout gate results alone ([`Verdict::of`]); `summary.json` keeps
//! it, and every report (summary.md, JUnit, the console) renders it from there.

use serde::{Deserialize, Serialize};

use crate::scenario::gate::{Gate, GateResult};
use crate::scenario::Clock;
use crate::strategy::Departure;

/// The committed run that shows the virtual clock's figures stand for the real clock's: the
/// `clock-check` scenario, every wake, pickup, completion and discovery figure of its virtual
/// cases gated against their real twins. A verdict decided on the virtual clock cites it.
pub const CLOCK_EVIDENCE: &str = "reports/runs/20261201-clock-check";

/// What the verdict reads of one case's result.
#[derive(Debug, Clone, Copy)]
pub struct Case<'a> {
    pub name: &'a str,
    /// `None`: a run that did not record them (not production as built).
    pub departures: Option<&'a [Departure]>,
    pub clock: Clock,
    pub interrupted: bool,
    /// The rollout gates it was judged on.
    pub rollout: &'a [GateResult],
}

impl Case<'_> {
    /// Production as built: a case that recorded its departures, and has none.
    fn is_production(&self) -> bool {
        self.departures.is_some_and(<[Departure]>::is_empty)
    }
}

/// The verdict of a run. `gates` empty: the scenario declares no rollout gates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// `true`: every case of production as built meets every rollout gate it was given;
    /// `false`: one misses one (or was interrupted); `null`: no rollout gates, or no case of
    /// production as built ran.
    pub pass: Option<bool>,
    /// One entry per distinct rollout gate, in the order the cases declare them.
    pub gates: Vec<RolloutGate>,
    /// The option sets given every rollout gate that meet them all, by case name.
    pub meet_all: Vec<String>,
    /// Where each rollout gate stops holding along each swept axis (the run's sweeps; their
    /// points are judged here, not in `gates`, whose cases are the stated envelope's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub boundaries: Vec<crate::results::boundary::Boundary>,
    /// The least invasive change this run measured that meets every rollout gate with
    /// margin inside production's envelope, the other options, and those outside it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<crate::results::recommend::Recommendation>,
}

/// One rollout gate and every case judged on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutGate {
    #[serde(flatten)]
    pub gate: Gate,
    /// The cases of production's relay as built (no departure) judged on it.
    pub production: Vec<Judged>,
    /// The cases that depart from it with named options.
    pub option_sets: Vec<Judged>,
}

/// One case judged on one rollout gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    pub case: String,
    /// The options the case sets away from production's relay as built (empty: none).
    pub departures: Vec<Departure>,
    pub clock: Clock,
    /// The observed value (microseconds for latency metrics); null when nothing was measured.
    pub observed: Option<f64>,
    pub observed_text: String,
    /// Met, by a case that ran to its end.
    pub pass: bool,
    /// The case was cut short: it meets nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

impl Judged {
    fn of(r: &Case<'_>, g: &GateResult) -> Judged {
        Judged {
            case: r.name.to_owned(),
            departures: r.departures.map(<[Departure]>::to_vec).unwrap_or_default(),
            clock: r.clock,
            observed: g.observed,
            observed_text: g.observed_text.clone(),
            pass: g.pass && !r.interrupted,
            interrupted: r.interrupted,
        }
    }
}

impl RolloutGate {
    /// Whether every case of production as built judged on it meets it (`None`: none was).
    pub(crate) fn production_pass(&self) -> Option<bool> {
        (!self.production.is_empty()).then(|| self.production.iter().all(|j| j.pass))
    }
}

impl Verdict {
    /// The verdict of these results: each case judged on the rollout gates it was given.
    pub fn of(results: &[Case<'_>]) -> Verdict {
        let mut gates: Vec<RolloutGate> = Vec::new();
        for r in results {
            for g in r.rollout {
                let i = gates.iter().position(|x| x.gate.same_test(&g.gate)).unwrap_or_else(|| {
                    gates.push(RolloutGate { gate: g.gate.clone(), production: Vec::new(), option_sets: Vec::new() });
                    gates.len() - 1
                });
                let side = if r.is_production() { &mut gates[i].production } else { &mut gates[i].option_sets };
                side.push(Judged::of(r, g));
            }
        }
        let any_production = gates.iter().any(|g| !g.production.is_empty());
        let pass = any_production.then(|| gates.iter().all(|g| g.production_pass() != Some(false)));
        let meet_all = results
            .iter()
            .filter(|r| !r.is_production() && !r.rollout.is_empty())
            .filter(|r| gates.iter().all(|g| g.option_sets.iter().any(|j| j.case == r.name && j.pass)))
            .map(|r| r.name.to_owned())
            .collect();
        Verdict { pass, gates, meet_all, boundaries: Vec::new(), recommendation: None }
    }

    /// The rollout gates production as built misses (with the case that misses each).
    pub fn missed(&self) -> Vec<&RolloutGate> {
        self.gates.iter().filter(|g| g.production_pass() == Some(false)).collect()
    }

    /// Whether every case of production as built it judged ran on the virtual clock: the
    /// verdict then rests on [`CLOCK_EVIDENCE`].
    pub(crate) fn decided_on_virtual_clock(&self) -> bool {
        let mut production = self.gates.iter().flat_map(|g| &g.production).peekable();
        production.peek().is_some() && production.all(|j| j.clock == Clock::Virtual)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::gate::Gate;

    struct Owned(String, Vec<Departure>, Vec<GateResult>, bool);

    fn case(name: &str, departures: &[&str], idle: f64, rollout: &[&str]) -> Owned {
        let judged = rollout.iter().map(|g| Gate::parse(g).unwrap().evaluate(Some(idle))).collect();
        Owned(name.into(), departures.iter().map(|d| Departure::code(*d)).collect(), judged, false)
    }

    fn verdict(cases: &[Owned]) -> Verdict {
        let cases: Vec<Case<'_>> = cases
            .iter()
            .map(|o| Case {
                name: &o.0,
                departures: Some(&o.1),
                clock: Clock::Virtual,
                interrupted: o.3,
                rollout: &o.2,
            })
            .collect();
        Verdict::of(&cases)
    }

    #[test]
    fn production_decides_and_the_option_sets_that_meet_every_gate_are_named() {
        let budget = "idle_phase_discovery_per_min <= 5.0";
        let results = vec![
            case("window-exec", &[], 5.17, &[budget, "idle_phase_discovery_per_min <= 6"]),
            case("quiet-idle", &["idle_wake = false"], 4.58, &[budget, "idle_phase_discovery_per_min <= 6"]),
            case("poll-only", &["writer = poll"], 40.0, &[budget]),
            case("unjudged", &["x = y"], 1.0, &[]),
        ];
        let v = verdict(&results);
        assert_eq!(v.pass, Some(false));
        assert_eq!(v.gates.len(), 2);
        let g = &v.gates[0];
        assert_eq!((g.production.len(), g.option_sets.len()), (1, 2));
        assert_eq!(g.production[0].observed_text, "5.17");
        assert_eq!(v.missed().len(), 1);
        assert_eq!(v.meet_all, ["quiet-idle"], "poll-only was not given every gate; unjudged none");
        // Without production's case, the verdict is the option sets' alone: no pass or fail.
        let v = verdict(&results[1..]);
        assert_eq!(v.pass, None);
        // No rollout gates at all: an empty verdict.
        let v = verdict(&results[3..]);
        assert!(v.gates.is_empty() && v.pass.is_none() && v.meet_all.is_empty());
    }

    #[test]
    fn an_interrupted_case_meets_nothing() {
        let mut r = case("window-exec", &[], 4.0, &["idle_phase_discovery_per_min <= 5.0"]);
        r.3 = true;
        let v = verdict(&[r]);
        assert_eq!(v.pass, Some(false));
        assert!(v.gates[0].production[0].interrupted);
    }
}
