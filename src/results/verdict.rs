//! The rollout verdict: the gates a scenario declares as its rollout gates (`rollout = [...]`),
//! and for each, whether production's relay as built meets it (every case that departs from
//! nothing) and which named option sets (the cases that depart with named options) do.
//!
//! Built from the cases' rollout gate results alone ([`Verdict::of`]); `summary.json` keeps
//! it, and every report (summary.md, JUnit, the console) renders it from there.

use serde::{Deserialize, Serialize};

use crate::scenario::gate::{GateResult, Metric, Op};

/// The committed run that shows the virtual clock's figures stand for the real clock's: the
/// `clock-check` scenario, every wake, pickup, completion and discovery figure of its virtual
/// cases gated against their real twins. A verdict decided on the virtual clock cites it.
pub const CLOCK_EVIDENCE: &str = "reports/runs/20261201-clock-check";

/// What the verdict reads of one case's result.
#[derive(Debug, Clone, Copy)]
pub struct Case<'a> {
    pub name: &'a str,
    /// `None`: a run that did not record them (not production as built).
    pub departures: Option<&'a [String]>,
    pub clock: &'a str,
    pub interrupted: bool,
    /// The rollout gates it was judged on.
    pub rollout: &'a [GateResult],
}

impl Case<'_> {
    /// Production as built: a case that recorded its departures, and has none.
    fn is_production(&self) -> bool {
        self.departures.is_some_and(<[String]>::is_empty)
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
    /// The smallest change to production's defaults that meets every rollout gate in this
    /// run, where it holds, and what is assumed: a paragraph for a rollout review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommendation: Option<Recommendation>,
}

/// The verdict's recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The changes, each as small as the smallest: a case that meets every rollout gate and
    /// the options it sets away from production (empty: production's defaults as they are).
    pub changes: Vec<Change>,
    /// The paragraph, as the reports print it.
    pub text: String,
}

/// One change that meets every rollout gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub case: String,
    pub departures: Vec<String>,
}

/// What the recommendation reads of one case (sweep points included).
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub departures: Option<&'a [String]>,
    /// Another design than production's ([`crate::results::summary::CaseResult::other_design`]).
    pub other_design: bool,
    pub interrupted: bool,
    pub rollout: &'a [GateResult],
}

impl Candidate<'_> {
    /// Whether it changes production's defaults: production's design with some option set
    /// away from them (another design is a different relay, not other settings of this one).
    fn changes_defaults(&self) -> bool {
        !self.other_design && self.departures.is_some_and(|d| !d.is_empty())
    }
}

/// At most this many changes are named.
const CHANGES_NAMED: usize = 6;

impl Verdict {
    /// The smallest change that meets every rollout gate among `cases` (a case of another
    /// design is no change of defaults), with the boundaries as its envelope and
    /// the workload named as the assumption.
    pub fn recommend(&mut self, cases: &[Candidate<'_>], scenario: &str) {
        let judged = cases.iter().any(|c| !c.rollout.is_empty());
        if !judged {
            return;
        }
        // A change is judged on as many rollout gates as production's most judged case: a case
        // given fewer (today's polling, judged on losses alone) meets less, not more.
        let production = |c: &&Candidate<'_>| c.departures.is_some_and(<[String]>::is_empty);
        let judged_on = cases.iter().filter(production).map(|c| c.rollout.len()).max().unwrap_or(0);
        let meets = |c: &&Candidate<'_>| {
            !c.interrupted && c.rollout.len() >= judged_on.max(1) && c.rollout.iter().all(|g| g.pass)
        };
        let changes: Vec<Change> = if self.pass == Some(true) {
            Vec::new()
        } else {
            let fits: Vec<&Candidate<'_>> = cases.iter().filter(meets).filter(|c| c.changes_defaults()).collect();
            let Some(least) = fits.iter().map(|c| c.departures.map_or(0, <[String]>::len)).min() else {
                let tested = cases.iter().any(|c| !c.rollout.is_empty() && c.changes_defaults());
                let lead = if tested {
                    "no tested change of production's defaults meets every rollout gate in this run"
                } else {
                    "this run changes none of production's defaults; where they hold is the envelope below"
                };
                self.recommendation =
                    Some(Recommendation { changes: Vec::new(), text: self.paragraph(lead, scenario) });
                return;
            };
            // One change per set of options: a swept option's first value that meets them all
            // (`window = 30s`, not every longer window after it).
            let options = |d: &[String]| -> Vec<String> {
                d.iter().map(|x| x.split(" = ").next().unwrap_or(x).to_owned()).collect()
            };
            let mut out: Vec<Change> = Vec::new();
            for c in fits.iter().filter(|c| c.departures.map_or(0, <[String]>::len) == least) {
                let d = c.departures.unwrap_or_default();
                if !out.iter().any(|o| options(&o.departures) == options(d)) {
                    out.push(Change { case: c.name.to_owned(), departures: d.to_vec() });
                }
            }
            out
        };
        let change = if changes.is_empty() {
            "keep production's defaults: they meet every rollout gate in this run".to_owned()
        } else {
            let named: Vec<String> = changes
                .iter()
                .take(CHANGES_NAMED)
                .map(|c| format!("`{}` ({})", c.departures.join(", "), c.case))
                .collect();
            let more = changes.len().saturating_sub(CHANGES_NAMED);
            let more = if more > 0 { format!(" and {more} more as small") } else { String::new() };
            format!("change production's defaults by {}{more}: the smallest change that meets every rollout gate in this run", named.join("; or "))
        };
        let text = self.paragraph(&change, scenario);
        self.recommendation = Some(Recommendation { changes, text });
    }

    /// The recommendation's paragraph: `lead`, then the envelope the boundaries give, then
    /// what is assumed.
    fn paragraph(&self, lead: &str, scenario: &str) -> String {
        let envelope: Vec<String> = self
            .boundaries
            .iter()
            .filter(|b| b.boundary.is_some())
            .map(|b| {
                let at = b.at.as_ref().map_or(String::new(), |a| format!(" at {a}"));
                format!("`{}` along `{}`{at} {}", b.gate, b.axis, b.sentence())
            })
            .collect();
        let envelope = if envelope.is_empty() {
            "No sweep of this run crosses a gate's boundary: the envelope is the cases' own conditions.".to_owned()
        } else {
            format!("Production's design, measured along this run's sweeps: {}.", envelope.join("; "))
        };
        format!(
            "Recommendation: {lead}. {envelope} Assumed, not measured: the workload of scenario {scenario} (its \
             turns, think times and idle minutes) and each case's emulated daemon (latency profile, limits)."
        )
    }
}

/// One rollout gate and every case judged on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutGate {
    pub expr: String,
    pub metric: Metric,
    pub op: Op,
    /// Microseconds for latency metrics, plain for the others.
    pub threshold: f64,
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
    pub departures: Vec<String>,
    /// `real` or `virtual`.
    pub clock: String,
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
            departures: r.departures.map(<[String]>::to_vec).unwrap_or_default(),
            clock: r.clock.to_owned(),
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
                let i =
                    match gates.iter().position(|x| x.metric == g.metric && x.op == g.op && x.threshold == g.threshold)
                    {
                        Some(i) => i,
                        None => {
                            gates.push(RolloutGate {
                                expr: g.expr.clone(),
                                metric: g.metric,
                                op: g.op,
                                threshold: g.threshold,
                                production: Vec::new(),
                                option_sets: Vec::new(),
                            });
                            gates.len() - 1
                        }
                    };
                let judged = Judged::of(r, g);
                if r.is_production() {
                    gates[i].production.push(judged);
                } else {
                    gates[i].option_sets.push(judged);
                }
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
        self.production_clocks() == ["virtual"]
    }

    /// The clocks production's cases ran on, in order of first appearance.
    pub(crate) fn production_clocks(&self) -> Vec<&str> {
        let mut clocks: Vec<&str> = Vec::new();
        for j in self.gates.iter().flat_map(|g| &g.production) {
            if !clocks.contains(&j.clock.as_str()) {
                clocks.push(&j.clock);
            }
        }
        clocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::gate::Gate;

    struct Owned(String, Vec<String>, Vec<GateResult>, bool);

    fn case(name: &str, departures: &[&str], idle: f64, rollout: &[&str]) -> Owned {
        let judged = rollout.iter().map(|g| Gate::parse(g).unwrap().evaluate(Some(idle))).collect();
        Owned(name.into(), departures.iter().map(|d| (*d).to_owned()).collect(), judged, false)
    }

    fn verdict(cases: &[Owned]) -> Verdict {
        let cases: Vec<Case<'_>> = cases
            .iter()
            .map(|o| Case { name: &o.0, departures: Some(&o.1), clock: "virtual", interrupted: o.3, rollout: &o.2 })
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

    /// The smallest change that meets every rollout gate, once per set of options (a swept
    /// option's first passing value); a change of design is no change of defaults; production
    /// meeting them all keeps its defaults.
    #[test]
    fn the_recommendation_is_the_smallest_change_once_per_option() {
        let budget = "idle_phase_discovery_per_min <= 5.0";
        let cases = [
            case("window-exec", &[], 5.33, &[budget]),
            case("quiet", &["idle_wake = false"], 4.6, &[budget]),
            case("both", &["idle_wake = false", "window_events = requests"], 4.4, &[budget]),
            case("w@window=20s", &["window = 20.00s"], 6.5, &[budget]),
            case("w@window=30s", &["window = 30.00s"], 4.2, &[budget]),
            case("w@window=40s", &["window = 40.00s"], 4.9, &[budget]),
            case("follow", &["strategy = follow (a design production rejected)"], 2.0, &[budget]),
            // Another program than production's relay, named by no `strategy =`: no change of
            // its defaults either.
            case("external", &["runner = external program (not the suite's model of production)"], 1.0, &[budget]),
            // Judged on no gate production was: it meets nothing.
            case("polling", &["writer = poll"], 1.0, &[]),
        ];
        let mut v = verdict(&cases[..1]);
        let candidates: Vec<Candidate<'_>> = cases
            .iter()
            .map(|o| Candidate {
                name: &o.0,
                departures: Some(&o.1),
                other_design: ["follow", "external"].contains(&o.0.as_str()),
                interrupted: o.3,
                rollout: &o.2,
            })
            .collect();
        v.recommend(&candidates, "s");
        let r = v.recommendation.as_ref().unwrap();
        let named: Vec<&str> = r.changes.iter().map(|c| c.case.as_str()).collect();
        assert_eq!(named, ["quiet", "w@window=30s"], "{}", r.text);
        assert!(
            r.text.starts_with(
                "Recommendation: change production's defaults by `idle_wake = false` (quiet); or `window = 30.00s`"
            ),
            "{}",
            r.text
        );
        assert!(r.text.contains("Assumed, not measured: the workload of scenario s"), "{}", r.text);

        let production = [case("window-exec", &[], 4.0, &[budget])];
        let mut met = verdict(&production);
        let own = Candidate {
            name: &production[0].0,
            departures: Some(&production[0].1),
            other_design: false,
            interrupted: false,
            rollout: &production[0].2,
        };
        met.recommend(&[own], "s");
        assert!(met.recommendation.unwrap().text.contains("keep production's defaults"));
    }
}
