//! Chart 1: the latency percentile spectrum of wake, pickup and completion, every case
//! overlaid, on HdrHistogram's axis: percentile on a log "1/(1-p)" scale, value in ms.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, RunData};

/// Its size in pixels for `run`; `None`: `run` has nothing for it to show.
pub(super) fn size(run: &RunData) -> Option<(u32, u32)> {
    run.cases.iter().any(|c| !c.hists.is_empty()).then_some((super::SIZE.0, super::SIZE.1 * 3 / 2))
}

/// One case's line: its color index and (x, ms) points.
type Series = (usize, Vec<(f64, f64)>);

/// x = log10(1 / (1 - p)), so 90 % is 1, 99 % is 2, 99.9 % is 3.
fn label(x: &f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    if p < 99.0 {
        format!("{p:.0}%")
    } else {
        let digits = (x.round() as usize).saturating_sub(2);
        format!("{p:.digits$}%")
    }
}

pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), super::DrawError> {
    root.fill(&WHITE)?;
    let root = root.titled(&format!("{}: latency by percentile (all cases)", run.scenario), ("sans-serif", 30))?;
    let entries: Vec<super::Entry> = run
        .cases
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.hists.is_empty())
        .map(|(i, c)| super::Entry { label: c.name.clone(), color: color(i), dashed: false })
        .collect();
    let body = super::legend(&root, &entries, true)?;
    let panels = body.split_evenly((3, 1));
    for (panel, measure) in panels.iter().zip(["wake", "pickup", "completion"]) {
        let series: Vec<Series> = run
            .cases
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let h = &c.hists.iter().find(|(m, _)| m == measure)?.1;
                let pts = h
                    .iter_quantiles(10)
                    .filter(|v| v.quantile_iterated_to() < 1.0)
                    .map(|v| {
                        let x = (1.0 / (1.0 - v.quantile_iterated_to())).log10();
                        // A 0 µs model value (virtual local) sits on the 1 µs floor.
                        (x, (v.value_iterated_to() as f64 / 1e6).max(1e-3))
                    })
                    .collect::<Vec<_>>();
                (!pts.is_empty()).then_some((i, pts))
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let xmax = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(1.0, f64::max).ceil();
        let ymin = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(f64::MAX, f64::min);
        let ymax = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0, f64::max);
        let mut chart = ChartBuilder::on(panel)
            .caption(measure, ("sans-serif", 24))
            .margin(12)
            .margin_right(48)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..xmax, (ymin * 0.8..ymax * 1.25).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("latency (ms, log scale)")
            .x_labels(xmax as usize + 1)
            .x_label_formatter(&label)
            .y_labels(30)
            .y_label_formatter(&super::log_label)
            .label_style(("sans-serif", 16))
            .axis_desc_style(("sans-serif", 18))
            .draw()?;
        for (i, pts) in series {
            chart.draw_series(LineSeries::new(pts, color(i).stroke_width(2)))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_labels_are_one_two_five() {
        use super::super::log_label;
        assert_eq!(log_label(&100.0), "100");
        assert_eq!(log_label(&200.0), "200");
        assert_eq!(log_label(&300.0), "");
        assert_eq!(log_label(&0.05), "0.05");
        assert_eq!(log_label(&0.001), "0.001");
    }

    #[test]
    fn percentile_labels() {
        assert_eq!(super::label(&0.0), "0%");
        assert_eq!(super::label(&1.0), "90%");
        assert_eq!(super::label(&2.0), "99%");
        assert_eq!(super::label(&3.0), "99.9%");
        assert_eq!(super::label(&4.0), "99.99%");
    }
}
