//! The comparison as the console shows it, within 100 columns: each run's verdict and what
//! differs between the runs first, then warnings, each case's figures under its name, the
//! figures not compared, and the count of regressions last.

use std::fmt::Write;

use super::{Change, Comparison, Verdict};
use crate::base::units::readable;
use crate::report::export::table::wrap;

/// A figure's value with its unit (`150.21ms`, `5.25/min`, `3`).
pub(super) fn value(v: f64, unit: &str) -> String {
    format!("{}{unit}", readable(v, 2))
}

/// NEW / OLD as `2.00x`, or `from 0`.
pub(super) fn ratio(c: &Change) -> String {
    c.ratio.map_or_else(|| "from 0".to_owned(), |r| format!("{}x", readable_ratio(r)))
}

fn readable_ratio(r: f64) -> String {
    if (0.01..1000.0).contains(&r) {
        format!("{r:.2}")
    } else {
        readable(r, 2)
    }
}

/// The noise interval as `[1.90, 2.10]`, or the model that has none (`margin 25%`, `exact`).
pub(super) fn interval(c: &Change) -> String {
    c.interval.map_or_else(
        || c.model.name().to_owned(),
        |[lo, hi]| format!("[{}, {}]", readable_ratio(lo), readable_ratio(hi)),
    )
}

/// What a figure marked within floor means, said once under the figures.
pub(super) const WITHIN_FLOOR: &str = "within floor: a real-clock latency that moved past the threshold and its \
     noise, but by no more than the machine's own floor (how late it ran what was due while the case ran) or \
     its slowdown (that floor's ratio, or how much slower it ran its calibration probes): the load explains it, \
     not the code";

/// Each run's verdict and what differs between the runs, as the first lines say them.
pub(super) fn heading(c: &Comparison) -> Vec<String> {
    let mut v =
        vec![format!("OLD {}: {}", c.old, c.verdicts[0].text), format!("NEW {}: {}", c.new, c.verdicts[1].text)];
    if c.differs.is_empty() {
        v.push("the runs differ in nothing but time: one scenario, the same seeds, options and clocks".into());
    }
    v.extend(c.differs.iter().map(|d| format!("differs: {}: {} -> {}", d.what, d.old, d.new)));
    v
}

/// The last line: what the comparison found.
pub(super) fn tally(c: &Comparison) -> String {
    let mut t = format!("{} regression(s), {} improvement(s)", c.regressions(), c.improvements());
    if !c.missing_from_new.is_empty() {
        t.push_str(&format!(", {} case(s) of OLD missing from NEW", c.missing_from_new.len()));
    }
    t
}

/// What a figure marked too few samples means, said once under the figures.
pub(super) const TOO_FEW: &str = "too few samples: a p-quantile needs at least 10/(1-p) samples in both runs \
     (p50 20, p90 100, p99 1,000, p99.9 10,000); under that it is shown, not judged";

pub(super) fn render(c: &Comparison) -> String {
    let mut o = String::new();
    for line in heading(c) {
        wrap(&mut o, &line, 0);
    }
    for w in &c.warnings {
        let _ = writeln!(o, "warning: {w}");
    }
    for d in &c.env_diff {
        let _ = writeln!(o, "warning: environments differ: {} {} -> {}", d.field, d.old, d.new);
    }
    let _ = writeln!(
        o,
        "  {:<30} {:>10}    {:>10} {:>6} {:<13} verdict (±{})",
        "figure", "old", "new", "ratio", "95% noise", c.threshold
    );
    let mut case = "";
    for ch in &c.changes {
        if ch.case != case {
            case = &ch.case;
            let _ = writeln!(o, "{case}");
        }
        let _ = writeln!(
            o,
            "  {:<30} {:>10} -> {:>10} {:>6} {:<13} {}",
            ch.figure,
            value(ch.old, ch.unit),
            value(ch.new, ch.unit),
            ratio(ch),
            interval(ch),
            ch.verdict.name()
        );
    }
    for sk in &c.skipped {
        let _ = writeln!(o, "{} {}: not compared: {}", sk.case, sk.figure, sk.why);
    }
    for u in &c.unmatched {
        let _ = writeln!(o, "not compared: {u}");
    }
    for m in &c.missing_from_new {
        let _ = writeln!(o, "FAIL: case {m} of OLD is missing from NEW: nothing measured for it");
    }
    if c.changes.iter().any(|ch| ch.verdict == Verdict::TooFewSamples) {
        wrap(&mut o, TOO_FEW, 0);
    }
    for ch in c.changes.iter().filter(|ch| ch.verdict == Verdict::WithinFloor) {
        if let Some(f) = ch.floor {
            let _ = writeln!(
                o,
                "{} {}: within floor ({} -> {})",
                ch.case,
                ch.figure,
                value(f.old, "ms"),
                value(f.new, "ms")
            );
        }
    }
    if c.changes.iter().any(|ch| ch.verdict == Verdict::WithinFloor) {
        wrap(&mut o, WITHIN_FLOOR, 0);
    }
    if c.zero_in_both > 0 {
        let _ = writeln!(o, "{} figure(s) 0 in both runs left out", c.zero_in_both);
    }
    let _ = writeln!(o, "{}", tally(c));
    o
}
