//! The decision chart: pickup p50 against idle discovery requests per minute per relay dir,
//! one point per case labelled with its name (with its spread as bars when the run has
//! repeats), and the region the cases' gates on those two figures allow shaded. The idle
//! figure is over the workload's idle phases when it has any, else over its idle stretches
//! (each case's gate on that figure is the one read). Drawn when at least two cases have
//! both figures; an axis is logarithmic where its figures span a decade.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{color, Axis, CaseData, Plot, RunData, Spread};
use crate::record::recorder::Measure;
use crate::scenario::gate::{Counter, GateResult, Metric, Op};

/// Its size in pixels for `run`; `None`: `run` has nothing for it to show.
pub(super) fn size(run: &RunData) -> Option<(u32, u32)> {
    (points(run).len() >= 2).then_some(super::SIZE)
}

/// One case's point: its colour index, name, idle discovery (x) and pickup p50 (y, ms).
struct Point<'a> {
    i: usize,
    case: &'a CaseData,
    x: Spread,
    y: Spread,
    counter: Counter,
}

fn points(run: &RunData) -> Vec<Point<'_>> {
    run.cases
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.swept)
        .filter_map(|(i, c)| {
            let (x, counter) = c.idle_discovery?;
            Some(Point { i, case: c, x, y: c.pickup_p50_ms?, counter })
        })
        .collect()
}

/// Which of the two figures a gate reads, for a case whose idle figure `counter` reads.
fn reads(g: &GateResult, counter: Counter) -> Option<bool> {
    match g.gate.metric {
        Metric::Latency(Measure::Pickup, "p50") => Some(false),
        Metric::Count(c) if c == counter => Some(true),
        _ => None,
    }
}

/// The region a case's gates allow: (x from, x to), (y from, y to), each end `None` when
/// unbounded, and the gates' text. A figure gated from both sides (an arithmetic band, not
/// a budget) bounds nothing.
type Region = ([Option<f64>; 2], [Option<f64>; 2], String);

fn region(p: &Point<'_>) -> Option<Region> {
    let mut ends = [[None, None], [None, None]];
    let mut said = [Vec::new(), Vec::new()];
    for g in &p.case.gates {
        let Some(on_x) = reads(g, p.counter) else { continue };
        let k = usize::from(!on_x);
        let v = if on_x { g.gate.threshold } else { g.gate.threshold / 1000.0 };
        let end = match g.gate.op {
            Op::Lt | Op::Le => 1,
            Op::Gt | Op::Ge => 0,
            Op::Eq | Op::Ne => continue,
        };
        ends[k][end] = Some(v);
        said[k].push(g.gate.expr.clone());
    }
    for k in 0..2 {
        if ends[k][0].is_some() && ends[k][1].is_some() {
            ends[k] = [None, None];
            said[k].clear();
        }
    }
    // The pickup gate first, as a reader says it.
    let text: Vec<String> = said[1].iter().chain(&said[0]).cloned().collect();
    (!text.is_empty()).then(|| (ends[0], ends[1], text.join(" and ")))
}

/// Whether the case meets every gate it has on the two figures.
fn meets(p: &Point<'_>) -> bool {
    p.case.gates.iter().filter(|g| reads(g, p.counter).is_some()).all(|g| g.pass)
}

/// A label's box in pixels: x, y (top left), width, height.
type Boxed = (i32, i32, i32, i32);

fn overlaps(a: Boxed, b: Boxed) -> bool {
    a.0 < b.0 + b.2 && b.0 < a.0 + a.2 && a.1 < b.1 + b.3 && b.1 < a.1 + a.3
}

const LABEL: u32 = 15;

fn label_width(text: &str) -> i32 {
    (text.chars().count() as f64 * 8.4).ceil() as i32 + 2
}

/// Where each label goes, as an offset from its point: beside it on the right when there is
/// room, else the nearest free place above or below it (a leader line is drawn to it), on
/// the left only when that is nearer. The rightmost points are placed first, so a crowd's
/// labels stack beside it in the order of its points.
fn place(at: &[(i32, i32)], names: &[&str], area: Boxed) -> Vec<(i32, i32)> {
    let h = LABEL as i32 + 2;
    let marks: Vec<Boxed> = at.iter().map(|&(x, y)| (x - 8, y - 8, 16, 16)).collect();
    let mut taken: Vec<Boxed> = Vec::new();
    let mut out = vec![(0, 0); at.len()];
    let mut order: Vec<usize> = (0..at.len()).collect();
    order.sort_by_key(|&k| (std::cmp::Reverse(at[k].0), at[k].1));
    for k in order {
        let w = label_width(names[k]);
        let (x, y) = at[k];
        // (cost, offset): a step up or down costs 2, the left side 3.
        let mut tries: Vec<(i32, (i32, i32))> = Vec::new();
        for step in 0..=10i32 {
            for dy in if step == 0 { vec![0] } else { vec![-step, step] } {
                let off = |dx: i32| (dx, -h / 2 + dy * h);
                let gap = if step == 0 { 10 } else { 14 };
                tries.push((2 * step, off(gap)));
                tries.push((2 * step + 3, off(-gap - w)));
            }
        }
        tries.sort_by_key(|t| t.0);
        let free = |&(dx, dy): &(i32, i32)| {
            let b = (x + dx, y + dy, w, h);
            let inside = b.0 >= area.0 && b.1 >= area.1 && b.0 + b.2 <= area.0 + area.2 && b.1 + b.3 <= area.1 + area.3;
            inside
                && !taken.iter().any(|t| overlaps(*t, b))
                && !marks.iter().enumerate().any(|(j, m)| j != k && overlaps(*m, b))
        };
        let chosen = tries.iter().map(|t| t.1).find(free).unwrap_or(tries[0].1);
        taken.push((x + chosen.0, y + chosen.1, w, h));
        out[k] = chosen;
    }
    out
}

pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), super::DrawError> {
    root.fill(&WHITE)?;
    let pts = points(run);
    let mut regions: Vec<(Region, usize)> = Vec::new();
    for r in pts.iter().filter_map(region) {
        match regions.iter_mut().find(|(x, _)| *x == r) {
            Some((_, n)) => *n += 1,
            None => regions.push((r, 1)),
        }
    }
    let bounds = |r: &Region, k: usize| -> Vec<f64> {
        let ends = if k == 0 { r.0 } else { r.1 };
        ends.into_iter().flatten().collect()
    };
    let xs =
        pts.iter().flat_map(|p| <[f64; 2]>::from(p.x.bounds())).chain(regions.iter().flat_map(|r| bounds(&r.0, 0)));
    let ys =
        pts.iter().flat_map(|p| <[f64; 2]>::from(p.y.bounds())).chain(regions.iter().flat_map(|r| bounds(&r.0, 1)));
    let (ax, ay) = (Axis::for_values(xs), Axis::for_values(ys));
    // The legend: the markers, then each region.
    let shade = RGBColor(44, 160, 44);
    let mut items: Vec<(u8, String)> =
        vec![(0, "meets its gates on these figures".into()), (1, "misses one of them".into())];
    items.extend(
        regions
            .iter()
            .map(|((_, _, text), n)| (2, format!("allowed by {text} ({n} case{})", if *n == 1 { "" } else { "s" }))),
    );
    let (w, h) = root.dim_in_pixel();
    let rows = super::legend_rows(items.iter().map(|(_, label)| 40 + label_width(label)), w);
    let (body, strip) = root.split_vertically(h - (12 + 26 * rows.len() as u32));
    legend(&strip, &items, &rows, shade)?;
    let (x0, x1) = ax.span();
    let (y0, y1) = ay.span();
    let phases = pts.iter().filter(|p| p.counter == Counter::IdlePhaseDiscoveryPerMin).count();
    let over = match phases {
        0 => "idle stretches",
        n if n == pts.len() => "idle phases",
        _ => "idle phases, else idle stretches",
    };
    let mut chart = ChartBuilder::on(&body)
        .caption(format!("{}: pickup p50 against idle discovery requests, per case", run.scenario), ("sans-serif", 26))
        .margin(16)
        .margin_right(30)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let log = |a: &Axis| if a.log { ", log scale" } else { "" };
    let mut mesh = chart.configure_mesh();
    mesh.max_light_lines(2);
    if ax.log {
        mesh.disable_x_mesh();
    }
    if ay.log {
        mesh.disable_y_mesh();
    }
    mesh.x_desc(format!("discovery requests / min per relay dir ({over}{})", log(&ax)))
        .y_desc(format!("pickup p50 (ms{})", log(&ay)))
        .x_labels(ax.labels())
        .y_labels(ay.labels())
        .x_label_formatter(&|u| ax.label(*u))
        .y_label_formatter(&|u| ay.label(*u))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()?;
    super::grid(&mut chart, Some(&ax), Some(&ay))?;
    shade_regions(&mut chart, &regions, (&ax, &ay), shade)?;
    let at: Vec<(f64, f64)> = pts.iter().map(|p| (ax.to(p.x.mid), ay.to(p.y.mid))).collect();
    spread_bars(&mut chart, &pts, &at, (&ax, &ay))?;
    marks(&mut chart, &pts, &at)?;
    Ok(())
}

/// Each point's marker (filled when it meets its gates on these figures, a ring when not)
/// and its label, placed clear of the others with a leader line when it had to move.
fn marks<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    pts: &[Point<'_>],
    at: &[(f64, f64)],
) -> Result<(), super::DrawError> {
    let pixels: Vec<(i32, i32)> = at.iter().map(|c| chart.backend_coord(c)).collect();
    let names: Vec<&str> = pts.iter().map(|p| p.case.name.as_str()).collect();
    let (px, py) = chart.plotting_area().get_pixel_range();
    let area = (px.start, py.start, px.end - px.start, py.end - py.start);
    let offsets = place(&pixels, &names, area);
    let radii = radii(&pixels);
    for (((p, c), (dx, dy)), r) in pts.iter().zip(at).zip(offsets).zip(radii) {
        let col = color(p.i);
        let mark = if meets(p) { col.filled() } else { col.stroke_width(3) };
        let lead = (dy + LABEL as i32 / 2).abs() > LABEL as i32;
        let tip = if dx > 0 {
            (dx - 2, dy + LABEL as i32 / 2)
        } else {
            (dx + label_width(p.case.name.as_str()) + 2, dy + LABEL as i32 / 2)
        };
        let leader: Vec<(i32, i32)> = if lead { vec![(0, 0), tip] } else { Vec::new() };
        // The label and its leader in the point's colour, darkened to read as text: a crowd's
        // labels are told apart by colour, not only by where their lines run.
        let dark = |c: u8| (u16::from(c) * 3 / 4) as u8;
        let ink = RGBColor(dark(col.0), dark(col.1), dark(col.2));
        let el = EmptyElement::at(*c)
            + PathElement::new(leader, ink.stroke_width(1))
            + Circle::new((0, 0), r, mark)
            + Text::new(p.case.name.clone(), (dx, dy), ("sans-serif", LABEL).into_font().color(&ink));
        chart.draw_series(std::iter::once(el))?;
    }
    Ok(())
}

/// The legend's rows: the two markers, then each shaded region.
fn legend<DB: DrawingBackend>(
    strip: &DrawingArea<DB, Shift>,
    items: &[(u8, String)],
    rows: &[Vec<(i32, usize)>],
    shade: RGBColor,
) -> Result<(), super::DrawError> {
    for (r, row) in rows.iter().enumerate() {
        let y = 16 + 26 * r as i32;
        for &(x, k) in row {
            let (kind, label) = &items[k];
            match kind {
                0 => strip.draw(&Circle::new((x + 8, y), 6, BLACK.filled())),
                1 => strip.draw(&Circle::new((x + 8, y), 6, BLACK.stroke_width(2))),
                _ => strip.draw(&Rectangle::new([(x, y - 8), (x + 16, y + 8)], shade.mix(0.25).filled())),
            }?;
            strip.draw(&Text::new(label.clone(), (x + 24, y - 8), ("sans-serif", 15)))?;
        }
    }
    Ok(())
}

/// Each region the cases' gates allow, shaded, its bounds dashed.
fn shade_regions<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    regions: &[(Region, usize)],
    (ax, ay): (&Axis, &Axis),
    shade: RGBColor,
) -> Result<(), super::DrawError> {
    let ((x0, x1), (y0, y1)) = (ax.span(), ay.span());
    for ((xr, yr, _), _) in regions {
        let xa = [xr[0].map_or(x0, |v| ax.to(v)), xr[1].map_or(x1, |v| ax.to(v))];
        let ya = [yr[0].map_or(y0, |v| ay.to(v)), yr[1].map_or(y1, |v| ay.to(v))];
        let rect = [(xa[0].max(x0), ya[0].max(y0)), (xa[1].min(x1), ya[1].min(y1))];
        chart.draw_series(std::iter::once(Rectangle::new(rect, shade.mix(0.14).filled())))?;
        let edge = shade.mix(0.8).stroke_width(2);
        for v in xr.iter().flatten() {
            let u = ax.to(*v);
            let line = vec![(u, rect[0].1), (u, rect[1].1)];
            chart.draw_series(DashedLineSeries::new(line, 8, 6, edge))?;
        }
        for v in yr.iter().flatten() {
            let u = ay.to(*v);
            let line = vec![(rect[0].0, u), (rect[1].0, u)];
            chart.draw_series(DashedLineSeries::new(line, 8, 6, edge))?;
        }
    }
    Ok(())
}

/// A point's spread (its repeats' range) as bars through it, on each axis that has one.
fn spread_bars<DB: DrawingBackend>(
    chart: &mut Plot<'_, DB>,
    pts: &[Point<'_>],
    at: &[(f64, f64)],
    (ax, ay): (&Axis, &Axis),
) -> Result<(), super::DrawError> {
    for (p, &(x, y)) in pts.iter().zip(at) {
        let col = color(p.i);
        let bar = col.stroke_width(2);
        if let Some((lo, hi)) = p.x.range {
            chart.draw_series(std::iter::once(PathElement::new(vec![(ax.to(lo), y), (ax.to(hi), y)], bar)))?;
        }
        if let Some((lo, hi)) = p.y.range {
            chart.draw_series(std::iter::once(PathElement::new(vec![(x, ay.to(lo)), (x, ay.to(hi))], bar)))?;
        }
    }
    Ok(())
}

/// Each marker's radius: 6 pixels, and 3 more for every later point drawn over it (within
/// a marker's width), so points that coincide stay visible as rings around each other.
fn radii(at: &[(i32, i32)]) -> Vec<u32> {
    let near = |a: (i32, i32), b: (i32, i32)| (a.0 - b.0).abs() < 12 && (a.1 - b.1).abs() < 12;
    (0..at.len()).map(|k| 6 + 3 * at[k + 1..].iter().filter(|&&b| near(at[k], b)).count() as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::gate::Gate;

    fn case(name: &str, pickup_ms: f64, idle: f64, gates: &[&str], observed: &[f64]) -> CaseData {
        let mut c = super::super::tests::empty_case(name);
        c.pickup_p50_ms = Some(Spread::one(pickup_ms));
        c.idle_discovery = Some((Spread::one(idle), Counter::IdlePhaseDiscoveryPerMin));
        c.gates = gates.iter().zip(observed).map(|(g, v)| Gate::parse(g).unwrap().evaluate(Some(*v))).collect();
        c
    }

    #[test]
    fn the_region_is_what_the_gates_on_the_two_figures_allow_and_a_band_bounds_nothing() {
        let run = RunData {
            scenario: "s".into(),
            cases: vec![
                case(
                    "prod",
                    93.1,
                    5.17,
                    &["lost == 0", "pickup.p50 < 150ms", "idle_phase_discovery_per_min <= 5.0"],
                    &[0.0, 93_100.0, 5.17],
                ),
                case(
                    "budget",
                    5.0,
                    4.78,
                    &["idle_phase_discovery_per_min >= 4.7", "idle_phase_discovery_per_min <= 4.9"],
                    &[4.78, 4.78],
                ),
                case("none", 236.6, 40.2, &[], &[]),
            ],
            sweeps: Vec::new(),
        };
        let pts = points(&run);
        assert_eq!(pts.len(), 3);
        assert_eq!(
            region(&pts[0]),
            Some((
                [None, Some(5.0)],
                [None, Some(150.0)],
                "pickup.p50 < 150ms and idle_phase_discovery_per_min <= 5.0".into()
            ))
        );
        assert!(!meets(&pts[0]), "5.17 misses the idle budget");
        assert_eq!(region(&pts[1]), None, "a band is an arithmetic check, not a budget");
        assert!(meets(&pts[1]) && meets(&pts[2]));
        assert!(size(&run).is_some());
        let one = RunData { scenario: "s".into(), cases: run.cases.into_iter().take(1).collect(), sweeps: Vec::new() };
        assert!(size(&one).is_none(), "one case is no comparison");
    }

    #[test]
    fn points_that_coincide_are_drawn_as_rings_around_each_other() {
        let at = [(500, 300), (504, 302), (498, 299), (900, 100)];
        assert_eq!(radii(&at), vec![12, 9, 6, 6], "each later point drawn inside the earlier ones");
        let r = radii(&at[..3]);
        assert!(r.windows(2).all(|w| w[0] > w[1]), "{r:?}");
    }

    #[test]
    fn labels_do_not_overlap_each_other_when_points_crowd() {
        let at = [(500, 300), (504, 302), (498, 299), (510, 304)];
        let names = ["window-exec", "window-exec-quiet-idle", "window-exec-both", "window-exec-requests-only"];
        let off = place(&at, &names, (0, 0, 1200, 700));
        let boxes: Vec<Boxed> = at
            .iter()
            .zip(&off)
            .zip(names)
            .map(|((p, o), n)| (p.0 + o.0, p.1 + o.1, label_width(n), LABEL as i32 + 2))
            .collect();
        for (a, b) in boxes.iter().enumerate().flat_map(|(k, a)| boxes[k + 1..].iter().map(move |b| (a, b))) {
            assert!(!overlaps(*a, *b), "{a:?} {b:?}");
        }
    }
}
