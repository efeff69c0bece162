//! What a reader of a comparison must know before any figure: what differs between the two
//! runs besides time — the scenario, each case's seed, options and clock, the flags `run`
//! overrode — and each run's own verdict. Two runs that differ in a case's options are a
//! comparison of options, not of code; two scenarios that share a case name are compared by
//! name, and said to be.

use serde::Serialize;

use crate::results::summary::{CaseResult, Summary};

/// One thing that differs between the runs: `what` (`scenario`, `local-poll: seed`), and
/// its value in each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Difference {
    pub what: String,
    pub old: String,
    pub new: String,
}

/// A run's own verdict, as its summary.json gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunVerdict {
    pub pass: bool,
    /// `PASS`, or `FAIL` and why (the cases that failed a gate, an interruption, a missed
    /// rollout gate).
    pub text: String,
}

impl RunVerdict {
    pub(crate) fn of(s: &Summary) -> RunVerdict {
        if s.pass {
            return RunVerdict { pass: true, text: "PASS".into() };
        }
        let mut why: Vec<String> = s
            .results
            .iter()
            .filter(|r| !r.pass)
            .map(|r| {
                let passed = r.gates.iter().filter(|g| g.pass).count();
                let cut = if r.interrupted { ", interrupted" } else { "" };
                format!("{} {passed}/{} gates{cut}", r.case, r.gates.len())
            })
            .collect();
        if s.verdict.as_ref().is_some_and(|v| v.pass == Some(false)) {
            why.push("production as built misses a rollout gate".into());
        }
        if s.interrupted {
            why.push("interrupted".into());
        }
        if !s.cases_not_run.is_empty() {
            why.push(format!("not run: {}", s.cases_not_run.join(", ")));
        }
        RunVerdict { pass: false, text: format!("FAIL ({})", why.join("; ")) }
    }
}

/// A case's settings that decide its figures, by name, as the reports show them.
fn settings(r: &CaseResult) -> Vec<(&'static str, String)> {
    let departs = match &r.departures {
        Some(d) if d.is_empty() => "production as built".to_owned(),
        Some(d) => d.join(", "),
        None => "not recorded".to_owned(),
    };
    // A part's parameters start with its name, or do not name it: said once either way.
    let part = |name: &str, params: &str| {
        if params.starts_with(name) {
            params.to_owned()
        } else {
            format!("{name} {params}").trim().to_owned()
        }
    };
    vec![
        ("clock", r.clock.name().to_owned()),
        ("seed", r.seed.map_or_else(|| "not recorded".to_owned(), |s| s.to_string())),
        ("sandboxes", r.sandboxes.to_string()),
        ("host", part(&r.host, &r.host_params)),
        ("runner", part(&r.strategy, &r.strategy_params)),
        ("writer", part(&r.writer, &r.writer_params)),
        ("departs", departs),
    ]
}

/// What differs between the runs, scenario first, then each case both have, in NEW's order.
pub(crate) fn differences(old: &Summary, new: &Summary, pairs: &[(&CaseResult, &CaseResult)]) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut push = |what: String, a: String, b: String| {
        if a != b {
            out.push(Difference { what, old: a, new: b });
        }
    };
    push("scenario".into(), old.scenario.clone(), new.scenario.clone());
    let flags = |s: &Summary| s.overrides.as_ref().map_or_else(|| "none".to_owned(), |o| o.given.join(" "));
    push("run overrides".into(), flags(old), flags(new));
    for (o, n) in pairs {
        let seeds = |r: &CaseResult| r.repeat.as_ref().map(|rep| format!("{:?}", rep.seeds));
        for ((what, a), (_, b)) in settings(o).into_iter().zip(settings(n)) {
            let (a, b) = match what {
                "seed" => (seeds(o).unwrap_or(a), seeds(n).unwrap_or(b)),
                _ => (a, b),
            };
            push(format!("{}: {what}", n.case), a, b);
        }
    }
    out
}

/// A warning when the runs are of two scenarios: their cases are matched by name only.
pub(crate) fn across_scenarios(old: &Summary, new: &Summary, pairs: &[(&CaseResult, &CaseResult)]) -> Option<String> {
    (old.scenario != new.scenario).then(|| {
        let names: Vec<&str> = pairs.iter().map(|(_, n)| n.case.as_str()).collect();
        format!(
            "the runs are of two scenarios (OLD {:?}, NEW {:?}): case(s) {} are matched by name only, so their \
             settings may differ (see what differs above)",
            old.scenario,
            new.scenario,
            names.join(", ")
        )
    })
}
