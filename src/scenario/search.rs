//! Searches: where along one of a case's options its gates stop holding, found by probing,
//! not read off a grid.
//!
//! `search = { path = "limits.org_rate", from = 150, to = 350, precision = "5%", meets = "above" }`
//! in a `[[case]]` runs the case at `from` and `to` first (the bracket the scenario expects the
//! boundary in), then halves the bracket until it is no wider than `precision` (a number or
//! duration, or a share of the value: `"5%"`). A probe **meets** when the case meets every
//! rollout gate it is judged on (its own gates when it has none) with room to spare: not on
//! the edge ([`crate::scenario::gate::EDGE`]). `meets` says which side of the boundary does
//! (`above`: larger values, as a larger limit or window; `below`: smaller, as a round trip);
//! when both ends of the bracket fall on one side, the bracket is widened away from it, up
//! to [`MAX_WIDENINGS`] times. With `jobs` to spare, a round probes several points of the
//! bracket at once.
//!
//! A searched case may also `sweep` other options: the search then runs once per point of
//! that sweep (a line), as a boundary runs along the last axis of a two-axis sweep. Each
//! probe is a point of the case named as a sweep's point is
//! (`held-1000@sandboxes=1000,org_held_execs=190`), read from the scenario's text by the same
//! parser, so whatever a sweep may set a search may too.

use toml::{Table, Value};

use crate::base::fields::ScenarioError;
use crate::base::units::{parse_duration, readable, round};

/// The most times a bracket is widened before the search says the boundary is outside it.
pub(crate) const MAX_WIDENINGS: u32 = 3;

/// The most probes one line of a search runs.
pub(crate) const MAX_PROBES: usize = 16;

/// How narrow a bracket must get.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Precision {
    /// At most this wide, in the value's unit (seconds for a duration).
    Absolute(f64),
    /// At most this share of the boundary's value wide.
    Relative(f64),
}

impl Precision {
    /// A precision as a search states it; `None` when it does not read as one.
    fn parse(v: &Value, duration: bool) -> Option<Precision> {
        let p = match v {
            Value::String(s) if s.trim_end().ends_with('%') => {
                Precision::Relative(s.trim().trim_end_matches('%').trim().parse::<f64>().ok()? / 100.0)
            }
            Value::String(s) if duration => Precision::Absolute(parse_duration(s).ok()?.as_secs_f64()),
            Value::Integer(i) => Precision::Absolute(*i as f64),
            Value::Float(f) => Precision::Absolute(*f),
            _ => return None,
        };
        let (Precision::Absolute(x) | Precision::Relative(x)) = p;
        (x.is_finite() && x > 0.0).then_some(p)
    }

    /// Whether a bracket from `a` to `b` is narrow enough.
    pub(crate) fn reached(self, a: f64, b: f64) -> bool {
        let width = (b - a).abs();
        match self {
            Precision::Absolute(w) => width <= w + 1e-9,
            Precision::Relative(r) => width <= r * a.abs().max(b.abs()) + 1e-9,
        }
    }

    /// `0.25 s`, `5 %`, as the reports say it.
    pub fn text(self, unit: &str) -> String {
        match self {
            Precision::Absolute(w) => format!("{}{}{unit}", readable(w, 3), if unit.is_empty() { "" } else { " " }),
            Precision::Relative(r) => format!("{} %", readable(r * 100.0, 2)),
        }
    }
}

crate::base::named! {
/// Which side of the boundary meets the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Values from the boundary up meet them (a limit, a window).
    Above,
    /// Values up to the boundary meet them (a round trip).
    Below,
}
names ["above", "below"]
}

/// A case's search, as the scenario states it.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The searched option's path (`limits.org_rate`).
    pub path: String,
    /// How a probe names it: the path's last part.
    pub label: String,
    /// The bracket the boundary is expected in.
    pub from: f64,
    pub to: f64,
    /// The values are durations (put in as `"27.25s"`, in seconds here).
    pub duration: bool,
    /// The values are whole numbers (a count, a limit): probes are rounded to one.
    pub integer: bool,
    pub precision: Precision,
    pub meets: Side,
}

impl Search {
    /// `s` when the values are durations, else empty.
    pub fn unit(&self) -> &'static str {
        if self.duration {
            "s"
        } else {
            ""
        }
    }

    /// A probe's value as it is put into the case's table.
    pub(crate) fn value(&self, x: f64) -> Value {
        if self.duration {
            Value::String(format!("{}s", readable(x, 3)))
        } else if self.integer {
            Value::Integer(x.round() as i64)
        } else {
            Value::Float(x)
        }
    }

    /// A probe's value as it names the point (`27.25s`, `190`, `166.7`).
    pub(crate) fn text(&self, x: f64) -> String {
        match self.value(x) {
            Value::String(s) => s,
            Value::Integer(i) => i.to_string(),
            _ => readable(x, 3),
        }
    }

    /// `x` on the grid a probe takes: a round step of about a quarter of the precision there
    /// (1, 2 or 5 times a power of ten: `27.15s`, not `27.167s`), whole numbers for a count.
    pub(crate) fn snap(&self, x: f64) -> f64 {
        let want = match self.precision {
            Precision::Absolute(w) => w / 4.0,
            Precision::Relative(r) => r * x.abs() / 4.0,
        };
        let mut step = nice(want.max(1e-6));
        if self.integer {
            step = step.max(1.0).round();
        }
        let snapped = (x / step).round() * step;
        // Clear the float noise a step of 0.05 leaves (27.150000000000002).
        round(snapped, 6)
    }
}

/// The round number (1, 2 or 5 times a power of ten) at or below `x`.
fn nice(x: f64) -> f64 {
    let e = 10f64.powf(x.log10().floor());
    let m = x / e;
    e * if m < 2.0 {
        1.0
    } else if m < 5.0 {
        2.0
    } else {
        5.0
    }
}

/// Reads case `i`'s `search` table (its keys checked); `None`: the case searches nothing.
pub(crate) fn read(file: &str, i: usize, case: &Table) -> Result<Option<Search>, ScenarioError> {
    let key = format!("case[{i}].search");
    let err = |k: &str, msg: String| ScenarioError { file: file.to_owned(), key: format!("{key}{k}"), msg };
    let Some(spec) = case.get("search") else { return Ok(None) };
    let Value::Table(t) = spec else {
        let example = "{ path = \"limits.org_rate\", from = 150, to = 350, precision = \"5%\", meets = \"above\" }";
        return Err(err("", format!("expected a table, e.g. {example}")));
    };
    const KEYS: [&str; 5] = ["path", "from", "to", "precision", "meets"];
    if let Some(k) = t.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(err(&format!(".{k}"), format!("unknown key; allowed here: {}", KEYS.join(", "))));
    }
    case_name(file, i, case)?;
    let path = match t.get("path") {
        Some(Value::String(p)) => p.clone(),
        _ => return Err(err(".path", "is required: the option path searched (e.g. \"runner.window\")".into())),
    };
    let number = |k: &str| -> Result<(f64, bool, bool), ScenarioError> {
        match t.get(k) {
            Some(Value::Integer(n)) => Ok((*n as f64, false, true)),
            Some(Value::Float(f)) if f.is_finite() => Ok((*f, false, false)),
            Some(Value::String(s)) => parse_duration(s)
                .map(|d| (d.as_secs_f64(), true, false))
                .map_err(|_| err(&format!(".{k}"), format!("{s:?} is not a duration (e.g. \"25s\") or a number"))),
            Some(_) => Err(err(&format!(".{k}"), "expected a number or a duration".into())),
            None => Err(err(&format!(".{k}"), "is required: an end of the bracket searched first".into())),
        }
    };
    let (from, fd, fi) = number("from")?;
    let (to, to_d, to_i) = number("to")?;
    if fd != to_d {
        return Err(err("", "`from` and `to` are both durations or both numbers".into()));
    }
    if from >= to || from < 0.0 {
        return Err(err(
            ".to",
            format!(
                "the bracket is from {} to {}: `to` must be above `from`, both at least 0",
                readable(from, 3),
                readable(to, 3)
            ),
        ));
    }
    let precision = match t.get("precision") {
        Some(v) => Precision::parse(v, fd).ok_or_else(|| {
            let what =
                "expected a positive width (a number, a duration like \"0.25s\") or a share of the value (\"5%\")";
            err(".precision", what.into())
        })?,
        None => Precision::Relative(0.05),
    };
    let meets = match t.get("meets") {
        None => Side::Above,
        Some(v) => v
            .as_str()
            .and_then(Side::from_name)
            .ok_or_else(|| err(".meets", "expected \"above\" (larger values meet the gates) or \"below\"".into()))?,
    };
    let integer = fi && to_i && !matches!(precision, Precision::Absolute(w) if w.fract() != 0.0);
    let label = path.rsplit('.').next().unwrap_or(&path).to_owned();
    Ok(Some(Search { path, label, from, to, duration: fd, integer, precision, meets }))
}

/// The name of `[[case]]` number `i`, which a searched or swept case must state.
pub(crate) fn case_name(file: &str, i: usize, case: &Table) -> Result<String, ScenarioError> {
    match case.get("name") {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(ScenarioError { file: file.to_owned(), key: format!("case[{i}].name"), msg: "is required".into() }),
    }
}

/// One line of a search under way: its probes so far, each value and whether it met.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Line {
    pub probes: Vec<(f64, bool)>,
}

/// Where a line stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Next {
    /// Probe these values next.
    Probe(usize),
    /// Bracketed as narrow as asked: the last value that misses and the first that meets.
    Found { miss: f64, meet: f64 },
    /// Every value probed meets (after widening as far as allowed).
    MeetsEverywhere,
    /// No value probed meets.
    MissedEverywhere,
    /// Out of probes before the bracket was narrow enough.
    OutOfProbes { miss: f64, meet: f64 },
}

impl Line {
    /// The probes sorted by value.
    fn sorted(&self) -> Vec<(f64, bool)> {
        let mut p = self.probes.clone();
        p.sort_by(|a, b| a.0.total_cmp(&b.0));
        p
    }

    /// The bracket: the missing value next to the meeting side's nearest value, ordered as
    /// (miss, meet); `None` when every probe falls on one side.
    pub(crate) fn bracket(&self, side: Side) -> Option<(f64, f64)> {
        let p = self.sorted();
        match side {
            Side::Above => {
                let meet = p.iter().find(|x| x.1)?.0;
                let miss = p.iter().rev().find(|x| !x.1 && x.0 < meet)?.0;
                Some((miss, meet))
            }
            Side::Below => {
                let meet = p.iter().rev().find(|x| x.1)?.0;
                let miss = p.iter().find(|x| !x.1 && x.0 > meet)?.0;
                Some((miss, meet))
            }
        }
    }

    /// The values to probe next (at most `k`), or how the line ended.
    pub(crate) fn next(&self, s: &Search, k: usize) -> (Next, Vec<f64>) {
        if self.probes.is_empty() {
            // The bracket's ends as the scenario states them (a count's, whole).
            let end = |x: f64| if s.integer { x.round() } else { x };
            return (Next::Probe(2), vec![end(s.from), end(s.to)]);
        }
        let probed = |x: f64| self.probes.iter().any(|p| (p.0 - x).abs() < 1e-9);
        if let Some((miss, meet)) = self.bracket(s.meets) {
            if s.narrow_enough(miss, meet) {
                return (Next::Found { miss, meet }, Vec::new());
            }
            if self.probes.len() >= MAX_PROBES {
                return (Next::OutOfProbes { miss, meet }, Vec::new());
            }
            let k = k.clamp(1, MAX_PROBES - self.probes.len());
            let (lo, hi) = (miss.min(meet), miss.max(meet));
            let mut values: Vec<f64> = (1..=k).map(|j| s.snap(lo + (hi - lo) * j as f64 / (k + 1) as f64)).collect();
            values.retain(|x| *x > lo && *x < hi && !probed(*x));
            values.dedup();
            if values.is_empty() {
                // The grid a probe can take is coarser than the bracket: as narrow as it gets.
                return (Next::Found { miss, meet }, Vec::new());
            }
            return (Next::Probe(values.len()), values);
        }
        let p = self.sorted();
        let (lo, hi) = (p[0].0, p[p.len() - 1].0);
        let all_meet = p.iter().all(|x| x.1);
        // Each widening probed one value outside the bracket as stated.
        let widened =
            self.probes.iter().filter(|p| p.0 < s.from.round().min(s.from) || p.0 > s.to.round().max(s.to)).count()
                as u32;
        if widened >= MAX_WIDENINGS || self.probes.len() >= MAX_PROBES {
            return (if all_meet { Next::MeetsEverywhere } else { Next::MissedEverywhere }, Vec::new());
        }
        // Widen away from the side every probe fell on, by the bracket's width again.
        let span = (hi - lo).max(s.precision_floor(hi));
        let toward_smaller = all_meet == (s.meets == Side::Above);
        let x = if toward_smaller { (lo - span).max(0.0) } else { hi + span };
        let x = s.snap(x);
        if probed(x) {
            return (if all_meet { Next::MeetsEverywhere } else { Next::MissedEverywhere }, Vec::new());
        }
        (Next::Probe(1), vec![x])
    }
}

impl Search {
    /// Whether a bracket from `a` to `b` is as narrow as asked (or as a count can get).
    fn narrow_enough(&self, a: f64, b: f64) -> bool {
        self.precision.reached(a, b) || (self.integer && (b - a).abs() <= 1.0)
    }

    /// The narrowest step a widening takes: the precision itself.
    fn precision_floor(&self, at: f64) -> f64 {
        match self.precision {
            Precision::Absolute(w) => w,
            Precision::Relative(r) => r * at.abs().max(1e-9),
        }
    }

    /// How many probes a line should take when the boundary is inside the bracket: the two
    /// ends, then a halving until the precision is reached.
    pub(crate) fn expected_probes(&self) -> usize {
        let (mut lo, mut hi, mut n) = (self.from, self.to, 2usize);
        while !self.narrow_enough(lo, hi) && n < MAX_PROBES {
            let mid = (lo + hi) / 2.0;
            // The boundary is as likely on either side: halve toward the far end.
            if n % 2 == 0 {
                lo = mid;
            } else {
                hi = mid;
            }
            n += 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(text: &str) -> Search {
        let case: Table = format!("name = \"c\"\nsearch = {text}").parse().unwrap();
        read("s.toml", 0, &case).unwrap().unwrap()
    }

    /// Runs a line against a boundary at `at` (a value meets from `at` up, or down).
    fn run(s: &Search, at: f64, k: usize) -> (Next, Line) {
        let mut line = Line::default();
        loop {
            let (next, values) = line.next(s, k);
            if values.is_empty() {
                return (next, line);
            }
            for x in values {
                let meets = match s.meets {
                    Side::Above => x >= at,
                    Side::Below => x <= at,
                };
                line.probes.push((x, meets));
            }
        }
    }

    #[test]
    fn a_bracket_is_halved_to_its_precision() {
        let s = search(r#"{ path = "runner.window", from = "25s", to = "29.5s", precision = "0.25s" }"#);
        assert!(s.duration && !s.integer);
        let (next, line) = run(&s, 26.7, 1);
        let Next::Found { miss, meet } = next else { panic!("{next:?}") };
        assert!(miss < 26.7 && meet >= 26.7 && meet - miss <= 0.25, "{miss} {meet}");
        assert_eq!(line.probes.len(), 2 + 5, "4.5 s halved five times is under 0.25 s");
        assert_eq!(s.text(26.75), "26.75s");
        // Two probes a round: fewer rounds, no more than twice the probes.
        let (_, two) = run(&s, 26.7, 2);
        assert!(two.probes.len() <= 2 * line.probes.len());
    }

    #[test]
    fn a_share_of_the_value_and_whole_numbers() {
        let s = search(r#"{ path = "limits.org_held_execs", from = 150, to = 250, precision = "5%" }"#);
        assert!(s.integer && s.precision == Precision::Relative(0.05));
        let (next, _) = run(&s, 191.0, 1);
        let Next::Found { miss, meet } = next else { panic!("{next:?}") };
        assert!(meet >= 191.0 && miss < 191.0 && meet - miss <= 0.05 * meet, "{miss} {meet}");
        assert_eq!(s.value(190.4), Value::Integer(190));
    }

    #[test]
    fn a_bracket_that_misses_the_boundary_is_widened_toward_it() {
        let s = search(r#"{ path = "limits.org_rate", from = 300.0, to = 400.0, precision = "5%" }"#);
        let (next, line) = run(&s, 180.0, 1);
        assert!(matches!(next, Next::Found { .. }), "{next:?} {line:?}");
        // Below: a round trip meets up to the boundary.
        let s = search(r#"{ path = "profile.rtt", from = 20.0, to = 40.0, precision = 2.0, meets = "below" }"#);
        let (next, _) = run(&s, 57.0, 1);
        let Next::Found { miss, meet } = next else { panic!("{next:?}") };
        assert!(meet <= 57.0 && miss > 57.0, "{miss} {meet}");
        // Too far to reach by widening: said, not guessed.
        let s = search(r#"{ path = "limits.org_rate", from = 300.0, to = 400.0, precision = "5%" }"#);
        assert_eq!(run(&s, 1.0e6, 1).0, Next::MissedEverywhere);
    }

    #[test]
    fn a_search_that_does_not_read_names_its_key() {
        let bad = |text: &str| {
            let case: Table = format!("name = \"c\"\nsearch = {text}").parse().unwrap();
            read("s.toml", 2, &case).unwrap_err()
        };
        assert_eq!(bad(r#"{ path = "x.y", from = 5, to = 1 }"#).key, "case[2].search.to");
        assert_eq!(bad(r#"{ path = "x.y", from = 1, to = 5, precision = "-1%" }"#).key, "case[2].search.precision");
        assert_eq!(bad(r#"{ path = "x.y", from = 1, to = 5, step = 1 }"#).key, "case[2].search.step");
        assert_eq!(bad(r#"{ from = 1, to = 5 }"#).key, "case[2].search.path");
        assert_eq!(bad(r#"{ path = "x.y", from = "1s", to = 5 }"#).key, "case[2].search");
    }
}
