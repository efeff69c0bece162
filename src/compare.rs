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

use std::path::Path;

use hdrhistogram::Histogram;

use crate::export::hdr::{read_hlog, total};
use crate::rng::Rng;
use crate::summary::{CaseResult, Summary};

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
}

impl Comparison {
    pub fn regressions(&self) -> usize {
        self.changes.iter().filter(|c| c.verdict == Verdict::Regression).count()
    }
}

fn hist(dir: &Path, case: &str, measure: &str) -> Option<Histogram<u64>> {
    let bytes = std::fs::read(dir.join("hdr").join(case).join(format!("{measure}.hlog"))).ok()?;
    total(&read_hlog(&bytes).ok()?).filter(|h| !h.is_empty())
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
pub fn compare(old_dir: &Path, new_dir: &Path, threshold: f64) -> Result<Comparison, String> {
    let (old, new) = (Summary::read(old_dir)?, Summary::read(new_dir)?);
    let mut out = Comparison::default();
    let (eo, en) = (&old.environment, &new.environment);
    let fields = [
        ("kernel", eo.kernel.clone(), en.kernel.clone()),
        ("relay_fs", eo.relay_fs.clone(), en.relay_fs.clone()),
        ("cpus", eo.cpus.to_string(), en.cpus.to_string()),
        ("build", eo.build.clone(), en.build.clone()),
        ("version", old.tool.version.clone(), new.tool.version.clone()),
    ];
    for (name, a, b) in fields {
        if a != b {
            out.env_diff.push((name.to_owned(), a, b));
        }
    }
    for n in &new.results {
        let name = n.case.as_str();
        let Some(o) = old.results.iter().find(|o| o.case == n.case) else {
            out.unmatched.push(format!("{name} (only in NEW)"));
            continue;
        };
        for (k, m) in ["wake", "pickup", "completion"].into_iter().enumerate() {
            let (Some(ho), Some(hn)) = (hist(old_dir, name, m), hist(new_dir, name, m)) else { continue };
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
                measure: m.to_owned(),
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
    }
    for o in &old.results {
        if !new.results.iter().any(|n| n.case == o.case) {
            out.unmatched.push(format!("{} (only in OLD)", o.case));
        }
    }
    Ok(out)
}

/// The comparison as a table that fits 100 columns.
pub fn render(c: &Comparison, threshold: f64) -> String {
    use std::fmt::Write;
    let mut o = String::new();
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
    use crate::recorder::new_histogram;

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
            env_diff: Vec::new(),
            unmatched: Vec::new(),
        };
        let text = render(&c, 5.0);
        let line = text.lines().find(|l| l.starts_with("black-box")).unwrap();
        assert!(line.ends_with("12.0 -> not measured"), "no ratio: {line}");
        assert!(text.lines().any(|l| l.starts_with("both") && l.ends_with("10.0 -> 5.0 (0.50x)")), "{text}");
    }
}
