//! Where a case stands against every gate it was given: its own gates, the rollout gates it
//! was judged on, and which of those it meets only on the edge ([`EDGE`]). Every count of
//! cases or points that "meet every gate" (a sweep's line, its best point, a search's probe,
//! the results table's mark) reads this one judgement, so no section can call a point good
//! that misses a rollout gate.

use crate::results::summary::CaseResult;
#[cfg(doc)]
use crate::scenario::gate::EDGE;

/// A case's gates, counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// Its own gates met, of how many.
    pub gates_met: usize,
    pub gates: usize,
    /// The rollout gates it was judged on, met, of how many.
    pub rollout_met: usize,
    pub rollout: usize,
    /// Cut short: it meets nothing.
    pub interrupted: bool,
    /// A runner did not stop in time: the case fails whatever its gates say.
    pub stuck: bool,
    /// The gates (own or rollout) it meets only on the edge, as written.
    pub on_edge: Vec<String>,
}

impl Standing {
    /// Every gate it was given met, its own and the rollout gates, and it ran to its end.
    pub fn meets_every_gate(&self) -> bool {
        !self.interrupted && !self.stuck && self.gates_met == self.gates && self.rollout_met == self.rollout
    }

    /// ... and none of them on the edge.
    pub fn meets_with_margin(&self) -> bool {
        self.meets_every_gate() && self.on_edge.is_empty()
    }
}

impl CaseResult {
    /// Where this case stands against every gate it was given.
    pub fn standing(&self) -> Standing {
        let met = |g: &[crate::scenario::gate::GateResult]| g.iter().filter(|x| x.pass).count();
        Standing {
            gates_met: met(&self.gates),
            gates: self.gates.len(),
            rollout_met: met(&self.rollout),
            rollout: self.rollout.len(),
            interrupted: self.interrupted,
            stuck: self.runner.stuck > 0,
            on_edge: self
                .gates
                .iter()
                .chain(&self.rollout)
                .filter(|g| g.on_edge())
                .map(|g| g.gate.expr.clone())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::gate::Gate;

    #[test]
    fn a_point_that_misses_a_rollout_gate_does_not_meet_every_gate() {
        let mut r = CaseResult { pass: true, ..Default::default() };
        r.gates = vec![Gate::parse("lost == 0").unwrap().evaluate(Some(0.0))];
        r.rollout = vec![Gate::parse("idle_phase_discovery_per_min <= 5.0").unwrap().evaluate(Some(5.33))];
        assert!(!r.standing().meets_every_gate());
        r.rollout = vec![Gate::parse("idle_phase_discovery_per_min <= 5.0").unwrap().evaluate(Some(4.99))];
        let s = r.standing();
        assert!(s.meets_every_gate() && !s.meets_with_margin(), "{s:?}");
        assert_eq!(s.on_edge, ["idle_phase_discovery_per_min <= 5.0"]);
        assert_eq!(r.rollout[0].margin_text().unwrap(), "on the edge: 0.2 % to spare");
        r.rollout = vec![Gate::parse("idle_phase_discovery_per_min <= 5.0").unwrap().evaluate(Some(4.75))];
        assert!(r.standing().meets_with_margin());
        assert_eq!(r.rollout[0].margin_text().unwrap(), "5 % to spare");
        r.interrupted = true;
        assert!(!r.standing().meets_every_gate());
    }
}
