//! One `[[case]]`: its host, clock, runner and writer strategies (each a name or a table of
//! its settings, through the registries), its gates and rollout gates.

use std::sync::Arc;

use super::rules::{add_invariants, check_name};
use super::{parse_gates, CaseSpec, Clock};
use crate::base::fields::{Fields, ScenarioError};
use crate::sandbox::host::{HostTables, HOSTS};
use crate::scenario::gate::Gate;
use crate::strategy::{runner_kind, runner_names, writer_kind, writer_names, RunnerSpec, WriterSpec};

pub(super) fn parse_case(
    c: &mut Fields<'_>,
    common: &[Gate],
    common_rollout: &[Gate],
    tables: &HostTables,
    forced_clock: Option<Clock>,
) -> Result<CaseSpec, ScenarioError> {
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
    // `run --clock` sets every case's; then a case that cannot take it says why, not how to
    // edit the file.
    let clock = forced_clock.unwrap_or(clock);
    let advice = if forced_clock.is_some() { "" } else { ": use clock = \"real\"" };
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
    let own = c.strings("gates")?;
    let own = parse_gates(c, "gates", &own)?;
    // Scenario gates, the invariants, then the case's own: every case shares the leading
    // ones (a run that declared no rollout gates is read that way: its case's own gates).
    let mut gates = common.to_vec();
    if !c.boolean("expect_breaches")?.unwrap_or(false) {
        add_invariants(&mut gates, &own);
    }
    gates.extend(own);
    let own_rollout = c.strings("rollout")?;
    let mut rollout = common_rollout.to_vec();
    for g in parse_gates(c, "rollout", &own_rollout)? {
        if !rollout.iter().any(|r| r.same_test(&g)) {
            rollout.push(g);
        }
    }
    Ok(CaseSpec { name, host, clock, runner, writer, gates, rollout, baseline, faults: Vec::new() })
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
