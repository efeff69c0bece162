//! Scenarios: TOML files that say what to run (workload, handler, cases) and what must
//! hold (gates), validated into a plain config before any I/O happens.
//!
//! Every key is checked: an unknown key, a bad duration, an unknown strategy, a strategy
//! setting that does not apply to the chosen strategy, or a gate on an unknown metric is an
//! error naming the file, the key and the allowed values.

pub use crate::base::fields::ScenarioError;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::base::fields::Fields;
use crate::base::fsio::{read_bounded_text, Bound, Refused};
use crate::relay::handler::HandlerModel;
use crate::sandbox::host::{parse_profile, HostSpec, HostTables, HOSTS};
use crate::scenario::fault::{FaultKind, FaultSpec, Target};
use crate::scenario::gate::Gate;
use crate::scenario::pacer::{Arrival, Phase, Workload};
use crate::strategy::{runner_kind, runner_names, writer_kind, writer_names, RunnerSpec, WriterSpec};

pub mod fault;
pub mod gate;
pub mod pacer;
mod rules;
pub mod turns;

use rules::{add_invariants, check_burst_calls, check_schedule_size};
pub use rules::{check_name, INVARIANTS, MAX_CASES, MAX_DESCRIPTION, MAX_NAME, MAX_SCENARIO_BYTES, NAME_ALLOWED};

/// The scenario `relay-bench run` uses when given none.
pub const DEFAULT_NAME: &str = "default";
pub const DEFAULT_TOML: &str = include_str!("../../scenarios/default.toml");

/// Scenarios shipped in `scenarios/`, embedded so `relay-bench list` works anywhere.
pub const SHIPPED: &[(&str, &str)] = &[
    ("default", DEFAULT_TOML),
    ("throughput", include_str!("../../scenarios/throughput.toml")),
    ("rollout-gate", include_str!("../../scenarios/rollout-gate.toml")),
    ("request-budget", include_str!("../../scenarios/request-budget.toml")),
    ("faults", include_str!("../../scenarios/faults.toml")),
    ("clock-check", include_str!("../../scenarios/clock-check.toml")),
    ("real-daemon", include_str!("../../scenarios/real-daemon.toml")),
    ("fleet-capacity", include_str!("../../scenarios/fleet-capacity.toml")),
];

/// How time passes in a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The machine's own clock: real files, real watches, real sleeps.
    Real,
    /// A paused tokio clock that jumps to the next timer: the same strategy code over an
    /// in-memory sandbox, hours of relay behaviour in seconds, deterministic per seed.
    Virtual,
}

impl Clock {
    pub const NAMES: &'static [&'static str] = &["real", "virtual"];

    pub fn name(self) -> &'static str {
        match self {
            Clock::Real => "real",
            Clock::Virtual => "virtual",
        }
    }
}

#[derive(Debug, Clone)]
pub struct CaseSpec {
    pub name: String,
    pub host: Arc<dyn HostSpec>,
    pub clock: Clock,
    pub runner: Arc<dyn RunnerSpec>,
    pub writer: Arc<dyn WriterSpec>,
    /// Scenario-wide gates first, then the case's own.
    pub gates: Vec<Gate>,
    /// The case this one is compared with, over the scenario's `baseline`.
    pub baseline: Option<String>,
    /// Scenario-wide faults first, then the case's own, in time order.
    pub faults: Vec<FaultSpec>,
}

impl CaseSpec {
    /// Where this case departs from production's relay as built (SPEC §8): the options set
    /// away from production's defaults, runner side then writer side.
    pub fn departures(&self) -> Vec<String> {
        let mut d = self.runner.departures();
        d.extend(self.writer.departures());
        d
    }
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    /// Where it came from: a path, or `embedded:<name>`.
    pub origin: String,
    /// Its text (uploaded to a sandbox whose writer runs there).
    pub source: Arc<str>,
    pub workload: Workload,
    pub handler: HandlerModel,
    pub cases: Vec<CaseSpec>,
    /// The case the others are compared with (ratios in the reports).
    pub baseline: Option<String>,
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
                Refused::Io(e) => format!(
                    "cannot read: {e}; give a path to a .toml file or one of: {}",
                    SHIPPED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
                why => why.to_string(),
            },
        })?;
        Scenario::parse(arg, &text)
    }

    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ScenarioError {
            file: file.to_owned(),
            key: "(syntax)".into(),
            msg: e.message().to_owned() + &e.span().map(|s| format!(" (at byte {})", s.start)).unwrap_or_default(),
        })?;
        let mut top = Fields::new(file, "", &table);
        let name = top.required_string("name")?.to_owned();
        check_name(&name).map_err(|msg| top.err("name", msg))?;
        let description = top.string("description")?.unwrap_or("").to_owned();
        if description.chars().count() > MAX_DESCRIPTION {
            let msg = format!("{} characters; allowed: at most {MAX_DESCRIPTION}", description.chars().count());
            return Err(top.err("description", msg));
        }
        let gate_strings = top.strings("gates")?;
        let common_gates = parse_gates(&top, "gates", &gate_strings)?;
        let workload = match top.table("workload")? {
            Some(mut w) => parse_workload(&mut w).and_then(|wl| w.finish().map(|_| wl))?,
            None => return Err(top.err("workload", "is required ([workload] table)")),
        };
        check_schedule_size(&top, &workload)?;
        let handler = match top.table("handler")? {
            Some(mut h) => {
                let m = parse_handler(&mut h, workload.seed)?;
                h.finish()?;
                m
            }
            None => HandlerModel { seed: workload.seed, ..HandlerModel::default() },
        };
        let mut tables = HostTables::default();
        if let Some(mut pt) = top.table("profile")? {
            for name in pt.keys() {
                let mut f = pt.named_table(&name)?;
                let profile = parse_profile(&mut f, &name)?;
                f.finish()?;
                tables.profiles.insert(name, profile);
            }
        }
        if let Some(mut lt) = top.table("limits")? {
            for name in lt.keys() {
                let mut f = lt.named_table(&name)?;
                let limits = crate::sandbox::host::org::parse_limits(&mut f)?;
                f.finish()?;
                tables.limits.insert(name, limits);
            }
        }
        let baseline = top.string("baseline")?.map(str::to_owned);
        let mut common_faults = Vec::new();
        for mut f in top.tables("fault")? {
            common_faults.push(parse_fault(&mut f, &workload)?);
            f.finish()?;
        }
        let case_tables = top.tables("case")?;
        if case_tables.len() > MAX_CASES {
            let msg = format!("{} cases; allowed: at most {MAX_CASES} per scenario", case_tables.len());
            return Err(top.err("case", msg));
        }
        let mut cases = Vec::new();
        for mut c in case_tables {
            let mut case = parse_case(&mut c, &common_gates, &tables)?;
            let mut faults = common_faults.clone();
            for mut f in c.tables("fault")? {
                faults.push(parse_fault(&mut f, &workload)?);
                f.finish()?;
            }
            for (i, f) in faults.iter().enumerate() {
                check_fault(&c, &case, f)?;
                if faults[..i].contains(f) {
                    let msg = format!(
                        "two identical faults ({} at {} on sandbox {}); each is scheduled once: remove one, or give them different times",
                        f.kind.name(),
                        crate::base::units::human(f.at),
                        f.sandbox
                    );
                    return Err(c.err("fault", msg));
                }
            }
            if case.host.in_sandbox().is_some() && handler.pause_ratio > 0.0 {
                let why = "in_sandbox = true cannot take [handler] pause_ratio > 0: a pause is told to the writer out of band, and this writer runs in the sandbox";
                return Err(c.err("in_sandbox", why));
            }
            check_burst_calls(&c, &workload, &faults)?;
            faults.sort_by_key(|f| f.at);
            case.faults = faults;
            c.finish()?;
            if cases.iter().any(|x: &CaseSpec| x.name == case.name) {
                return Err(top.err("case", format!("two cases are named {:?}; names must be unique", case.name)));
            }
            cases.push(case);
        }
        if cases.is_empty() {
            return Err(top.err("case", "at least one [[case]] is required"));
        }
        let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
        if let Some(b) = &baseline {
            if !names.contains(&b.as_str()) {
                return Err(top.err("baseline", format!("no case is named {b:?}; cases: {}", names.join(", "))));
            }
        }
        for (i, c) in cases.iter().enumerate() {
            let base = c.baseline.as_deref().or(baseline.as_deref()).filter(|b| *b != c.name);
            if base.is_none()
                && c.gates.iter().any(|g| matches!(g.metric, crate::scenario::gate::Metric::VsBaseline(_)))
            {
                return Err(ScenarioError {
                    file: file.to_owned(),
                    key: format!("case[{i}].gates"),
                    msg: "a `vs_baseline.*` gate needs a baseline case: set `baseline` on the case or the scenario"
                        .into(),
                });
            }
            if let Some(b) = c.baseline.as_deref().filter(|b| !names.contains(b)) {
                return Err(ScenarioError {
                    file: file.to_owned(),
                    key: format!("case[{i}].baseline"),
                    msg: format!("no case is named {b:?}; cases: {}", names.join(", ")),
                });
            }
        }
        top.finish()?;
        Ok(Scenario {
            name,
            description,
            origin: file.to_owned(),
            source: Arc::from(text),
            workload,
            handler,
            cases,
            baseline,
        })
    }
}

fn parse_gates(f: &Fields<'_>, key: &str, exprs: &[&str]) -> Result<Vec<Gate>, ScenarioError> {
    exprs.iter().map(|e| Gate::parse(e).map_err(|m| f.err(key, m))).collect()
}

fn parse_phases(w: &mut Fields<'_>) -> Result<Option<Vec<Phase>>, ScenarioError> {
    let tables = w.tables("phase")?;
    if tables.is_empty() {
        return Ok(None);
    }
    let mut phases = Vec::new();
    for mut t in tables {
        let duration = t.duration("duration")?.ok_or_else(|| t.err("duration", "is required"))?;
        if duration.is_zero() {
            return Err(t.err("duration", "must be longer than 0s"));
        }
        let turns_per_sec = t.float("turns_per_sec", 0.0, 100_000.0)?.unwrap_or(0.0);
        t.finish()?;
        phases.push(Phase { duration, turns_per_sec });
    }
    Ok(Some(phases))
}

fn parse_workload(w: &mut Fields<'_>) -> Result<Workload, ScenarioError> {
    let agent = match w.table("agent")? {
        Some(mut a) => {
            for key in ["turns_per_sec", "calls_per_turn", "arrival", "phase"] {
                if w.raw_unread(key) {
                    let why =
                        "cannot be given with [workload.agent]: agent turns come from sessions (steps, think times)";
                    return Err(w.err(key, why));
                }
            }
            let turns = crate::scenario::turns::AgentTurns::parse(&mut a)?;
            a.finish()?;
            Some(turns)
        }
        None => None,
    };
    let phases = match parse_phases(w)? {
        Some(p) => {
            for key in ["duration", "turns_per_sec"] {
                if w.raw_unread(key) {
                    return Err(w.err(key, "cannot be given with [[workload.phase]]; give it per phase"));
                }
            }
            p
        }
        None => {
            let duration = w.duration("duration")?.unwrap_or(Duration::from_secs(10));
            if duration.is_zero() {
                return Err(w.err("duration", "must be longer than 0s"));
            }
            let turns_per_sec = w.float("turns_per_sec", 0.001, 100_000.0)?.unwrap_or(1.0);
            vec![Phase { duration, turns_per_sec }]
        }
    };
    let duration: Duration = phases.iter().map(|p| p.duration).sum();
    let warmup = w.duration("warmup")?.unwrap_or(Duration::ZERO);
    if warmup >= duration {
        return Err(w.err("warmup", "must be shorter than `duration`"));
    }
    let arrival = match w.choice("arrival", Arrival::NAMES)? {
        Some("poisson") => Arrival::Poisson,
        _ => Arrival::Constant,
    };
    let sandboxes = w.int("sandboxes", 1, MAX_SANDBOXES)?.unwrap_or(1) as u32;
    // Agent turns make one active phase: its rate is the fleet's expected turns per second.
    let phases = match &agent {
        Some(a) => {
            let turns_per_sec = a.turns_per_sec_per_sandbox() * f64::from(sandboxes);
            phases.into_iter().map(|p| Phase { turns_per_sec, ..p }).collect()
        }
        None => phases,
    };
    Ok(Workload {
        sandboxes,
        arrival,
        phases,
        calls_per_turn: w.int("calls_per_turn", 1, 1000)?.unwrap_or(1) as u32,
        warmup,
        tool_timeout: w.duration("tool_timeout")?,
        seed: w.int("seed", 0, i64::MAX)?.unwrap_or(1) as u64,
        payload_bytes: w.int("payload_bytes", 0, 16 << 20)?.unwrap_or(128) as usize,
        agent,
    })
}

/// The most sandboxes one case may have (a fleet of 10,000 fits; every sandbox has a relay
/// dir, a host and a runner).
pub const MAX_SANDBOXES: i64 = 20_000;

fn parse_handler(h: &mut Fields<'_>, seed: u64) -> Result<HandlerModel, ScenarioError> {
    let duration = h.duration("duration")?.unwrap_or(Duration::from_millis(2));
    let duration_max = h.duration("duration_max")?.unwrap_or(duration);
    if duration_max < duration {
        return Err(h.err("duration_max", "must not be shorter than `duration`"));
    }
    let error_ratio = h.float("error_ratio", 0.0, 1.0)?.unwrap_or(0.0);
    let pause_ratio = h.float("pause_ratio", 0.0, 1.0)?.unwrap_or(0.0);
    if error_ratio + pause_ratio > 1.0 {
        return Err(h.err("pause_ratio", "error_ratio + pause_ratio must not exceed 1"));
    }
    Ok(HandlerModel {
        duration,
        duration_max,
        error_ratio,
        pause_ratio,
        payload_bytes: h.int("payload_bytes", 0, 16 << 20)?.unwrap_or(128) as usize,
        seed,
        command: None,
    })
}

fn parse_case(c: &mut Fields<'_>, common: &[Gate], tables: &HostTables) -> Result<CaseSpec, ScenarioError> {
    let name = c.required_string("name")?.to_owned();
    check_name(&name).map_err(|msg| c.err("name", msg))?;
    let host_names: Vec<&str> = HOSTS.iter().map(|k| k.name()).collect();
    let host_name = c.choice("host", &host_names)?.unwrap_or(host_names[0]);
    let kind = crate::sandbox::host::kind(host_name).expect("validated");
    let host = kind.parse(c, tables)?;
    let clock = match c.choice("clock", Clock::NAMES)? {
        Some("real") | None => Clock::Real,
        Some("virtual") => Clock::Virtual,
        Some(other) => unreachable!("validated clock {other}"),
    };
    let runner = parse_runner(c)?;
    if runner.reads_the_dir_itself() && !host.dir_is_local() {
        let why = format!("{} reads the relay dir itself, not through a host: use host = \"local\"", runner.name());
        return Err(c.err("runner", why));
    }
    if runner.follows_a_process() && !host.can_follow() {
        let why = format!(
            "{} follows a process's output, which the {host_name} host cannot: use host = \"remote\"",
            runner.name()
        );
        return Err(c.err("runner", why));
    }
    if host.needs_real_clock() && clock != Clock::Real {
        return Err(c.err("host", format!("{host_name} runs on the real clock only: use clock = \"real\"")));
    }
    if runner.needs_real_clock() && clock != Clock::Real {
        return Err(c.err("runner", format!("{} runs on the real clock only: use clock = \"real\"", runner.name())));
    }
    let writer = parse_writer(c)?;
    let baseline = c.string("baseline")?.map(str::to_owned);
    let own = c.strings("gates")?;
    let own = parse_gates(c, "gates", &own)?;
    // Scenario gates, the invariants, then the case's own: every case shares the leading
    // ones, which is how reports tell a case's own (rollout) gates from the common ones.
    let mut gates = common.to_vec();
    if !c.boolean("expect_breaches")?.unwrap_or(false) {
        add_invariants(&mut gates, &own);
    }
    gates.extend(own);
    Ok(CaseSpec { name, host, clock, runner, writer, gates, baseline, faults: Vec::new() })
}

fn parse_fault(f: &mut Fields<'_>, wl: &Workload) -> Result<FaultSpec, ScenarioError> {
    let names = FaultKind::names();
    let kind = match f.choice("kind", &names)? {
        Some(k) => FaultKind::from_name(k).expect("validated"),
        None => return Err(f.err("kind", format!("is required; allowed: {}", names.join(", ")))),
    };
    let at = f.duration("at")?.ok_or_else(|| f.err("at", "is required (offset from the schedule's start)"))?;
    if at >= wl.duration() {
        return Err(
            f.err("at", format!("must fall inside the schedule ({})", crate::base::units::human(wl.duration())))
        );
    }
    let (sandbox, fleet) = match f.raw_peek("sandbox") {
        Some(toml::Value::String(_)) => match f.choice("sandbox", &["all"])? {
            Some(_) => (0, true),
            None => unreachable!("a string was read"),
        },
        _ => (f.int("sandbox", 0, i64::from(wl.sandboxes) - 1)?.unwrap_or(0) as u32, false),
    };
    let calls = f.int("calls", 1, 10_000)?;
    if calls.is_some() != (kind == FaultKind::Burst) {
        return Err(f.err("calls", "is required for kind = \"burst\" and allowed only there"));
    }
    let held_execs = f.int("held_execs", 0, 10_000_000)?.map(|n| n as u32);
    if held_execs.is_some() != (kind == FaultKind::OrgLimit) {
        return Err(f.err("held_execs", "is required for kind = \"org-limit\" and allowed only there"));
    }
    if kind == FaultKind::OrgLimit && f.raw_peek("sandbox").is_some() {
        return Err(f.err("sandbox", "org-limit strikes the organisation: every sandbox at once"));
    }
    let duration = match f.duration("duration")? {
        Some(_) if !kind.lasts() => {
            return Err(f.err("duration", format!("{} happens once: it takes no duration", kind.name())))
        }
        d => d.unwrap_or(kind.default_duration()),
    };
    let fleet = fleet || kind == FaultKind::OrgLimit;
    Ok(FaultSpec { kind, at, duration, sandbox, fleet, calls: calls.unwrap_or(0) as u32, held_execs })
}

/// A fault the case's host or clock cannot produce is an error, not a silent no-op.
fn check_fault(c: &Fields<'_>, case: &CaseSpec, f: &FaultSpec) -> Result<(), ScenarioError> {
    if f.kind.target() == Target::Org {
        if !case.host.admits() {
            let why = "org-limit needs host = \"remote\", or host = \"sandbox-agent\" with a profile and limits: their requests pass through the organisation";
            return Err(c.err("fault", why));
        }
    } else if let Some(d) = f.kind.daemon_fault() {
        case.host.takes(d).map_err(|why| c.err("fault", format!("{} {why}", f.kind.name())))?;
    } else if case.host.in_sandbox().is_some() && f.kind.target() != Target::Runner {
        // The sandbox's files and programs are reached through its daemon only.
        let produced: Vec<&str> = FaultKind::ALL
            .into_iter()
            .filter(|k| k.daemon_fault().map_or(k.target() == Target::Runner, |d| case.host.takes(d).is_ok()))
            .map(FaultKind::name)
            .collect();
        let list = match produced.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => "no fault".to_owned(),
        };
        let why = format!(
            "{}: with in_sandbox = true only {list} are produced (the sandbox is reached through its daemon only)",
            f.kind.name()
        );
        return Err(c.err("fault", why));
    }
    if !f.kind.real_time() && case.clock == Clock::Real {
        return Err(c.err(
            "fault",
            format!("{} can only be produced in the in-memory sandbox: set clock = \"virtual\"", f.kind.name()),
        ));
    }
    Ok(())
}

/// A strategy given as `"poll"` or as `{ strategy = "poll", interval = "..." }`.
fn strategy_table<'a>(
    c: &mut Fields<'a>,
    key: &'static str,
    allowed: &[&str],
) -> Result<(String, Option<Fields<'a>>), ScenarioError> {
    match c.raw(key) {
        None => Err(c.err(key, format!("is required; allowed strategies: {}", allowed.join(", ")))),
        Some(toml::Value::String(s)) => {
            if !allowed.contains(&s.as_str()) {
                return Err(c.err(key, format!("unknown strategy {s:?}; allowed: {}", allowed.join(", "))));
            }
            Ok((s.clone(), None))
        }
        Some(toml::Value::Table(t)) => {
            let implied = if key == "runner" { crate::strategy::implied_runner(t) } else { None };
            let mut t = c.table(key)?.expect("checked: a table");
            let s = match (t.choice("strategy", allowed)?, implied) {
                (Some(s), _) | (None, Some(s)) => s.to_owned(),
                (None, None) => return Err(t.err("strategy", format!("is required; allowed: {}", allowed.join(", ")))),
            };
            Ok((s, Some(t)))
        }
        Some(_) => Err(c.err(key, "expected a strategy name or a table with `strategy = ...`")),
    }
}

/// `runner = "<name>"` or `runner = { strategy = "<name>", ... }` (or `{ command = [...] }`
/// for a black-box runner), through the strategy registry.
fn parse_runner(c: &mut Fields<'_>) -> Result<Arc<dyn RunnerSpec>, ScenarioError> {
    let (name, mut table) = strategy_table(c, "runner", &runner_names())?;
    let kind = runner_kind(&name).expect("validated against the registry");
    let spec = kind.parse(table.as_mut()).map_err(|e| if e.file.is_empty() { c.err("runner", e.msg) } else { e })?;
    if let Some(t) = table {
        t.finish()?;
    }
    Ok(spec)
}

fn parse_writer(c: &mut Fields<'_>) -> Result<Arc<dyn WriterSpec>, ScenarioError> {
    let (name, mut table) = strategy_table(c, "writer", &writer_names())?;
    let kind = writer_kind(&name).expect("validated against the registry");
    let spec = kind.parse(table.as_mut())?;
    if let Some(t) = table {
        t.finish()?;
    }
    Ok(spec)
}

#[cfg(test)]
mod tests;
