//! Chart 4: for each case with faults, pickup over time (median and worst per interval)
//! with each fault's window shaded.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::RunData;

/// Its size in pixels for `run`; `None`: `run` has nothing for it to show.
pub(super) fn size(run: &RunData) -> Option<(u32, u32)> {
    let n = run.cases.iter().filter(|c| !c.faults.is_empty()).count() as u32;
    run.cases
        .iter()
        .any(|c| !c.faults.is_empty() && !c.pickup_intervals.is_empty())
        .then_some((super::SIZE.0, 220 * n.div_ceil(2) + 80))
}

pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), super::DrawError> {
    root.fill(&WHITE)?;
    let root = root.titled(&format!("{}: pickup over time, faults shaded", run.scenario), ("sans-serif", 28))?;
    let cases: Vec<_> = run.cases.iter().filter(|c| !c.faults.is_empty() && !c.pickup_intervals.is_empty()).collect();
    let rows = cases.len().div_ceil(2);
    let panels = root.split_evenly((rows.max(1), 2));
    for (panel, c) in panels.iter().zip(&cases) {
        let floor = 0.01;
        let pts: Vec<(f64, f64, f64)> = c
            .pickup_intervals
            .iter()
            .map(|iv| {
                let t = (iv.start + iv.length / 2).as_secs_f64();
                let ms = |ns: u64| (ns as f64 / 1e6).max(floor);
                (t, ms(iv.hist.value_at_quantile(0.5)), ms(iv.hist.max()))
            })
            .collect();
        let step = c.pickup_intervals.first().map_or(1.0, |iv| iv.length.as_secs_f64());
        let tmax = c.pickup_intervals.last().map_or(1.0, |iv| (iv.start + iv.length).as_secs_f64());
        // At least two decades tall, so a log axis has room for its labels.
        let ymin = pts.iter().map(|p| p.1).fold(f64::MAX, f64::min).max(0.01);
        let ymax = pts.iter().map(|p| p.2).fold(ymin * 50.0, f64::max);
        let mut chart = ChartBuilder::on(panel)
            .caption(&c.name, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(36)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..tmax, (ymin * 0.5..ymax * 2.0).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("pickup (ms, log)")
            .y_labels(30)
            .y_label_formatter(&super::log_label)
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()?;
        let shade = RGBColor(214, 39, 40).mix(0.2);
        for (kind, from, to) in &c.faults {
            let to = to.max(from + step);
            chart
                .draw_series(std::iter::once(Rectangle::new([(*from, ymin * 0.5), (to, ymax * 2.0)], shade.filled())))?
                .label(format!("fault: {kind}"))
                .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], shade.filled()));
        }
        let (blue, orange) = (RGBColor(31, 119, 180), RGBColor(255, 127, 14));
        chart
            .draw_series(LineSeries::new(pts.iter().map(|p| (p.0, p.1)), blue.stroke_width(2)))?
            .label("median")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(3)));
        chart
            .draw_series(LineSeries::new(pts.iter().map(|p| (p.0, p.2)), orange.stroke_width(2)))?
            .label("worst")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], orange.stroke_width(3)));
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 12))
            .draw()?;
    }
    Ok(())
}
