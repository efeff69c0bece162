//! Sweeps: one case run over the values of one or two of its options.
//!
//! `sweep = { "runner.window" = ["5s", "25s"], "limits.idle_timeout" = ["none", "60s"] }` in
//! a `[[case]]` (or `--sweep PATH=VALUES` on the command line) makes a case per point of the
//! values' cross product, named after its values (`window-exec@window=5s,idle_timeout=none`).
//! Each point is the case's own TOML table with the values put in at their paths, read by the
//! same parser as a hand-written case, so whatever a case can set can be swept and whatever
//! does not apply to the case is refused as it would be by hand — with the path named. A
//! path under `workload.` sets the point's own workload (the scenario's `[workload]` with the
//! value put in). A sweep may state an `objective` (`"min fleet.held_exec_secs_per_min"`),
//! read to name the best point that meets every gate, and `figures`: measures shown per point
//! beside the gated ones.

mod values;

pub(crate) use values::{AxisValue, SweepArg, VALUE_ALLOWED};

use toml::{Table, Value};

use crate::base::fields::ScenarioError;
use crate::scenario::gate::{Gate, Metric, MetricError};
use crate::scenario::rules::MAX_NAME;

/// The most option paths one sweep may cross.
pub(crate) const MAX_AXES: usize = 2;

/// One swept option: its path in the case and the values it takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// `runner.window`, `limits.idle_timeout`, `workload.sandboxes`.
    pub path: String,
    /// How the point names it: the path's last part (`window`), or the whole path when two
    /// axes end alike.
    pub label: String,
    pub values: Vec<AxisValue>,
}

crate::base::named! {
/// Whether the objective is a least or a most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    Min,
    Max,
}
names ["min", "max"]
}

/// What the best point has: the least (or most) of one measure, among the points that meet
/// every gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Objective {
    pub goal: Goal,
    pub metric: Metric,
}

/// A sweep's own setting that does not read (its objective, a swept path, a value): each
/// says what it may be instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SweepError {
    #[error("{0:?}: expected \"min METRIC\" or \"max METRIC\" (e.g. \"min idle_discovery_per_min\")")]
    Objective(String),
    #[error(transparent)]
    Metric(#[from] MetricError),
    #[error("expected metric names")]
    NotMetricNames,
    #[error("an option path is keys joined by `.` (e.g. runner.window, limits.idle_timeout)")]
    PathSyntax,
    #[error("a point is named after its values: `name` is not swept")]
    Name,
    #[error("`{0}` belongs to the sweep itself")]
    OwnKey(String),
    #[error("faults are tables of their own: give each its case instead")]
    Fault,
    #[error("sweep a key of the workload (e.g. workload.sandboxes)")]
    WholeWorkload,
    #[error("`limits = {0:?}` names no [limits.{0}] table")]
    NoLimits(String),
    #[error("`{here}` is a name here ({name:?}), not a table: sweep `{here}` itself over names")]
    NameNotTable { here: String, name: String },
    #[error("`{here}` is {found} here, not a table")]
    NotTable { here: String, found: &'static str },
    #[error("a sweep's values are strings, numbers or booleans")]
    ValueType,
    #[error("{0:?} cannot name a point (a case name); a value may hold {VALUE_ALLOWED}")]
    ValueText(String),
}

impl Objective {
    fn parse(s: &str) -> Result<Objective, SweepError> {
        let usage = || SweepError::Objective(s.to_owned());
        let (goal, metric) = s.trim().split_once(char::is_whitespace).ok_or_else(usage)?;
        let goal = Goal::from_name(goal).ok_or_else(usage)?;
        Ok(Objective { goal, metric: Metric::parse(metric.trim())? })
    }

    /// `min fleet.held_exec_secs_per_min`.
    pub fn text(&self) -> String {
        format!("{} {}", self.goal.name(), self.metric.name())
    }
}

/// A case named after its values: the index of its value on each axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub case: String,
    pub at: Vec<usize>,
}

/// A case's sweep, as the scenario states it, with its points in order (the last axis
/// varies fastest).
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The swept case's own name (no point is named so).
    pub case: String,
    pub axes: Vec<Axis>,
    pub objective: Option<Objective>,
    /// The measures shown per point: the case's gated ones (the invariants aside), the
    /// objective's, then `figures`.
    pub figures: Vec<Metric>,
    /// `figures` as given (the gated ones are added once a point is read).
    extra: Vec<Metric>,
    pub points: Vec<Point>,
    /// A searched case: its search, whose axis is the last of `axes` (its values are the
    /// probes, made as the search runs; `points` is empty until then).
    pub search: Option<crate::scenario::search::Search>,
    /// A searched case's lines: the index of the value of each other axis (one line, with
    /// none, when only the searched option varies).
    pub lines: Vec<Vec<usize>>,
}

impl Sweep {
    /// The measures shown per point, given a point's case (its gates and rollout gates, which
    /// every point holds); once settled, they stay.
    pub(crate) fn settle_figures(&mut self, point: &crate::scenario::CaseSpec) {
        if !self.figures.is_empty() {
            return;
        }
        let invariants: Vec<Metric> =
            crate::scenario::INVARIANTS.iter().map(|g| Gate::parse(g).expect("the invariants parse").metric).collect();
        let mut out: Vec<Metric> = Vec::new();
        let gated = point.gates.iter().chain(&point.rollout).map(|g| g.metric).filter(|m| !invariants.contains(m));
        for m in gated.chain(self.objective.iter().map(|o| o.metric)).chain(self.extra.iter().copied()) {
            if !out.contains(&m) {
                out.push(m);
            }
        }
        self.figures = out;
    }
}

/// One point, ready to be read as a hand-written case: its name, its case table, and its
/// workload table when the sweep sets a workload key.
pub(crate) struct PointTable {
    pub name: String,
    pub case: Table,
    pub workload: Option<Table>,
    /// (path, value text) of each axis, for errors.
    values: Vec<(String, String)>,
}

/// How many paths a sweep (beside a search's) gives: one or two in all, the searched one
/// not among them.
fn check_axes_count(
    axes_given: &[(String, Value)],
    search: Option<&crate::scenario::search::Search>,
    err: &impl Fn(&str, String) -> ScenarioError,
) -> Result<(), ScenarioError> {
    let searched = usize::from(search.is_some());
    if (axes_given.is_empty() && searched == 0) || axes_given.len() + searched > MAX_AXES {
        let why = match searched {
            0 => format!("{} option paths; allowed: 1 or {MAX_AXES}", axes_given.len()),
            _ => {
                format!("{} option paths beside the searched one; allowed: at most {}", axes_given.len(), MAX_AXES - 1)
            }
        };
        return Err(err("sweep", why));
    }
    if let Some(s) = search {
        check_path(&s.path).map_err(|m| err("search.path", m.to_string()))?;
        if axes_given.iter().any(|(p, _)| *p == s.path) {
            return Err(err("sweep", format!("`{}` is searched: it cannot be swept as well", s.path)));
        }
    }
    Ok(())
}

/// A sweep's axes: each path checked and its values read.
fn read_axes(
    axes_given: &[(String, Value)],
    (file, prefix): (&str, &str),
    err: &impl Fn(&str, String) -> ScenarioError,
) -> Result<Vec<Axis>, ScenarioError> {
    let mut axes: Vec<Axis> = Vec::new();
    for (path, spec) in axes_given {
        check_path(path).map_err(|m| err(&format!("sweep.{path}"), m.to_string()))?;
        if axes.iter().any(|a| a.path == *path) {
            return Err(err("sweep", format!("`{path}` is given twice")));
        }
        let values = values::read(file, &format!("{prefix}.sweep.{path}"), spec)?;
        let last = path.rsplit('.').next().unwrap_or(path).to_owned();
        axes.push(Axis { path: path.clone(), label: last, values });
    }
    if axes.len() == 2 && axes[0].label == axes[1].label {
        for a in &mut axes {
            a.label = a.path.clone();
        }
    }
    Ok(axes)
}

/// A sweep's (or search's) `objective` and `figures`, read.
fn objective_and_figures(
    case: &Table,
    err: &impl Fn(&str, String) -> ScenarioError,
) -> Result<(Option<Objective>, Vec<Metric>), ScenarioError> {
    let objective = match case.get("objective") {
        None => None,
        Some(Value::String(s)) => Some(Objective::parse(s).map_err(|m| err("objective", m.to_string()))?),
        Some(_) => return Err(err("objective", "expected a string like \"min idle_discovery_per_min\"".into())),
    };
    let extra = match case.get("figures") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().ok_or(SweepError::NotMetricNames).and_then(|m| Ok(Metric::parse(m)?)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| err("figures", m.to_string()))?,
        Some(_) => return Err(err("figures", "expected a list of metric names".into())),
    };
    Ok((objective, extra))
}

/// The keys a case may set only beside a sweep.
const SWEEP_KEYS: [&str; 3] = ["sweep", "objective", "figures"];

/// Reads case `i`'s sweep and makes its points; `None`: the case sweeps nothing.
pub(crate) fn expand(
    file: &str,
    i: usize,
    case: &Table,
    top: &Table,
) -> Result<Option<(Sweep, Vec<PointTable>)>, ScenarioError> {
    let prefix = format!("case[{i}]");
    let err = |key: &str, msg: String| ScenarioError { file: file.to_owned(), key: format!("{prefix}.{key}"), msg };
    let search = crate::scenario::search::read(file, i, case)?;
    let axes_given: Vec<(String, Value)> = match case.get("sweep") {
        None if search.is_some() => Vec::new(),
        None => {
            if let Some(k) = SWEEP_KEYS.iter().find(|k| case.contains_key(**k)) {
                return Err(err(k, "applies only with `sweep` or `search` (a case's values to run it over)".into()));
            }
            return Ok(None);
        }
        Some(Value::Table(t)) => flatten(t, ""),
        Some(_) => {
            return Err(err(
                "sweep",
                "expected a table of option paths, e.g. { \"runner.window\" = [\"5s\", \"25s\"] }".into(),
            ))
        }
    };
    check_axes_count(&axes_given, search.as_ref(), &err)?;
    let name = crate::scenario::search::case_name(file, i, case)?;
    crate::scenario::check_name(&name).map_err(|m| err("name", m.to_string()))?;
    let axes = read_axes(&axes_given, (file, &prefix), &err)?;
    let (objective, extra) = objective_and_figures(case, &err)?;
    let count: usize = axes.iter().map(|a| a.values.len()).product();
    if count > crate::scenario::MAX_CASES {
        let why = format!("{count} points; allowed: at most {} cases per scenario", crate::scenario::MAX_CASES);
        return Err(err("sweep", why));
    }
    let mut base = case.clone();
    for k in SWEEP_KEYS.iter().chain(&["search"]) {
        base.remove(*k);
    }
    if let Some(search) = search {
        let sweep = searched_sweep(search, name, axes, (objective, extra), &base, top, (file, &prefix))?;
        return Ok(Some((sweep, Vec::new())));
    }
    let (points, tables) = points_of(&axes, &base, &name, top, (file, &prefix))?;
    let sweep =
        Sweep { case: name, axes, objective, figures: Vec::new(), extra, points, search: None, lines: Vec::new() };
    Ok(Some((sweep, tables)))
}

/// A searched case's sweep: its other axes' points are the lines the search runs along (one,
/// with none), its searched axis last with no value yet (the probes are made as it runs).
fn searched_sweep(
    search: crate::scenario::search::Search,
    name: String,
    mut axes: Vec<Axis>,
    (objective, extra): (Option<Objective>, Vec<Metric>),
    base: &Table,
    top: &Table,
    at: (&str, &str),
) -> Result<Sweep, ScenarioError> {
    let fixed = if axes.is_empty() {
        vec![Point { case: name.clone(), at: Vec::new() }]
    } else {
        points_of(&axes, base, &name, top, at)?.0
    };
    let lines = fixed.into_iter().map(|p| p.at).collect();
    let label = if axes.iter().any(|a| a.label == search.label) { search.path.clone() } else { search.label.clone() };
    axes.push(Axis { path: search.path.clone(), label, values: Vec::new() });
    let search = Some(search);
    Ok(Sweep { case: name, axes, objective, figures: Vec::new(), extra, points: Vec::new(), search, lines })
}

/// Every point of a sweep over `axes` (the last axis varying fastest): its name, the case's
/// table with the point's values set on it, and its own workload when an axis sets one.
fn points_of(
    axes: &[Axis],
    base: &Table,
    name: &str,
    top: &Table,
    (file, prefix): (&str, &str),
) -> Result<(Vec<Point>, Vec<PointTable>), ScenarioError> {
    let err = |key: &str, msg: String| ScenarioError { file: file.to_owned(), key: format!("{prefix}.{key}"), msg };
    let count: usize = axes.iter().map(|a| a.values.len()).product();
    let mut points = Vec::with_capacity(count);
    let mut tables = Vec::with_capacity(count);
    for k in 0..count {
        // The last axis varies fastest.
        let mut at = vec![0; axes.len()];
        let mut rest = k;
        for (j, a) in axes.iter().enumerate().rev() {
            at[j] = rest % a.values.len();
            rest /= a.values.len();
        }
        let labels: Vec<String> =
            axes.iter().zip(&at).map(|(a, &v)| format!("{}={}", a.label, a.values[v].text)).collect();
        let point_name = format!("{name}@{}", labels.join(","));
        if point_name.len() > MAX_NAME {
            let why = format!("the point {point_name:?} is a name of more than {MAX_NAME} characters: shorten the case's name or its values");
            return Err(err("sweep", why));
        }
        let mut t = base.clone();
        let mut workload = None;
        for (a, &v) in axes.iter().zip(&at) {
            let value = a.values[v].value.clone();
            let (into, path) = match a.path.strip_prefix("workload.") {
                // The case's own workload when it has one, else the scenario's.
                Some(rest) => (
                    workload.get_or_insert_with(|| match base.get("workload").or(top.get("workload")) {
                        Some(Value::Table(w)) => w.clone(),
                        _ => Table::new(),
                    }),
                    rest,
                ),
                None => (&mut t, a.path.as_str()),
            };
            set(into, path, value, top).map_err(|m| err(&format!("sweep.{}", a.path), m.to_string()))?;
        }
        // A point's workload is read apart: the case's own, or it with the point's value set.
        t.remove("workload");
        t.insert("name".into(), Value::String(point_name.clone()));
        points.push(Point { case: point_name.clone(), at: at.clone() });
        let values = axes.iter().zip(&at).map(|(a, &v)| (a.path.clone(), a.values[v].text.clone())).collect();
        tables.push(PointTable { name: point_name, case: t, workload, values });
    }
    Ok((points, tables))
}

/// The paths of a sweep table: `{ "runner.window" = [...] }` and `{ runner.window = [...] }`
/// (TOML's dotted keys, nested tables) alike; a table with `from` is a range, not a level.
fn flatten(t: &Table, prefix: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (k, v) in t {
        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        match v {
            Value::Table(inner) if !inner.contains_key("from") && !inner.contains_key("to") => {
                out.extend(flatten(inner, &path))
            }
            _ => out.push((path, v.clone())),
        }
    }
    out
}

/// Refuses a path that names no option a point could take.
fn check_path(path: &str) -> Result<(), SweepError> {
    let parts: Vec<&str> = path.split('.').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || !p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
    {
        return Err(SweepError::PathSyntax);
    }
    match parts[0] {
        "name" => Err(SweepError::Name),
        "sweep" | "objective" | "figures" => Err(SweepError::OwnKey(parts[0].to_owned())),
        "fault" => Err(SweepError::Fault),
        "workload" if parts.len() == 1 => Err(SweepError::WholeWorkload),
        _ => Ok(()),
    }
}

/// Puts `value` at `path` in a case (or workload) table, making the tables on the way: a
/// strategy given by name becomes `{ strategy = NAME }`, limits given by name the named
/// `[limits.NAME]` table.
fn set(t: &mut Table, path: &str, value: Value, top: &Table) -> Result<(), SweepError> {
    let parts: Vec<&str> = path.split('.').collect();
    let (last, walk) = parts.split_last().expect("a path has a part");
    let mut cur = t;
    for (depth, part) in walk.iter().enumerate() {
        let here = parts[..=depth].join(".");
        let slot = cur.entry(part.to_string()).or_insert_with(|| Value::Table(Table::new()));
        if let Value::String(s) = slot {
            let expanded = match (depth, *part) {
                (0, "runner" | "writer") => Table::from_iter([("strategy".to_owned(), Value::String(s.clone()))]),
                (0, "limits") => match top.get("limits").and_then(|l| l.get(s.as_str())) {
                    Some(Value::Table(named)) => named.clone(),
                    _ => return Err(SweepError::NoLimits(s.clone())),
                },
                _ => return Err(SweepError::NameNotTable { here, name: s.clone() }),
            };
            *slot = Value::Table(expanded);
        }
        cur = match slot {
            Value::Table(inner) => inner,
            other => return Err(SweepError::NotTable { here, found: other.type_str() }),
        };
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

/// An error reading a point, said in the sweep's terms: at the swept path itself, the path
/// does not apply to the case (an unknown key) or the value is refused; elsewhere, which
/// point it came from.
pub(crate) fn explain(e: ScenarioError, i: usize, p: &PointTable) -> ScenarioError {
    let full = |path: &str| if path.starts_with("workload.") { path.to_owned() } else { format!("case[{i}].{path}") };
    // At the path itself, an unknown key does not apply and any other error refuses the
    // value; at a key above it (`limits` on a host without limits), the path does not apply.
    let hit = p.values.iter().find_map(|(path, text)| {
        let f = full(path);
        let applies = if e.key == f {
            !e.msg.starts_with("unknown key")
        } else if f.starts_with(&format!("{}.", e.key)) {
            false
        } else {
            return None;
        };
        Some((path, text, applies))
    });
    match hit {
        Some((path, _, false)) => ScenarioError {
            key: format!("case[{i}].sweep.{path}"),
            msg: format!("does not apply to this case (`{}`: {})", e.key, e.msg),
            ..e
        },
        Some((path, text, true)) => ScenarioError {
            key: format!("case[{i}].sweep.{path}"),
            msg: format!("the value {text} is refused (`{}`: {})", e.key, e.msg),
            ..e
        },
        None => ScenarioError { msg: format!("{} (at the sweep's point {})", e.msg, p.name), ..e },
    }
}

#[cfg(test)]
mod tests;

/// A one-case scenario of production's window-exec on the `proxy` profile, named `w`, with
/// `rest` (its sweep, gates, objective) added to the case: the sweep results' tests share it.
#[cfg(test)]
pub(crate) fn swept_scenario(rest: &str) -> String {
    format!("name = \"s\"\n[workload]\nduration = \"1m\"\n[[case]]\nname = \"w\"\nhost = \"remote\"\nprofile = \"proxy\"\nrunner = \"window-exec\"\nwriter = \"watch\"\n{rest}")
}
