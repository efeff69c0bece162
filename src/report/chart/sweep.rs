//! A sweep's figure against the swept value: one chart per figure, the swept option on the x
//! axis (a log axis when its values span a decade or more; its values in order when they
//! are not all numbers), one line per value of the other swept option, the gates on the
//! figure drawn dashed, the best point ringed.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, Entry, RunData};
use crate::results::sweep::SweepResult;
use crate::scenario::gate::Metric;

/// A point of a chart: (x, y) in the chart's units.
type Xy = (f64, f64);

/// One line: its label, its points by x, and the best point's if it is on it.
struct Line {
    label: String,
    pts: Vec<Xy>,
    best: Option<Xy>,
}

/// One sweep as its charts need it: the sweep, and per figure the gates on it (text and
/// threshold, in the figure's unit).
pub(crate) struct SweepData {
    pub sweep: SweepResult,
    pub gates: Vec<Vec<(String, f64)>>,
}

/// Whether figure `k` of `s` has anything to draw (summary.md links the same charts).
pub(crate) fn drawable(s: &SweepResult, k: usize) -> bool {
    s.points.iter().any(|p| p.figures.get(k).copied().flatten().is_some())
}

/// A figure's value in the chart's unit: ms for a latency (stored in µs), else as is.
fn scale(m: Metric) -> f64 {
    if matches!(m, Metric::Latency(..)) {
        1e-3
    } else {
        1.0
    }
}

/// The x axis: which axis is drawn along it, and each of its values' positions.
fn x_axis(s: &SweepResult) -> (usize, Vec<f64>, bool) {
    // The first numeric path with more than one value (a path swept over one value, such as
    // a decision map's fleet size per sweep, makes no axis), else the first numeric one.
    let spread = s.axes.iter().position(|a| a.numbers.as_ref().is_some_and(|n| n.len() > 1));
    match spread.or_else(|| s.axes.iter().position(|a| a.numbers.is_some())) {
        Some(i) => {
            let xs = s.axes[i].numbers.clone().expect("numeric");
            let (lo, hi) = xs.iter().fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
            (i, xs, lo > 0.0 && hi / lo >= 10.0)
        }
        None => (0, (0..s.axes[0].values.len()).map(|i| i as f64).collect(), false),
    }
}

pub(crate) fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunData,
    which: usize,
    k: usize,
) -> Result<(), super::DrawError> {
    root.fill(&WHITE)?;
    let data = &run.sweeps[which];
    let s = &data.sweep;
    let m = s.figures[k];
    let (xa, xs, xlog) = x_axis(s);
    let other = (s.axes.len() == 2).then(|| 1 - xa);
    let lines: Vec<Line> = match other {
        Some(o) => (0..s.axes[o].values.len())
            .map(|j| series(s, k, xa, &xs, Some((o, j)), format!("{}={}", s.axes[o].label, s.axes[o].values[j])))
            .collect(),
        None => vec![series(s, k, xa, &xs, None, s.case.clone())],
    };
    let gates: Vec<(String, f64)> = data.gates[k].iter().map(|(t, v)| (t.clone(), v * scale(m))).collect();
    let ys: Vec<f64> = lines.iter().flat_map(|l| l.pts.iter().map(|p| p.1)).chain(gates.iter().map(|g| g.1)).collect();
    let (ylo, yhi) = ys.iter().fold((f64::MAX, f64::MIN), |(l, h), y| (l.min(*y), h.max(*y)));
    let ylog = ylo > 0.0 && yhi / ylo >= 10.0;
    let mut entries: Vec<Entry> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| Entry { label: l.label.clone(), color: color(i), dashed: false })
        .collect();
    entries.extend(gates.iter().map(|(t, _)| Entry { label: format!("gate: {t}"), color: RED, dashed: true }));
    if s.best.is_some() {
        entries.push(Entry {
            label: format!("ringed: best ({})", s.objective.as_deref().unwrap_or("")),
            color: BLACK,
            dashed: false,
        });
    }
    let body = super::legend(root, &entries, false)?;
    let axis = &s.axes[xa];
    let unit = if matches!(m, Metric::Latency(..)) { " (ms)" } else { "" };
    let p = Plot {
        title: format!("{}: {} against {}", run.scenario, m.name(), axis.path),
        x_desc: format!(
            "{}{}{}",
            axis.path,
            if axis.unit.is_empty() { String::new() } else { format!(" ({})", axis.unit) },
            if xlog { ", log scale" } else { "" }
        ),
        y_desc: format!("{}{unit}{}", m.name(), if ylog { ", log scale" } else { "" }),
        ticks: xs.iter().copied().zip(axis.values.iter().cloned()).collect(),
        lines: &lines,
        gates: &gates,
        xlog,
        ylog,
    };
    let (xlo, xhi) = xs.iter().fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
    let (xlo, xhi) = if xhi > xlo { (xlo, xhi) } else { (xlo - 1.0, xhi + 1.0) };
    let pad = (xhi - xlo) * 0.05;
    let (ylo, yhi) = if yhi.is_finite() && ylo.is_finite() { (ylo, yhi) } else { (0.0, 1.0) };
    match (xlog, ylog) {
        (false, false) => p.draw(&body, xlo - pad..xhi + pad, 0f64.min(ylo)..(yhi * 1.1).max(ylo + 1e-9)),
        (true, false) => p.draw(&body, (xlo * 0.8..xhi * 1.25).log_scale(), 0f64.min(ylo)..(yhi * 1.1).max(ylo + 1e-9)),
        (false, true) => p.draw(&body, xlo - pad..xhi + pad, (ylo * 0.8..yhi * 1.25).log_scale()),
        (true, true) => p.draw(&body, (xlo * 0.8..xhi * 1.25).log_scale(), (ylo * 0.8..yhi * 1.25).log_scale()),
    }
}

/// The line of the points whose other value is `of` (all, with one axis), by x, in the
/// chart's unit.
fn series(s: &SweepResult, k: usize, xa: usize, xs: &[f64], of: Option<(usize, usize)>, label: String) -> Line {
    let m = s.figures[k];
    let mut pts: Vec<(f64, f64, bool)> = s
        .points
        .iter()
        .filter(|p| of.is_none_or(|(o, j)| p.at[o] == j))
        .filter_map(|p| {
            let v = p.figures.get(k).copied().flatten()?;
            Some((xs[p.at[xa]], v * scale(m), s.best.as_deref() == Some(&p.case)))
        })
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let best = pts.iter().find(|p| p.2).map(|p| (p.0, p.1));
    Line { label, pts: pts.into_iter().map(|p| (p.0, p.1)).collect(), best }
}

/// What one chart draws, whatever its axes' scales.
struct Plot<'a> {
    title: String,
    x_desc: String,
    y_desc: String,
    /// The swept values along the x axis: (position, text).
    ticks: Vec<(f64, String)>,
    lines: &'a [Line],
    gates: &'a [(String, f64)],
    xlog: bool,
    ylog: bool,
}

impl Plot<'_> {
    fn draw<DB, X, Y>(&self, area: &DrawingArea<DB, Shift>, x: X, y: Y) -> Result<(), super::DrawError>
    where
        DB: DrawingBackend,
        X: AsRangedCoord<Value = f64>,
        Y: AsRangedCoord<Value = f64>,
        X::CoordDescType: ValueFormatter<f64>,
        Y::CoordDescType: ValueFormatter<f64>,
    {
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, ("sans-serif", 24))
            .margin(14)
            .margin_right(40)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(x, y)?;
        let (x0, x1) = {
            let r = chart.x_range();
            (r.start, r.end)
        };
        let plain = |v: &f64| crate::base::units::readable(*v, 3);
        let none = |_: &f64| String::new();
        let mut mesh = chart.configure_mesh();
        // The x axis is labelled with the swept values themselves, where they are (below).
        mesh.x_desc(&self.x_desc)
            .y_desc(&self.y_desc)
            .label_style(("sans-serif", 16))
            .axis_desc_style(("sans-serif", 18))
            .x_labels(if self.xlog { 30 } else { 12 })
            .x_label_formatter(&none);
        if self.ylog {
            mesh.y_labels(30).y_label_formatter(&super::log_label);
        } else {
            mesh.y_labels(8).y_label_formatter(&plain);
        }
        mesh.draw()?;
        let (bx, by) = area.get_base_pixel();
        let y_axis = chart.y_range().start;
        for (x, text) in &self.ticks {
            let (px, py) = chart.backend_coord(&(*x, y_axis));
            let at = (px - bx - 4 * text.chars().count() as i32, py - by + 8);
            area.draw(&Text::new(text.clone(), at, ("sans-serif", 16)))?;
        }
        for (i, l) in self.lines.iter().enumerate() {
            let col = color(i);
            // Earlier lines wider and their points larger: where lines have equal values, each
            // still shows as a band around the ones drawn over it.
            let (width, radius) = widths(i, self.lines.len());
            chart.draw_series(LineSeries::new(l.pts.clone(), col.stroke_width(width)))?;
            chart.draw_series(l.pts.iter().map(|p| Circle::new(*p, radius, col.filled())))?;
            if let Some(b) = &l.best {
                chart.draw_series([Circle::new(*b, 11, BLACK.stroke_width(2))])?;
            }
        }
        for (_, v) in self.gates {
            chart.draw_series(DashedLineSeries::new(vec![(x0, *v), (x1, *v)], 10, 6, RED.stroke_width(1)))?;
        }
        Ok(())
    }
}

/// Line `i` of `n`'s stroke width and point radius: 2 and 5 for the last, 3 and 2 more for
/// each line before it (up to a band of 4 lines), so coinciding lines do not hide each other.
fn widths(i: usize, n: usize) -> (u32, i32) {
    let under = n.saturating_sub(i + 1).min(4) as u32;
    (2 + 3 * under, 5 + 2 * under as i32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    /// Lines with equal values do not hide each other: each earlier one is drawn wider, so it
    /// shows around the ones over it.
    #[test]
    fn lines_with_equal_values_each_stay_visible() {
        let w: Vec<(u32, i32)> = (0..3).map(|i| widths(i, 3)).collect();
        assert_eq!(w, [(8, 9), (5, 7), (2, 5)]);
        assert!(w.windows(2).all(|p| p[0].0 > p[1].0 && p[0].1 > p[1].1));
        assert_eq!(widths(0, 1), (2, 5), "one line, the plain width");
    }

    #[test]
    fn the_x_axis_is_the_numeric_option_on_a_log_scale_past_a_decade() {
        let text = crate::scenario::sweep::swept_scenario(
            r#"sweep = { "limits.idle_timeout" = ["none", "60s"], "runner.window" = ["5s", "25s", "120s"] }
"#,
        );
        let text = text.as_str();
        let s = SweepResult::of(&Scenario::parse("s.toml", text).unwrap().sweeps[0]);
        let (xa, xs, log) = x_axis(&s);
        assert_eq!((xa, xs, log), (1, vec![5.0, 25.0, 120.0], true), "the window, not the idle timeout");
        let narrow =
            SweepResult::of(&Scenario::parse("s.toml", &text.replace("\"120s\"", "\"40s\"")).unwrap().sweeps[0]);
        assert!(!x_axis(&narrow).2, "5 s to 40 s is less than a decade: linear");
        let names = SweepResult::of(
            &Scenario::parse("s.toml", &text.replace(r#", "runner.window" = ["5s", "25s", "120s"]"#, ""))
                .unwrap()
                .sweeps[0],
        );
        assert_eq!(x_axis(&names), (0, vec![0.0, 1.0], false), "values that are not all numbers, in order");
        let one = crate::scenario::sweep::swept_scenario(
            r#"sweep = { "workload.sandboxes" = [1000], "runner.window" = ["5s", "25s"] }
"#,
        );
        let one = SweepResult::of(&Scenario::parse("s.toml", &one).unwrap().sweeps[0]);
        assert_eq!(x_axis(&one).0, 1, "a path swept over one value is no axis");
    }
}
