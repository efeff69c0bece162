//! Chart 3: discovery requests per minute per relay dir over the schedule, per case, with
//! each case's discovery-rate gate drawn as a dashed line.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, RunData};

pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let cases: Vec<(usize, &super::CaseData)> =
        run.cases.iter().enumerate().filter(|(_, c)| c.requests_measured && !c.timeline.is_empty()).collect();
    let floor = 0.1;
    let tmax = cases.iter().flat_map(|(_, c)| c.timeline.iter().map(|p| p.0)).fold(1.0, f64::max);
    let ymax = cases
        .iter()
        .flat_map(|(_, c)| c.timeline.iter().map(|p| p.1).chain(c.rate_gates.iter().map(|g| g.1)))
        .fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(format!("{}: discovery requests per minute per relay dir", run.scenario), ("sans-serif", 28))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..tmax, (floor..ymax * 1.5).log_scale())
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("time since the first intended start (s)")
        .y_desc("discovery requests / min (log scale)")
        .y_label_formatter(&|y| if *y >= 1.0 { format!("{y:.0}") } else { format!("{y:.1}") })
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()
        .map_err(e)?;
    for (i, c) in &cases {
        let col = color(*i);
        // A step per interval: the rate held over the interval that ends at t.
        let mut pts = Vec::new();
        let mut prev = 0.0;
        for (t, r) in &c.timeline {
            let r = r.max(floor);
            pts.push((prev, r));
            pts.push((*t, r));
            prev = *t;
        }
        chart
            .draw_series(LineSeries::new(pts, col.stroke_width(2)))
            .map_err(e)?
            .label(c.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(3)));
        for (expr, v) in &c.rate_gates {
            let line =
                DashedLineSeries::new(vec![(0.0, v.max(floor)), (tmax, v.max(floor))], 8, 6, col.stroke_width(1));
            chart
                .draw_series(line)
                .map_err(e)?
                .label(format!("gate {}: {expr}", c.name))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], col.stroke_width(1)));
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(e)?;
    Ok(())
}
