//! summary.md's sweep section: per sweep, a row per point (its values, where it departs
//! from production, its figures, its gates), the best point, and a chart per figure against
//! the swept value.

use super::design;
use crate::report::doc::{inline, Align, Block, Chart, Section, Table};
use crate::results::summary::Summary;
use crate::results::sweep::{show, SweepResult};

use Align::{Left as L, Right as R};

/// A section per sweep of the run.
pub(super) fn sections(s: &Summary) -> Vec<Section> {
    s.sweeps.iter().enumerate().map(|(k, w)| sweep(s, w, k)).collect()
}

fn sweep(s: &Summary, w: &SweepResult, k: usize) -> Section {
    // A search's probes in order of value along each line; a sweep's points as stated.
    let mut points: Vec<&crate::results::sweep::SweepPoint> = w.points.iter().collect();
    let (title, intro, outcome) = match &w.search {
        Some(x) => {
            let number = |p: &crate::results::sweep::SweepPoint| {
                let k = p.at.len() - 1;
                w.axes[k].numbers.as_ref().and_then(|n| n.get(p.at[k]).copied()).unwrap_or(f64::NAN)
            };
            points.sort_by(|a, b| {
                a.at[..a.at.len() - 1].cmp(&b.at[..b.at.len() - 1]).then(number(a).total_cmp(&number(b)))
            });
            let intro = format!(
                "The case's `{}` searched for where it meets every gate it is judged on with margin (not on the edge: \
                 {} % of a threshold): its bracket probed from {} to {}, then narrowed to {}. A probe per row, named \
                 `{}@<values>`, in order of value.",
                x.path,
                crate::base::units::readable(crate::scenario::gate::EDGE * 100.0, 1),
                w.axes.last().map_or(String::new(), |a| value(x.from, &a.unit)),
                w.axes.last().map_or(String::new(), |a| value(x.to, &a.unit)),
                x.precision,
                w.case
            );
            let unit = w.axes.last().map_or("", |a| a.unit.as_str());
            let lines = x.lines.iter().map(|l| {
                let at: Vec<String> =
                    w.axes.iter().zip(&l.at).map(|(a, &i)| format!("{}={}", a.label, a.values[i])).collect();
                let at = if at.is_empty() { String::new() } else { format!("at {}: ", at.join(", ")) };
                inline(format!("**{at}{}**", x.sentence(l, unit)))
            });
            (format!("Search: {} along `{}`", w.case, x.path), intro, Block::List(lines.collect()))
        }
        None => {
            let paths: Vec<String> = w.axes.iter().map(|a| format!("`{}`", a.path)).collect();
            let intro = format!(
                "One case per point, named `{}@<values>`, every gate applied to each; the figures are the gated ones{}.",
                w.case,
                if w.objective.is_some() { ", the objective's and the ones asked for" } else { " and the ones asked for" }
            );
            let best = Block::Para(inline(format!("**{}**", w.best_line())));
            (format!("Sweep: {} over {}", w.case, paths.join(" × ")), intro, best)
        }
    };
    let mut columns: Vec<(String, Align)> = w.axes.iter().map(|a| (a.label.clone(), L)).collect();
    columns.push(("departs from production".into(), L));
    columns.extend(w.figures.iter().map(|m| (m.name(), R)));
    columns.push(("gates".into(), L));
    let rows = points.into_iter().map(|p| {
        let mut row: Vec<String> = w.axes.iter().zip(&p.at).map(|(a, &i)| a.values[i].clone()).collect();
        let r = s.results.iter().find(|r| r.case == p.case);
        row.push(r.map_or("-".into(), design));
        row.extend(w.figures.iter().enumerate().map(|(k, m)| show(*m, p.figures.get(k).copied().flatten())));
        row.push(match r {
            None => "not run".into(),
            Some(r) => {
                let best = if w.best.as_deref() == Some(&p.case) { " **best**" } else { "" };
                format!("{}{best}", super::standing_cell(r))
            }
        });
        row
    });
    let mut blocks = vec![Block::Para(inline(intro)), outcome, Block::Table(Table { columns, rows: rows.collect() })];
    let drawn: Vec<Chart> = w
        .figures
        .iter()
        .filter(|m| w.points.iter().any(|p| w.figure(p, **m).is_some()))
        .map(|m| Chart { stem: w.chart_stem(*m), title: format!("{} against the swept value", m.name()) })
        .collect();
    if !drawn.is_empty() {
        blocks.push(Block::Charts(drawn));
    }
    Section { nav: format!("sweep {}", w.case), ..Section::new(format!("sweep-{k}"), title, blocks) }
}

/// A value with its unit, as the reports say it (`25 s`, `190`).
fn value(x: f64, unit: &str) -> String {
    format!("{}{}{unit}", crate::base::units::readable(x, 3), if unit.is_empty() { "" } else { " " })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::summary::CaseResult;
    use crate::scenario::Scenario;

    #[test]
    fn a_row_per_point_its_departures_and_the_best_line() {
        let text = crate::scenario::sweep::swept_scenario(
            r#"sweep = { "runner.window" = ["10s", "25s"] }
objective = "min discovery_per_min"
"#,
        );
        let text = text.as_str();
        let sc = Scenario::parse("s.toml", text).unwrap();
        let mut s = crate::report::export::fixture::archived();
        let mut w = SweepResult::of(&sc.sweeps[0]);
        s.results = ["w@window=10s", "w@window=25s"]
            .iter()
            .zip([(vec!["window = 10.00s".into()], 4.0), (vec![], 2.0)])
            .map(|(c, (d, rate))| {
                let mut r = CaseResult { case: c.to_string(), departures: Some(d), pass: true, ..Default::default() };
                r.requests.discovery_per_min = rate;
                r
            })
            .collect();
        w.settle(|case, figures| {
            let r = s.results.iter().find(|r| r.case == case)?;
            Some((r.standing().meets_every_gate(), figures.iter().map(|m| r.metric(*m)).collect()))
        });
        s.sweeps = vec![w];
        let mut o = String::new();
        for sec in sections(&s) {
            crate::report::doc::markdown(&mut o, &sec);
        }
        assert!(o.contains("## Sweep: w over `runner.window`"), "{o}");
        assert!(o.contains("**best: w@window=25s: min discovery_per_min = 2"), "{o}");
        assert!(o.contains("| 10s | window = 10.00s | 4 | ✅ 0/0 |"), "the departure said: {o}");
        assert!(o.contains("| 25s | production as built | 2 | ✅ 0/0 **best** |"), "{o}");
        assert!(o.contains("(charts/sweep-w-discovery_per_min.png)"), "{o}");
    }
}
