//! `relay-bench compare OLD NEW`: two run directories side by side, case by case, every
//! figure a rollout is judged by, with a verdict that knows which way is worse and accounts
//! for noise.
//!
//! The figures ([`figures`]): the p50 and p99 of wake, pickup and completion; discovery
//! requests per minute over the whole window, the idle part and the active part; data
//! requests per minute and requests per answered call; the fleet's capacity figures (held
//! execs, requests per second, rejected, queued and cut requests, demoted turns, recovery);
//! and every other figure a gate of either run names.
//!
//! Each figure is judged against a noise model of its kind ([`noise`]): a latency quantile
//! against the 95 % bootstrap interval of its ratio ([`bootstrap`], or the repeats' spread
//! under `--repeat`), a rate or a count against its Poisson interval, a maximum only past a
//! stated margin, an invariant exactly. A regression needs both: past the threshold and
//! past the noise. A quantile over fewer samples than it needs
//! ([`crate::record::recorder::samples_needed`]) in either run is shown, marked, and not
//! judged. A real-clock latency is also held against each run's own measured floor (how late
//! the machine ran what was due, [`noise::Floor`]): a busier machine on the second run is
//! not a regression of the code. Which side is worse is the figure's own
//! ([`figures::Better`]): more of a latency, a request rate or a rejection is a regression;
//! more completed calls is not. Figures a scenario does not have (a fleet's, where the case
//! has no agent turns, limits or fleet-wide faults) are not compared.
//!
//! Before any figure, the comparison says what differs between the two runs (scenario,
//! seeds, options, clock, overrides: [`context`]) and each run's own verdict; a case of OLD
//! that NEW lacks fails the comparison, as a regression does.
//!
//! Runs whose environments differ (kernel, filesystem, cpus, build profile, suite version)
//! are compared with a warning, or refused with `--strict`. Never a silent gap: runs that
//! share no case are refused; a run that was interrupted is warned of; a histogram
//! summary.json counts samples for but the run directory lacks is an error; a figure one run
//! did not take, or took under another definition (a black-box runner's pickup is timed to
//! another point than the suite's runner's), gets a line saying so instead of a ratio.
//! Every file is read bounded (summary.json and the `.hlog` files: regular files, no link
//! followed, a size cap), as baselines from elsewhere are untrusted input.

mod bootstrap;
mod console;
pub(crate) mod context;
pub(crate) mod figures;
mod json;
mod markdown;
pub(crate) mod noise;
mod threshold;

use std::path::Path;

use serde::Serialize;

pub(crate) use bootstrap::ratio_interval;
pub(crate) use threshold::{Threshold, ThresholdError};

use crate::record::recorder::{samples_needed, LatencyStats, Measure};
use crate::results::summary::{CaseResult, Summary, SummaryError};
use crate::scenario::gate::{FleetMetric, Metric};
use context::{Difference, RunVerdict};
use figures::{Better, Figure, Kind};
use noise::{Floor, Model};

/// Why two runs cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Unreadable(#[from] SummaryError),
    #[error("{old} and {new} share no case: OLD has {old_cases}; NEW has {new_cases}; compare runs of the same cases")]
    NoCommonCase { old: String, new: String, old_cases: String, new_cases: String },
    #[error(
        "{path}: {why}; summary.json counts {count} {measure} samples of case {case:?}, so this histogram is needed"
    )]
    MissingHistogram { path: String, case: String, measure: &'static str, count: u64, why: String },
    #[error("{path}: case {case:?}: {figure} is {value}; {why}")]
    Impossible { path: String, case: String, figure: String, value: f64, why: &'static str },
}

/// How one figure of one case moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Change {
    pub case: String,
    /// The figure's name (`pickup.p99`, `idle_phase_discovery_per_min`, `fleet.rejected`).
    pub figure: String,
    /// Its unit (`ms`, `/min`, `s`, ...; empty for a count).
    pub unit: &'static str,
    pub better: Better,
    pub old: f64,
    pub new: f64,
    /// NEW / OLD; `None` when OLD is 0.
    pub ratio: Option<f64>,
    /// The ratio's 95 % bootstrap interval (latency quantiles only).
    pub interval: Option<[f64; 2]>,
    /// The samples behind a latency quantile: OLD's and NEW's.
    pub samples: Option<[u64; 2]>,
    /// The noise model the verdict was reached with.
    pub model: Model,
    /// A real-clock latency's floor in each run (ms), which the verdict was held against.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<Floor>,
    pub verdict: Verdict,
}

crate::base::named! {
/// A figure's verdict; its name is the word the console and the markdown say it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Verdict {
    /// Worse past the threshold (for a quantile: its whole interval).
    Regression,
    /// Better past the threshold.
    Improvement,
    /// Within the threshold, or an interval that reaches into it.
    Noise,
    /// A quantile over fewer samples than it needs in either run: shown, not judged.
    TooFewSamples,
    /// A figure set by the workload, with no better side: shown, not judged.
    NotJudged,
    /// A real-clock latency past the threshold and its noise, but by no more than the
    /// machine's own floor moved: the load explains it, not the code.
    WithinFloor,
}
names ["REGRESSION", "improvement", "noise", "too few samples", "not judged", "within floor"]
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Comparison {
    /// The run directories, as given.
    pub old: String,
    pub new: String,
    pub threshold: Threshold,
    /// Each run's own verdict: OLD's, NEW's.
    pub verdicts: [RunVerdict; 2],
    /// What differs between the runs besides time: scenario, seeds, options, clock.
    pub differs: Vec<Difference>,
    pub changes: Vec<Change>,
    /// Environment fields that differ.
    pub env_diff: Vec<EnvDiff>,
    /// Cases in only one of the runs.
    pub unmatched: Vec<String>,
    /// Cases of OLD that NEW lacks: nothing measured for them, so the comparison fails.
    pub missing_from_new: Vec<String>,
    /// Figures of a case in both runs that are not compared, and why.
    pub skipped: Vec<Skipped>,
    /// Figures 0 in both runs, left out of `changes`: how many.
    pub zero_in_both: usize,
    /// What the reader must know first (a run that was interrupted).
    pub warnings: Vec<String>,
}

/// An environment field whose value differs between the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct EnvDiff {
    pub field: String,
    pub old: String,
    pub new: String,
}

/// A figure of a case that is in both runs but has no ratio.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Skipped {
    pub case: String,
    pub figure: String,
    pub why: String,
}

impl Comparison {
    fn count(&self, v: Verdict) -> usize {
        self.changes.iter().filter(|c| c.verdict == v).count()
    }

    pub(crate) fn regressions(&self) -> usize {
        self.count(Verdict::Regression)
    }

    pub(crate) fn improvements(&self) -> usize {
        self.count(Verdict::Improvement)
    }

    /// Whether the comparison fails (exit 1): a regression, or a case of OLD missing from NEW.
    pub(crate) fn fails(&self) -> bool {
        self.regressions() > 0 || !self.missing_from_new.is_empty()
    }

    /// Says why a figure of `case` was not compared.
    fn skip(&mut self, case: &str, figure: &str, why: String) {
        self.skipped.push(Skipped { case: case.to_owned(), figure: figure.to_owned(), why });
    }

    /// Says why a measure of `case` was not compared: one line per measure, not per quantile.
    fn skip_measure(&mut self, case: &str, m: Measure, why: String) {
        if !self.skipped.iter().any(|s| s.case == case && s.figure == m.name()) {
            self.skip(case, m.name(), why);
        }
    }
}

crate::base::named! {
/// How a comparison is written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Format {
    /// A table for the console (100 columns).
    #[default]
    Table,
    /// GitHub-flavoured markdown, for a pull request's comment or a job summary.
    Markdown,
    /// JSON (`reports/compare.schema.json`).
    Json,
}
names ["table", "md", "json"]
}

/// A `--format` no comparison is written in; the error lists those it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?}; allowed: {allowed}", allowed = Format::NAMES.join(", "))]
pub(crate) struct UnknownFormat(pub String);

impl Format {
    /// The format named `s` (`markdown` is `md`'s other name).
    pub(crate) fn parse(s: &str) -> Result<Format, UnknownFormat> {
        Format::from_name(if s == "markdown" { "md" } else { s }).ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// The comparison in `format`.
pub(crate) fn render(c: &Comparison, format: Format) -> String {
    match format {
        Format::Table => console::render(c),
        Format::Markdown => markdown::render(c),
        Format::Json => json::render(c),
    }
}

/// Compares two run directories.
pub(crate) fn compare(old_dir: &Path, new_dir: &Path, threshold: Threshold) -> Result<Comparison, CompareError> {
    let read = |dir: &Path| Summary::read(dir).map_err(CompareError::Unreadable);
    let (old, new) = (read(old_dir)?, read(new_dir)?);
    let pairs = common_cases(&old, &new, old_dir, new_dir)?;
    let mut warnings: Vec<String> =
        [interrupted("OLD", &old), interrupted("NEW", &new)].into_iter().flatten().collect();
    warnings.extend(context::across_scenarios(&old, &new, &pairs));
    let mut out = Comparison {
        old: old_dir.display().to_string(),
        new: new_dir.display().to_string(),
        threshold,
        verdicts: [RunVerdict::of(&old), RunVerdict::of(&new)],
        differs: context::differences(&old, &new, &pairs),
        changes: Vec::new(),
        env_diff: env_diff(&old, &new),
        unmatched: Vec::new(),
        missing_from_new: Vec::new(),
        skipped: Vec::new(),
        zero_in_both: 0,
        warnings,
    };
    for (o, n) in pairs {
        compare_case(&mut out, (old_dir, &old, o), (new_dir, &new, n))?;
    }
    for n in new.results.iter().filter(|n| !old.results.iter().any(|o| o.case == n.case)) {
        out.unmatched.push(format!("{} (only in NEW)", n.case));
    }
    for o in old.results.iter().filter(|o| !new.results.iter().any(|n| n.case == o.case)) {
        out.unmatched.push(format!("{} (only in OLD)", o.case));
        out.missing_from_new.push(o.case.clone());
    }
    Ok(out)
}

/// The cases both runs have, in NEW's order; none is an error, not an empty comparison.
fn common_cases<'a>(
    old: &'a Summary,
    new: &'a Summary,
    old_dir: &Path,
    new_dir: &Path,
) -> Result<Vec<(&'a CaseResult, &'a CaseResult)>, CompareError> {
    let pairs: Vec<_> =
        new.results.iter().filter_map(|n| old.results.iter().find(|o| o.case == n.case).map(|o| (o, n))).collect();
    if pairs.is_empty() {
        let names = |s: &Summary| {
            let v: Vec<&str> = s.results.iter().map(|r| r.case.as_str()).collect();
            if v.is_empty() {
                "no case".to_owned()
            } else {
                v.join(", ")
            }
        };
        return Err(CompareError::NoCommonCase {
            old: old_dir.display().to_string(),
            new: new_dir.display().to_string(),
            old_cases: names(old),
            new_cases: names(new),
        });
    }
    Ok(pairs)
}

/// Environment fields that differ.
fn env_diff(old: &Summary, new: &Summary) -> Vec<EnvDiff> {
    let (eo, en) = (&old.environment, &new.environment);
    let fields = [
        ("kernel", eo.kernel.clone(), en.kernel.clone()),
        ("relay_fs", eo.relay_fs.clone(), en.relay_fs.clone()),
        ("cpus", eo.cpus.to_string(), en.cpus.to_string()),
        ("build", eo.build.clone(), en.build.clone()),
        ("version", old.tool.version.clone(), new.tool.version.clone()),
    ];
    fields
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(f, a, b)| EnvDiff { field: f.to_owned(), old: a, new: b })
        .collect()
}

/// A warning when the run `side` was interrupted: its figures are partial.
fn interrupted(side: &str, s: &Summary) -> Option<String> {
    let cut: Vec<&str> = s.results.iter().filter(|r| r.interrupted).map(|r| r.case.as_str()).collect();
    if !s.interrupted && cut.is_empty() {
        return None;
    }
    let which = if cut.is_empty() { String::new() } else { format!(" (cut short: {})", cut.join(", ")) };
    Some(format!("the {side} run was interrupted: its figures are partial{which}"))
}

/// Why a figure measured in at most one run gets no ratio.
fn missing_in(o: bool, n: bool) -> Option<&'static str> {
    match (o, n) {
        (false, false) => Some("not measured in either run"),
        (false, true) => Some("not measured in OLD"),
        (true, false) => Some("not measured in NEW"),
        (true, true) => None,
    }
}

/// Why a latency measure of a case in both runs gets no ratio, if it does not.
fn latency_not_comparable(o: &CaseResult, n: &CaseResult, m: Measure) -> Option<String> {
    if let Some(why) = missing_in(o.latency(m).count > 0, n.latency(m).count > 0) {
        return Some(why.into());
    }
    let (po, pn) = (o.pickup_defined_as(), n.pickup_defined_as());
    (m == Measure::Pickup && po != pn)
        .then(|| format!("timed differently: OLD {}; NEW {}", po.describe(), pn.describe()))
}

/// A plain figure's value in a case, refused when no run could have measured it (a negative
/// rate, count or time; not a number): a summary.json from elsewhere is untrusted input.
fn plain_value(dir: &Path, r: &CaseResult, f: &Figure, source: Metric) -> Result<Option<f64>, CompareError> {
    let v = figures::read(r, source);
    match v {
        Some(x) if !x.is_finite() || x < 0.0 => Err(CompareError::Impossible {
            path: dir.join("summary.json").display().to_string(),
            case: r.case.clone(),
            figure: f.name.clone(),
            value: x,
            why: "no run measures that (every figure compared is a rate, a count, a time or a share, never \
                  negative): the file was not written by relay-bench, or was edited",
        }),
        v => Ok(v),
    }
}

/// The spreads of a figure in both runs' repeats, when both have them.
fn spreads<'a>(
    o: &'a CaseResult,
    n: &'a CaseResult,
    name: &str,
) -> Option<(&'a crate::results::repeat::Spread, &'a crate::results::repeat::Spread)> {
    Some((o.repeat.as_ref()?.get(name)?, n.repeat.as_ref()?.get(name)?))
}

/// Compares every figure of one case.
fn compare_case(
    out: &mut Comparison,
    (old_dir, so, o): (&Path, &Summary, &CaseResult),
    (new_dir, sn, n): (&Path, &Summary, &CaseResult),
) -> Result<(), CompareError> {
    let t = out.threshold.fraction();
    let name = n.case.as_str();
    // Latencies on two clocks are two measures: the simulated one is not this machine's.
    let clocks_differ = o.clock != n.clock;
    if clocks_differ {
        out.skip(
            name,
            "latencies",
            format!("OLD ran on the {} clock, NEW on the {}: not one measure", o.clock.name(), n.clock.name()),
        );
    }
    // Each measure's histograms, read once for all its quantiles.
    let mut hists: Vec<(Measure, hdrhistogram::Histogram<u64>, hdrhistogram::Histogram<u64>)> = Vec::new();
    for (k, f) in figures::figures(o, n).iter().enumerate() {
        let ((vo, vn), samples, (model, interval, verdict, floor)) = match f.kind {
            Kind::Quantile(m, stat) => {
                if clocks_differ {
                    continue;
                }
                if let Some(why) = latency_not_comparable(o, n, m) {
                    out.skip_measure(name, m, why);
                    continue;
                }
                if !hists.iter().any(|(x, ..)| *x == m) {
                    let ho = bootstrap::hist(old_dir, name, m, o.latency(m).count)?;
                    let hn = bootstrap::hist(new_dir, name, m, n.latency(m).count)?;
                    hists.push((m, ho, hn));
                }
                let (_, ho, hn) = hists.iter().find(|(x, ..)| *x == m).expect("read above");
                quantile_change(f, (so, o, ho), (sn, n, hn), (stat, 0x5EED + k as u64), t)
            }
            Kind::Plain(source) => {
                let latency = match source {
                    Metric::Latency(_, stat) => Some(stat),
                    _ => None,
                };
                if latency.is_some() && clocks_differ {
                    continue;
                }
                let (vo, vn) = (plain_value(old_dir, o, f, source)?, plain_value(new_dir, n, f, source)?);
                let (vo, vn) = match (vo, vn) {
                    (Some(a), Some(b)) => (a, b),
                    (None, None) if !f.core => continue,
                    _ => {
                        let why = missing_in(vo.is_some(), vn.is_some()).expect("one is missing");
                        out.skip(name, &f.name, why.into());
                        continue;
                    }
                };
                if vo == 0.0 && vn == 0.0 {
                    out.zero_in_both += 1;
                    continue;
                }
                ((vo, vn), None, judge_plain(f, source, latency, (so, o), (sn, n), (vo, vn), t))
            }
        };
        out.changes.push(Change {
            case: name.to_owned(),
            figure: f.name.clone(),
            unit: f.unit,
            better: f.better,
            old: vo,
            new: vn,
            ratio: (vo != 0.0).then(|| vn / vo),
            interval,
            samples,
            model,
            floor,
            verdict,
        });
    }
    Ok(())
}

/// A latency quantile's values in both runs, its samples in each, and how it moved as
/// judged by its bootstrap interval (from both runs' histograms, `seed` its resampling's)
/// and held against the floors on the real clock.
fn quantile_change(
    f: &Figure,
    (so, o, ho): (&Summary, &CaseResult, &hdrhistogram::Histogram<u64>),
    (sn, n, hn): (&Summary, &CaseResult, &hdrhistogram::Histogram<u64>),
    (stat, seed): (&'static str, u64),
    t: f64,
) -> ((f64, f64), Option<[u64; 2]>, Judged) {
    let q = LatencyStats::quantile(stat).expect("a quantile figure");
    let (vo, vn) = (ho.value_at_quantile(q) as f64 / 1e6, hn.value_at_quantile(q) as f64 / 1e6);
    let (low, high) = ratio_interval(ho, hn, q, seed);
    let needed = samples_needed(q);
    let floor = Floor::of((so, o), (sn, n), stat);
    let verdict = if ho.len() < needed || hn.len() < needed {
        Verdict::TooFewSamples
    } else {
        let v = noise::judge(f.better, low, high, t);
        floor.map_or(v, |fl| fl.hold(v, (vo, vn), [low, high], t))
    };
    ((vo, vn), Some([ho.len(), hn.len()]), (Model::Bootstrap, Some([low, high]), verdict, floor))
}

/// How a figure's move was judged: the model, the interval, the verdict and the floors it
/// was held against.
type Judged = (Model, Option<[f64; 2]>, Verdict, Option<Floor>);

/// How a plain figure's move is judged: by its repeats' spreads when both runs have them (a
/// latency held against the floors as well), else by its kind's own model (a count's
/// Poisson interval, an invariant's any rise, a margin). Returns the model, the interval,
/// the verdict and the floors it was held against.
fn judge_plain(
    f: &Figure,
    source: Metric,
    latency: Option<&'static str>,
    (so, o): (&Summary, &CaseResult),
    (sn, n): (&Summary, &CaseResult),
    (vo, vn): (f64, f64),
    t: f64,
) -> Judged {
    let mut floor = None;
    let (model, interval, verdict) = if let Some((ro, rn)) = spreads(o, n, &f.name) {
        let iv = noise::repeats_interval(ro, rn);
        let v = iv.map_or(Verdict::Noise, |[lo, hi]| noise::judge(f.better, lo, hi, t));
        floor = latency.and_then(|stat| Floor::of((so, o), (sn, n), stat));
        let v = match (floor, iv) {
            (Some(fl), Some(iv)) => fl.hold(v, (vo, vn), iv, t),
            _ => v,
        };
        (Model::Repeats, iv, v)
    } else {
        match noise::model_of(source) {
            Model::Poisson => match (noise::counts(o, source), noise::counts(n, source)) {
                (Some(co), Some(cn)) => {
                    let iv = noise::poisson_interval(co, cn);
                    (Model::Poisson, Some(iv), noise::judge(f.better, iv[0], iv[1], t))
                }
                _ => (Model::Margin, None, noise::judge_margin(f.better, vo, vn, t, false)),
            },
            Model::Exact => (Model::Exact, None, noise::judge_exact(f.better, vo, vn)),
            Model::None => (Model::None, None, Verdict::NotJudged),
            _ => {
                // A gauge (execs or requests in flight) is counted in whole units: its margin
                // is at least one unit.
                let whole = matches!(source, Metric::Fleet(FleetMetric::Gauge(..)));
                (Model::Margin, None, noise::judge_margin(f.better, vo, vn, t, whole))
            }
        }
    };
    (model, interval, verdict, floor)
}

#[cfg(test)]
mod tests;
