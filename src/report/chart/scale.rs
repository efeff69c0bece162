//! Axes chosen for the data's range: a value axis that is logarithmic only where the data
//! spans a decade ([`Axis`]) with its grid ([`grid`]), and lines cut to a panel's band
//! ([`clip`]), since plotters draws a line past its chart's edge.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

/// A log axis's coordinates per decade.
const TENTHS: f64 = 10.0;

/// A chart on two f64 axes.
pub(crate) type Plot<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A value axis: linear, or logarithmic (drawn in tenths of a decade, `10 * log10(v)`, so
/// its ticks fall on whole numbers, which plotters steps through without rounding error;
/// labelled 1, 2 and 5 times a power of ten).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Axis {
    pub log: bool,
    /// The values at its ends.
    pub lo: f64,
    pub hi: f64,
}

impl Axis {
    pub(crate) fn linear(lo: f64, hi: f64) -> Axis {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Axis { log: false, lo, hi }
    }

    /// The axis for `values`: logarithmic when the positive ones span a decade or more (from
    /// a little under the least to a little over the most; a value of 0 sits on the floor),
    /// else linear from 0 (or a little under the least, when that is far from 0).
    pub(crate) fn for_values(values: impl Iterator<Item = f64>) -> Axis {
        let (mut min_pos, mut max) = (f64::MAX, 0.0f64);
        for v in values.filter(|v| v.is_finite()) {
            if v > 0.0 {
                min_pos = min_pos.min(v);
            }
            max = max.max(v);
        }
        if max <= 0.0 {
            return Axis::linear(0.0, 1.0);
        }
        if max / min_pos >= 10.0 {
            return Axis { log: true, lo: min_pos * 0.8, hi: max * 1.25 };
        }
        let span = max - min_pos;
        let lo = if min_pos > 2.0 * span { min_pos - span * 0.5 } else { 0.0 };
        Axis::linear(lo, max + span.max(max * 0.05) * 0.1)
    }

    /// A value in the chart's coordinates (a value under a log axis's floor sits on it).
    pub(crate) fn to(&self, v: f64) -> f64 {
        if self.log {
            TENTHS * v.max(self.lo).log10()
        } else {
            v
        }
    }

    /// The axis's ends in the chart's coordinates.
    pub(crate) fn span(&self) -> (f64, f64) {
        (self.to(self.lo), self.to(self.hi))
    }

    /// How many labels to ask plotters for: a tenth of a decade apart on a log axis (so
    /// 1, 2 and 5 times each power of ten are among them), ten on a linear one.
    pub(crate) fn labels(&self) -> usize {
        if self.log {
            let (a, b) = self.span();
            (b - a).ceil() as usize + 1
        } else {
            10
        }
    }

    /// The label at `u` (chart coordinates): on a log axis only 1, 2 and 5 times a power of
    /// ten are written.
    pub(crate) fn label(&self, u: f64) -> String {
        if self.log {
            return super::log_label(&10f64.powf(u / TENTHS));
        }
        let span = self.hi - self.lo;
        let digits = if span < 1.0 {
            2
        } else if span < 10.0 {
            1
        } else {
            0
        };
        format!("{u:.digits$}")
    }

    /// A log axis's grid, in chart coordinates: 1 to 9 times each power of ten inside it,
    /// with whether it is labelled (1, 2, 5). Empty for a linear axis (plotters' mesh).
    pub(crate) fn grid(&self) -> Vec<(f64, bool)> {
        if !self.log {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut decade = 10f64.powf(self.lo.log10().floor());
        while decade <= self.hi {
            for k in 1..=9 {
                let v = decade * f64::from(k);
                if v >= self.lo && v <= self.hi {
                    out.push((self.to(v), matches!(k, 1 | 2 | 5)));
                }
            }
            decade *= 10.0;
        }
        out
    }
}

/// Draws the grid of the log axes among `x` and `y` (a linear one keeps plotters' mesh,
/// which the caller left on).
pub(crate) fn grid<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    x: Option<&Axis>,
    y: Option<&Axis>,
) -> Result<(), super::DrawError> {
    let (xr, yr) = (chart.x_range(), chart.y_range());
    let style = |bold: bool| if bold { BLACK.mix(0.2).stroke_width(1) } else { BLACK.mix(0.07).stroke_width(1) };
    for (u, bold) in x.map(Axis::grid).unwrap_or_default() {
        chart.draw_series(std::iter::once(PathElement::new(vec![(u, yr.start), (u, yr.end)], style(bold))))?;
    }
    for (u, bold) in y.map(Axis::grid).unwrap_or_default() {
        chart.draw_series(std::iter::once(PathElement::new(vec![(xr.start, u), (xr.end, u)], style(bold))))?;
    }
    Ok(())
}

/// `pts` cut to the band `lo..=hi` of y: the runs of the line inside it, each ended where
/// it crosses the band's edge (plotters does not clip a line to its chart).
pub(crate) fn clip(pts: &[(f64, f64)], lo: f64, hi: f64) -> Vec<Vec<(f64, f64)>> {
    let inside = |y: f64| (lo..=hi).contains(&y);
    let cross = |a: (f64, f64), b: (f64, f64), edge: f64| {
        let t = (edge - a.1) / (b.1 - a.1);
        (a.0 + t * (b.0 - a.0), edge)
    };
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    for (k, &p) in pts.iter().enumerate() {
        let prev = k.checked_sub(1).map(|j| pts[j]);
        match (prev, inside(p.1)) {
            (_, true) if !cur.is_empty() => cur.push(p),
            (Some(a), true) => {
                // Entering the band (or starting in it).
                if !inside(a.1) {
                    cur.push(cross(a, p, if a.1 > hi { hi } else { lo }));
                }
                cur.push(p);
            }
            (None, true) => cur.push(p),
            (Some(a), false) => {
                if inside(a.1) {
                    cur.push(cross(a, p, if p.1 > hi { hi } else { lo }));
                    runs.push(std::mem::take(&mut cur));
                } else if (a.1 > hi) != (p.1 > hi) {
                    // Across the whole band between two points.
                    let (e1, e2) = if a.1 > hi { (hi, lo) } else { (lo, hi) };
                    runs.push(vec![cross(a, p, e1), cross(a, p, e2)]);
                }
            }
            (None, false) => {}
        }
    }
    if !cur.is_empty() {
        runs.push(cur);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_axis_is_logarithmic_only_over_a_decade() {
        let a = Axis::for_values([4.0, 5.0, 6.2].into_iter());
        assert!(!a.log && a.lo == 0.0 && a.hi > 6.2, "{a:?}");
        let a = Axis::for_values([40.0, 50.0, 52.0].into_iter());
        assert!(!a.log && a.lo > 30.0 && a.lo < 40.0 && a.hi > 52.0, "far from 0: {a:?}");
        let a = Axis::for_values([0.0, 2.0, 680.0].into_iter());
        assert!(a.log && a.lo < 2.0 && a.hi > 680.0, "{a:?}");
        assert_eq!(a.to(0.0), 10.0 * a.lo.log10(), "0 sits on the floor");
        assert_eq!(Axis::for_values([0.0, 0.0].into_iter()), Axis::linear(0.0, 1.0));
        assert_eq!((a.label(a.to(2.0)), a.label(3.0), a.label(3.5)), ("2".into(), "2".into(), String::new()));
        assert_eq!(Axis::linear(3.5, 6.5).label(4.5), "4.5");
        assert_eq!(a.label(7.0), "5", "10^0.7 is 5.01: written as the 5 it stands for");
        let g = Axis { log: true, lo: 1.5, hi: 25.0 }.grid();
        let labelled: Vec<f64> =
            g.iter().filter(|p| p.1).map(|p| (10f64.powf(p.0 / 10.0) * 1e6).round() / 1e6).collect();
        assert_eq!(labelled, vec![2.0, 5.0, 10.0, 20.0]);
        assert_eq!(g.len(), 10, "2 to 9, 10 and 20: {g:?}");
        assert!(Axis::linear(0.0, 1.0).grid().is_empty());
    }

    #[test]
    fn a_line_is_cut_where_it_leaves_the_band() {
        let pts = [(0.0, 10.0), (1.0, 5.0), (2.0, 5.0), (3.0, 10.0), (4.0, 0.0), (5.0, 5.0)];
        let round = |r: Vec<(f64, f64)>| -> Vec<(f64, f64)> {
            r.into_iter().map(|(x, y)| ((x * 1e6).round() / 1e6, y)).collect()
        };
        let runs: Vec<_> = clip(&pts, 4.0, 6.0).into_iter().map(round).collect();
        assert_eq!(runs.len(), 3, "{runs:?}");
        assert_eq!(runs[0], vec![(0.8, 6.0), (1.0, 5.0), (2.0, 5.0), (2.2, 6.0)]);
        assert_eq!(runs[1], vec![(3.4, 6.0), (3.6, 4.0)], "across the band between two points");
        assert_eq!(runs[2], vec![(4.8, 4.0), (5.0, 5.0)]);
        assert!(clip(&[(0.0, 1.0), (1.0, 2.0)], 4.0, 6.0).is_empty());
        assert_eq!(clip(&[(0.0, 5.0)], 4.0, 6.0), vec![vec![(0.0, 5.0)]]);
    }

    #[test]
    fn a_log_axis_asks_plotters_for_a_tick_at_every_tenth_of_a_decade_to_its_end() {
        use plotters::coord::ranged1d::Ranged;
        let a = Axis::for_values([1.66, 189.5].into_iter());
        let (x0, x1) = a.span();
        let r: plotters::coord::types::RangedCoordf64 = (x0..x1).into();
        let labels: Vec<String> =
            r.key_points(a.labels()).iter().map(|u| a.label(*u)).filter(|l| !l.is_empty()).collect();
        assert_eq!(labels, ["2", "5", "10", "20", "50", "100", "200"]);
    }
}
