//! `run --repeat N`: a case run N times, each repeat with a seed of its own. Its figures are
//! then medians across the repeats, each with its spread: every repeat's value, min–max, and
//! a 95 % percentile-bootstrap interval of the median when there are at least
//! [`MIN_CI_REPEATS`] ([`Repeats`], [`Spread`]). How a case's repeats are made one result is
//! [`crate::results::summary::repeats`].

use serde::{Deserialize, Serialize};

use crate::base::rng::Rng;
use crate::record::recorder::LatencyStats;
pub(crate) use crate::scenario::gate::Rule;

/// The fewest repeats a bootstrap interval is drawn from.
pub(crate) const MIN_CI_REPEATS: usize = 5;

/// How many resamples a bootstrap interval takes.
const RESAMPLES: usize = 2000;

/// A case's repeats: their seeds and every figure's spread across them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Repeats {
    /// Each repeat's workload seed, in order; the first is the run's own.
    pub seeds: Vec<u64>,
    /// Every figure the repeats measured, in the order the reports show them.
    pub figures: Vec<Spread>,
}

/// A field that holds a figure.
pub(crate) enum Place<'a> {
    F(&'a mut f64),
    U(&'a mut u64),
}

impl<'a> From<&'a mut f64> for Place<'a> {
    fn from(x: &'a mut f64) -> Self {
        Place::F(x)
    }
}

impl<'a> From<&'a mut u64> for Place<'a> {
    fn from(x: &'a mut u64) -> Self {
        Place::U(x)
    }
}

impl Place<'_> {
    /// Sets the field, a count rounded to a whole one, a figure to 1e-4.
    pub(crate) fn set(self, v: f64) {
        match self {
            Place::F(x) => *x = crate::base::units::round(v, 4),
            Place::U(x) => *x = v.round().max(0.0) as u64,
        }
    }
}

/// A latency statistic by its figure name (`count` too), to write back.
pub(crate) fn stat_place<'a>(s: &'a mut LatencyStats, stat: &str) -> Option<Place<'a>> {
    match stat {
        "count" => Some(Place::U(&mut s.count)),
        _ => s.get_mut(stat).map(Place::F),
    }
}

/// A latency statistic as a figure: `None` without samples.
pub(crate) fn stat(s: &LatencyStats, stat: &str) -> Option<f64> {
    match stat {
        _ if s.count == 0 => None,
        "count" => Some(s.count as f64),
        _ => s.get(stat),
    }
}

/// One figure across the repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Its name: a gate metric's where it has one (`pickup.p50`, `idle_phase_discovery_per_min`).
    pub figure: String,
    /// `us`, `/min`, `/s`, `s`, `%` or empty (a count).
    pub unit: String,
    /// Each repeat's value, in the order of `seeds`; null: not measured in that repeat.
    pub values: Vec<Option<f64>>,
    /// What the case reports: the median, unless `rule` says otherwise.
    pub value: f64,
    /// How `value` is made when it is not the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// The median's 95 % percentile-bootstrap interval; absent under [`MIN_CI_REPEATS`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci95: Option<[f64; 2]>,
}

impl Repeats {
    /// The spread of the figure named `figure`, when the repeats measured it.
    pub fn get(&self, figure: &str) -> Option<&Spread> {
        self.figures.iter().find(|s| s.figure == figure)
    }
}

/// The median of `v` (the mean of the middle two for an even count); `None` when empty.
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 })
}

/// The 95 % percentile-bootstrap interval of the median of `v`: `RESAMPLES` resamples with
/// replacement drawn with a generator seeded `seed`, the 2.5th and 97.5th percentiles of
/// their medians. `None` under [`MIN_CI_REPEATS`] values.
pub(crate) fn bootstrap_ci(v: &[f64], seed: u64) -> Option<[f64; 2]> {
    if v.len() < MIN_CI_REPEATS {
        return None;
    }
    // Every repeat the same (a count that stayed 0): each resample's median is that value.
    if v[0].is_finite() && v.iter().all(|x| *x == v[0]) {
        return Some([v[0], v[0]]);
    }
    let mut rng = Rng::new(seed);
    let mut sample = vec![0.0; v.len()];
    let mut medians: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            for x in sample.iter_mut() {
                *x = v[(rng.unit() * v.len() as f64) as usize % v.len()];
            }
            median(&sample).unwrap_or(f64::NAN)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let at = |q: f64| medians[((RESAMPLES - 1) as f64 * q).round() as usize];
    Some([at(0.025), at(0.975)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn a_bootstrap_interval_holds_the_median_narrows_with_data_and_is_seeded() {
        let draw = |n: usize, seed: u64| -> Vec<f64> {
            let mut r = Rng::new(seed);
            (0..n).map(|_| 100.0 + 20.0 * r.unit()).collect()
        };
        let few = draw(7, 1);
        let [lo, hi] = bootstrap_ci(&few, 9).unwrap();
        let m = median(&few).unwrap();
        assert!(lo <= m && m <= hi && lo < hi, "{lo} {m} {hi}");
        let many = draw(400, 1);
        let [mlo, mhi] = bootstrap_ci(&many, 9).unwrap();
        assert!(mhi - mlo < (hi - lo) / 3.0, "{mlo}–{mhi} against {lo}–{hi}");
        assert_eq!(bootstrap_ci(&few, 9), bootstrap_ci(&few, 9));
        assert_ne!(bootstrap_ci(&many, 9), bootstrap_ci(&many, 10));
        assert_eq!(bootstrap_ci(&few[..4], 9), None, "under five values, no interval");
    }
}
