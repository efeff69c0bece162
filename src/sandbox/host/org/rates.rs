//! Requests per second at the organisation: counted in one-second buckets by kind, read
//! as the mean, the busiest second, the busiest ten seconds and the busiest minute. The
//! buckets are folded into those peaks as the seconds pass, so a week costs the memory of a
//! minute.

use std::collections::VecDeque;

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

/// One second's requests, by kind.
type Bucket = [u32; 7];

/// The widest window a peak is read over, in seconds.
const WIDEST: usize = 60;

/// How many of the latest seconds stay open to a late count (a clock read just before
/// another request took the lock) before they are folded.
const OPEN: usize = 4;

/// The widths the peaks are read over, in seconds.
const WIDTHS: [usize; 3] = [1, 10, WIDEST];

/// The busiest windows of the seconds folded so far: a ring of the last [`WIDEST`], and for
/// each of [`WIDTHS`] the requests of its last window by kind and the most it held.
#[derive(Debug, Clone)]
struct Peaks {
    /// Seconds folded: the next one to fold is this index.
    folded: usize,
    ring: [Bucket; WIDEST],
    sum: [[u64; 7]; 3],
    best: [u64; 3],
    best_by_kind: [[u64; 7]; 3],
    total: [u64; 7],
    /// Seconds of zero folded in a row (past [`WIDEST`] of them, the rest only move the index).
    zeros: usize,
}

impl Peaks {
    fn new() -> Peaks {
        Peaks {
            folded: 0,
            ring: [[0; 7]; WIDEST],
            sum: [[0; 7]; 3],
            best: [0; 3],
            best_by_kind: [[0; 7]; 3],
            total: [0; 7],
            zeros: 0,
        }
    }

    /// Folds the next second.
    fn fold(&mut self, b: &Bucket) {
        let e = self.folded;
        self.folded += 1;
        self.zeros = if b.iter().all(|v| *v == 0) { self.zeros + 1 } else { 0 };
        if self.zeros > WIDEST {
            // Every window already holds only zeros, and the ring too.
            return;
        }
        for (w, width) in WIDTHS.iter().enumerate() {
            let gone = if e >= *width { self.ring[(e - width) % WIDEST] } else { [0; 7] };
            for ((sum, new), old) in self.sum[w].iter_mut().zip(b).zip(gone) {
                *sum = *sum + u64::from(*new) - u64::from(old);
            }
            if e + 1 >= *width {
                self.best[w] = self.best[w].max(self.sum[w].iter().sum());
                for (best, sum) in self.best_by_kind[w].iter_mut().zip(self.sum[w]) {
                    *best = (*best).max(sum);
                }
            }
        }
        self.ring[e % WIDEST] = *b;
        for (t, v) in self.total.iter_mut().zip(b) {
            *t += u64::from(*v);
        }
    }

    /// Folds `n` seconds no request came in, at the cost of [`WIDEST`] at most.
    fn skip(&mut self, n: usize) {
        (0..n.min(WIDEST + 1)).for_each(|_| self.fold(&[0; 7]));
        self.folded += n.saturating_sub(WIDEST + 1);
    }

    /// The most requests of the `w`-th width (all of them while fewer seconds than it passed).
    fn most(&self, w: usize) -> u64 {
        if self.folded < WIDTHS[w] {
            self.total.iter().sum()
        } else {
            self.best[w]
        }
    }

    fn most_by_kind(&self, w: usize) -> [u64; 7] {
        if self.folded < WIDTHS[w] {
            self.total
        } else {
            self.best_by_kind[w]
        }
    }

    /// What these peaks read as rates over `secs` seconds.
    fn stats(&self, secs: usize) -> RateStats {
        let by_kind = |w: usize| {
            let most = self.most_by_kind(w);
            ByKind::of(|k| most[k as usize])
        };
        let total: u64 = self.total.iter().sum();
        RateStats {
            mean_per_sec: if secs == 0 { 0.0 } else { (total as f64 / secs as f64 * 100.0).round() / 100.0 },
            peak_1s: self.most(0) as f64,
            peak_10s: (self.most(1) as f64).round() / 10.0,
            peak_60s: Some((self.most(2) as f64 / 60.0 * 100.0).round() / 100.0),
            peak_1s_by_kind: by_kind(0),
            peak_10s_by_kind: by_kind(1),
        }
    }
}

/// The organisation's requests per second since its clock's start.
#[derive(Debug, Clone)]
pub(super) struct Rates {
    peaks: Peaks,
    /// The seconds not folded yet, from `peaks.folded` on.
    open: VecDeque<Bucket>,
    /// Seconds from here on are not rated (the case is over; its teardown's requests are not
    /// its rate): counted in the totals only.
    until: usize,
    /// Every request counted, by kind, rated or not.
    pub(super) all: [u64; 7],
    /// Each second's total, kept when a fleet-wide fault's storm is read afterwards
    /// ([`Rates::peak_10s_between`]): four bytes a second.
    kept: Option<Vec<u32>>,
}

impl Rates {
    pub(super) fn new(keep_seconds: bool) -> Rates {
        Rates {
            peaks: Peaks::new(),
            open: VecDeque::new(),
            until: usize::MAX,
            all: [0; 7],
            kept: keep_seconds.then(Vec::new),
        }
    }

    /// Starts again from nothing (the clock restarted).
    pub(super) fn clear(&mut self) {
        *self = Rates::new(self.kept.is_some());
    }

    /// A request of `kind` in second `sec` of the clock.
    pub(super) fn count(&mut self, sec: usize, kind: Kind) {
        self.all[kind as usize] += 1;
        if let Some(kept) = self.kept.as_mut() {
            if kept.len() <= sec {
                kept.resize(sec + 1, 0);
            }
            kept[sec] += 1;
        }
        if sec >= self.until {
            return;
        }
        // A second already folded (counted OPEN or more seconds late) counts in the oldest open one.
        let at = sec.max(self.peaks.folded);
        // The seconds `at` moves out of the open ones are folded; those no request came in, at once.
        while at >= self.peaks.folded + OPEN {
            match self.open.pop_front() {
                Some(b) => self.peaks.fold(&b),
                None => self.peaks.skip(at + 1 - OPEN - self.peaks.folded),
            }
        }
        while self.peaks.folded + self.open.len() <= at {
            self.open.push_back([0; 7]);
        }
        self.open[at - self.peaks.folded][kind as usize] += 1;
    }

    /// No second from `secs` on is rated.
    pub(super) fn close(&mut self, secs: usize) {
        self.until = self.until.min(secs);
    }

    /// The rates over the first `secs` seconds: the seconds from the first to the last
    /// request in them, the mean over all `secs`.
    pub(super) fn stats(&self, secs: usize) -> RateStats {
        let mut p = self.peaks.clone();
        let seen = p.folded + self.open.iter().rposition(|b| b.iter().any(|v| *v > 0)).map_or(0, |i| i + 1);
        for b in self.open.iter().take(seen.min(secs).saturating_sub(p.folded)) {
            p.fold(b);
        }
        p.stats(secs)
    }

    /// The busiest ten seconds from second `a` up to second `b` (not included), in requests
    /// per second; `None` when the seconds were not kept.
    pub(super) fn peak_10s_between(&self, a: usize, b: usize) -> Option<f64> {
        let kept = self.kept.as_ref()?;
        let b = b.min(kept.len());
        if a >= b {
            return Some(0.0);
        }
        let mut p = Peaks::new();
        for v in &kept[a..b] {
            p.fold(&[*v, 0, 0, 0, 0, 0, 0]);
        }
        Some(p.stats(b - a).peak_10s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::rng::Rng;

    /// The peaks read from every second kept, the way they are defined: the most requests
    /// in any `width` consecutive seconds of the first `len` (all of them when fewer).
    fn reference(per_sec: &[Bucket], secs: usize) -> RateStats {
        let total = |b: &Bucket| b.iter().map(|v| u64::from(*v)).sum::<u64>();
        let most = |width: usize, pick: &dyn Fn(&Bucket) -> u64| -> u64 {
            let w = width.min(per_sec.len());
            (w..=per_sec.len()).map(|end| per_sec[end - w..end].iter().map(pick).sum::<u64>()).max().unwrap_or(0)
        };
        let by_kind = |width: usize| ByKind::of(|k| most(width, &|b: &Bucket| u64::from(b[k as usize])));
        let all: u64 = per_sec.iter().map(total).sum();
        RateStats {
            mean_per_sec: if secs == 0 { 0.0 } else { (all as f64 / secs as f64 * 100.0).round() / 100.0 },
            peak_1s: most(1, &total) as f64,
            peak_10s: (most(10, &total) as f64).round() / 10.0,
            peak_60s: Some((most(60, &total) as f64 / 60.0 * 100.0).round() / 100.0),
            peak_1s_by_kind: by_kind(1),
            peak_10s_by_kind: by_kind(10),
        }
    }

    /// Folded as they pass, the peaks are the ones every second kept gives: over bursts, long
    /// silences, a few seconds counted late, fewer seconds than a window, and a close.
    #[test]
    fn folded_peaks_are_the_kept_seconds_peaks() {
        for seed in 0..40 {
            let mut rng = Rng::new(seed);
            let (mut rates, mut kept) = (Rates::new(true), Vec::<Bucket>::new());
            let mut sec = 0usize;
            let n = (rng.next_u64() % 400) as usize;
            let close = (seed % 3 == 0).then(|| (rng.next_u64() % 300) as usize);
            for _ in 0..n {
                sec += match rng.next_u64() % 10 {
                    0 => (rng.next_u64() % 200) as usize,
                    1..=4 => 1,
                    _ => 0,
                };
                // Now and then counted a little late (a clock read before the lock).
                let at = sec.saturating_sub(if rng.next_u64() % 7 == 0 { (rng.next_u64() % 3) as usize } else { 0 });
                let kind = Kind::ALL[(rng.next_u64() % 7) as usize];
                if let Some(c) = close.filter(|c| at >= *c && rates.until == usize::MAX) {
                    rates.close(c);
                }
                rates.count(at, kind);
                assert!(rates.open.len() <= OPEN, "a silence is skipped, not held open");
                if close.is_none_or(|c| at < c) {
                    if kept.len() <= at {
                        kept.resize(at + 1, [0; 7]);
                    }
                    kept[at][kind as usize] += 1;
                }
            }
            let secs = close.unwrap_or(sec + 1 + (rng.next_u64() % 5) as usize);
            kept.truncate(secs);
            assert_eq!(rates.stats(secs), reference(&kept, secs), "seed {seed}");
        }
    }

    /// The kept seconds give a stretch's busiest ten seconds; not kept, none is made up.
    #[test]
    fn a_stretch_is_read_from_the_kept_seconds() {
        let mut rates = Rates::new(true);
        for (sec, n) in [(0, 5), (3, 40), (12, 20), (30, 7)] {
            (0..n).for_each(|_| rates.count(sec, Kind::List));
        }
        assert_eq!(rates.peak_10s_between(0, 31), Some(6.0), "seconds 3 to 12: 60 requests");
        assert_eq!(rates.peak_10s_between(10, 31), Some(2.0), "seconds 12 and 30 are 18 apart: 20 or 7");
        assert_eq!(rates.peak_10s_between(31, 40), Some(0.0));
        assert_eq!(Rates::new(false).peak_10s_between(0, 10), None);
    }
}
