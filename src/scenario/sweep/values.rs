//! A sweep's values: a list (`["5s", "10s"]`), a range (`{ from = "5s", to = "120s",
//! steps = 6, scale = "log" }`), or the command line's `PATH=V1,V2` and `PATH=FROM..TO:STEPS[:log]`;
//! each value as a TOML value to put into a case, the text it is named by, and a number
//! when it has one (seconds for a duration) for the charts' axis.

use toml::Value;

use super::SweepError;
use crate::base::fields::{Fields, ScenarioError};
use crate::base::units::{parse_duration, readable};
use crate::scenario::MAX_CASES;

/// One value of an axis.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisValue {
    /// As put into the case's table.
    pub value: Value,
    /// As it names the point (`10s`, `60`, `none`).
    pub text: String,
    /// Its number: seconds for a duration, the number itself; `None` for other strings and
    /// booleans.
    pub number: Option<f64>,
}

/// What a value's text may hold: it becomes part of a case name (a file name).
pub(crate) const VALUE_ALLOWED: &str = "letters A-Z a-z, digits 0-9, - _ .";

impl AxisValue {
    /// A value from a list: a string, a number or a boolean.
    pub fn of(v: &Value) -> Result<AxisValue, SweepError> {
        let (text, number) = match v {
            Value::String(s) => (s.clone(), parse_duration(s).ok().map(|d| d.as_secs_f64())),
            Value::Integer(i) => (i.to_string(), Some(*i as f64)),
            // The shortest text of the number (`212`, `83.3`): as the reports write it.
            Value::Float(f) if f.is_finite() => (format!("{f}"), Some(*f)),
            Value::Boolean(b) => (b.to_string(), None),
            _ => return Err(SweepError::ValueType),
        };
        let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !plain {
            return Err(SweepError::ValueText(text));
        }
        Ok(AxisValue { value: v.clone(), text, number })
    }
}

/// The values of one path: a list, or a range table.
pub(super) fn read(file: &str, prefix: &str, spec: &Value) -> Result<Vec<AxisValue>, ScenarioError> {
    let err = |msg: String| ScenarioError { file: file.to_owned(), key: prefix.to_owned(), msg };
    let values = match spec {
        Value::Array(a) => {
            a.iter().map(AxisValue::of).collect::<Result<Vec<_>, _>>().map_err(|e| err(e.to_string()))?
        }
        Value::Table(t) => Fields::new(file, prefix, t).read(range)?,
        _ => return Err(err("expected a list of values or a range { from, to, steps, scale }".into())),
    };
    if values.is_empty() {
        return Err(err("has no values; give at least one".into()));
    }
    for (i, v) in values.iter().enumerate() {
        match values[..i].iter().find(|w| w.same_as(v)) {
            Some(w) if w.text == v.text => {
                return Err(err(format!("the value {} is given twice; each point is run once", v.text)))
            }
            Some(w) => {
                return Err(err(format!(
                    "the values {} and {} are the same value; each point is run once: give it once",
                    w.text, v.text
                )))
            }
            None => {}
        }
    }
    Ok(values)
}

impl AxisValue {
    /// Whether the two would set the option alike: the same text, or the same number said
    /// two ways (`300ms` and `0.3s`; `1` and `1.0`).
    fn same_as(&self, other: &AxisValue) -> bool {
        let numeric = |v: &Value| matches!(v, Value::Integer(_) | Value::Float(_));
        let same_kind = matches!((&self.value, &other.value), (Value::String(_), Value::String(_)))
            || (numeric(&self.value) && numeric(&other.value));
        self.text == other.text || (same_kind && self.number.is_some() && self.number == other.number)
    }
}

/// `{ from, to, steps, scale }`: `steps` values from `from` to `to` (both numbers, or both
/// durations), evenly spaced or on a log scale.
fn range(f: &mut Fields<'_>) -> Result<Vec<AxisValue>, ScenarioError> {
    let steps = f.int("steps", 2, MAX_CASES as i64)?.ok_or_else(|| f.err("steps", "is required (2 or more)"))? as usize;
    let log = f.choice("scale", &["linear", "log"])? == Some("log");
    let (from, to) = (f.raw("from"), f.raw("to"));
    let (Some(from), Some(to)) = (from, to) else {
        let missing = if from.is_none() { "from" } else { "to" };
        return Err(f.err(missing, "is required"));
    };
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Int,
        Float,
        Duration,
    }
    let number = |key: &str, v: &Value| -> Result<(f64, Kind), ScenarioError> {
        match v {
            Value::Integer(i) => Ok((*i as f64, Kind::Int)),
            Value::Float(x) if x.is_finite() => Ok((*x, Kind::Float)),
            Value::String(s) => parse_duration(s).map(|d| (d.as_secs_f64(), Kind::Duration)).map_err(|e| f.err(key, e)),
            _ => Err(f.err(key, "expected a number or a duration string like \"5s\"")),
        }
    };
    let ((a, ka), (b, kb)) = (number("from", from)?, number("to", to)?);
    let kind = match (ka, kb) {
        (Kind::Duration, Kind::Duration) => Kind::Duration,
        (Kind::Int, Kind::Int) => Kind::Int,
        (Kind::Duration, _) | (_, Kind::Duration) => {
            return Err(f.err("to", "`from` and `to` must both be durations or both numbers"))
        }
        _ => Kind::Float,
    };
    if log && (a <= 0.0 || b <= 0.0) {
        return Err(f.err("scale", "a log scale needs `from` and `to` above 0"));
    }
    let mut out = Vec::with_capacity(steps);
    for k in 0..steps {
        let t = k as f64 / (steps - 1) as f64;
        let x = if log { a * (b / a).powf(t) } else { a + (b - a) * t };
        let value = match kind {
            Kind::Int => Value::Integer(x.round() as i64),
            Kind::Float => Value::Float(significant(x)),
            Kind::Duration => Value::String(duration_text(x)),
        };
        let v = AxisValue::of(&value).map_err(|e| f.err("from", e))?;
        if out.iter().any(|o: &AxisValue| o.text == v.text) {
            let why = format!("{steps} steps give the value {} twice (rounded); use fewer steps", v.text);
            return Err(f.err("steps", why));
        }
        out.push(v);
    }
    Ok(out)
}

/// `x` to three significant digits.
fn significant(x: f64) -> f64 {
    if x == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(2 - x.abs().log10().floor() as i32);
    (x * scale).round() / scale
}

/// Seconds as a duration string a scenario takes, to three significant digits: `9.38s`,
/// `350ms`, `120s`.
fn duration_text(secs: f64) -> String {
    let s = significant(secs);
    if s >= 1.0 {
        format!("{}s", readable(s, 3))
    } else if s >= 1e-3 {
        format!("{}ms", readable(s * 1e3, 3))
    } else {
        format!("{}us", readable(s * 1e6, 3))
    }
}

/// A sweep from the command line: `PATH=V1,V2,...` or `PATH=FROM..TO:STEPS[:log]`.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepArg {
    pub path: String,
    /// As a scenario would write it: a list, or a range table.
    pub spec: Value,
}

impl SweepArg {
    pub fn parse(arg: &str) -> Result<SweepArg, ScenarioError> {
        let err = |msg: &str| ScenarioError { file: "--sweep".into(), key: arg.to_owned(), msg: msg.to_owned() };
        let usage = "expected PATH=V1,V2,... or PATH=FROM..TO:STEPS[:log] (e.g. runner.window=5s,10s,25s)";
        let (path, values) = arg.split_once('=').ok_or_else(|| err(usage))?;
        let (path, values) = (path.trim(), values.trim());
        if path.is_empty() || values.is_empty() {
            return Err(err(usage));
        }
        let spec = match values.split_once("..") {
            Some((from, rest)) => {
                let mut parts = rest.split(':');
                let to = parts.next().unwrap_or("");
                let steps: i64 = parts.next().and_then(|s| s.parse().ok()).ok_or_else(|| err(usage))?;
                let mut t = toml::Table::new();
                t.insert("from".into(), scalar(from));
                t.insert("to".into(), scalar(to));
                t.insert("steps".into(), Value::Integer(steps));
                match parts.next() {
                    None => {}
                    Some(scale @ ("log" | "linear")) => {
                        t.insert("scale".into(), Value::String(scale.into()));
                    }
                    Some(_) => return Err(err("the scale after the steps is log or linear")),
                }
                if parts.next().is_some() {
                    return Err(err(usage));
                }
                Value::Table(t)
            }
            None => Value::Array(values.split(',').map(|v| scalar(v.trim())).collect()),
        };
        Ok(SweepArg { path: path.to_owned(), spec })
    }
}

/// A command-line value as the scenario file would hold it: a number or a boolean when it
/// reads as one, else a string (`5s`, `none`, `proxy`).
fn scalar(s: &str) -> Value {
    match format!("x = {s}").parse::<toml::Table>().ok().and_then(|mut t| t.remove("x")) {
        Some(v @ (Value::Integer(_) | Value::Float(_) | Value::Boolean(_))) => v,
        _ => Value::String(s.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(spec: &str) -> Result<Vec<String>, ScenarioError> {
        let t: toml::Table = format!("x = {spec}").parse().unwrap();
        Ok(read("s.toml", "case[0].sweep.runner.window", &t["x"])?.into_iter().map(|v| v.text).collect())
    }

    #[test]
    fn lists_and_ranges() {
        assert_eq!(texts(r#"["5s", "25s", "none"]"#).unwrap(), ["5s", "25s", "none"]);
        assert_eq!(
            texts(r#"{ from = "5s", to = "120s", steps = 6, scale = "log" }"#).unwrap(),
            ["5s", "9.44s", "17.8s", "33.7s", "63.6s", "120s"]
        );
        assert_eq!(texts("{ from = 50, to = 150, steps = 5 }").unwrap(), ["50", "75", "100", "125", "150"]);
        assert_eq!(texts(r#"{ from = "100ms", to = "1s", steps = 3 }"#).unwrap(), ["100ms", "550ms", "1s"]);
        assert_eq!(texts("{ from = 0.5, to = 1, steps = 2 }").unwrap(), ["0.5", "1"]);
    }

    #[test]
    fn bad_values_and_ranges_are_named() {
        let e = texts("[]").unwrap_err();
        assert!(e.msg.contains("no values"), "{e}");
        let e = texts(r#"["5s", "5s"]"#).unwrap_err();
        assert!(e.msg.contains("given twice"), "{e}");
        let e = texts("[\"300ms\", \"0.3s\"]").unwrap_err();
        assert!(e.msg.contains("the values 300ms and 0.3s are the same value"), "{e}");
        // A whole float is named as its integer is: one name, given twice.
        let e = texts("[1, 1.0]").unwrap_err();
        assert!(e.msg.contains("the value 1 is given twice"), "{e}");
        let e = texts(r#"["a b"]"#).unwrap_err();
        assert!(e.msg.contains("cannot name a point"), "{e}");
        let e = texts("{ from = 1, to = 3, steps = 5 }").unwrap_err();
        assert_eq!(e.key, "case[0].sweep.runner.window.steps", "{e}");
        let e = texts(r#"{ from = "1s", to = 3, steps = 2 }"#).unwrap_err();
        assert!(e.msg.contains("both be durations"), "{e}");
        let e = texts("{ from = 0, to = 3, steps = 2, scale = \"log\" }").unwrap_err();
        assert_eq!(e.key, "case[0].sweep.runner.window.scale", "{e}");
        let e = texts("{ from = 1, to = 3, steps = 2, step = 1 }").unwrap_err();
        assert!(e.msg.contains("unknown key") && e.msg.contains("steps"), "{e}");
    }

    #[test]
    fn command_line_sweeps_read_as_a_scenario_would_write_them() {
        let a = SweepArg::parse("runner.window=5s,10s,25s").unwrap();
        assert_eq!(a.path, "runner.window");
        assert_eq!(a.spec, Value::Array(vec!["5s".into(), "10s".into(), "25s".into()]));
        let a = SweepArg::parse("limits.org_held_execs=50,100").unwrap();
        assert_eq!(a.spec, Value::Array(vec![50.into(), 100.into()]));
        let a = SweepArg::parse("runner.idle_wake=true,false").unwrap();
        assert_eq!(a.spec, Value::Array(vec![true.into(), false.into()]));
        let a = SweepArg::parse("runner.window=5s..120s:6:log").unwrap();
        let t = a.spec.as_table().unwrap();
        assert_eq!(
            (t["from"].as_str(), t["steps"].as_integer(), t["scale"].as_str()),
            (Some("5s"), Some(6), Some("log"))
        );
        for bad in ["runner.window", "=5s", "runner.window=", "runner.window=5s..10s", "w=1..2:3:cubic"] {
            let e = SweepArg::parse(bad).unwrap_err();
            assert_eq!((e.file.as_str(), e.key.as_str()), ("--sweep", bad), "{e}");
        }
    }
}
