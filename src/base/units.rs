//! Durations at the edges: parsing `"300ms"`, `"2s"`, `"1.5m"` from scenarios and gates,
//! and printing them for people.

use std::time::Duration;

use super::clock;

/// A duration [`parse_duration`] would not read; each names the text and the units it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("{0:?} is not a duration (expected e.g. \"300ms\", \"2s\", \"1.5m\")")]
    NotANumber(String),
    #[error("{0:?} has no unit (use ns, us, ms, s, m or h)")]
    NoUnit(String),
    #[error("{text:?} has unknown unit {unit:?} (use ns, us, ms, s, m or h)")]
    UnknownUnit { text: String, unit: String },
    #[error("{0:?} is out of range")]
    OutOfRange(String),
}

/// `<number><unit>` read apart: the number, and the unit after it (trimmed); `None` when
/// the text does not start with a number.
pub(crate) fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let t = s.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len()));
    Some((num.parse().ok()?, unit.trim()))
}

/// Parses `<number><unit>` with unit one of `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let (value, unit) = number_and_unit(s).ok_or_else(|| DurationError::NotANumber(s.to_owned()))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" => return Err(DurationError::NoUnit(s.to_owned())),
        u => return Err(DurationError::UnknownUnit { text: s.to_owned(), unit: u.to_owned() }),
    };
    let secs = value * scale;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(DurationError::OutOfRange(s.to_owned()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// This machine's `CLOCK_MONOTONIC` in nanoseconds: the clock `Instant` reads on Linux, as a
/// number another process (in the sandbox: `sandbox-clock`, the sandbox writer) can print
/// and this one can read back.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid out-pointer to a timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// Converts between `Instant`s and [`monotonic_ns`] readings of this machine (one pair of
/// readings taken back to back: both are the same clock).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mono {
    at: tokio::time::Instant,
    ns: u64,
}

impl Mono {
    pub(crate) fn now() -> Mono {
        let at = clock::now();
        Mono { at, ns: monotonic_ns() }
    }

    pub(crate) fn ns_of(&self, t: tokio::time::Instant) -> u64 {
        if t >= self.at {
            self.ns + (t - self.at).as_nanos() as u64
        } else {
            self.ns.saturating_sub((self.at - t).as_nanos() as u64)
        }
    }

    pub(crate) fn instant_of(&self, ns: u64) -> tokio::time::Instant {
        if ns >= self.ns {
            self.at + std::time::Duration::from_nanos(ns - self.ns)
        } else {
            self.at.checked_sub(std::time::Duration::from_nanos(self.ns - ns)).unwrap_or(self.at)
        }
    }
}

/// A duration for a person: `850µs`, `12.3ms`, `1.50s`.
pub(crate) fn human(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0}µs")
    } else if us < 10_000.0 {
        format!("{:.2}ms", us / 1000.0)
    } else if us < 1_000_000.0 {
        format!("{:.1}ms", us / 1000.0)
    } else {
        format!("{:.2}s", us / 1e6)
    }
}

/// A length of time as a clock reads it: `2.5s`, `45s`, `4m`, `6m 10s`, `1h 30m`.
pub(crate) fn wall(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 10.0 {
        return format!("{}s", readable(secs, 1));
    }
    let s = secs.round() as u64;
    match (s / 3600, s % 3600 / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m {s}s"),
        (h, 0, _) => format!("{h}h"),
        (h, m, _) => format!("{h}h {m}m"),
    }
}

/// A plain number for a person, never in scientific notation: at most `decimals` decimals
/// (trailing zeros dropped); a value too small for them gets the decimals that show its
/// first two digits, up to [`FINEST`] of them, and below that reads `<0.000000000001`
/// (smaller than the finest decimal, not a zero it is not); a large one every digit up to
/// [`LARGEST_PLAIN`], and past it its first digits times a power of ten (`1.8×10^308`, not
/// 309 digits).
pub(crate) fn readable(v: f64, decimals: usize) -> String {
    let a = v.abs();
    if a.is_finite() && a >= LARGEST_PLAIN {
        let exp = a.log10().floor() as i32;
        let mantissa = format!("{:.3}", v / 10f64.powi(exp));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        return format!("{mantissa}×10^{exp}");
    }
    let plain = |d: usize| {
        let s = format!("{v:.d$}");
        let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
        if s == "-0" {
            "0".to_owned()
        } else {
            s.to_owned()
        }
    };
    if !v.is_finite() || a == 0.0 || a >= 10f64.powi(-(decimals as i32)) {
        return plain(decimals);
    }
    let first = (-a.log10()).ceil() as usize; // the decimal of its first digit
    if first < FINEST {
        return plain((first + 1).min(FINEST));
    }
    let finest = format!("0.{}1", "0".repeat(FINEST - 1));
    if v > 0.0 {
        format!("<{finest}")
    } else {
        format!(">-{finest}")
    }
}

/// A whole number with a comma every three digits, as the reports write counts (`134,160`);
/// a negative or NaN value reads 0.
pub(crate) fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.max(0.0));
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The most decimals [`readable`] writes.
const FINEST: usize = 12;

/// The largest magnitude [`readable`] writes digit by digit.
const LARGEST_PLAIN: f64 = 1e15;

/// Seconds as a `Duration`, at most [`Duration::MAX`] (a value read from a file may be any
/// size: never a panic), negative values and NaN as 0.
pub(crate) fn secs(s: f64) -> Duration {
    if s.is_nan() || s <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// Microseconds (a report's unit) for a person, negative values as 0; past what a duration
/// holds (a summary.json edited to 1e308), the number itself.
pub(crate) fn human_us(us: f64) -> String {
    match Duration::try_from_secs_f64(us.max(0.0) / 1e6) {
        Ok(d) => human(d),
        Err(_) => format!("{}s", readable(us / 1e6, 2)),
    }
}

/// Milliseconds rounded to two decimals, as reports store them.
pub(crate) fn ms_2dp(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

/// Rounded to `d` decimals, as the reports store derived figures.
pub(crate) fn round(v: f64, d: i32) -> f64 {
    let k = 10f64.powi(d);
    (v * k).round() / k
}

/// `t` as signed nanoseconds from `epoch` (an event before it is negative), saturating.
pub(crate) fn offset_ns(t: tokio::time::Instant, epoch: tokio::time::Instant) -> i64 {
    let ns = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
    match t.checked_duration_since(epoch) {
        Some(d) => ns(d),
        None => -ns(epoch - t),
    }
}

/// Nanosecond histograms from 1 ns to one hour at 3 significant digits: every latency the
/// suite records.
pub(crate) fn new_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Records `d` in a histogram of [`new_histogram`]'s bounds (a zero as its lowest value).
pub(crate) fn record(h: &mut hdrhistogram::Histogram<u64>, d: Duration) {
    h.saturating_record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_duration("2s").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert!(parse_duration("300").unwrap_err().to_string().contains("no unit"));
        assert!(parse_duration("3 parsecs").unwrap_err().to_string().contains("unknown unit"));
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn numbers_read_plainly_at_any_size() {
        assert_eq!(readable(180.0, 2), "180");
        assert_eq!(readable(5.3333, 2), "5.33");
        assert_eq!(readable(0.5, 2), "0.5");
        assert_eq!(readable(0.0, 2), "0");
        assert_eq!(readable(1e-300, 2), "<0.000000000001");
        assert_eq!(readable(-1e-300, 2), ">-0.000000000001");
        assert_eq!(readable(0.004, 2), "0.004");
        assert_eq!(readable(0.000123, 2), "0.00012");
        assert_eq!(readable(1e300, 2), "1×10^300");
        assert_eq!(readable(f64::MAX, 2), "1.798×10^308");
        assert_eq!(readable(-7.7e20, 0), "-7.7×10^20");
        assert_eq!(readable(999_999_999_999_999.0, 0), "999999999999999");
        assert_eq!(readable(-2.5e12, 2), "-2500000000000");
        assert_eq!(human_us(1e308), "1×10^302s", "no panic past what a duration holds");
        assert_eq!(secs(1e308), Duration::MAX);
        assert_eq!(secs(-1.0), Duration::ZERO);
        assert_eq!(readable(1.2345, 3), "1.234");
        for v in [1e-300, 1e300, f64::MAX, f64::MIN_POSITIVE, -3.3e-7, 7.7e20] {
            assert!(!readable(v, 2).contains('e'), "{v}: {}", readable(v, 2));
        }
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(1234567.4), "1,234,567");
        assert_eq!(thousands(999.0), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(-5.0), "0");
    }

    #[test]
    fn human_format() {
        assert_eq!(human(Duration::from_micros(850)), "850µs");
        assert_eq!(human(Duration::from_micros(1234)), "1.23ms");
        assert_eq!(human(Duration::from_millis(150)), "150.0ms");
        assert_eq!(human(Duration::from_millis(1500)), "1.50s");
    }
}
