//! Chart 2: where a call's time goes, per case: mean wake, the round trips after it (list,
//! read), the handler, publishing the answer, and hop 1 (answer published -> read),
//! stacked.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::RunData;

/// Its size in pixels for `run`; `None`: `run` has nothing for it to show.
pub(super) fn size(run: &RunData) -> Option<(u32, u32)> {
    let h = 160 + 60 * run.cases.len() as u32;
    run.cases.iter().any(|c| c.breakdown.is_some()).then_some((super::SIZE.0, h.max(360)))
}

const PARTS: [(&str, RGBColor); 5] = [
    ("wake", RGBColor(31, 119, 180)),
    ("after the wake: list + read", RGBColor(255, 127, 14)),
    ("handler", RGBColor(44, 160, 44)),
    ("answer publication", RGBColor(148, 103, 189)),
    ("hop 1: answer -> writer", RGBColor(214, 39, 40)),
];

pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), super::DrawError> {
    root.fill(&WHITE)?;
    let rows: Vec<(&str, [f64; 5])> = run.cases.iter().filter_map(|c| Some((c.name.as_str(), c.breakdown?))).collect();
    let total = rows.iter().map(|r| r.1.iter().sum::<f64>()).fold(0.0, f64::max).max(1e-3);
    let n = rows.len();
    let entries: Vec<super::Entry> =
        PARTS.iter().map(|(l, c)| super::Entry { label: (*l).to_owned(), color: *c, dashed: false }).collect();
    let body = super::legend(root, &entries, false)?;
    let mut chart = ChartBuilder::on(&body)
        .caption(format!("{}: where a call's time goes (means)", run.scenario), ("sans-serif", 28))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(230)
        .build_cartesian_2d(0.0..total * 1.05, 0.0..n as f64)?;
    let names: Vec<String> = rows.iter().map(|r| r.0.to_owned()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc("time (ms)")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_labels(n.max(1) * 2 + 1)
        .y_label_formatter(&|y| {
            let i = (y - 0.5).round();
            if (y - 0.5 - i).abs() < 0.01 && i >= 0.0 && (i as usize) < names.len() {
                names[names.len() - 1 - i as usize].clone()
            } else {
                String::new()
            }
        })
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()?;
    for (k, (_, c)) in PARTS.iter().enumerate() {
        let bars: Vec<Rectangle<(f64, f64)>> = rows
            .iter()
            .enumerate()
            .map(|(i, (_, parts))| {
                let y = (n - 1 - i) as f64;
                let x0: f64 = parts[..k].iter().sum();
                Rectangle::new([(x0, y + 0.2), (x0 + parts[k], y + 0.8)], c.filled())
            })
            .collect();
        chart.draw_series(bars)?;
    }
    Ok(())
}
