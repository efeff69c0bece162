//! Chart 3: discovery requests per minute per relay dir over the schedule (a trailing 60 s
//! window), per case, with each case's discovery-rate gate drawn as a dashed line.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, Entry, RunData};

pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let cases: Vec<(usize, &super::CaseData)> =
        run.cases.iter().enumerate().filter(|(_, c)| c.requests_measured && !c.timeline.is_empty()).collect();
    let mut entries = Vec::new();
    for (i, c) in &cases {
        entries.push(Entry { label: c.name.clone(), color: color(*i), dashed: false });
        for (expr, _) in &c.rate_gates {
            entries.push(Entry { label: format!("gate of {}: {expr}", c.name), color: color(*i), dashed: true });
        }
    }
    let (w, h) = root.dim_in_pixel();
    let (body, strip) = root.split_vertically(h - super::legend_height(&entries, w));
    super::legend(&strip, &entries)?;
    let floor = 0.1;
    let tmax = cases.iter().flat_map(|(_, c)| c.timeline.iter().map(|p| p.0)).fold(1.0, f64::max);
    let ymax = cases
        .iter()
        .flat_map(|(_, c)| c.timeline.iter().map(|p| p.1).chain(c.rate_gates.iter().map(|g| g.1)))
        .fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(&body)
        .caption(
            format!("{}: discovery requests per minute per relay dir (trailing 60 s)", run.scenario),
            ("sans-serif", 26),
        )
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..tmax, (floor..ymax * 1.5).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("time since the first intended start (s)")
        .y_desc("discovery requests / min (log scale)")
        .y_labels(30)
        .y_label_formatter(&super::log_label)
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()
        .map_err(e)?;
    for (i, c) in &cases {
        let col = color(*i);
        let pts: Vec<(f64, f64)> = c.timeline.iter().map(|(t, r)| (*t, r.max(floor))).collect();
        chart.draw_series(LineSeries::new(pts, col.stroke_width(2))).map_err(e)?;
        for (_, v) in &c.rate_gates {
            let v = v.max(floor);
            chart
                .draw_series(DashedLineSeries::new(vec![(0.0, v), (tmax, v)], 8, 6, col.stroke_width(1)))
                .map_err(e)?;
        }
    }
    Ok(())
}
