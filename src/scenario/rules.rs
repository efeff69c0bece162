//! What every scenario respects whatever it asks for: names that stay one plain file name,
//! sizes counted before anything is allocated, and the invariants every case is gated on.

use crate::base::fields::{Fields, ScenarioError};
use crate::scenario::fault::FaultSpec;
use crate::scenario::gate::Gate;
use crate::scenario::pacer::Workload;

/// The most cases one scenario may hold: every case rewrites the run's reports, so a
/// scenario of thousands is a generator's mistake, not a benchmark.
pub(crate) const MAX_CASES: usize = 1000;

/// The largest scenario file read: a scenario is a page of TOML, not a data set.
pub(crate) const MAX_SCENARIO_BYTES: u64 = 1 << 20;

/// The longest description kept (it is copied into every report).
pub(crate) const MAX_DESCRIPTION: usize = 4096;

/// The longest scenario or case name: it is part of file names (`<case>-sandbox-<n>.stderr`).
pub(crate) const MAX_NAME: usize = 100;

/// What a scenario or case name may hold, as errors say it.
pub(crate) const NAME_ALLOWED: &str = "letters A-Z a-z, digits 0-9, - _ . (not first: . or -), at most 100 characters";

/// A scenario or case name [`check_name`] or [`check_case_name`] refuses; each lists what a
/// name may hold, so the user can rename it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("{0:?} is not allowed; allowed: {NAME_ALLOWED}")]
    Name(String),
    #[error("{0:?} is not allowed; allowed: {NAME_ALLOWED}, and a sweep's point after `@` (`=` and `,` too)")]
    CaseName(String),
}

/// Refuses a scenario or case name that would not stay one plain file name (a scenario's
/// report directory; a case's folder under `hdr/`, its relay dirs and stderr files):
/// empty, `.` or `..`, a separator or a control character, a leading `.` (hidden, or a
/// parent) or `-` (read as an option).
pub(crate) fn check_name(name: &str) -> Result<(), NameError> {
    let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let first_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain && first_ok && name.len() <= MAX_NAME {
        Ok(())
    } else {
        Err(NameError::Name(name.to_owned()))
    }
}

/// What a case name read back from a run may hold: a plain name, or a sweep's point
/// (`window-exec@window=10s,idle_timeout=none`: `@`, `=` and `,` too).
pub(crate) fn check_case_name(name: &str) -> Result<(), NameError> {
    let (base, point) = name.split_once('@').unwrap_or((name, ""));
    let point_ok = point.chars().all(|c| c.is_ascii_alphanumeric() || "-_.=,".contains(c));
    match check_name(base) {
        Ok(()) if point_ok && name.len() <= MAX_NAME => Ok(()),
        _ => Err(NameError::CaseName(name.to_owned())),
    }
}

/// Refuses a schedule too large to build ([`Workload::max_calls`]), counted before any of
/// it is allocated: every case runs the whole workload.
pub(super) fn check_schedule_size(top: &Fields<'_>, wl: &Workload) -> Result<(), ScenarioError> {
    let (calls, max) = (wl.planned_calls(), wl.max_calls());
    if calls <= max {
        return Ok(());
    }
    Err(top.err(
        "workload",
        format!(
            "every case would schedule {calls} calls ({} turns over {} x calls_per_turn {}; sandboxes share the \
             turns); allowed: at most {max} calls per case: lower turns_per_sec, duration or \
             calls_per_turn",
            wl.planned_turns(),
            crate::base::units::human(wl.duration()),
            wl.calls_per_turn
        ),
    ))
}

/// Refuses a case whose bursts (a fault's extra calls) take its calls past the same cap.
pub(super) fn check_burst_calls(case: &Fields<'_>, wl: &Workload, faults: &[FaultSpec]) -> Result<(), ScenarioError> {
    let bursts: u64 = faults.iter().map(|f| u64::from(f.calls)).sum();
    let (calls, max) = (wl.planned_calls().saturating_add(bursts), wl.max_calls());
    if calls <= max {
        return Ok(());
    }
    Err(case.err(
        "fault",
        format!(
            "the schedule's {} calls and {bursts} burst calls make {calls}; allowed: at most {max} calls per case",
            wl.planned_calls()
        ),
    ))
}

/// What every case must hold unless it says `expect_breaches = true`: nothing lost, nothing
/// doubled, no pairing breach, nothing left in the dir, and calls made at all. A gate the
/// scenario already sets on one of these metrics is the one that counts.
pub(crate) const INVARIANTS: [&str; 5] =
    ["lost == 0", "duplicated == 0", "pairing_violations == 0", "leftover_files == 0", "completed > 0"];

/// Appends to `gates` each invariant whose metric neither `gates` nor the case's `own` gate.
pub(super) fn add_invariants(gates: &mut Vec<Gate>, own: &[Gate]) {
    for expr in INVARIANTS {
        let g = Gate::parse(expr).expect("the invariants parse");
        if !gates.iter().chain(own).any(|x| x.metric == g.metric) {
            gates.push(g);
        }
    }
}
