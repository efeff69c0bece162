//! Charts of a run directory, as PNG and SVG beside `summary.json` (in `charts/`), and as
//! SVG text for report.html: the latency percentile spectrum ([`percentiles`]), where a
//! call's time goes ([`breakdown`]), discovery requests over time ([`requests`]), the fleet
//! over time ([`fleet`]), pickup over time with fault windows shaded ([`faults`]), and the
//! decision chart: pickup against idle discovery per case, the gate region shaded
//! ([`decision`]). Every chart is one file and a variant of [`Chart`] ([`CHARTS`] lists them);
//! besides them, each figure of a sweep against the swept value ([`sweep`]), a chart per
//! figure of the run's sweeps.
//! They are drawn from the run directory's files alone (`summary.json` and the `.hlog`
//! interval logs), so `relay-bench report DIR` re-renders them; text uses the embedded
//! DejaVu Sans, so no system font library is needed.

mod breakdown;
mod decision;
mod faults;
mod fleet;
mod percentiles;
mod requests;
mod scale;
mod sweep;

pub(crate) use scale::{clip, grid, Axis, Plot};

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::record::recorder::Measure;
use crate::report::export::hdr::{read_hlog, total, Interval, HLOG};
use crate::report::output::{Input, Staged, WriteError};
use crate::results::summary::{CaseResult, Summary};
use crate::scenario::gate::{Counter, GateResult, Metric};

/// The chart width and height in pixels.
pub(crate) const SIZE: (u32, u32) = (1200, 720);

/// A figure with its spread over a run's repeats: the median and (min, max); a run of one
/// has no spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spread {
    pub mid: f64,
    pub range: Option<(f64, f64)>,
}

impl Spread {
    /// A figure measured once.
    #[cfg(test)]
    pub(crate) fn one(v: f64) -> Spread {
        Spread { mid: v, range: None }
    }

    /// The lowest and highest the figure was (the figure itself without repeats).
    pub(crate) fn bounds(&self) -> (f64, f64) {
        self.range.unwrap_or((self.mid, self.mid))
    }
}

/// One case's figures, as the charts need them.
pub(crate) struct CaseData {
    pub name: String,
    /// Per measure: the whole-case histogram and, for pickup, its intervals.
    pub hists: Vec<(String, hdrhistogram::Histogram<u64>)>,
    pub pickup_intervals: Vec<Interval>,
    /// Means in ms: wake, post-wake round trips, handler, answer publication, hop 1.
    pub breakdown: Option<[f64; 5]>,
    /// (seconds, discovery requests per minute per dir).
    pub timeline: Vec<(f64, f64)>,
    /// Thresholds of the case's discovery-rate gates: (gate text, value).
    pub rate_gates: Vec<(String, f64)>,
    /// (kind, from s, to s).
    pub faults: Vec<(String, f64, f64)>,
    pub requests_measured: bool,
    /// The fleet's timeline and the organisation's held-exec limit, when the case's fleet is
    /// worth a chart (agent turns, limits, a fleet-wide fault).
    pub fleet: Option<(Vec<crate::results::fleet::FleetPoint>, Option<u32>)>,
    /// Pickup p50 in ms, when measured.
    pub pickup_p50_ms: Option<Spread>,
    /// Idle discovery requests per minute per relay dir and the gate counter that reads it:
    /// over the idle phases when the workload has any, else over the idle stretches; `None`
    /// when not measured (a black-box runner) or no such stretch happened.
    pub idle_discovery: Option<(Spread, Counter)>,
    /// The case's gates and its rollout gates, as judged.
    pub gates: Vec<GateResult>,
    /// A point of a sweep: drawn on its sweep's charts, not among the cases.
    pub swept: bool,
}

/// A plotters drawing that failed, as the backend said it (the backends' error types differ).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct DrawError(pub String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for DrawError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        DrawError(e.to_string())
    }
}

/// Why a run's charts could not be drawn: the file at fault, and why.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChartError {
    #[error(transparent)]
    Summary(#[from] crate::results::summary::SummaryError),
    #[error("{why} (summary.json counts {samples} samples)")]
    NoLog { why: crate::base::fsio::BoundedReadError, samples: u64 },
    #[error("{path}: {why}")]
    Log { path: String, why: crate::report::export::hdr::HlogError },
    #[error("{at}: {why}")]
    Draw { at: String, why: DrawError },
    /// The staging area refused a file (its own message: report/output.rs).
    #[error("{0}")]
    Staged(WriteError),
}

/// A run directory's data.
pub(crate) struct RunData {
    pub scenario: String,
    pub cases: Vec<CaseData>,
    /// Its sweeps, with the gates on each figure.
    pub sweeps: Vec<sweep::SweepData>,
}

impl CaseData {
    /// The charts' view of one case: its figures from the summary, its histograms from the
    /// interval logs under `dir/hdr/<case>/`.
    fn of(c: &CaseResult, dir: &Path) -> Result<CaseData, ChartError> {
        let mut hists = Vec::new();
        let mut pickup_intervals = Vec::new();
        for m in Measure::SPEC {
            let p = dir.join("hdr").join(&c.case).join(format!("{}.hlog", m.name()));
            let bytes = match crate::base::fsio::read_bounded(&p, HLOG) {
                Ok(b) => b,
                // Nothing measured, nothing to draw (a black-box runner's wake).
                Err(_) if c.latency(m).count == 0 => continue,
                Err(why) => return Err(ChartError::NoLog { why, samples: c.latency(m).count }),
            };
            let ivs = read_hlog(&bytes).map_err(|why| ChartError::Log { path: p.display().to_string(), why })?;
            if let Some(h) = total(&ivs) {
                hists.push((m.name().to_owned(), h));
            }
            if m == Measure::Pickup {
                pickup_intervals = ivs;
            }
        }
        let breakdown = c.breakdown_ms();
        let q = &c.requests;
        let (idle, counter) = match &q.idle_relay {
            _ if q.idle_phases.minutes > 0.0 => (&q.idle_phases, Counter::IdlePhaseDiscoveryPerMin),
            Some(live) if live.minutes > 0.0 => (live, Counter::IdleDiscoveryPerMin),
            _ => (&q.idle, Counter::IdleDirDiscoveryPerMin),
        };
        let idle_figure = counter.name();
        // A repeated case's figure is the median, its range the lowest and highest repeat's.
        let spread = |figure: &str, mid: f64, per: f64| Spread {
            mid,
            range: c.repeat.as_ref().and_then(|p| p.get(figure)).map(|s| (s.min / per, s.max / per)),
        };
        Ok(CaseData {
            name: c.case.clone(),
            hists,
            pickup_intervals,
            breakdown,
            timeline: c.requests.timeline.iter().map(|p| (p.t_secs, p.discovery_per_min)).collect(),
            rate_gates: c
                .gates
                .iter()
                .chain(&c.rollout)
                .filter(|g| matches!(g.gate.metric, Metric::Count(k) if k.is_discovery_rate()))
                .map(|g| (g.gate.expr.clone(), g.gate.threshold))
                .collect(),
            faults: c.faults.iter().map(|f| (f.kind.clone(), f.at_secs, f.until_secs)).collect(),
            requests_measured: !c.requests.not_measured,
            fleet: crate::report::export::fleet::telling(c)
                .filter(|f| f.org_measured && !f.timeline.is_empty())
                .map(|f| (f.timeline.clone(), f.held_exec_limit)),
            pickup_p50_ms: (c.latency(Measure::Pickup).count > 0)
                .then(|| spread("pickup.p50", c.latency(Measure::Pickup).p50 / 1000.0, 1000.0)),
            idle_discovery: idle.rate().filter(|_| !q.not_measured).map(|v| (spread(idle_figure, v, 1.0), counter)),
            gates: c.gates.iter().chain(&c.rollout).cloned().collect(),
            swept: false,
        })
    }
}

impl RunData {
    /// Reads `summary.json` and the interval logs under `hdr/`.
    pub(crate) fn load(dir: &Path) -> Result<RunData, ChartError> {
        let summary = Summary::read(&dir.join("summary.json"))?;
        let mut cases: Vec<CaseData> =
            summary.results.iter().map(|c| CaseData::of(c, dir)).collect::<Result<_, _>>()?;
        for c in &mut cases {
            c.swept = summary.sweeps.iter().any(|w| w.points.iter().any(|p| p.case == c.name));
        }
        let sweeps = summary
            .sweeps
            .iter()
            .map(|w| {
                let gates = w
                    .figures
                    .iter()
                    .map(|m| {
                        let mut on: Vec<(String, f64)> = Vec::new();
                        let points = summary.results.iter().filter(|r| w.points.iter().any(|p| p.case == r.case));
                        for g in points.flat_map(|r| r.gates.iter().chain(&r.rollout)).filter(|g| g.gate.metric == *m) {
                            if !on.iter().any(|(t, _)| *t == g.gate.expr) {
                                on.push((g.gate.expr.clone(), g.gate.threshold));
                            }
                        }
                        on
                    })
                    .collect();
                sweep::SweepData { sweep: w.clone(), gates }
            })
            .collect();
        Ok(RunData { scenario: summary.scenario, cases, sweeps })
    }
}

/// Registers the embedded font once.
fn font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, bytes);
    });
}

/// A log axis label: only 1, 2 and 5 times a power of ten are written (the other ticks
/// stay as grid lines), so labels never crowd whatever the range.
pub(crate) fn log_label(y: &f64) -> String {
    if *y <= 0.0 {
        return String::new();
    }
    let mut e = y.log10().floor();
    let mut m = y / 10f64.powf(e);
    if m >= 9.8 {
        // 9.99999: the 10 it stands for.
        e += 1.0;
        m /= 10.0;
    }
    if ![1.0, 2.0, 5.0].iter().any(|k| (m - k).abs() < 0.02) {
        return String::new();
    }
    // The 1, 2 or 5 the tick stands for (a tick a tenth of a decade apart is 10^0.7 = 5.01).
    let y = m.round() * 10f64.powf(e);
    if y >= 1.0 {
        format!("{y:.0}")
    } else {
        let digits = (-e) as usize;
        format!("{y:.digits$}")
    }
}

/// A distinct color per case.
pub(crate) fn color(i: usize) -> RGBColor {
    const P: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    P[i % P.len()]
}

/// One legend entry: label, color, and whether its line is dashed (a gate).
pub(crate) struct Entry {
    pub label: String,
    pub color: RGBColor,
    pub dashed: bool,
}

/// `entries` with each repeated entry (the same label, color and dash) kept once.
fn distinct(entries: &[Entry]) -> Vec<&Entry> {
    let mut out: Vec<&Entry> = Vec::new();
    for e in entries {
        if !out.iter().any(|o| o.label == e.label && o.color == e.color && o.dashed == e.dashed) {
            out.push(e);
        }
    }
    out
}

/// Legend items of these widths (in pixels) laid out in rows across `width`, each row from
/// x = 10: each row's (x, item).
fn legend_rows(widths: impl IntoIterator<Item = i32>, width: u32) -> Vec<Vec<(i32, usize)>> {
    let mut rows: Vec<Vec<(i32, usize)>> = vec![Vec::new()];
    let mut x = 10i32;
    for (k, w) in widths.into_iter().enumerate() {
        if x + w > width as i32 && x > 10 {
            rows.push(Vec::new());
            x = 10;
        }
        rows.last_mut().expect("a row").push((x, k));
        x += w;
    }
    rows
}

/// The most rows a legend takes: a sweep of hundreds of points names the first, then how
/// many more (summary.md lists them all), and the chart keeps its height.
const LEGEND_ROWS: u32 = 8;

/// Draws a legend as rows of entries in a strip of its own along `root`'s bottom (its top
/// when `top`), so it never covers a line; an entry given twice is drawn once. Returns the
/// rest of `root`, for the chart.
pub(crate) fn legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    top: bool,
) -> Result<DrawingArea<DB, Shift>, DrawError> {
    let all = distinct(entries);
    let (width, height) = root.dim_in_pixel();
    let rows = legend_rows(all.iter().map(|e| 40 + 9 * e.label.chars().count() as i32), width);
    let strip = 10 + 26 * (rows.len() as u32).min(LEGEND_ROWS);
    let (area, body) = if top {
        root.split_vertically(strip)
    } else {
        let (body, area) = root.split_vertically(height - strip);
        (area, body)
    };
    for (r, row) in rows.iter().enumerate() {
        let y = 18 + 26 * r as i32;
        if r as u32 + 1 == LEGEND_ROWS && all.len() - row[0].1 > 1 {
            let more = format!("... and {} more (summary.md names them all)", all.len() - row[0].1);
            area.draw(&Text::new(more, (10, y - 8), ("sans-serif", 15)))?;
            break;
        }
        for &(x, k) in row {
            let en = all[k];
            let style = en.color.stroke_width(if en.dashed { 1 } else { 3 });
            if en.dashed {
                for k in 0..3 {
                    area.draw(&PathElement::new(vec![(x + k * 9, y), (x + k * 9 + 5, y)], style))?;
                }
            } else {
                area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], style))?;
            }
            area.draw(&Text::new(en.label.clone(), (x + 30, y - 8), ("sans-serif", 15)))?;
        }
    }
    Ok(body)
}

/// Writes `charts/<chart>.png` and `.svg`, drawn from the run directory's own files: what
/// [`crate::report::publish::RunOutput::Charts`] renders.
pub(crate) fn write(input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
    RunData::load(input.dir).and_then(|run| render(&run, out)).map_err(|e| match e {
        // The staging area's own error (a file refused, a full disk) stays what it is.
        ChartError::Staged(w) => w,
        e @ (ChartError::Log { .. } | ChartError::NoLog { .. }) => WriteError::Damaged(Box::new(e)),
        e => WriteError::render(e),
    })
}

/// One chart: its file name, what it shows, whether it is drawn for a run and how big, and
/// its drawing on either backend (one generic `draw` in its file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Chart {
    Decision,
    Percentiles,
    Breakdown,
    Requests,
    Fleet,
    Faults,
}

/// Every chart, in the order a reader meets them.
pub(crate) const CHARTS: [Chart; 6] =
    [Chart::Decision, Chart::Percentiles, Chart::Breakdown, Chart::Requests, Chart::Fleet, Chart::Faults];

impl Chart {
    /// Its stem (its files are `charts/<stem>.png` and `.svg`) and what it shows, as a caption.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Chart::Decision => {
                ("decision", "the decision: pickup p50 against idle discovery per case, the gate region shaded")
            }
            Chart::Percentiles => ("latency-percentiles", "latency by percentile"),
            Chart::Breakdown => ("time-breakdown", "where a call's time goes"),
            Chart::Requests => ("discovery-over-time", "discovery requests over time"),
            Chart::Fleet => ("fleet-over-time", "the fleet over time: held execs, demoted turns, requests per second"),
            Chart::Faults => ("faults-pickup-over-time", "pickup over time, faults shaded"),
        }
    }

    /// Its size in pixels for `run`; `None`: `run` has nothing for it to show.
    fn size(self, run: &RunData) -> Option<(u32, u32)> {
        match self {
            Chart::Decision => decision::size(run),
            Chart::Percentiles => percentiles::size(run),
            Chart::Breakdown => breakdown::size(run),
            Chart::Requests => requests::size(run),
            Chart::Fleet => fleet::size(run),
            Chart::Faults => faults::size(run),
        }
    }

    /// Draws it on `root`, whichever the backend.
    fn draw<DB: DrawingBackend>(self, root: &DrawingArea<DB, Shift>, run: &RunData) -> Result<(), DrawError> {
        match self {
            Chart::Decision => decision::draw(root, run),
            Chart::Percentiles => percentiles::draw(root, run),
            Chart::Breakdown => breakdown::draw(root, run),
            Chart::Requests => requests::draw(root, run),
            Chart::Fleet => fleet::draw(root, run),
            Chart::Faults => faults::draw(root, run),
        }
    }
}

/// Stages every chart of `run` under `charts/`.
fn render(run: &RunData, out: &mut Staged) -> Result<(), ChartError> {
    font();
    for c in CHARTS {
        let Some(size) = c.size(run) else { continue };
        stage_pair(out, c.names().0, size, |root| c.draw(root, run), |root| c.draw(root, run))?;
    }
    for c in sweep_charts(run) {
        let draw_png = |root: &DrawingArea<BitMapBackend<'_>, Shift>| sweep::draw(root, run, c.sweep, c.figure);
        let draw_svg = |root: &DrawingArea<SVGBackend<'_>, Shift>| sweep::draw(root, run, c.sweep, c.figure);
        stage_pair(out, &c.stem, SIZE, draw_png, draw_svg)?;
    }
    Ok(())
}

/// Stages `charts/<stem>.png` and `.svg` at `size`, each drawn on its backend and presented;
/// an error names the file it was drawing.
fn stage_pair(
    out: &mut Staged,
    stem: &str,
    size: (u32, u32),
    png: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), DrawError>,
    svg: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), DrawError>,
) -> Result<(), ChartError> {
    let png_at = out.draw(format!("charts/{stem}.png")).map_err(ChartError::Staged)?;
    let svg_at = out.draw(format!("charts/{stem}.svg")).map_err(ChartError::Staged)?;
    let failed = |at: &std::path::Path| {
        let at = at.display().to_string();
        move |why: DrawError| ChartError::Draw { at, why }
    };
    {
        let root = BitMapBackend::new(&png_at, size).into_drawing_area();
        png(&root).and_then(|()| root.present().map_err(|e| DrawError(e.to_string()))).map_err(failed(&png_at))?;
    }
    let root = SVGBackend::new(&svg_at, size).into_drawing_area();
    svg(&root).and_then(|()| root.present().map_err(|e| DrawError(e.to_string()))).map_err(failed(&svg_at))
}

/// One chart of a sweep: a figure against the swept value.
struct SweepChart {
    stem: String,
    title: String,
    /// The sweep's index in the run, and the figure's in the sweep.
    sweep: usize,
    figure: usize,
}

/// A chart per figure of each sweep of `run` that has a value to draw, named after the
/// sweep and the figure.
fn sweep_charts(run: &RunData) -> Vec<SweepChart> {
    let mut out = Vec::new();
    for (j, w) in run.sweeps.iter().enumerate() {
        for (k, m) in w.sweep.figures.iter().enumerate().filter(|(k, _)| sweep::drawable(&w.sweep, *k)) {
            let title = format!("{} against the swept value (sweep {})", m.name(), w.sweep.case);
            out.push(SweepChart { stem: w.sweep.chart_stem(*m), title, sweep: j, figure: k });
        }
    }
    out
}

/// A chart drawn as SVG text, for a page to hold inline.
pub(crate) struct Inline {
    pub stem: String,
    pub title: String,
    /// The `<svg>` element, as plotters writes it (its text escaped).
    pub svg: String,
}

/// Every chart of `run` as SVG text, in [`CHARTS`] order, then each sweep's.
pub(crate) fn inline(run: &RunData) -> Result<Vec<Inline>, ChartError> {
    font();
    let mut out = Vec::new();
    for c in CHARTS {
        let Some(size) = c.size(run) else { continue };
        let (stem, title) = c.names();
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
            c.draw(&root, run).map_err(|why| ChartError::Draw { at: stem.to_owned(), why })?;
            root.present().map_err(|e| ChartError::Draw { at: stem.to_owned(), why: DrawError(e.to_string()) })?;
        }
        out.push(Inline { stem: stem.to_owned(), title: title.to_owned(), svg });
    }
    for c in sweep_charts(run) {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            sweep::draw(&root, run, c.sweep, c.figure).map_err(|why| ChartError::Draw { at: c.stem.clone(), why })?;
            root.present().map_err(|e| ChartError::Draw { at: c.stem.clone(), why: DrawError(e.to_string()) })?;
        }
        out.push(Inline { stem: c.stem, title: c.title, svg });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case with nothing measured, for a chart's tests to fill in.
    pub(super) fn empty_case(name: &str) -> CaseData {
        CaseData {
            name: name.into(),
            hists: Vec::new(),
            pickup_intervals: Vec::new(),
            breakdown: None,
            timeline: Vec::new(),
            rate_gates: Vec::new(),
            faults: Vec::new(),
            requests_measured: true,
            fleet: None,
            pickup_p50_ms: None,
            idle_discovery: None,
            gates: Vec::new(),
            swept: false,
        }
    }

    #[test]
    fn an_archived_run_loads_with_its_rate_gates() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/archived-run");
        let run = RunData::load(&dir).unwrap();
        let w = run.cases.iter().find(|c| c.name == "window-exec").unwrap();
        assert_eq!(w.rate_gates, vec![("idle_phase_discovery_per_min <= 5.0".to_string(), 5.0)]);
        assert!(w.requests_measured && !w.timeline.is_empty() && w.breakdown.is_some());
        assert_eq!(w.hists.len(), 3, "wake, pickup and completion from the interval logs");
        let poll = run.cases.iter().find(|c| c.name == "poll-only").unwrap();
        assert!(poll.rate_gates.is_empty());
    }

    #[test]
    fn a_missing_interval_log_the_summary_counts_samples_for_is_an_error() {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/archived-run");
        let to = tempfile::tempdir().unwrap();
        std::fs::copy(from.join("summary.json"), to.path().join("summary.json")).unwrap();
        let e = RunData::load(to.path()).err().expect("no interval logs at all");
        let e = e.to_string();
        assert!(e.contains("wake.hlog") && e.contains("summary.json counts"), "{e}");
    }
}
