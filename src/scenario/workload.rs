//! The `[workload]` and `[handler]` tables read: who makes the calls, how many and when,
//! and the tool every runner calls.

use super::overrides::{self, Overrides};
use crate::base::fields::{Fields, ScenarioError};
use crate::base::units::human;
use crate::relay::handler::HandlerModel;
use crate::scenario::pacer::{Arrival, Phase, Workload};
use std::time::Duration;

fn parse_phases(w: &mut Fields<'_>) -> Result<Option<Vec<Phase>>, ScenarioError> {
    let tables = w.tables("phase")?;
    if tables.is_empty() {
        return Ok(None);
    }
    let phase = |t: &mut Fields<'_>| {
        let duration = t.duration("duration")?.ok_or_else(|| t.err("duration", "is required"))?;
        if duration.is_zero() {
            return Err(t.err("duration", "must be longer than 0s"));
        }
        let turns_per_sec = t.float("turns_per_sec", 0.0, 100_000.0)?.unwrap_or(0.0);
        Ok(Phase { duration, turns_per_sec })
    };
    tables.into_iter().map(|t| t.read(phase)).collect::<Result<_, _>>().map(Some)
}

/// The warm-up (`warmup`, shorter than the schedule's `duration`), and whether the capacity
/// figures take it in (`warmup_gated`, only with a warm-up; true unless said).
fn parse_warmup(w: &mut Fields<'_>, duration: Duration) -> Result<(Duration, bool), ScenarioError> {
    let warmup = w.duration("warmup")?.unwrap_or(Duration::ZERO);
    if warmup >= duration {
        return Err(w.err("warmup", "must be shorter than `duration`"));
    }
    let gated = w.boolean("warmup_gated")?;
    if gated.is_some() && warmup.is_zero() {
        return Err(w.err("warmup_gated", "applies only with a `warmup`: it says whether the warm-up's figures gate"));
    }
    Ok((warmup, gated.unwrap_or(true)))
}

/// `[workload.agent]`: agent turns, which exclude an open-loop schedule's keys.
fn parse_agent(w: &mut Fields<'_>) -> Result<Option<crate::scenario::turns::AgentTurns>, ScenarioError> {
    let Some(a) = w.table("agent")? else { return Ok(None) };
    for key in ["turns_per_sec", "calls_per_turn", "arrival", "phase"] {
        if w.raw_unread(key) {
            let why = "cannot be given with [workload.agent]: agent turns come from sessions (steps, think times)";
            return Err(w.err(key, why));
        }
    }
    a.read(crate::scenario::turns::AgentTurns::parse).map(Some)
}

/// The phases: `[[workload.phase]]`, or one phase of `duration` at `turns_per_sec`.
fn parse_schedule(w: &mut Fields<'_>) -> Result<Vec<Phase>, ScenarioError> {
    if let Some(p) = parse_phases(w)? {
        for key in ["duration", "turns_per_sec"] {
            if w.raw_unread(key) {
                return Err(w.err(key, "cannot be given with [[workload.phase]]; give it per phase"));
            }
        }
        return Ok(p);
    }
    let duration = w.duration("duration")?.unwrap_or(Duration::from_secs(10));
    if duration.is_zero() {
        return Err(w.err("duration", "must be longer than 0s"));
    }
    let turns_per_sec = w.float("turns_per_sec", 0.001, 100_000.0)?.unwrap_or(1.0);
    Ok(vec![Phase { duration, turns_per_sec }])
}

/// The workload with `run`'s overrides applied, and the factor its schedule was scaled by.
pub(super) fn parse_workload(w: &mut Fields<'_>, ov: &Overrides) -> Result<(Workload, f64), ScenarioError> {
    let agent = parse_agent(w)?;
    let phases = parse_schedule(w)?;
    let duration: Duration = phases.iter().map(|p| p.duration).sum();
    let (warmup, warmup_gated) = parse_warmup(w, duration)?;
    let factor = ov.factor(duration);
    if !(factor > 0.0 && factor <= overrides::MAX_SCALE) {
        let why = format!(
            "scales the {} schedule by {factor}; allowed: above 0, at most {}",
            human(duration),
            overrides::MAX_SCALE
        );
        return Err(w.err("duration", why));
    }
    let phases: Vec<Phase> =
        phases.into_iter().map(|p| Phase { duration: Overrides::scaled(p.duration, factor), ..p }).collect();
    if phases.iter().any(|p| p.duration.is_zero()) {
        return Err(w.err("phase", "a phase scaled to 0s: scale the schedule less"));
    }
    let warmup = Overrides::scaled(warmup, factor);
    let arrival = w.choice("arrival", &Arrival::NAMES)?.and_then(Arrival::from_name).unwrap_or(Arrival::Constant);
    let sandboxes = w.int("sandboxes", 1, MAX_SANDBOXES)?.unwrap_or(1) as u32;
    let sandboxes = match ov.sandboxes {
        Some(n) if !(1..=MAX_SANDBOXES).contains(&i64::from(n)) => {
            return Err(w.err("sandboxes", format!("{n} is out of range; allowed: 1 to {MAX_SANDBOXES}")))
        }
        Some(n) => n,
        None => sandboxes,
    };
    // Agent turns make one active phase: its rate is the fleet's expected turns per second.
    let phases = match &agent {
        Some(a) => {
            let turns_per_sec = a.turns_per_sec_per_sandbox() * f64::from(sandboxes);
            phases.into_iter().map(|p| Phase { turns_per_sec, ..p }).collect()
        }
        None => phases,
    };
    let workload = Workload {
        sandboxes,
        arrival,
        phases,
        calls_per_turn: w.int("calls_per_turn", 1, 1000)?.unwrap_or(1) as u32,
        warmup,
        warmup_gated,
        tool_timeout: w.duration("tool_timeout")?,
        seed: ov.seed.unwrap_or(w.int("seed", 0, i64::MAX)?.unwrap_or(1) as u64),
        payload_bytes: w.int("payload_bytes", 0, MAX_PAYLOAD_BYTES)?.unwrap_or(128) as usize,
        agent,
    };
    Ok((workload, factor))
}

/// The largest payload a call's request (`workload.payload_bytes`) or answer
/// (`handler.payload_bytes`) may carry: what fits a runner's 16 MiB cap on a relay file with
/// its JSON envelope around it ([`ENVELOPE_BYTES`]). One limit on both clocks: the virtual
/// clock's in-memory dir has no cap, and a larger payload there would measure a call no real
/// runner can read.
pub(crate) const MAX_PAYLOAD_BYTES: i64 = crate::sandbox::dir::RealDir::DEFAULT_MAX_BYTES as i64 - ENVELOPE_BYTES;

/// What a request or an answer of the suite holds besides its payload, at most: the JSON keys,
/// the tool name (`bench`) and the longest call id (`s<sandbox>-t<turn>-k<k>-c<c>`).
pub(crate) const ENVELOPE_BYTES: i64 = 1024;

/// The most sandboxes one case may have (every sandbox has a relay dir, a host and a runner:
/// on the virtual clock some 35 KB each, so 100,000 take a few GB; see docs/fleet.md).
pub(crate) const MAX_SANDBOXES: i64 = 100_000;

pub(super) fn parse_handler(h: &mut Fields<'_>, seed: u64) -> Result<HandlerModel, ScenarioError> {
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
        payload_bytes: h.int("payload_bytes", 0, MAX_PAYLOAD_BYTES)?.unwrap_or(128) as usize,
        seed,
        ..HandlerModel::default()
    })
}
