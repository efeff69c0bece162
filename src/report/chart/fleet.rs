//! The fleet over time, per case, in three panels on one time axis: the execs held at once
//! (the most in each step; the organisation's held-exec limit dashed), the turns demoted to
//! polling at the step's end, and the organisation's requests per second.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, Entry, RunData};

/// Its size in pixels for `run`; `None`: `run` has nothing for it to show.
pub(super) fn size(run: &RunData) -> Option<(u32, u32)> {
    run.cases.iter().any(|c| c.fleet.is_some()).then_some((super::SIZE.0, super::SIZE.1 * 3 / 2))
}
use crate::results::fleet::FleetPoint;

type Pick = fn(&FleetPoint) -> f64;

pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), super::DrawError> {
    root.fill(&WHITE)?;
    let cases: Vec<(usize, &str, &Vec<FleetPoint>, Option<u32>)> = run
        .cases
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.fleet.as_ref().map(|(t, limit)| (i, c.name.as_str(), t, *limit)))
        .collect();
    // One entry per case, and one for a limit only when a case has one (each drawn dashed).
    let mut entries: Vec<Entry> = cases
        .iter()
        .map(|(i, name, _, _)| Entry { label: name.to_string(), color: color(*i), dashed: false })
        .collect();
    if cases.iter().any(|c| c.3.is_some()) {
        entries.push(Entry { label: "held-exec limit (dashed, the case's colour)".into(), color: BLACK, dashed: true });
    }
    let body = super::legend(root, &entries, false)?;
    let panels = body.split_evenly((3, 1));
    let tmax = cases.iter().flat_map(|c| c.2.iter().map(|p| p.t_secs)).fold(1.0, f64::max);
    let specs: [(&str, Pick); 3] = [
        ("execs held at once (most per step)", |p| p.held_execs_max as f64),
        ("turns demoted to polling", |p| p.demoted_turns as f64),
        ("organisation requests / s", |p| p.requests_per_sec),
    ];
    for (k, (panel, (title, pick))) in panels.iter().zip(specs).enumerate() {
        let limits: Vec<f64> =
            if k == 0 { cases.iter().filter_map(|c| c.3).map(f64::from).collect() } else { Vec::new() };
        let ymax = cases.iter().flat_map(|c| c.2.iter().map(pick)).chain(limits.iter().copied()).fold(1.0, f64::max);
        let caption = if k == 0 { format!("{}: {title}", run.scenario) } else { title.to_owned() };
        let mut chart = ChartBuilder::on(panel)
            .caption(caption, ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(if k == 2 { 44 } else { 24 })
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..tmax, 0.0..ymax * 1.1)?;
        let mut mesh = chart.configure_mesh();
        mesh.label_style(("sans-serif", 15)).axis_desc_style(("sans-serif", 16)).y_labels(6);
        if k == 2 {
            mesh.x_desc("time since the schedule's start (s)");
        }
        mesh.draw()?;
        for (i, _, points, limit) in &cases {
            let col = color(*i);
            let pts: Vec<(f64, f64)> = points.iter().map(|p| (p.t_secs, pick(p))).collect();
            chart.draw_series(LineSeries::new(pts, col.stroke_width(2)))?;
            if let (0, Some(l)) = (k, limit) {
                let l = f64::from(*l);
                chart.draw_series(DashedLineSeries::new(vec![(0.0, l), (tmax, l)], 8, 6, col.stroke_width(1)))?;
            }
        }
    }
    Ok(())
}
