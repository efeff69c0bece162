//! Scenarios: TOML files that say what to run (workload, handler, cases) and what must
//! hold (gates), validated into a plain config before any I/O happens.
//!
//! Every key is checked: an unknown key, a bad duration, an unknown strategy, a strategy
//! setting that does not apply to the chosen strategy, or a gate on an unknown metric is an
//! error naming the file, the key and the allowed values.

pub(crate) use crate::base::fields::ScenarioError;

use std::path::Path;
use std::sync::Arc;

use crate::base::fields::Fields;
use crate::base::fsio::{read_bounded_text, Bound, Refused};
use crate::base::suggest::did_you_mean;
use crate::relay::handler::HandlerModel;
use crate::sandbox::host::{parse_profile, HostSpec, HostTables};
use crate::scenario::fault::FaultSpec;
use crate::scenario::gate::Gate;
use crate::scenario::pacer::Workload;
use crate::scenario::sweep::Sweep;
use crate::strategy::{RunnerSpec, WriterSpec};

mod case;
mod estimate;
pub(crate) mod fault;
pub(crate) mod gate;
pub(crate) mod overrides;
pub(crate) mod pacer;
pub(crate) mod rules;
pub(crate) mod search;
pub(crate) mod shard;
pub(crate) mod storm;
pub(crate) mod sweep;
pub(crate) mod turns;
mod workload;

use case::{read_faults, CaseContext};
pub use overrides::Overrides;
pub(crate) use overrides::{Applied, Length};
use rules::check_schedule_size;
#[cfg(test)]
use rules::MAX_NAME;
pub(crate) use rules::{
    check_case_name, check_name, NameError, INVARIANTS, MAX_CASES, MAX_DESCRIPTION, MAX_SCENARIO_BYTES, NAME_ALLOWED,
};
use workload::{parse_handler, parse_workload};

/// A name given to [`Scenario::retain_cases`] that is neither a case nor a swept case of the
/// scenario.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no case or sweep named {0:?} in this scenario: name one of its cases")]
pub(crate) struct UnknownCase(pub String);

/// The scenario `relay-bench run` uses when given none.
pub(crate) const DEFAULT_NAME: &str = "default";
pub(crate) const DEFAULT_TOML: &str = include_str!("../../scenarios/default.toml");

/// Scenarios shipped in `scenarios/`, embedded so `relay-bench list` works anywhere.
pub(crate) const SHIPPED: &[(&str, &str)] = &[
    ("default", DEFAULT_TOML),
    ("throughput", include_str!("../../scenarios/throughput.toml")),
    ("rollout-gate", include_str!("../../scenarios/rollout-gate.toml")),
    ("request-budget", include_str!("../../scenarios/request-budget.toml")),
    ("faults", include_str!("../../scenarios/faults.toml")),
    ("clock-check", include_str!("../../scenarios/clock-check.toml")),
    ("real-daemon", include_str!("../../scenarios/real-daemon.toml")),
    ("fleet-capacity", include_str!("../../scenarios/fleet-capacity.toml")),
    ("window-sweep", include_str!("../../scenarios/window-sweep.toml")),
    ("decision-map", include_str!("../../scenarios/decision-map.toml")),
    ("storm", include_str!("../../scenarios/storm.toml")),
];

crate::base::named! {
/// How time passes in a case (named `real` / `virtual` in scenarios and summary.json).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Clock {
    /// The machine's own clock: real files, real watches, real sleeps.
    #[default]
    Real,
    /// A paused tokio clock that jumps to the next timer: the same strategy code over an
    /// in-memory sandbox, hours of relay behaviour in seconds, deterministic per seed.
    Virtual,
}
names ["real", "virtual"]
}

#[derive(Debug, Clone)]
pub struct CaseSpec {
    pub name: String,
    pub host: Arc<HostSpec>,
    pub clock: Clock,
    pub runner: Arc<RunnerSpec>,
    pub writer: WriterSpec,
    /// Scenario-wide gates first, then the case's own.
    pub gates: Vec<Gate>,
    /// The rollout gates it is judged on: the scenario's `rollout`, then the case's own.
    pub rollout: Vec<Gate>,
    /// The case this one is compared with, over the scenario's `baseline`.
    pub baseline: Option<String>,
    /// Scenario-wide faults first, then the case's own, in time order.
    pub faults: Vec<FaultSpec>,
    /// What it runs: the scenario's workload, or a sweep's point's own (`workload.*` swept).
    pub workload: Workload,
    /// A search's probe stops at the first call lost past this many: its `lost` gates can
    /// no longer pass, so neither can the probe ([`Gate::lost_allowed`]). `None`: it runs
    /// to its end.
    pub(crate) stop_past_lost: Option<u64>,
}

impl CaseSpec {
    /// Where this case departs from production's relay as built (SPEC §8): the options set
    /// away from production's defaults, runner side then writer side.
    pub fn departures(&self) -> Vec<crate::strategy::Departure> {
        let mut d = self.runner.departures();
        d.extend(self.writer.departures());
        d
    }
}

/// A validated scenario: its workload, handler and cases.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The scenario's name.
    pub name: String,
    /// What it is for, in a line.
    pub description: String,
    /// Where it came from: a path, or `embedded:<name>`.
    pub origin: String,
    /// Its text (uploaded to a sandbox whose writer runs there).
    pub source: Arc<str>,
    /// Who makes the calls, how many and when.
    pub workload: Workload,
    /// The tool every case's runner calls.
    pub handler: HandlerModel,
    /// The cases, in the file's order.
    pub cases: Vec<CaseSpec>,
    /// The case the others are compared with (ratios in the reports).
    pub baseline: Option<String>,
    /// The sweeps of its cases, in order; their points are among `cases`.
    pub sweeps: Vec<Sweep>,
    /// The rollout gates every case is judged on (each case may add its own).
    pub rollout: Vec<Gate>,
    /// What `run` overrode of the file (`--clock`, `--duration`, ...); `None`: nothing.
    pub overrides: Option<Applied>,
    /// The overrides it was read with, for a search's probes (read from the same text).
    pub(crate) read_with: Overrides,
    /// Each searched case's probe at the start of its bracket, by the searched case's name:
    /// what one probe runs (the run's estimate and event log count it; the assumptions
    /// read its host and limits).
    pub(crate) probes: Vec<(String, CaseSpec)>,
    /// A part of a split run (`run --shard`): what it records of the whole; `None`: the whole.
    pub(crate) shard: Option<shard::ShardRecord>,
    /// ... and the whole scenario it is a part of (what the part reports of the whole).
    pub(crate) whole: Option<Arc<Scenario>>,
}

/// The scenario's `[[case]]`s, each swept one expanded into its points (a point's own
/// workload read and checked), and the sweeps: names unique, at least one case, at most
/// [`MAX_CASES`] with the points.
fn read_cases(top: &mut Fields<'_>, ctx: &CaseContext<'_>) -> Result<(Vec<CaseSpec>, Vec<Sweep>), ScenarioError> {
    let file = ctx.file;
    let case_tables = top.tables("case")?;
    if case_tables.len() > MAX_CASES {
        let msg = format!("{} cases; allowed: at most {MAX_CASES} per scenario", case_tables.len());
        return Err(top.err("case", msg));
    }
    let mut cases: Vec<CaseSpec> = Vec::new();
    let mut sweeps: Vec<Sweep> = Vec::new();
    let push = |case: CaseSpec, cases: &mut Vec<CaseSpec>| {
        if cases.iter().any(|x| x.name == case.name) {
            return Err(top.err("case", format!("two cases are named {:?}; names must be unique", case.name)));
        }
        if cases.len() == MAX_CASES {
            let msg = format!(
                "more than {MAX_CASES} cases with the sweeps' points; allowed: at most {MAX_CASES} per scenario"
            );
            return Err(top.err("case", msg));
        }
        cases.push(case);
        Ok(())
    };
    for (i, mut c) in case_tables.into_iter().enumerate() {
        // A case may run a workload of its own: a whole `[case.workload]` table, read as the
        // scenario's is (the scenario's is not merged into it).
        let own = match c.table("workload")? {
            Some(w) => {
                let (wl, _) = w.read(|w| parse_workload(w, ctx.over))?;
                check_schedule_size(&c, &wl)?;
                Some(wl)
            }
            None => None,
        };
        let Some((mut sweep, points)) = sweep::expand(file, i, c.table_ref(), ctx.table)? else {
            let case = ctx.read_case(c, own.as_ref().unwrap_or(ctx.workload))?;
            push(case, &mut cases)?;
            continue;
        };
        for p in &points {
            let explain = |e| sweep::explain(e, i, p);
            let wl = match &p.workload {
                Some(w) => {
                    let (wl, _) =
                        Fields::new(file, "workload", w).read(|f| parse_workload(f, ctx.over)).map_err(explain)?;
                    check_schedule_size(&Fields::new(file, "", ctx.table), &wl).map_err(explain)?;
                    wl
                }
                None => own.clone().unwrap_or_else(|| ctx.workload.clone()),
            };
            let f = Fields::new(file, &format!("case[{i}]"), &p.case);
            let case = ctx.read_case(f, &wl).map_err(explain)?;
            sweep.settle_figures(&case);
            push(case, &mut cases)?;
        }
        sweeps.push(sweep);
    }
    if cases.is_empty() && !sweeps.iter().any(|w| w.search.is_some()) {
        return Err(top.err("case", "at least one [[case]] is required"));
    }
    Ok((cases, sweeps))
}

/// The scenario file's table, and its text as the run keeps it: as given, or with the
/// command line's sweep written into it.
fn read_table(file: &str, text: &str, over: &Overrides) -> Result<(toml::Table, Arc<str>), ScenarioError> {
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| ScenarioError {
        file: file.to_owned(),
        key: "(syntax)".into(),
        msg: e.message().to_owned() + &e.span().map(|s| format!(" (at byte {})", s.start)).unwrap_or_default(),
    })?;
    let source: Arc<str> = if over.sweeps.is_empty() {
        Arc::from(text)
    } else {
        over.put_into(&mut table)?;
        Arc::from(toml::to_string(&table).map_err(|e| ScenarioError {
            file: file.to_owned(),
            key: "(sweep)".into(),
            msg: format!("cannot write the scenario with its sweep: {e}"),
        })?)
    };
    Ok((table, source))
}

/// The scenario's `[profile.NAME]` and `[limits.NAME]` tables, read and checked.
fn host_tables(top: &mut Fields<'_>, over: &Overrides) -> Result<HostTables, ScenarioError> {
    let mut tables = HostTables { sandbox_agent: over.sandbox_agent.clone(), ..HostTables::default() };
    if let Some(mut pt) = top.table("profile")? {
        for name in pt.keys() {
            let profile = pt.named_table(&name)?.read(|f| parse_profile(f, &name))?;
            tables.profiles.insert(name, profile);
        }
    }
    if let Some(mut lt) = top.table("limits")? {
        for name in lt.keys() {
            let limits = lt.named_table(&name)?.read(crate::sandbox::host::org::parse_limits)?;
            tables.limits.insert(name, limits);
        }
    }
    Ok(tables)
}

/// Every baseline named (the scenario's, each case's) is a case, never a swept one, and
/// every `vs_baseline.*` gate has one.
fn check_baselines(
    top: &Fields<'_>,
    cases: &[CaseSpec],
    sweeps: &[Sweep],
    baseline: Option<&str>,
) -> Result<(), ScenarioError> {
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let unknown = |b: &str| match sweeps.iter().find(|s| s.case == b) {
        Some(s) => format!(
            "{b:?} is swept: name one of its points (e.g. {:?}), or set the baseline on the case",
            s.points[0].case
        ),
        None => format!("no case is named {b:?}; cases: {}", names.join(", ")),
    };
    if let Some(b) = baseline {
        if !names.contains(&b) {
            return Err(top.err("baseline", unknown(b)));
        }
    }
    for (i, c) in cases.iter().enumerate() {
        let base = c.baseline.as_deref().or(baseline).filter(|b| *b != c.name);
        let on_baseline =
            |gates: &[Gate]| gates.iter().any(|g| matches!(g.metric, crate::scenario::gate::Metric::VsBaseline(_)));
        if base.is_none() && (on_baseline(&c.gates) || on_baseline(&c.rollout)) {
            let which = if on_baseline(&c.gates) { "gates" } else { "rollout" };
            let msg = "a `vs_baseline.*` gate needs a baseline case: set `baseline` on the case or the scenario";
            return Err(top.err(&format!("case[{i}].{which}"), msg));
        }
        if let Some(b) = c.baseline.as_deref().filter(|b| !names.contains(b)) {
            return Err(top.err(&format!("case[{i}].baseline"), unknown(b)));
        }
    }
    Ok(())
}

impl Scenario {
    /// Loads a scenario from a file path, or by the name of a shipped scenario.
    pub fn load(arg: &str) -> Result<Scenario, ScenarioError> {
        if let Some((name, text)) = SHIPPED.iter().find(|(n, _)| *n == arg) {
            return Scenario::parse(&format!("embedded:{name}"), text);
        }
        let path = Path::new(arg);
        // The user names the file: a link to it is followed; a FIFO, a device, a directory
        // or a file past the cap is refused before a byte is read.
        let bound = Bound::new("the scenario file", MAX_SCENARIO_BYTES).following_links();
        let text = read_bounded_text(path, bound).map_err(|e| ScenarioError {
            file: arg.to_owned(),
            key: "(file)".into(),
            msg: match e.why {
                Refused::Io(e) => {
                    let shipped = SHIPPED.iter().map(|(n, _)| *n);
                    // A name, not a path: the shipped scenario it is a typo of.
                    let hint =
                        if arg.contains(['/', '.']) { String::new() } else { did_you_mean(arg, shipped.clone()) };
                    format!(
                        "cannot read: {e}{hint}; give a path to a .toml file or one of: {}",
                        shipped.collect::<Vec<_>>().join(", ")
                    )
                }
                why => why.to_string(),
            },
        })?;
        Scenario::parse(arg, &text)
    }

    /// How many times every case runs (`--repeat`; 1 unless it says).
    pub(crate) fn repeats(&self) -> u32 {
        self.overrides.as_ref().and_then(|o| o.repeat).unwrap_or(1)
    }

    /// This scenario as its repeat `k` of `n` runs it: every seed (each case's workload's,
    /// the scenario's and its handler's) replaced by its `k`-th derived seed
    /// ([`crate::base::rng::seeds`]); repeat 0 is the scenario itself.
    pub(crate) fn for_repeat(&self, k: u32, n: u32) -> Scenario {
        let at = |base: u64| crate::base::rng::seeds(base, n)[k as usize];
        let mut s = self.clone();
        s.workload.seed = at(s.workload.seed);
        s.handler.seed = at(s.handler.seed);
        for c in &mut s.cases {
            c.workload.seed = at(c.workload.seed);
        }
        s
    }

    /// Parses and validates `text`, read from `file` (named in errors).
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(file, text, &Overrides::default())
    }

    /// Loads a scenario as [`Scenario::load`] does, with the command line's sweeps put in and
    /// `run`'s overrides applied.
    pub(crate) fn load_with(arg: &str, over: &Overrides) -> Result<Scenario, ScenarioError> {
        if over.sweeps.is_empty() && over.run_is_empty() && over.sandbox_agent.is_none() {
            return Scenario::load(arg);
        }
        let s = Scenario::load(arg)?;
        Scenario::parse_with(&s.origin, &s.source, over)
    }

    /// Parses `text` with `over` applied: the sweeps put into the cases they name, `run`'s
    /// overrides where each value is read. An error the file alone has is the file's; one
    /// the overrides bring is theirs, naming the case.
    pub fn parse_with(file: &str, text: &str, over: &Overrides) -> Result<Scenario, ScenarioError> {
        if over.run_is_empty() {
            return Scenario::parse_inner(file, text, over);
        }
        if let Some(n) = over.repeat.filter(|n| !(1..=overrides::MAX_REPEAT).contains(n)) {
            return Err(ScenarioError {
                file: "--repeat".into(),
                key: n.to_string(),
                msg: format!("runs each case N times; allowed: 1 (the default, once) to {}", overrides::MAX_REPEAT),
            });
        }
        let sweeps_only = Overrides {
            sweeps: over.sweeps.clone(),
            figures: over.figures.clone(),
            cases: over.cases.clone(),
            ..Default::default()
        };
        let plain = Scenario::parse_inner(file, text, &sweeps_only)?;
        let names: Vec<String> = plain.cases.iter().map(|c| c.name.clone()).collect();
        let mut s = Scenario::parse_inner(file, text, over).map_err(|e| over.refusal(e, &names))?;
        s.overrides = over.applied(plain.workload.duration());
        Ok(s)
    }

    /// Parses a scenario with the command line's sweeps put into the cases they name (the
    /// text sent to a sandbox is then the scenario as run, the sweeps in it) and `run`'s
    /// overrides applied where each value is read.
    fn parse_inner(file: &str, text: &str, over: &Overrides) -> Result<Scenario, ScenarioError> {
        let (table, source) = read_table(file, text, over)?;
        let mut top = Fields::new(file, "", &table);
        let name = top.required_string("name")?.to_owned();
        check_name(&name).map_err(|msg| top.err("name", msg))?;
        let description = top.string("description")?.unwrap_or("").to_owned();
        if description.chars().count() > MAX_DESCRIPTION {
            let msg = format!("{} characters; allowed: at most {MAX_DESCRIPTION}", description.chars().count());
            return Err(top.err("description", msg));
        }
        let common_gates = parse_gates(&mut top, "gates")?;
        let rollout = parse_gates(&mut top, "rollout")?;
        // Faults strike at the same share of a scaled schedule: `factor`.
        let (workload, factor) = match top.table("workload")? {
            Some(w) => w.read(|w| parse_workload(w, over))?,
            None => return Err(top.err("workload", "is required ([workload] table)")),
        };
        check_schedule_size(&top, &workload)?;
        let handler = match top.table("handler")? {
            Some(h) => h.read(|h| parse_handler(h, workload.seed))?,
            None => HandlerModel { seed: workload.seed, ..HandlerModel::default() },
        };
        let tables = host_tables(&mut top, over)?;
        let baseline = top.string("baseline")?.map(str::to_owned);
        let ctx = CaseContext {
            file,
            table: &table,
            common_gates: &common_gates,
            tables: &tables,
            handler: &handler,
            workload: &workload,
            common_faults: read_faults(&mut top, &workload, factor)?,
            common_rollout: &rollout,
            over,
            factor,
        };
        let (cases, sweeps) = read_cases(&mut top, &ctx)?;
        check_baselines(&top, &cases, &sweeps, baseline.as_deref())?;
        top.finish()?;
        Ok(Scenario {
            name,
            description,
            origin: file.to_owned(),
            source,
            workload,
            handler,
            cases,
            baseline,
            sweeps,
            rollout,
            overrides: None,
            read_with: Overrides { sweeps: Vec::new(), figures: Vec::new(), cases: Vec::new(), ..over.clone() },
            probes: Vec::new(),
            shard: None,
            whole: None,
        })
        .and_then(Scenario::check_searches)
    }

    /// Keeps only the cases named in `names` (a swept case's name keeps all its points) and
    /// the sweeps with points left; the first name that matches nothing is returned.
    pub(crate) fn retain_cases(&mut self, names: &[String]) -> Result<(), UnknownCase> {
        let keep = |case: &str, sweeps: &[Sweep]| {
            names.iter().any(|n| n == case)
                || sweeps.iter().any(|s| names.contains(&s.case) && s.points.iter().any(|p| p.case == case))
        };
        if let Some(bad) = names
            .iter()
            .find(|n| !self.cases.iter().any(|c| c.name == **n) && !self.sweeps.iter().any(|s| s.case == **n))
        {
            return Err(UnknownCase(bad.clone()));
        }
        let sweeps = self.sweeps.clone();
        self.cases.retain(|c| keep(&c.name, &sweeps));
        let kept: Vec<String> = self.cases.iter().map(|c| c.name.clone()).collect();
        for s in &mut self.sweeps {
            s.points.retain(|p| kept.contains(&p.case));
        }
        // A searched case named keeps its search (its probes are made as it runs).
        self.sweeps.retain(|s| !s.points.is_empty() || (s.search.is_some() && names.contains(&s.case)));
        self.probes.retain(|(case, _)| names.contains(case));
        Ok(())
    }

    /// The probes its searches should run when each boundary is inside its bracket, with
    /// the calls each plans and whether it runs on the real clock.
    pub(crate) fn expected_probes(&self) -> Vec<(u64, bool)> {
        self.searches()
            .flat_map(|(_, p, n)| std::iter::repeat_n((p.workload.planned_calls(), p.clock == Clock::Real), n))
            .collect()
    }

    /// Each searched case's sweep, the probe its search runs (at the start of its bracket),
    /// and how many probes its lines should take when each boundary is inside its bracket.
    pub(crate) fn searches(&self) -> impl Iterator<Item = (&Sweep, &CaseSpec, usize)> {
        self.sweeps.iter().filter_map(|w| {
            let search = w.search.as_ref()?;
            let (_, probe) = self.probes.iter().find(|(case, _)| *case == w.case)?;
            Some((w, probe, search.expected_probes() * w.lines.len().max(1)))
        })
    }

    /// A probe of `w`'s search: its case at `x` on `line`, named and read as a sweep's point
    /// is (from this scenario's text, with its overrides).
    pub(crate) fn probe(&self, w: &Sweep, line: &[usize], x: f64) -> Result<CaseSpec, ScenarioError> {
        let search = w.search.as_ref().expect("a searched case's sweep");
        let err = |msg: String| ScenarioError { file: self.origin.clone(), key: format!("{}.search", w.case), msg };
        let mut table: toml::Table = self.source.parse().map_err(|e: toml::de::Error| err(e.to_string()))?;
        let Some(toml::Value::Array(cases)) = table.get("case") else { return Err(err("no [[case]]".into())) };
        let named = |c: &&toml::Value| c.get("name").and_then(toml::Value::as_str) == Some(w.case.as_str());
        let Some(toml::Value::Table(case)) = cases.iter().find(named) else {
            return Err(err(format!("no case named {:?}", w.case)));
        };
        let mut case = case.clone();
        case.remove("search");
        let mut sweep = toml::Table::new();
        let fixed = &w.axes[..w.axes.len() - 1];
        for (a, &v) in fixed.iter().zip(line) {
            sweep.insert(a.path.clone(), toml::Value::Array(vec![a.values[v].value.clone()]));
        }
        sweep.insert(search.path.clone(), toml::Value::Array(vec![search.value(x)]));
        case.insert("sweep".into(), toml::Value::Table(sweep));
        // Alone in its scenario: a baseline named is another case, compared with in the run's
        // summary (the scenario's), not read here.
        case.remove("baseline");
        table.remove("baseline");
        table.insert("case".into(), toml::Value::Array(vec![toml::Value::Table(case)]));
        let text = toml::to_string(&table).map_err(|e| err(e.to_string()))?;
        let probe = Scenario::parse_with(&self.origin, &text, &self.read_with).map_err(|e| {
            let at = format!("{}={}", search.label, search.text(x));
            err(format!("the probe at {at}: {}: {}", e.key, e.msg))
        })?;
        let mut case = probe.cases.into_iter().next().ok_or_else(|| err("the probe made no case".into()))?;
        // A probe only has to say whether it meets its gates: once a `lost` gate has failed
        // for good, what follows cannot change that (k6's `abortOnFail`).
        case.stop_past_lost = case.gates.iter().chain(&case.rollout).filter_map(Gate::lost_allowed).min();
        Ok(case)
    }

    /// Each search probed at both ends of its bracket before anything runs (a value its
    /// option refuses is an error now, not mid-run), and its figures settled from a probe's
    /// gates.
    fn check_searches(mut self) -> Result<Scenario, ScenarioError> {
        for k in 0..self.sweeps.len() {
            let Some(search) = self.sweeps[k].search.clone() else { continue };
            let w = &self.sweeps[k];
            let first = w.lines.first().cloned().unwrap_or_default();
            let from = self.probe(w, &first, search.from)?;
            self.probe(w, &first, search.to)?;
            let w = &mut self.sweeps[k];
            w.settle_figures(&from);
            self.probes.push((w.case.clone(), from));
        }
        Ok(self)
    }

    /// The sweep whose point `case` is, if it is one.
    pub(crate) fn sweep_of(&self, case: &str) -> Option<&Sweep> {
        self.sweeps.iter().find(|s| s.points.iter().any(|p| p.case == case))
    }
}

pub(super) fn parse_gates(f: &mut Fields<'_>, key: &'static str) -> Result<Vec<Gate>, ScenarioError> {
    f.strings(key)?.iter().map(|e| Gate::parse(e).map_err(|m| f.err(key, m))).collect()
}

#[cfg(test)]
mod tests;
