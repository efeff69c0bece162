//! The noise model of a latency quantile: both runs' histograms (read from their `.hlog`
//! files) are resampled 200 times at their own sample count (capped at 4,000) and the ratio
//! of the resampled quantiles taken each time; the middle 95 % of those ratios is the
//! interval a verdict reads.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

use super::CompareError;
use crate::base::fsio::read_bounded;
use crate::base::rng::Rng;
use crate::record::recorder::Measure;
use crate::report::export::hdr::{read_hlog, total, HLOG};

/// The whole-case histogram of `measure`, which summary.json says holds `count` samples:
/// an error if the run directory does not have it.
pub(super) fn hist(dir: &Path, case: &str, measure: Measure, count: u64) -> Result<Histogram<u64>, CompareError> {
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

/// Draws `n` values from the distribution `cdf` describes and returns their `q`-quantile.
fn resampled_quantile(cdf: &[(u64, u64)], total: u64, n: usize, q: f64, rng: &mut Rng) -> f64 {
    let mut draws: Vec<u64> = (0..n)
        .map(|_| {
            let u = (rng.unit() * total as f64) as u64;
            let i = cdf.partition_point(|(_, cum)| *cum <= u).min(cdf.len() - 1);
            cdf[i].0
        })
        .collect();
    let k = ((n as f64 * q) as usize).min(n - 1);
    *draws.select_nth_unstable(k).1 as f64
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

/// The 95 % bootstrap interval of quantile_q(new) / quantile_q(old).
pub(crate) fn ratio_interval(old: &Histogram<u64>, new: &Histogram<u64>, q: f64, seed: u64) -> (f64, f64) {
    const ROUNDS: usize = 200;
    let (co, cn) = (cdf(old), cdf(new));
    let (no, nn) = ((old.len() as usize).min(4000), (new.len() as usize).min(4000));
    let mut rng = Rng::new(seed);
    let mut ratios: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let o = resampled_quantile(&co, old.len(), no, q, &mut rng).max(1.0);
            resampled_quantile(&cn, new.len(), nn, q, &mut rng).max(1.0) / o
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    (ratios[ROUNDS * 25 / 1000], ratios[ROUNDS * 975 / 1000 - 1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::recorder::new_histogram;

    pub(crate) fn uniform(max_ms: u64, n: u64, seed: u64) -> Histogram<u64> {
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
        let (lo, hi) = ratio_interval(&a, &b, 0.5, 7);
        assert!(lo < 1.0 && hi > 1.0, "two samples of one distribution straddle 1: [{lo}, {hi}]");
        let c = uniform(600, 500, 3);
        let (lo, hi) = ratio_interval(&a, &c, 0.5, 7);
        assert!(lo > 1.5 && hi < 2.6, "a doubled poll interval: [{lo}, {hi}]");
    }

    #[test]
    fn a_tail_is_resampled_at_its_own_quantile() {
        let (a, b) = (uniform(300, 3000, 1), uniform(300, 3000, 2));
        let (lo, hi) = ratio_interval(&a, &b, 0.99, 7);
        assert!(lo < 1.0 && hi > 1.0 && hi - lo < 0.1, "one distribution's p99s: [{lo}, {hi}]");
        // Nearly the same median, the slowest 2 % twice as far out.
        let mut tail = uniform(300, 2940, 4);
        for v in uniform(200, 60, 5).iter_recorded() {
            tail.record_n(v.value_iterated_to() + 500_000_000, v.count_at_value()).unwrap();
        }
        let (lo, _) = ratio_interval(&a, &tail, 0.99, 7);
        assert!(lo > 1.5, "a tail twice as long: [{lo}, ..]");
        let (_, hi) = ratio_interval(&a, &tail, 0.5, 7);
        assert!(hi < 1.1, "its median barely moved: [.., {hi}]");
    }
}
