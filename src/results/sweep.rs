//! A sweep's results: its axes, a row per point (whether it met every gate, the figures it is
//! judged and charted by), and the best point — the one that meets every gate with the best
//! objective. Kept in `summary.json` (`sweeps`), so the table and the charts are drawn again
//! from a run directory alone.

use serde::{Deserialize, Serialize};

use crate::base::units::{human_us, readable};
use crate::scenario::gate::Metric;
use crate::scenario::sweep::{Goal, Sweep};

/// What a run says of a point's case: whether it met every gate, and the figures asked
/// for, in order; `None`: not run.
pub(crate) type Ran = Option<(bool, Vec<Option<f64>>)>;

/// One swept option.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepAxis {
    /// Its path in the case (`runner.window`).
    pub path: String,
    /// How points name it (`window`).
    pub label: String,
    /// Its values as points name them.
    pub values: Vec<String>,
    /// Their numbers when every value has one (seconds for durations): a chart's x axis.
    pub numbers: Option<Vec<f64>>,
    /// `s` when the values are durations, else empty.
    pub unit: String,
}

/// One point: a case of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub case: String,
    /// The index of its value on each axis.
    pub at: Vec<usize>,
    /// Whether it met every gate; `None`: not run (yet).
    pub pass: Option<bool>,
    /// The sweep's figures, in order (`None`: not measured, or not run).
    pub figures: Vec<Option<f64>>,
}

/// A sweep of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    /// The swept case's name (its points are `<case>@<label>=<value>,...`).
    pub case: String,
    pub axes: Vec<SweepAxis>,
    /// `min METRIC` or `max METRIC`, as stated.
    pub objective: Option<String>,
    /// What each point is shown by: its gated figures (the invariants aside), the
    /// objective's, the ones asked for (latencies in microseconds).
    pub figures: Vec<Metric>,
    pub points: Vec<SweepPoint>,
    /// The point that meets every gate with the best objective, if one does.
    pub best: Option<String>,
    /// What `best` says, as a person reads it (or why there is none).
    pub best_text: String,
    /// A searched case's search as it ran: its points are its probes. Absent for a sweep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchResult>,
}

/// A search, as it ran ([`crate::scenario::search`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// The searched option's path.
    pub path: String,
    /// The bracket it started from (seconds for a duration).
    pub from: f64,
    pub to: f64,
    /// How narrow the bracket was to get, as said (`0.25 s`, `5 %`).
    pub precision: String,
    /// `above`: larger values meet the gates; `below`: smaller ones.
    pub meets: String,
    /// One per line (each point of the case's other axes; one with none).
    pub lines: Vec<SearchLine>,
}

/// Where one line of a search ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SearchLine {
    /// The index of the value of each other axis.
    pub at: Vec<usize>,
    /// `found`, `meets everywhere`, `missed everywhere`, `out of probes`, or `running`.
    pub outcome: String,
    /// The value nearest the boundary that misses (a gate, or a gate's margin), and the one
    /// that meets every gate with margin, as probed.
    pub miss: Option<f64>,
    pub meet: Option<f64>,
    /// Probes run on this line.
    pub probes: usize,
    /// Under `--repeat`: where the boundary lies across the repeats (the widest bracket
    /// any repeat's own probes give), when it differs from the medians'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across_repeats: Option<[f64; 2]>,
}

impl SearchResult {
    /// What one line found, as the reports say it: `meets every gate with margin from 27.5 s
    /// (missed or on the edge at 27.25 s; searched to 0.25 s in 7 probes)`.
    pub fn sentence(&self, line: &SearchLine, unit: &str) -> String {
        let v = |x: f64| format!("{}{}{unit}", readable(x, 3), if unit.is_empty() { "" } else { " " });
        let probes = format!("{} probe{}", line.probes, if line.probes == 1 { "" } else { "s" });
        let repeats = line
            .across_repeats
            .map(|[a, b]| format!("; across the repeats, between {} and {}", v(a), v(b)))
            .unwrap_or_default();
        match (line.outcome.as_str(), line.miss, line.meet) {
            ("found" | "out of probes", Some(miss), Some(meet)) => {
                let (from, to) = if self.meets == "above" { ("from", "up to") } else { ("up to", "from") };
                let short = if line.outcome == "found" {
                    format!("searched to {} in {probes}", self.precision)
                } else {
                    format!("{probes}, short of the {} asked", self.precision)
                };
                format!(
                    "meets every gate with margin {from} {} (missed or on the edge {to} {}; {short}){repeats}",
                    v(meet),
                    v(miss)
                )
            }
            ("meets everywhere", ..) => format!("meets every gate with margin everywhere it was probed ({probes})"),
            ("missed everywhere", ..) => {
                format!("no probe meets every gate with margin ({probes}, the bracket widened as far as allowed)")
            }
            _ => format!("still running ({probes} so far)"),
        }
    }
}

/// Two objective values closer than this (relative) are a tie: the best point is named, and
/// so is every point it does not beat by more. A rate counted over a few minutes moves by a
/// request's worth with the seed, so a point that beats another by less has not been shown
/// to be better.
pub(crate) const TIE: f64 = 0.05;

/// What a point costs, said beside the best when the sweep shows it.
const COSTS: [&str; 4] =
    ["fleet.held_exec_secs_per_min", "fleet.requests_per_sec.mean", "discovery_per_min", "idle_discovery_per_min"];

fn tie(x: f64, best: f64) -> bool {
    (x - best).abs() <= TIE * best.abs().max(1e-9)
}

/// A figure's value as a person reads it: a duration for a latency, else a plain number.
pub(crate) fn show(m: Metric, v: Option<f64>) -> String {
    match (v, m) {
        (None, _) => "-".into(),
        (Some(v), Metric::Latency(..)) => human_us(v),
        (Some(v), _) => readable(v, 2),
    }
}

impl SweepResult {
    /// The sweep as stated, no point run yet.
    pub fn of(s: &Sweep) -> SweepResult {
        let axes = s
            .axes
            .iter()
            .map(|a| {
                let numbers: Option<Vec<f64>> = a.values.iter().map(|v| v.number).collect();
                let durations = a.values.iter().all(|v| v.value.is_str());
                SweepAxis {
                    path: a.path.clone(),
                    label: a.label.clone(),
                    values: a.values.iter().map(|v| v.text.clone()).collect(),
                    unit: if numbers.is_some() && durations { "s".into() } else { String::new() },
                    numbers,
                }
            })
            .collect();
        let points = s
            .points
            .iter()
            .map(|p| SweepPoint { case: p.case.clone(), at: p.at.clone(), pass: None, figures: Vec::new() })
            .collect();
        let mut r = SweepResult {
            case: s.case.clone(),
            axes,
            objective: s.objective.as_ref().map(|o| o.text()),
            figures: s.figures.clone(),
            points,
            best: None,
            best_text: String::new(),
            search: s.search.as_ref().map(|x| SearchResult {
                path: x.path.clone(),
                from: x.from,
                to: x.to,
                precision: x.precision.text(x.unit()),
                meets: if x.meets == crate::scenario::search::Side::Above { "above" } else { "below" }.into(),
                lines: s
                    .lines
                    .iter()
                    .map(|at| SearchLine { at: at.clone(), outcome: "running".into(), ..SearchLine::default() })
                    .collect(),
            }),
        };
        if let (Some(x), Some(axis)) = (&s.search, r.axes.last_mut()) {
            axis.unit = x.unit().into();
            axis.numbers = Some(Vec::new());
        }
        r.settle(|_, _| None);
        r
    }

    /// The best line as summary.md and the console say it.
    pub(crate) fn best_line(&self) -> String {
        match &self.best {
            Some(_) => format!("best: {}", self.best_text),
            None => format!("no best point: {}", self.best_text),
        }
    }

    /// A point's value of figure `m`, if measured.
    pub fn figure(&self, p: &SweepPoint, m: Metric) -> Option<f64> {
        let k = self.figures.iter().position(|f| *f == m)?;
        p.figures.get(k).copied().flatten()
    }

    /// The file name (without extension) of figure `m`'s chart: `sweep-<case>-<metric>`.
    pub(crate) fn chart_stem(&self, m: Metric) -> String {
        format!("sweep-{}-{}", self.case, m.name().replace('.', "-"))
    }

    /// The objective: least or most, and of what.
    pub(crate) fn goal(&self) -> Option<(Goal, Metric)> {
        let (goal, metric) = self.objective.as_deref()?.split_once(' ')?;
        let goal = Goal::from_name(goal).unwrap_or(Goal::Min);
        Some((goal, Metric::parse(metric).ok()?))
    }

    /// Fills each point from what `ran` says of its case (whether it met every gate, and
    /// the figures asked, in order; `None`: not run), and names the best.
    pub fn settle(&mut self, ran: impl Fn(&str, &[Metric]) -> Ran) {
        let goal = self.goal();
        for p in &mut self.points {
            if let Some((pass, figures)) = ran(&p.case, &self.figures) {
                p.pass = Some(pass);
                p.figures = figures.into_iter().map(|v| v.filter(|v| v.is_finite())).collect();
            }
        }
        let ran = self.points.iter().filter(|p| p.pass.is_some()).count();
        let total = self.points.len();
        let passing: Vec<&SweepPoint> = self.points.iter().filter(|p| p.pass == Some(true)).collect();
        let of = if ran == total { format!("{total}") } else { format!("{ran} run of {total}") };
        let (best, text) = match goal {
            _ if ran == 0 => (None, "no point has run yet".into()),
            _ if passing.is_empty() => (None, format!("no point meets every gate ({of} points)")),
            None => (None, format!("no objective stated; {} of {of} points meet every gate", passing.len())),
            Some((goal, metric)) => self.best_of(&passing, goal, metric, &of),
        };
        (self.best, self.best_text) = (best, text);
    }

    /// The best of the points that meet every gate by the objective (`metric` as `goal`
    /// says), ties broken by cost; with the sentence that says so.
    fn best_of(&self, passing: &[&SweepPoint], goal: Goal, metric: Metric, of: &str) -> (Option<String>, String) {
        let k = self.figures.iter().position(|m| *m == metric).expect("the objective is a figure");
        let objective = self.objective.as_deref().unwrap_or_default();
        let value = |q: &SweepPoint, j: usize| q.figures.get(j).copied().flatten();
        let better = |v: f64, b: f64| if goal == Goal::Min { v < b } else { v > b };
        let measured = passing.iter().filter_map(|p| Some((*p, value(p, k)?)));
        let Some((least, v)) = measured.reduce(|b, c| if better(c.1, b.1) { c } else { b }) else {
            return (None, format!("no point that meets every gate measured {objective} ({of} points)"));
        };
        // Points within the tie margin of the least are no worse, as measured;
        // of those, the best is the one that costs least (the first cost figure
        // the sweep shows), so a tie is not won by holding more.
        let tied: Vec<&SweepPoint> =
            passing.iter().copied().filter(|q| value(q, k).is_some_and(|x| tie(x, v))).collect();
        let costs: Vec<(usize, Metric)> = self
            .figures
            .iter()
            .copied()
            .enumerate()
            .filter(|(j, m)| *j != k && COSTS.contains(&m.name().as_str()))
            .collect();
        let p = match costs.first() {
            Some(&(c, _)) => tied
                .iter()
                .copied()
                .min_by(|a, b| value(a, c).unwrap_or(f64::MAX).total_cmp(&value(b, c).unwrap_or(f64::MAX)))
                .unwrap_or(least),
            None => least,
        };
        let mut text = format!(
            "{}: {objective} = {}, of the {} points that meet every gate ({of} points)",
            p.case,
            show(metric, value(p, k)),
            passing.len()
        );
        let others: Vec<&str> = tied.iter().filter(|q| q.case != p.case).map(|q| q.case.as_str()).collect();
        if p.case != least.case {
            text += &format!(
                "; within {:.0} % of the least ({}: {}), and the cheapest of the {} points that close",
                TIE * 100.0,
                least.case,
                show(metric, Some(v)),
                tied.len()
            );
        } else if !others.is_empty() {
            text += &format!("; a tie (within {:.0} %) with {}", TIE * 100.0, others.join(", "));
        }
        let costs: Vec<String> =
            costs.iter().map(|&(j, m)| format!("{} = {}", m.name(), show(m, value(p, j)))).collect();
        if !costs.is_empty() {
            text += &format!("; its cost: {}", costs.join(", "));
        }
        (Some(p.case.clone()), text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn swept() -> String {
        crate::scenario::sweep::swept_scenario(
            r#"gates = ["pickup.p50 < 150ms"]
sweep = { "runner.window" = ["5s", "25s", "120s"], "limits.idle_timeout" = ["none", "60s"] }
objective = "min idle_discovery_per_min"
"#,
        )
    }

    /// What a point's case said: (case, passed, idle discovery per minute).
    fn ran<'a>(results: &'a [(&'a str, bool, f64)]) -> impl Fn(&str, &[Metric]) -> Ran + 'a {
        move |case, figures| {
            let (_, pass, idle) = results.iter().find(|r| r.0 == case)?;
            let idle_metric = Metric::parse("idle_discovery_per_min").unwrap();
            Some((*pass, figures.iter().map(|m| (*m == idle_metric).then_some(*idle)).collect()))
        }
    }

    #[test]
    fn the_best_point_meets_every_gate_with_the_best_objective() {
        let s = Scenario::parse("s.toml", &swept()).unwrap();
        let mut r = SweepResult::of(&s.sweeps[0]);
        assert_eq!(r.axes[0].numbers, Some(vec![5.0, 25.0, 120.0]));
        assert_eq!((r.axes[0].unit.as_str(), r.axes[1].numbers.as_ref()), ("s", None), "none is no number");
        assert_eq!(r.best_text, "no point has run yet");
        let results = [
            ("w@window=5s,idle_timeout=none", true, 9.0),
            ("w@window=25s,idle_timeout=none", true, 3.0),
            ("w@window=120s,idle_timeout=none", false, 1.0),
        ];
        r.settle(ran(&results));
        assert_eq!(r.best.as_deref(), Some("w@window=25s,idle_timeout=none"), "the lowest that passes");
        assert!(
            r.best_text
                .ends_with("min idle_discovery_per_min = 3, of the 2 points that meet every gate (3 run of 6 points)"),
            "{}",
            r.best_text
        );
        assert_eq!(r.points[2].figures, vec![None, Some(3.0)], "pickup not measured here");
        assert_eq!((r.points[1].pass, r.points[1].figures.len()), (None, 0), "not run");
        let failing = results.map(|(c, _, idle)| (c, false, idle));
        r.settle(ran(&failing));
        assert_eq!((r.best.as_deref(), r.best_text.as_str()), (None, "no point meets every gate (3 run of 6 points)"));
    }

    /// The best names its objective and what it costs, and a point within the tie margin is
    /// called a tie, not beaten.
    #[test]
    fn a_tie_is_said_and_the_best_point_names_its_cost() {
        let text = swept().replace(
            "objective = \"min idle_discovery_per_min\"",
            "objective = \"min idle_discovery_per_min\"\nfigures = [\"discovery_per_min\"]",
        );
        let s = Scenario::parse("s.toml", &text).unwrap();
        let mut r = SweepResult::of(&s.sweeps[0]);
        let idle = Metric::parse("idle_discovery_per_min").unwrap();
        let all = Metric::parse("discovery_per_min").unwrap();
        let values = [
            ("w@window=5s,idle_timeout=none", 9.0),
            ("w@window=25s,idle_timeout=none", 3.1),
            ("w@window=120s,idle_timeout=none", 3.0),
        ];
        // Each point's idle figure, and its discovery rate as `cost(idle)`.
        let ran = |cost: fn(f64) -> f64| {
            move |case: &str, figures: &[Metric]| -> Ran {
                let (_, v) = values.iter().find(|x| x.0 == case)?;
                let figure = |m: &Metric| (*m == idle).then_some(*v).or((*m == all).then(|| cost(*v)));
                Some((true, figures.iter().map(figure).collect()))
            }
        };
        r.settle(ran(|v| 40.0 + v));
        assert_eq!(r.best.as_deref(), Some("w@window=120s,idle_timeout=none"));
        assert!(r.best_text.contains("; a tie (within 5 %) with w@window=25s,idle_timeout=none"), "{}", r.best_text);
        assert!(r.best_text.ends_with("; its cost: discovery_per_min = 43"), "{}", r.best_text);
        // The tie's cheapest point is the best, not the one that holds more for 0.1 less.
        r.settle(ran(|v| 50.0 - v));
        assert_eq!(r.best.as_deref(), Some("w@window=25s,idle_timeout=none"), "{}", r.best_text);
        assert!(
            r.best_text.contains("within 5 % of the least (w@window=120s,idle_timeout=none: 3), and the cheapest of the 2 points that close"),
            "{}",
            r.best_text
        );
    }
}
