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
//! A latency quantile's ratio NEW / OLD comes with a 95 % bootstrap interval
//! ([`bootstrap`]): only an interval wholly above 1 + threshold is a regression, wholly
//! below 1 - threshold an improvement; anything else is noise. A quantile over fewer
//! samples than it needs ([`crate::record::recorder::samples_needed`]) in either run is
//! shown, marked, and not judged. The other figures are counts and rates, compared as plain
//! ratios against the same band; a figure that was 0 and is not any more is a change past
//! any threshold. Which side is worse is the figure's own ([`figures::Better`]): more of a
//! latency, a request rate or a rejection is a regression; more completed calls is not.
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
pub mod figures;
mod json;
mod markdown;
mod threshold;

use std::path::Path;

use serde::Serialize;

pub use bootstrap::ratio_interval;
pub use threshold::{Threshold, ThresholdError};

use crate::record::recorder::{samples_needed, LatencyStats, Measure};
use crate::results::summary::{CaseResult, Summary, SummaryError};
use figures::{Better, Figure, Kind};

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
}

/// How one figure of one case moved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
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
    pub verdict: Verdict,
}

/// A figure's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
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
}

impl Verdict {
    pub(crate) fn word(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::Noise => "noise",
            Verdict::TooFewSamples => "too few samples",
            Verdict::NotJudged => "not judged",
        }
    }
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The run directories, as given.
    pub old: String,
    pub new: String,
    pub threshold: Threshold,
    pub changes: Vec<Change>,
    /// Environment fields that differ.
    pub env_diff: Vec<EnvDiff>,
    /// Cases in only one of the runs.
    pub unmatched: Vec<String>,
    /// Figures of a case in both runs that are not compared, and why.
    pub skipped: Vec<Skipped>,
    /// Figures 0 in both runs, left out of `changes`: how many.
    pub zero_in_both: usize,
    /// What the reader must know first (a run that was interrupted).
    pub warnings: Vec<String>,
}

/// An environment field whose value differs between the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvDiff {
    pub field: String,
    pub old: String,
    pub new: String,
}

/// A figure of a case that is in both runs but has no ratio.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub case: String,
    pub figure: String,
    pub why: String,
}

impl Comparison {
    fn count(&self, v: Verdict) -> usize {
        self.changes.iter().filter(|c| c.verdict == v).count()
    }

    pub fn regressions(&self) -> usize {
        self.count(Verdict::Regression)
    }

    pub(crate) fn improvements(&self) -> usize {
        self.count(Verdict::Improvement)
    }
}

/// How a comparison is written out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// A table for the console (100 columns).
    #[default]
    Table,
    /// GitHub-flavoured markdown, for a pull request's comment or a job summary.
    Markdown,
    /// JSON (`reports/compare.schema.json`).
    Json,
}

/// A `--format` no comparison is written in; the error lists those it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?}; allowed: {allowed}", allowed = Format::NAMES.join(", "))]
pub struct UnknownFormat(pub String);

impl Format {
    pub(crate) const NAMES: [&'static str; 3] = ["table", "md", "json"];

    pub fn parse(s: &str) -> Result<Format, UnknownFormat> {
        match s {
            "table" => Ok(Format::Table),
            "md" | "markdown" => Ok(Format::Markdown),
            "json" => Ok(Format::Json),
            _ => Err(UnknownFormat(s.to_owned())),
        }
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
pub fn compare(old_dir: &Path, new_dir: &Path, threshold: Threshold) -> Result<Comparison, CompareError> {
    let read = |dir: &Path| Summary::read(dir).map_err(CompareError::Unreadable);
    let (old, new) = (read(old_dir)?, read(new_dir)?);
    let pairs = common_cases(&old, &new, old_dir, new_dir)?;
    let mut out = Comparison {
        old: old_dir.display().to_string(),
        new: new_dir.display().to_string(),
        threshold,
        changes: Vec::new(),
        env_diff: env_diff(&old, &new),
        unmatched: Vec::new(),
        skipped: Vec::new(),
        zero_in_both: 0,
        warnings: [interrupted("OLD", &old), interrupted("NEW", &new)].into_iter().flatten().collect(),
    };
    for (o, n) in pairs {
        compare_case(&mut out, (old_dir, o), (new_dir, n))?;
    }
    for n in new.results.iter().filter(|n| !old.results.iter().any(|o| o.case == n.case)) {
        out.unmatched.push(format!("{} (only in NEW)", n.case));
    }
    for o in old.results.iter().filter(|o| !new.results.iter().any(|n| n.case == o.case)) {
        out.unmatched.push(format!("{} (only in OLD)", o.case));
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

/// The verdict on a ratio whose interval is [low, high], for a figure better `better`.
fn judge(better: Better, low: f64, high: f64, t: f64) -> Verdict {
    let (worse, improved) = match better {
        Better::Lower => (low > 1.0 + t, high < 1.0 - t),
        Better::Higher => (high < 1.0 - t, low > 1.0 + t),
        Better::Either => return Verdict::NotJudged,
    };
    if worse {
        Verdict::Regression
    } else if improved {
        Verdict::Improvement
    } else {
        Verdict::Noise
    }
}

/// Compares every figure of one case.
fn compare_case(
    out: &mut Comparison,
    (old_dir, o): (&Path, &CaseResult),
    (new_dir, n): (&Path, &CaseResult),
) -> Result<(), CompareError> {
    let t = out.threshold.fraction();
    let name = n.case.as_str();
    let skip = |out: &mut Comparison, f: &Figure, why: String| {
        out.skipped.push(Skipped { case: name.to_owned(), figure: f.name.clone(), why });
    };
    // Each measure's histograms, read once for all its quantiles.
    let mut hists: Vec<(Measure, hdrhistogram::Histogram<u64>, hdrhistogram::Histogram<u64>)> = Vec::new();
    for (k, f) in figures::figures(o, n).iter().enumerate() {
        match f.kind {
            Kind::Quantile(m, stat) => {
                if let Some(why) = latency_not_comparable(o, n, m) {
                    // One line per measure, not per quantile.
                    if !out.skipped.iter().any(|s| s.case == name && s.figure == m.name()) {
                        out.skipped.push(Skipped { case: name.to_owned(), figure: m.name().to_owned(), why });
                    }
                    continue;
                }
                let q = LatencyStats::quantile(stat).expect("a quantile figure");
                if !hists.iter().any(|(x, ..)| *x == m) {
                    let ho = bootstrap::hist(old_dir, name, m, o.latency(m).count)?;
                    let hn = bootstrap::hist(new_dir, name, m, n.latency(m).count)?;
                    hists.push((m, ho, hn));
                }
                let (_, ho, hn) = hists.iter().find(|(x, ..)| *x == m).expect("read above");
                let (vo, vn) = (ho.value_at_quantile(q) as f64 / 1e6, hn.value_at_quantile(q) as f64 / 1e6);
                let (low, high) = ratio_interval(ho, hn, q, 0x5EED + k as u64);
                let needed = samples_needed(q);
                let verdict = if ho.len() < needed || hn.len() < needed {
                    Verdict::TooFewSamples
                } else {
                    judge(f.better, low, high, t)
                };
                out.changes.push(Change {
                    case: name.to_owned(),
                    figure: f.name.clone(),
                    unit: f.unit,
                    better: f.better,
                    old: vo,
                    new: vn,
                    ratio: (vo > 0.0).then(|| vn / vo),
                    interval: Some([low, high]),
                    samples: Some([ho.len(), hn.len()]),
                    verdict,
                });
            }
            Kind::Plain(source) => {
                let (vo, vn) = (figures::read(o, source), figures::read(n, source));
                let (vo, vn) = match (vo, vn) {
                    (Some(a), Some(b)) => (a, b),
                    (None, None) if !f.core => continue,
                    _ => {
                        let why = missing_in(vo.is_some(), vn.is_some()).expect("one is missing");
                        skip(out, f, why.into());
                        continue;
                    }
                };
                if vo == 0.0 && vn == 0.0 {
                    out.zero_in_both += 1;
                    continue;
                }
                let ratio = (vo != 0.0).then(|| vn / vo);
                // From 0 to something is past any threshold.
                let r = ratio.unwrap_or(f64::INFINITY);
                out.changes.push(Change {
                    case: name.to_owned(),
                    figure: f.name.clone(),
                    unit: f.unit,
                    better: f.better,
                    old: vo,
                    new: vn,
                    ratio,
                    interval: None,
                    samples: None,
                    verdict: judge(f.better, r, r, t),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
