//! One case's table, read whole: its host and clock, runner and writer through their
//! registries, its gates, rollout gates and faults, every key checked. A hand-written case and a sweep's
//! point are read alike.

use std::sync::Arc;

use super::rules::{add_invariants, check_burst_calls};
use super::{check_case_name, parse_gates, CaseSpec, Clock, Overrides};
use crate::base::fields::{Fields, ScenarioError};
use crate::relay::handler::HandlerModel;
use crate::sandbox::host::{HostKind, HostTables};
use crate::scenario::fault::{FaultKind, FaultSpec, Target};
use crate::scenario::gate::Gate;
use crate::scenario::pacer::Workload;
use crate::strategy::{RunnerKind, RunnerSpec, WriterKind, WriterSpec};

/// What every case of a scenario is read with.
pub(super) struct CaseContext<'a> {
    pub file: &'a str,
    pub table: &'a toml::Table,
    pub common_gates: &'a [Gate],
    pub tables: &'a HostTables,
    pub handler: &'a HandlerModel,
    /// The scenario's workload (a point of a sweep may have its own).
    pub workload: &'a Workload,
    /// The scenario's `[[fault]]`s, read against its workload.
    pub common_faults: Vec<FaultSpec>,
    /// The scenario's rollout gates (every case is judged on them).
    pub common_rollout: &'a [Gate],
    /// `run`'s overrides, and the factor they scaled the schedule by.
    pub over: &'a Overrides,
    pub factor: f64,
}

impl CaseContext<'_> {
    /// One case (hand-written, or a sweep's point) over `workload`: its host, strategies,
    /// gates and faults, every key checked.
    pub(super) fn read_case(&self, mut c: Fields<'_>, workload: &Workload) -> Result<CaseSpec, ScenarioError> {
        let mut case = self.parse_case(&mut c, workload)?;
        let o = self.over;
        let reaching: Vec<&str> = [
            (o.length.is_some(), "--duration/--scale"),
            (o.seed.is_some(), "--seed"),
            (o.sandboxes.is_some(), "--sandboxes"),
            (o.repeat.is_some_and(|n| n > 1), "--repeat"),
        ]
        .into_iter()
        .filter_map(|(given, flag)| given.then_some(flag))
        .collect();
        if !reaching.is_empty() && case.host.in_sandbox().is_some() {
            let (last, rest) = reaching.split_last().expect("not empty");
            let (flags, take) = match rest {
                [] => ((*last).to_owned(), "takes"),
                _ => (format!("{} and {last}", rest.join(", ")), "take"),
            };
            let seedless = if reaching.contains(&"--repeat") { " (nor give a repeat a seed of its own)" } else { "" };
            let why = format!(
                "in_sandbox = true: its writer runs in the sandbox and reads the scenario file as written, so {flags} \
                 cannot reach it{seedless}; {flags} {take} every case whose writer runs \
                 on this machine (any host, in_sandbox = false)"
            );
            return Err(c.err("in_sandbox", why));
        }
        let mut faults = if workload == self.workload {
            self.common_faults.clone()
        } else {
            read_faults(&mut Fields::new(self.file, "", self.table), workload, self.factor)?
        };
        faults.extend(read_faults(&mut c, workload, self.factor)?);
        for (i, f) in faults.iter().enumerate() {
            check_fault(&c, &case, f, self.over.clock.is_some())?;
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
        if case.host.in_sandbox().is_some() && self.handler.pause_ratio > 0.0 {
            let why = "in_sandbox = true cannot take [handler] pause_ratio > 0: a pause is told to the writer out of band, and this writer runs in the sandbox";
            return Err(c.err("in_sandbox", why));
        }
        check_burst_calls(&c, workload, &faults)?;
        faults.sort_by_key(|f| f.at);
        case.faults = faults;
        c.finish()?;
        Ok(case)
    }

    fn parse_case(&self, c: &mut Fields<'_>, workload: &Workload) -> Result<CaseSpec, ScenarioError> {
        let name = c.required_string("name")?.to_owned();
        check_case_name(&name).map_err(|msg| c.err("name", msg))?;
        let host_name = c.choice("host", &HostKind::NAMES)?.unwrap_or(HostKind::NAMES[0]);
        let kind = HostKind::from_name(host_name).expect("validated");
        let host = kind.parse(c, self.tables)?;
        let clock = c.choice("clock", &Clock::NAMES)?.and_then(Clock::from_name).unwrap_or_default();
        // `run --clock` sets every case's; then a case that cannot take it says why, not how to
        // edit the file.
        let clock = self.over.clock.unwrap_or(clock);
        let advice = if self.over.clock.is_some() { "" } else { ": use clock = \"real\"" };
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
            return Err(c.err("host", format!("the {host_name} host runs on the real clock only{advice}")));
        }
        if runner.needs_real_clock() && clock != Clock::Real {
            return Err(c.err("runner", format!("the {} runner runs on the real clock only{advice}", runner.name())));
        }
        let writer = parse_writer(c)?;
        let baseline = c.string("baseline")?.map(str::to_owned);
        let own = parse_gates(c, "gates")?;
        // Scenario gates, the invariants, then the case's own: every case shares the leading
        // ones (a run that declared no rollout gates is read that way: its case's own gates).
        let mut gates = self.common_gates.to_vec();
        if !c.boolean("expect_breaches")?.unwrap_or(false) {
            add_invariants(&mut gates, &own);
        }
        gates.extend(own);
        // `rollout = false`: a case that measures a cost beside the verdict (the same option
        // under another workload), judged on no rollout gate.
        let judged = !matches!(c.raw_peek("rollout"), Some(toml::Value::Boolean(false)));
        let own_rollout =
            if judged { parse_gates(c, "rollout")? } else { c.raw("rollout").map(|_| Vec::new()).unwrap_or_default() };
        let mut rollout = if judged { self.common_rollout.to_vec() } else { Vec::new() };
        for g in own_rollout {
            if !rollout.iter().any(|r| r.same_test(&g)) {
                rollout.push(g);
            }
        }
        Ok(CaseSpec {
            name,
            host,
            clock,
            runner,
            writer,
            gates,
            rollout,
            baseline,
            faults: Vec::new(),
            workload: workload.clone(),
            stop_past_lost: None,
        })
    }
}

/// The `[[fault]]` tables of `f` (the scenario's or a case's), read against `wl` (a sweep's
/// point may have a workload of its own: fewer sandboxes, a shorter schedule).
pub(super) fn read_faults(f: &mut Fields<'_>, wl: &Workload, factor: f64) -> Result<Vec<FaultSpec>, ScenarioError> {
    f.tables("fault")?.into_iter().map(|t| t.read(|t| parse_fault(t, wl, factor))).collect()
}

fn parse_fault(f: &mut Fields<'_>, wl: &Workload, factor: f64) -> Result<FaultSpec, ScenarioError> {
    let names = FaultKind::NAMES;
    let kind = match f.choice("kind", &names)? {
        Some(k) => FaultKind::from_name(k).expect("validated"),
        None => return Err(f.err("kind", format!("is required; allowed: {}", names.join(", ")))),
    };
    let at = f.duration("at")?.ok_or_else(|| f.err("at", "is required (offset from the schedule's start)"))?;
    let at = Overrides::scaled(at, factor);
    if at >= wl.duration() {
        return Err(
            f.err("at", format!("must fall inside the schedule ({})", crate::base::units::human(wl.duration())))
        );
    }
    let (sandbox, fleet) = match f.raw_peek("sandbox") {
        Some(toml::Value::String(_)) => f.choice("sandbox", &["all"]).map(|_| (0, true))?,
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
    let answer_fails = match f.choice("answer", &["written", "fails"])? {
        Some(_) if kind != FaultKind::ReadFails => {
            return Err(f.err("answer", "applies only to kind = \"read-fails\""));
        }
        a => a == Some("fails"),
    };
    if kind.storms() && fleet {
        let why = format!("{} strikes one sandbox: its storm is measured against the others'", kind.name());
        return Err(f.err("sandbox", why));
    }
    let duration = match f.duration("duration")? {
        Some(_) if !kind.lasts() => {
            return Err(f.err("duration", format!("{} happens once: it takes no duration", kind.name())))
        }
        d => d.unwrap_or(kind.default_duration()),
    };
    let fleet = fleet || kind == FaultKind::OrgLimit;
    let calls = calls.unwrap_or(0) as u32;
    Ok(FaultSpec { kind, at, duration, sandbox, fleet, calls, held_execs, answer_fails })
}

/// A fault the case's host or clock cannot produce is an error, not a silent no-op.
fn check_fault(c: &Fields<'_>, case: &CaseSpec, f: &FaultSpec, forced_clock: bool) -> Result<(), ScenarioError> {
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
            format!(
                "{} can only be produced in the in-memory sandbox{}",
                f.kind.name(),
                if forced_clock { " (the virtual clock)" } else { ": set clock = \"virtual\"" }
            ),
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
                let hint = crate::base::suggest::did_you_mean(s, allowed.iter().copied());
                return Err(c.err(key, format!("unknown strategy {s:?}{hint}; allowed: {}", allowed.join(", "))));
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
fn parse_runner(c: &mut Fields<'_>) -> Result<Arc<RunnerSpec>, ScenarioError> {
    let (name, mut table) = strategy_table(c, "runner", &RunnerKind::NAMES)?;
    let kind = RunnerKind::from_name(&name).expect("validated against the registry");
    let spec = kind.parse(table.as_mut()).map_err(|e| if e.file.is_empty() { c.err("runner", e.msg) } else { e })?;
    table.map(Fields::finish).transpose()?;
    Ok(spec)
}

fn parse_writer(c: &mut Fields<'_>) -> Result<WriterSpec, ScenarioError> {
    let (name, mut table) = strategy_table(c, "writer", &WriterKind::NAMES)?;
    let kind = WriterKind::from_name(&name).expect("validated against the registry");
    let spec = kind.parse(table.as_mut())?;
    table.map(Fields::finish).transpose()?;
    Ok(spec)
}
