//! Requests per second at the organisation: counted in one-second buckets by kind, read
//! as the mean, the busiest second, the busiest ten seconds and the busiest minute.

use serde::{Deserialize, Serialize};

use crate::sandbox::host::{ByKind, Kind};

/// Requests per second at the organisation, by kind.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RateStats {
    pub mean_per_sec: f64,
    /// The busiest second, and the busiest ten seconds (their mean per second).
    pub peak_1s: f64,
    pub peak_10s: f64,
    /// The busiest sixty seconds (their mean per second: times 60, the requests of the
    /// busiest minute, what a per-minute rate limit meets). `None`: a run from before it was
    /// counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_60s: Option<f64>,
    /// Per kind: the requests of the busiest second, and of the busiest ten seconds.
    pub peak_1s_by_kind: ByKind,
    pub peak_10s_by_kind: ByKind,
}

impl RateStats {
    pub(super) fn of(per_sec: &[[u32; 7]], secs: usize) -> RateStats {
        let total = |k: &[u32; 7]| k.iter().map(|v| u64::from(*v)).sum::<u64>();
        let all: u64 = per_sec.iter().map(total).sum();
        // The most requests in any `width` consecutive seconds.
        let most = |width: usize, pick: &dyn Fn(&[u32; 7]) -> u64| -> u64 {
            let w = width.min(per_sec.len());
            let mut sum: u64 = per_sec[..w].iter().map(pick).sum();
            let mut best = sum;
            for i in w..per_sec.len() {
                sum = sum + pick(&per_sec[i]) - pick(&per_sec[i - w]);
                best = best.max(sum);
            }
            best
        };
        let by_kind = |width: usize| {
            ByKind(
                Kind::ALL
                    .iter()
                    .map(|k| (k.name().to_owned(), most(width, &|b: &[u32; 7]| u64::from(b[*k as usize]))))
                    .collect(),
            )
        };
        RateStats {
            mean_per_sec: if secs == 0 { 0.0 } else { (all as f64 / secs as f64 * 100.0).round() / 100.0 },
            peak_1s: most(1, &total) as f64,
            peak_10s: (most(10, &total) as f64).round() / 10.0,
            peak_60s: Some((most(60, &total) as f64 / 60.0 * 100.0).round() / 100.0),
            peak_1s_by_kind: by_kind(1),
            peak_10s_by_kind: by_kind(10),
        }
    }
}
