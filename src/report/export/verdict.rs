//! The rollout verdict of a run that declared none (a run from before `rollout = [...]`):
//! for each gate a case sets beyond the scenario-wide ones, does production's relay as
//! built meet it (the cases that depart from nothing), and which option sets do (the cases
//! that depart with named options). Read from the gate results alone: a case is judged only
//! by the gates it was given, and a gate that measured nothing says so. Such runs still
//! re-render as they were written; a run of today renders its declared verdict
//! ([`super::rollout`]).

use crate::report::doc::{inline, Block, Line, Section};
use crate::results::summary::{CaseResult, Summary};
use crate::scenario::gate::GateResult;

/// How a case stands against production's relay as built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Design {
    Production,
    OptionSet,
    /// An archived run that did not record its departures.
    Unknown,
}

pub(crate) fn design_of(r: &CaseResult) -> Design {
    match r.departures.as_deref() {
        Some([]) => Design::Production,
        Some(_) => Design::OptionSet,
        None => Design::Unknown,
    }
}

/// Whether two gate results are the same gate (written alike or not: `<= 5` and `<= 5.0`).
fn same(a: &GateResult, b: &GateResult) -> bool {
    a.metric == b.metric && a.op == b.op && a.threshold == b.threshold
}

/// How many leading gates every case shares: the scenario-wide ones (a case's own come
/// after them).
fn scenario_wide(results: &[CaseResult]) -> usize {
    let Some((first, rest)) = results.split_first() else { return 0 };
    let mut n = first.gates.len();
    for r in rest {
        n = n.min(first.gates.iter().zip(&r.gates).take_while(|(a, b)| same(a, b)).count());
    }
    n
}

/// One distinct case-specific gate and the cases given it.
pub(crate) struct Row<'a> {
    pub gate: &'a GateResult,
    pub cases: Vec<(&'a CaseResult, &'a GateResult)>,
}

/// The rollout gates, each with the cases given it.
pub(crate) fn rows(s: &Summary) -> Vec<Row<'_>> {
    let skip = scenario_wide(&s.results);
    let mut rows: Vec<Row<'_>> = Vec::new();
    for r in &s.results {
        for g in r.gates.iter().skip(skip) {
            match rows.iter_mut().find(|row| same(row.gate, g)) {
                Some(row) => row.cases.push((r, g)),
                None => rows.push(Row { gate: g, cases: vec![(r, g)] }),
            }
        }
    }
    rows
}

/// `**case**` with `(interrupted)` when it was.
fn name(r: &CaseResult) -> String {
    format!("**{}**{}", r.case, if r.interrupted { " (interrupted)" } else { "" })
}

/// The observed figure as the gate recorded it; never a number the gate did not see.
fn observed(g: &GateResult) -> String {
    match g.observed {
        Some(_) => g.observed_text.clone(),
        None => "not measured".into(),
    }
}

/// `**case** (its departures) figure; ...`, without the figure when none was measured.
fn option_sets(cases: &[(&CaseResult, &GateResult)]) -> String {
    let listed: Vec<String> = cases
        .iter()
        .map(|(r, g)| {
            let figure = if g.observed.is_some() { format!(" {}", g.observed_text) } else { String::new() };
            format!("{} ({}){figure}", name(r), super::design(r))
        })
        .collect();
    listed.join("; ")
}

/// The `## Rollout verdict` section, and whether production as built met every gate it was
/// given; `None` when no case has gates of its own.
pub(crate) fn section(s: &Summary) -> Option<(Section, bool)> {
    let rows = rows(s);
    if rows.is_empty() {
        return None;
    }
    let mut paras = vec![
        "The gates some cases set beyond the scenario-wide ones. For each: does production's relay as built (a case \
that departs from nothing) meet it, and which option sets (cases that depart with the options named) do? A case \
is judged only by the gates it was given."
            .to_owned(),
    ];
    let production: Vec<&CaseResult> = s.results.iter().filter(|r| design_of(r) == Design::Production).collect();
    let any = |d: Design| s.results.iter().any(|r| design_of(r) == d);
    if any(Design::Unknown) {
        paras.push(
            "Some cases of this run did not record their departures from production (a run from before they were \
recorded): they are listed apart."
                .into(),
        );
    } else if production.is_empty() {
        paras.push("No case of this run is production's design as built.".into());
    }
    let total = rows.len();
    let mut held = !production.is_empty();
    for p in &production {
        let given: Vec<&Row<'_>> =
            rows.iter().filter(|row| row.cases.iter().any(|(r, _)| std::ptr::eq(*r, *p))).collect();
        let missed: Vec<String> = given
            .iter()
            .filter_map(|row| row.cases.iter().find(|(r, _)| std::ptr::eq(*r, *p)))
            .filter(|(_, g)| !g.pass)
            .map(|(_, g)| format!("`{}`", g.expr))
            .collect();
        held &= missed.is_empty();
        let who = format!("Production as built ({}, runner `{}`)", name(p), p.strategy);
        paras.push(match (given.len(), missed.len()) {
            (0, _) => format!("{who} was given none of these gates."),
            (n, 0) => format!("{who} **meets all {n}** of its rollout gates."),
            (n, m) => format!("{who} **misses {m} of {n}** rollout gates: {}.", missed.join(", ")),
        });
    }
    // Option sets given every gate and meeting them all.
    let all_met: Vec<String> = s
        .results
        .iter()
        .filter(|r| design_of(r) == Design::OptionSet)
        .filter(|r| rows.iter().all(|row| row.cases.iter().any(|(c, g)| std::ptr::eq(*c, *r) && g.pass)))
        .map(|r| format!("{} ({})", name(r), super::design(r)))
        .collect();
    if total > 1 && !all_met.is_empty() {
        paras.push(format!("Option sets that meet all {total} rollout gates: {}.", all_met.join("; ")));
    } else if total > 1 && any(Design::OptionSet) {
        paras.push(format!("No option set meets every rollout gate ({total})."));
    }
    let mut blocks: Vec<Block> = paras.into_iter().map(|p| Block::Para(inline(p))).collect();
    blocks.push(Block::Outline(rows.iter().map(|row| gate_item(s, row)).collect()));
    Some((Section::new("verdict", "Rollout verdict", blocks), held))
}

/// One rollout gate's item: how production as built and each option set fared on it.
fn gate_item(s: &Summary, row: &Row<'_>) -> (Line, Vec<Line>) {
    let any = |d: Design| s.results.iter().any(|r| design_of(r) == d);
    let mut sub: Vec<String> = Vec::new();
    let by = |d: Design| row.cases.iter().filter(move |(r, _)| design_of(r) == d);
    let prod: Vec<String> = by(Design::Production)
        .map(|(r, g)| format!("{}: {}, {}", name(r), if g.pass { "pass" } else { "**FAIL**" }, observed(g)))
        .collect();
    if prod.is_empty() {
        if any(Design::Production) {
            sub.push("production as built: not given this gate".into());
        }
    } else {
        sub.push(format!("production as built: {}", prod.join("; ")));
    }
    let met: Vec<_> = by(Design::OptionSet).filter(|(_, g)| g.pass).copied().collect();
    let missed: Vec<_> = by(Design::OptionSet).filter(|(_, g)| !g.pass && g.observed.is_some()).copied().collect();
    let unmeasured: Vec<_> = by(Design::OptionSet).filter(|(_, g)| g.observed.is_none()).copied().collect();
    if any(Design::OptionSet) && by(Design::OptionSet).next().is_none() {
        sub.push("no option set was given this gate".into());
    }
    for (what, cases) in [("met by", &met), ("missed by", &missed), ("not measured for", &unmeasured)] {
        if !cases.is_empty() {
            sub.push(format!("{what}: {}", option_sets(cases)));
        }
    }
    let unknown: Vec<String> = by(Design::Unknown)
        .map(|(r, g)| format!("{}: {}, {}", name(r), if g.pass { "pass" } else { "FAIL" }, observed(g)))
        .collect();
    if !unknown.is_empty() {
        sub.push(format!("departures not recorded (an older run): {}", unknown.join("; ")));
    }
    (inline(format!("`{}`", row.gate.expr)), sub.into_iter().map(inline).collect())
}

#[cfg(test)]
mod tests {
    use crate::report::export::fixture::{archived, inferred};
    use crate::report::export::Markdown;

    #[test]
    fn the_rollout_verdict_names_production_and_the_option_sets_that_meet_each_gate() {
        let md = String::from_utf8(Markdown.render(&inferred())).unwrap();
        let verdict =
            &md[md.find("## Rollout verdict").expect("a verdict")..md.find("## Against the baseline").unwrap()];
        assert!(
            verdict.contains("Production as built (**window-exec**, runner `window-exec`) **misses 1 of 2** rollout gates: `idle_phase_discovery_per_min <= 5.0`"),
            "{verdict}"
        );
        let idle = &verdict[verdict.find("- `idle_phase_discovery_per_min <= 5.0`").unwrap()..];
        assert!(idle.contains("  - production as built: **window-exec**: **FAIL**, 5.33\n"), "{idle}");
        assert!(idle.contains("  - met by: **window-exec-quiet-idle** (idle_wake = false) 4.63; **window-exec-inline** (inline = true) 4.67\n"), "{idle}");
        assert!(idle.contains("  - not measured for: **python-poll** (runner = external program (not the suite's model of production))\n"), "{idle}");
        let pickup = &verdict[verdict.find("- `pickup.p50 < 150ms`").unwrap()..verdict.find("- `idle_phase").unwrap()];
        assert!(pickup.contains("  - production as built: **window-exec**: pass, 95.9ms\n"), "{pickup}");
        assert!(!pickup.contains("python-poll"), "a case is judged only by its own gates: {pickup}");
        assert!(verdict.contains("Option sets that meet all 2 rollout gates: **window-exec-quiet-idle** (idle_wake = false); **window-exec-inline** (inline = true)."), "{verdict}");
        // Scenario-wide gates are not rollout gates.
        assert!(!verdict.contains("lost == 0"));
    }

    #[test]
    fn a_run_without_own_gates_has_no_verdict_and_an_old_run_is_not_called_production() {
        let mut s = archived();
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(!md.contains("| production as built |"), "departures were not recorded in this run:\n{md}");
        assert!(!md.contains("- production as built"), "{md}");
        assert!(md.contains("| window-exec | window-exec | watch | not recorded (a run from before departures were) |"));
        assert!(md.contains("departures not recorded (an older run): **window-exec**: pass, 4.5"), "{md}");
        s.results.retain(|r| r.case == "poll-only");
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(!md.contains("Rollout verdict"));
    }
}
