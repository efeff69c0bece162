//! `relay-bench compare OLD NEW`: two run directories side by side, case by case, with a
//! verdict that accounts for noise.
//!
//! For each measure (wake, pickup, completion) the median's ratio NEW / OLD comes with a
//! 95 % bootstrap interval: both runs' histograms (from their `.hlog` files) are resampled
//! 200 times at their own sample count (capped at 4,000) and the ratio of the resampled
//! medians taken each time. Only an interval wholly above 1 + threshold is a regression,
//! wholly below 1 - threshold an improvement; anything else is noise. Discovery request
//! rates are compared as plain ratios (they are counts, not samples). Runs whose
//! environments differ (kernel, filesystem, cpus, build profile, suite version) are
//! compared with a warning, or refused with `--strict`.
//!
//! Never a silent gap: runs that share no case are refused; a run that was interrupted is
//! warned of; a histogram summary.json counts samples for but the run directory lacks is an
//! error; a measure one run did not take, or took under another definition (a black-box
//! runner's pickup is timed to another point than the suite's runner's), gets a line saying
//! so instead of a ratio.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use crate::base::fsio::read_bounded;
use crate::base::rng::Rng;
use crate::record::recorder::Measure;
use crate::report::export::hdr::HLOG;
use crate::report::export::hdr::{read_hlog, total};
use crate::results::summary::{CaseResult, Summary, SummaryError};

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

/// How one measure of one case moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub case: String,
    pub measure: String,
    /// Medians in ms.
    pub old: f64,
    pub new: f64,
    /// NEW / OLD, and its 95 % bootstrap interval.
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub verdict: Verdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Regression,
    Improvement,
    Noise,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::Improvement => "improvement",
            Verdict::Noise => "noise",
        }
    }
}

/// The whole comparison.
#[derive(Debug, Clone, Default)]
pub struct Comparison {
    pub changes: Vec<Change>,
    /// Discovery requests per minute, old and new; `None` where a run did not measure them
    /// (a black-box runner).
    pub rates: Vec<(String, Option<f64>, Option<f64>)>,
    /// Environment fields that differ: (field, old, new).
    pub env_diff: Vec<(String, String, String)>,
    /// Cases in only one of the runs.
    pub unmatched: Vec<String>,
    /// Measures of a case in both runs that are not compared, and why.
    pub skipped: Vec<Skipped>,
    /// What the reader must know first (a run that was interrupted).
    pub warnings: Vec<String>,
}

/// A measure of a case that is in both runs but has no ratio.
#[derive(Debug, Clone, PartialEq)]
pub struct Skipped {
    pub case: String,
    pub measure: String,
    pub why: String,
}

impl Comparison {
    pub fn regressions(&self) -> usize {
        self.changes.iter().filter(|c| c.verdict == Verdict::Regression).count()
    }
}

/// The whole-case histogram of `measure`, which summary.json says holds `count` samples:
/// an error if the run directory does not have it.
fn hist(dir: &Path, case: &str, measure: Measure, count: u64) -> Result<Histogram<u64>, CompareError> {
    let path: PathBuf = dir.join("hdr").join(case).join(format!("{}.hlog", measure.name()));
    let missing = |why: String| CompareError::MissingHistogram {
        path: path.display().to_string(),
        case: case.to_owned(),
        measure: measure.name(),
        count,
        why,
    };
    let bytes = read_bounded(&path, HLOG).map_err(|e| missing(e.why.to_string()))?;
    let intervals = read_hlog(&bytes).map_err(|e| missing(format!("not an interval log: {e}")))?;
    total(&intervals).filter(|h| !h.is_empty()).ok_or_else(|| missing("holds no samples".into()))
}

/// Draws `n` values from `h`'s distribution and returns their median.
fn resampled_median(cdf: &[(u64, u64)], total: u64, n: usize, rng: &mut Rng) -> f64 {
    let mut draws: Vec<u64> = (0..n)
        .map(|_| {
            let u = (rng.unit() * total as f64) as u64;
            let i = cdf.partition_point(|(_, cum)| *cum <= u).min(cdf.len() - 1);
            cdf[i].0
        })
        .collect();
    let mid = draws.len() / 2;
    *draws.select_nth_unstable(mid).1 as f64
}

fn cdf(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    let mut cum = 0;
    h.iter_recorded()
        .map(|v| {
            cum += v.count_at_value();
            (h.highest_equivalent(v.value_iterated_to()), cum)
        })
        .collect()
}

/// The 95 % bootstrap interval of median(new) / median(old).
pub fn ratio_interval(old: &Histogram<u64>, new: &Histogram<u64>, seed: u64) -> (f64, f64) {
    const ROUNDS: usize = 200;
    let (co, cn) = (cdf(old), cdf(new));
    let (no, nn) = ((old.len() as usize).min(4000), (new.len() as usize).min(4000));
    let mut rng = Rng::new(seed);
    let mut ratios: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let o = resampled_median(&co, old.len(), no, &mut rng).max(1.0);
            resampled_median(&cn, new.len(), nn, &mut rng).max(1.0) / o
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    (ratios[ROUNDS * 25 / 1000], ratios[ROUNDS * 975 / 1000 - 1])
}

/// Compares two run directories.
pub fn compare(old_dir: &Path, new_dir: &Path, threshold: f64) -> Result<Comparison, CompareError> {
    let read = |dir: &Path| Summary::read(dir).map_err(CompareError::Unreadable);
    let (old, new) = (read(old_dir)?, read(new_dir)?);
    let pairs = common_cases(&old, &new, old_dir, new_dir)?;
    let mut out = Comparison { env_diff: env_diff(&old, &new), ..Comparison::default() };
    out.warnings = [interrupted("OLD", &old), interrupted("NEW", &new)].into_iter().flatten().collect();
    for (o, n) in pairs {
        compare_case(&mut out, (old_dir, o), (new_dir, n), threshold)?;
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

/// Environment fields that differ: (field, old, new).
fn env_diff(old: &Summary, new: &Summary) -> Vec<(String, String, String)> {
    let (eo, en) = (&old.environment, &new.environment);
    let fields = [
        ("kernel", eo.kernel.clone(), en.kernel.clone()),
        ("relay_fs", eo.relay_fs.clone(), en.relay_fs.clone()),
        ("cpus", eo.cpus.to_string(), en.cpus.to_string()),
        ("build", eo.build.clone(), en.build.clone()),
        ("version", old.tool.version.clone(), new.tool.version.clone()),
    ];
    fields.into_iter().filter(|(_, a, b)| a != b).map(|(f, a, b)| (f.to_owned(), a, b)).collect()
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

/// Why a measure of a case in both runs gets no ratio, if it does not.
fn not_comparable(o: &CaseResult, n: &CaseResult, m: Measure) -> Option<String> {
    let (co, cn) = (o.latency(m).count, n.latency(m).count);
    match (co, cn) {
        (0, 0) => return Some("not measured in either run".into()),
        (0, _) => return Some("not measured in OLD".into()),
        (_, 0) => return Some("not measured in NEW".into()),
        _ => {}
    }
    let (po, pn) = (o.pickup_defined_as(), n.pickup_defined_as());
    (m == Measure::Pickup && po != pn)
        .then(|| format!("timed differently: OLD {}; NEW {}", po.describe(), pn.describe()))
}

/// Compares the medians of one case's wake, pickup and completion.
fn compare_case(
    out: &mut Comparison,
    (old_dir, o): (&Path, &CaseResult),
    (new_dir, n): (&Path, &CaseResult),
    threshold: f64,
) -> Result<(), CompareError> {
    let name = n.case.as_str();
    for (k, m) in [Measure::Wake, Measure::Pickup, Measure::Completion].into_iter().enumerate() {
        if let Some(why) = not_comparable(o, n, m) {
            out.skipped.push(Skipped { case: name.to_owned(), measure: m.name().to_owned(), why });
            continue;
        }
        let ho = hist(old_dir, name, m, o.latency(m).count)?;
        let hn = hist(new_dir, name, m, n.latency(m).count)?;
        let (mo, mn) = (ho.value_at_quantile(0.5) as f64 / 1e6, hn.value_at_quantile(0.5) as f64 / 1e6);
        let (low, high) = ratio_interval(&ho, &hn, 0x5EED + k as u64);
        let verdict = if low > 1.0 + threshold {
            Verdict::Regression
        } else if high < 1.0 - threshold {
            Verdict::Improvement
        } else {
            Verdict::Noise
        };
        let ratio = if mo > 0.0 { mn / mo } else { f64::NAN };
        out.changes.push(Change {
            case: name.to_owned(),
            measure: m.name().to_owned(),
            old: mo,
            new: mn,
            ratio,
            low,
            high,
            verdict,
        });
    }
    let rate = |r: &CaseResult| (!r.requests.not_measured).then_some(r.requests.discovery_per_min);
    out.rates.push((name.to_owned(), rate(o), rate(n)));
    Ok(())
}

/// The comparison as a table that fits 100 columns.
pub fn render(c: &Comparison, threshold: f64) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    for w in &c.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    for (f, a, b) in &c.env_diff {
        let _ = writeln!(o, "warning: environments differ: {f} {a} -> {b}");
    }
    let _ = writeln!(
        o,
        "{:<22} {:<11} {:>11} {:>11} {:>7}  {:<15} verdict (±{:.0}%)",
        "case",
        "measure",
        "old p50",
        "new p50",
        "ratio",
        "95% interval",
        threshold * 100.0
    );
    for ch in &c.changes {
        let name: String = ch.case.chars().take(22).collect();
        let _ = writeln!(
            o,
            "{name:<22} {:<11} {:>9.2}ms {:>9.2}ms {:>6.2}x  [{:.2}, {:.2}]    {}",
            ch.measure,
            ch.old,
            ch.new,
            ch.ratio,
            ch.low,
            ch.high,
            ch.verdict.word()
        );
    }
    for sk in &c.skipped {
        let name: String = sk.case.chars().take(22).collect();
        let _ = writeln!(o, "{name:<22} {:<11} not compared: {}", sk.measure, sk.why);
    }
    for (case, a, b) in &c.rates {
        let shown = |v: &Option<f64>| v.map_or_else(|| "not measured".to_owned(), |v| format!("{v:.1}"));
        let r = match (a, b) {
            (Some(a), Some(b)) if *a > 0.0 => format!(" ({:.2}x)", b / a),
            _ => String::new(),
        };
        let _ = writeln!(o, "{case:<22} discovery/min {:>9} -> {}{r}", shown(a), shown(b));
    }
    for u in &c.unmatched {
        let _ = writeln!(o, "not compared: {u}");
    }
    let _ = writeln!(o, "{} regression(s)", c.regressions());
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::recorder::new_histogram;

    fn uniform(max_ms: u64, n: u64, seed: u64) -> Histogram<u64> {
        let mut rng = Rng::new(seed);
        let mut h = new_histogram();
        for _ in 0..n {
            h.record((rng.unit() * max_ms as f64 * 1e6) as u64 + 1).unwrap();
        }
        h
    }

    #[test]
    fn same_distribution_is_noise_and_a_doubling_is_not() {
        let (a, b) = (uniform(300, 500, 1), uniform(300, 500, 2));
        let (lo, hi) = ratio_interval(&a, &b, 7);
        assert!(lo < 1.0 && hi > 1.0, "two samples of one distribution straddle 1: [{lo}, {hi}]");
        let c = uniform(600, 500, 3);
        let (lo, hi) = ratio_interval(&a, &c, 7);
        assert!(lo > 1.5 && hi < 2.6, "a doubled poll interval: [{lo}, {hi}]");
    }

    #[test]
    fn a_rate_a_run_did_not_measure_is_said_so_never_printed_as_zero() {
        let c = Comparison {
            changes: Vec::new(),
            rates: vec![("black-box".into(), Some(12.0), None), ("both".into(), Some(10.0), Some(5.0))],
            ..Comparison::default()
        };
        let text = render(&c, 5.0);
        let line = text.lines().find(|l| l.starts_with("black-box")).unwrap();
        assert!(line.ends_with("12.0 -> not measured"), "no ratio: {line}");
        assert!(text.lines().any(|l| l.starts_with("both") && l.ends_with("10.0 -> 5.0 (0.50x)")), "{text}");
    }
}
