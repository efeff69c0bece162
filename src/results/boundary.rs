//! Where each rollout gate stops holding: for every sweep of a run and every rollout gate its
//! points were judged on, the points in order of the swept value, each met or missed, and
//! the boundary between them — the last value tested that meets the gate and the first that
//! misses it. Measured, not extrapolated: a boundary is always between two points that ran.
//!
//! The axis is the swept option's number (seconds for a duration, plain for a count or a
//! limit). A sweep over latency profiles has no number of its own: its axis is each point's
//! **measured** round trip (twice the median leg its daemon paid, in ms), so the boundary is
//! stated in the unit the gate depends on, not in a profile's name. In a sweep over two
//! options the boundary runs along the second (the one that varies fastest), once per value
//! of the first (`at`).

use serde::{Deserialize, Serialize};

use crate::base::units::readable;
use crate::results::sweep::SweepResult;
use crate::scenario::gate::GateResult;

/// What the boundaries read of one point's case: its measured round trip (ms, when its
/// daemon's legs were measured) and its rollout gates, as judged.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PointCase<'a> {
    pub round_trip_ms: Option<f64>,
    pub rollout: &'a [GateResult],
    /// A search's probe stopped at a lost call: only its `lost` gates are judged there.
    pub stopped_early: bool,
}

crate::base::named! {
/// Which side of the boundary meets the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Meets {
    /// Values up to `boundary` meet it; from `beyond` on they miss it.
    Below,
    /// Values from `boundary` on meet it; up to `beyond` they miss it.
    Above,
    /// Every value tested meets it: no boundary inside the range tested.
    Everywhere,
    /// No value tested meets it.
    Nowhere,
    /// Met and missed in turn along the axis: no single boundary (said, not smoothed).
    Mixed,
}
names ["below", "above", "everywhere", "nowhere", "mixed"]
}

/// One point of a boundary's axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisPoint {
    pub case: String,
    /// The axis value (in `unit`).
    pub value: f64,
    /// The gate's observed value at this point, as a person reads it.
    pub observed_text: String,
    pub pass: bool,
    /// A search's probe stopped at a lost call: this gate judged only the part that ran, so
    /// the point is shown but places no boundary. Absent: judged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_judged: bool,
}

/// Where one rollout gate holds along one swept axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Boundary {
    /// The rollout gate, as written.
    pub gate: String,
    /// The swept case.
    pub case: String,
    /// The axis: the swept option's path, or `round_trip` for a sweep over profiles.
    pub axis: String,
    /// `s`, `ms` or empty (a count, a limit).
    pub unit: String,
    /// The other axis's value in a sweep over two (`sandboxes=1000`), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// The last value tested on the meeting side (`None` for `everywhere`, `nowhere`, `mixed`).
    pub boundary: Option<f64>,
    /// The first value tested on the missing side, next to `boundary`.
    pub beyond: Option<f64>,
    pub meets: Meets,
    /// Every point along the axis, in order: the gate's pass/fail map.
    pub points: Vec<AxisPoint>,
}

impl Boundary {
    /// `meets below 50 ms (missed at 60 ms)`, as the reports say it.
    pub fn sentence(&self) -> String {
        let v = |x: f64| format!("{}{}", readable(x, 2), if self.unit.is_empty() { "" } else { " " }) + &self.unit;
        let mut judged = self.points.iter().filter(|p| !p.not_judged);
        let (lo, hi) = (judged.next().map(|p| p.value), judged.next_back().map(|p| p.value));
        let range = match (lo, hi) {
            (Some(a), Some(b)) => format!("{}–{}", v(a), v(b)),
            (Some(a), None) => v(a),
            _ => "no point".into(),
        };
        match (self.meets, self.boundary, self.beyond) {
            (Meets::Below, Some(b), Some(x)) => format!("meets up to {} (missed from {})", v(b), v(x)),
            (Meets::Above, Some(b), Some(x)) => format!("meets from {} (missed up to {})", v(b), v(x)),
            (Meets::Everywhere, ..) => format!("meets across all tested ({range})"),
            (Meets::Nowhere, ..) => format!("missed across all tested ({range})"),
            _ => format!("met and missed in turn across {range}: no single boundary"),
        }
    }
}

/// The side and the boundary of a pass/fail sequence ordered by value.
fn classify(all: &[AxisPoint]) -> (Meets, Option<f64>, Option<f64>) {
    let points: Vec<&AxisPoint> = all.iter().filter(|p| !p.not_judged).collect();
    let passes: Vec<bool> = points.iter().map(|p| p.pass).collect();
    let changes = passes.windows(2).filter(|w| w[0] != w[1]).count();
    match (changes, passes.first()) {
        (_, None) => (Meets::Nowhere, None, None),
        (0, Some(true)) => (Meets::Everywhere, None, None),
        (0, Some(false)) => (Meets::Nowhere, None, None),
        (1, Some(first)) => {
            let k = passes.iter().position(|p| p != first).expect("one change");
            let (before, after) = (points[k - 1].value, points[k].value);
            if *first {
                (Meets::Below, Some(before), Some(after))
            } else {
                (Meets::Above, Some(after), Some(before))
            }
        }
        _ => (Meets::Mixed, None, None),
    }
}

/// Every boundary the run's sweeps show, for every rollout gate their points were judged on;
/// `case` gives what a point's case (by name) measured, `None` for one that did not run to
/// its end.
pub(crate) fn boundaries<'a>(sweeps: &[SweepResult], case: impl Fn(&str) -> Option<PointCase<'a>>) -> Vec<Boundary> {
    let mut out = Vec::new();
    for s in sweeps {
        let Some(along) = s.axes.last() else { continue };
        let k = s.axes.len() - 1;
        let by_profile = along.path == "profile";
        let (axis, unit) = if by_profile {
            ("round_trip".to_owned(), "ms".to_owned())
        } else {
            (along.path.clone(), along.unit.clone())
        };
        // Lines along the last axis: one per value of the first (or one, for a single axis).
        let lines: Vec<Option<usize>> =
            if s.axes.len() == 2 { (0..s.axes[0].values.len()).map(Some).collect() } else { vec![None] };
        for line in lines {
            let mut points: Vec<(&str, PointCase<'a>, f64)> = Vec::new();
            for p in s.points.iter().filter(|p| line.is_none_or(|i| p.at.first() == Some(&i))) {
                let Some(r) = case(&p.case) else { continue };
                let value = if by_profile {
                    r.round_trip_ms
                } else {
                    along.numbers.as_ref().and_then(|n| n.get(p.at[k]).copied())
                };
                if let Some(v) = value {
                    points.push((&p.case, r, v));
                }
            }
            points.sort_by(|a, b| a.2.total_cmp(&b.2));
            let Some((_, first, _)) = points.first() else { continue };
            for g in first.rollout {
                let map: Vec<AxisPoint> = points
                    .iter()
                    .filter_map(|(name, r, v)| {
                        let j = r.rollout.iter().find(|x| x.gate.expr == g.gate.expr)?;
                        Some(AxisPoint {
                            case: (*name).to_owned(),
                            value: *v,
                            observed_text: j.observed_text.clone(),
                            pass: j.pass,
                            not_judged: r.stopped_early && !j.holds_when_stopped_early(),
                        })
                    })
                    .collect();
                let (meets, boundary, beyond) = classify(&map);
                out.push(Boundary {
                    gate: g.gate.expr.clone(),
                    case: s.case.clone(),
                    axis: axis.clone(),
                    unit: unit.clone(),
                    at: line.map(|i| format!("{}={}", s.axes[0].label, s.axes[0].values[i])),
                    boundary,
                    beyond,
                    meets,
                    points: map,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[(f64, bool)]) -> Vec<AxisPoint> {
        v.iter()
            .map(|(x, p)| AxisPoint {
                case: format!("c{x}"),
                value: *x,
                observed_text: String::new(),
                pass: *p,
                not_judged: false,
            })
            .collect()
    }

    #[test]
    fn a_boundary_lies_between_the_last_point_that_meets_and_the_first_that_misses() {
        let below = pts(&[(20.0, true), (40.0, true), (50.0, true), (60.0, false), (80.0, false)]);
        assert_eq!(classify(&below), (Meets::Below, Some(50.0), Some(60.0)));
        let above = pts(&[(10.0, false), (25.0, false), (30.0, true), (60.0, true)]);
        assert_eq!(classify(&above), (Meets::Above, Some(30.0), Some(25.0)));
        assert_eq!(classify(&pts(&[(1.0, true), (2.0, true)])), (Meets::Everywhere, None, None));
        assert_eq!(classify(&pts(&[(1.0, false)])), (Meets::Nowhere, None, None));
        assert_eq!(classify(&pts(&[(1.0, true), (2.0, false), (3.0, true)])), (Meets::Mixed, None, None));
        assert_eq!(classify(&[]), (Meets::Nowhere, None, None));
    }

    #[test]
    fn each_side_is_said_with_its_unit() {
        let b = |meets, boundary, beyond, unit: &str, points| Boundary {
            gate: "g".into(),
            case: "c".into(),
            axis: "a".into(),
            unit: unit.into(),
            at: None,
            boundary,
            beyond,
            meets,
            points,
        };
        let p = pts(&[(20.0, true), (60.0, false)]);
        assert_eq!(
            b(Meets::Below, Some(50.0), Some(60.0), "ms", p.clone()).sentence(),
            "meets up to 50 ms (missed from 60 ms)"
        );
        assert_eq!(
            b(Meets::Above, Some(30.0), Some(25.0), "s", p.clone()).sentence(),
            "meets from 30 s (missed up to 25 s)"
        );
        assert_eq!(b(Meets::Everywhere, None, None, "", p.clone()).sentence(), "meets across all tested (20–60)");
        assert_eq!(
            b(Meets::Mixed, None, None, "", p).sentence(),
            "met and missed in turn across 20–60: no single boundary"
        );
    }
}
