//! `--threshold`: how far a figure may move before it counts, written `5%` (a percentage)
//! or `0.05` (a fraction of 1: the same 5 %). A bare number of 1 or more is refused, not
//! guessed at: `5` could mean 5 % or 500 %.

use std::fmt;

use crate::base::units::readable;

/// How a threshold is written, as its errors say it.
const HOW: &str = "write a percentage (5%) or a fraction of 1 (0.05 = 5%)";

/// A threshold refused: the text (or number) given, and how to write one.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ThresholdError {
    #[error("{0:?} is not a number; {HOW}")]
    NotANumber(String),
    #[error("{0:?} is not a finite number; {HOW}")]
    NotFinite(String),
    #[error("{0:?}: a threshold cannot be negative; {HOW}")]
    Negative(String),
    #[error("{0:?}: a threshold is under 100%")]
    Percent100(String),
    #[error(
        "{text:?} is ambiguous: a bare number is a fraction of 1 (0.05 = 5%), so {v} would be {}%; write {v}% for {v} \
         percent",
        readable(value * 100.0, 6),
        v = readable(*value, 6)
    )]
    Ambiguous { text: String, value: f64 },
}

/// A share of a figure, in [0, 1): 0.05 is 5 %, and written so (as its fraction of 1).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, serde::Serialize)]
pub(crate) struct Threshold(f64);

impl Threshold {
    /// The default: a change counts past 5 %.
    pub(crate) const DEFAULT: Threshold = Threshold(0.05);

    /// As a fraction of 1.
    pub(crate) fn fraction(self) -> f64 {
        self.0
    }
}

/// As a percentage (`5%`).
impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0 * 100.0;
        if (p - p.round()).abs() < 1e-9 {
            write!(f, "{p:.0}%")
        } else {
            write!(f, "{}%", (p * 1e6).round() / 1e6)
        }
    }
}

impl std::str::FromStr for Threshold {
    type Err = ThresholdError;

    /// `5%` or `5 %` (percent), `0.05` (a fraction); anything else is refused saying how
    /// to write it.
    fn from_str(s: &str) -> Result<Threshold, ThresholdError> {
        let t = s.trim();
        let number = |text: &str| -> Result<f64, ThresholdError> {
            let v: f64 = text.trim().parse().map_err(|_| ThresholdError::NotANumber(s.to_owned()))?;
            if !v.is_finite() {
                return Err(ThresholdError::NotFinite(s.to_owned()));
            }
            if v < 0.0 || text.trim().starts_with('-') {
                return Err(ThresholdError::Negative(s.to_owned()));
            }
            Ok(v)
        };
        if let Some(pct) = t.strip_suffix('%') {
            let v = number(pct)?;
            if v >= 100.0 {
                return Err(ThresholdError::Percent100(s.to_owned()));
            }
            return Ok(Threshold(v / 100.0));
        }
        let v = number(t)?;
        // 100 or more is no threshold as a percentage either: nothing to guess between.
        if v >= 100.0 {
            return Err(ThresholdError::Percent100(s.to_owned()));
        }
        if v >= 1.0 {
            return Err(ThresholdError::Ambiguous { text: s.to_owned(), value: v });
        }
        Ok(Threshold(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_and_fractions_read_alike() {
        for (text, fraction) in
            [("5%", 0.05), ("5 %", 0.05), (" 12.5% ", 0.125), ("0.05", 0.05), ("0", 0.0), ("0%", 0.0)]
        {
            let t: Threshold = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!((t.fraction() - fraction).abs() < 1e-12, "{text} -> {}", t.fraction());
        }
        assert_eq!("5%".parse::<Threshold>().unwrap().to_string(), "5%");
        assert_eq!("0.125".parse::<Threshold>().unwrap().to_string(), "12.5%");
    }

    #[test]
    fn ambiguous_negative_and_odd_values_are_refused_saying_how_to_write_them() {
        let e = "5".parse::<Threshold>().unwrap_err().to_string();
        assert!(e.contains("ambiguous") && e.contains("write 5% for 5 percent"), "{e}");
        assert!("1".parse::<Threshold>().unwrap_err().to_string().contains("ambiguous"));
        for bad in ["-0.05", "-5%", "-0", "-0%"] {
            assert!(bad.parse::<Threshold>().unwrap_err().to_string().contains("cannot be negative"), "{bad}");
        }
        assert!("100%".parse::<Threshold>().unwrap_err().to_string().contains("under 100%"));
        for bad in ["five", "5%%", "", "%", "NaN", "inf", "0x5"] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad}");
        }
    }
}
