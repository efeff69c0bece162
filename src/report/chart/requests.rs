//! Chart 3: discovery requests per minute per relay dir over the schedule (a trailing 60 s
//! window), per case: the whole range in one panel, and a panel on a linear axis around each
//! band of discovery-rate gates (thresholds within a factor of two of each other), where the
//! gated cases' lines are read against their gates. A gate is a dashed line in its case's
//! colour, or grey when several cases share it.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, Axis, CaseData, Entry, RunData};

/// The height of a band's panel.
const BAND_PANEL: u32 = 300;
/// At most this many band panels (the lowest bands: an idle budget first).
const MAX_BANDS: usize = 3;

/// Its size in pixels for `run`; `None`: `run` has nothing for it to show.
pub(super) fn size(run: &RunData) -> Option<(u32, u32)> {
    let cases = measured(run);
    (!cases.is_empty()).then(|| (super::SIZE.0, super::SIZE.1 + BAND_PANEL * bands(&cases).len() as u32))
}

fn measured(run: &RunData) -> Vec<(usize, &CaseData)> {
    run.cases.iter().enumerate().filter(|(_, c)| c.requests_measured && !c.timeline.is_empty()).collect()
}

/// The gates' thresholds grouped into bands: sorted, a new band where a threshold is more
/// than twice its band's lowest; the lowest [`MAX_BANDS`].
fn bands(cases: &[(usize, &CaseData)]) -> Vec<(f64, f64)> {
    let mut t: Vec<f64> = cases.iter().flat_map(|(_, c)| c.rate_gates.iter().map(|g| g.1)).collect();
    t.sort_by(f64::total_cmp);
    let mut out: Vec<(f64, f64)> = Vec::new();
    for v in t {
        match out.last_mut() {
            Some((lo, hi)) if v <= *lo * 2.0 || v == *lo => *hi = v,
            _ => out.push((v, v)),
        }
    }
    out.truncate(MAX_BANDS);
    out
}

/// A band panel's y range: the band and where the gated cases' figures near it (within a
/// factor of two of its ends) mostly are (the 5th to the 95th percentile: a line passing
/// through on its way down does not stretch it), with a margin.
fn band_range(cases: &[(usize, &CaseData)], (lo, hi): (f64, f64)) -> (f64, f64) {
    let near = |v: &f64| *v >= lo / 2.0 && *v <= hi * 2.0;
    let mut vs: Vec<f64> = cases
        .iter()
        .filter(|(_, c)| c.rate_gates.iter().any(|g| g.1 >= lo && g.1 <= hi))
        .flat_map(|(_, c)| c.timeline.iter().map(|p| p.1).filter(near))
        .collect();
    vs.sort_by(f64::total_cmp);
    let at = |q: f64| vs.get(((vs.len() as f64 - 1.0) * q).round() as usize).copied();
    let (a, b) = (at(0.05).map_or(lo, |v| v.min(lo)), at(0.95).map_or(hi, |v| v.max(hi)));
    let pad = ((b - a) * 0.15).max(hi.abs() * 0.05).max(0.05);
    ((a - pad).max(0.0), b + pad)
}

/// Each distinct gate threshold once: its value and the cases that set it.
fn gate_lines(cases: &[(usize, &CaseData)]) -> Vec<(f64, Vec<usize>)> {
    let mut out: Vec<(f64, Vec<usize>)> = Vec::new();
    for (i, c) in cases {
        for (_, v) in &c.rate_gates {
            match out.iter_mut().find(|(t, _)| t == v) {
                Some((_, who)) => who.push(*i),
                None => out.push((*v, vec![*i])),
            }
        }
    }
    out
}

pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), super::DrawError> {
    root.fill(&WHITE)?;
    let cases = measured(run);
    let gates = gate_lines(&cases);
    let grey = RGBColor(90, 90, 90);
    let mut entries: Vec<Entry> =
        cases.iter().map(|(i, c)| Entry { label: c.name.clone(), color: color(*i), dashed: false }).collect();
    if gates.iter().any(|g| g.1.len() == 1) {
        entries.push(Entry { label: "a case's rate gate (dashed, its colour)".into(), color: BLACK, dashed: true });
    }
    if gates.iter().any(|g| g.1.len() > 1) {
        entries.push(Entry { label: "a gate several cases share".into(), color: grey, dashed: true });
    }
    let body = super::legend(root, &entries, false)?;
    let bands = bands(&cases);
    let overview_h = body.dim_in_pixel().1 - BAND_PANEL * bands.len() as u32;
    let (overview, rest) = body.split_vertically(overview_h);
    let tmax = cases.iter().flat_map(|(_, c)| c.timeline.iter().map(|p| p.0)).fold(1.0, f64::max);
    let values =
        || cases.iter().flat_map(|(_, c)| c.timeline.iter().map(|p| p.1).chain(c.rate_gates.iter().map(|g| g.1)));
    let axis = Axis::for_values(values());
    let caption = format!("{}: discovery requests per minute per relay dir (trailing 60 s)", run.scenario);
    panel(&overview, &cases, &gates, (caption, 26), tmax, axis, bands.is_empty())?;
    let mut area = rest;
    for (k, band) in bands.iter().enumerate() {
        let (this, below) = area.split_vertically(BAND_PANEL);
        let (lo, hi) = band_range(&cases, *band);
        let what = if band.0 == band.1 { format!("{}", band.0) } else { format!("{} to {}", band.0, band.1) };
        let caption = format!("around the gates at {what} / min (linear; lines outside it leave the panel)");
        panel(&this, &cases, &gates, (caption, 20), tmax, Axis::linear(lo, hi), k + 1 == bands.len())?;
        area = below;
    }
    Ok(())
}

/// One panel: every case's line on `axis` (cut at its edges), the gates inside it dashed.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    cases: &[(usize, &CaseData)],
    gates: &[(f64, Vec<usize>)],
    (caption, size): (String, u32),
    tmax: f64,
    axis: Axis,
    last: bool,
) -> Result<(), super::DrawError> {
    let (lo, hi) = axis.span();
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", size))
        .margin(16)
        .x_label_area_size(if last { 50 } else { 30 })
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..tmax, lo..hi)?;
    let label = |u: &f64| axis.label(*u);
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(if axis.log { "discovery / min (log scale)" } else { "discovery / min" })
        .y_labels(axis.labels())
        .y_label_formatter(&label)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18));
    if last {
        mesh.x_desc("time since the first intended start (s)");
    }
    mesh.max_light_lines(2);
    if axis.log {
        mesh.disable_y_mesh();
    }
    mesh.draw()?;
    super::grid(&mut chart, None, Some(&axis))?;
    for (i, c) in cases {
        let pts: Vec<(f64, f64)> = c.timeline.iter().map(|(t, r)| (*t, axis.to(*r))).collect();
        for run in super::clip(&pts, lo, hi) {
            chart.draw_series(LineSeries::new(run, color(*i).stroke_width(2)))?;
        }
    }
    for (v, who) in gates {
        let u = axis.to(*v);
        if !(lo..=hi).contains(&u) {
            continue;
        }
        let col = if who.len() == 1 { color(who[0]) } else { RGBColor(90, 90, 90) };
        chart.draw_series(DashedLineSeries::new(vec![(0.0, u), (tmax, u)], 8, 6, col.stroke_width(2)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(gates: &[f64], timeline: &[f64]) -> CaseData {
        let mut c = super::super::tests::empty_case("c");
        c.rate_gates = gates.iter().map(|v| (format!("idle_phase_discovery_per_min <= {v}"), *v)).collect();
        c.timeline = timeline.iter().enumerate().map(|(k, v)| (k as f64, *v)).collect();
        c
    }

    #[test]
    fn gates_group_into_bands_and_a_band_panel_holds_the_gated_figures_near_it() {
        let (a, b, c) = (case(&[4.31, 4.49], &[150.0, 4.2, 4.6]), case(&[5.44], &[5.3]), case(&[39.2, 204.0], &[]));
        let cases = vec![(0, &a), (1, &b), (2, &c)];
        assert_eq!(bands(&cases), vec![(4.31, 5.44), (39.2, 39.2), (204.0, 204.0)]);
        let (lo, hi) = band_range(&cases, (4.31, 5.44));
        assert!(lo < 4.2 && lo > 3.5 && hi > 5.44 && hi < 6.0, "{lo}..{hi}: 150 is far off the band");
        let lines = gate_lines(&[(0, &a), (1, &case(&[4.31], &[]))]);
        assert_eq!(lines, vec![(4.31, vec![0, 1]), (4.49, vec![0])]);
    }
}
