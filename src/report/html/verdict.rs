//! The page's verdict: the rollout gates as columns, the cases as rows (production's relay
//! as built first, then the option sets), each cell the gate's pass or fail with the
//! figure it saw; above it, what the rows add up to. It is laid out from [`Verdict`], the
//! verdict as data, whatever it is read from: the verdict summary.json types, of the rollout
//! gates the scenario declares ([`Verdict::from_typed`]), or for a run from before they were
//! declared, the one summary.md infers from the cases' own gates ([`Verdict::from_gates`]).

use super::markup::{Cell, Page};
use crate::report::export::rollout::virtual_note;
use crate::report::export::verdict::{design_of, rows, Design};
use crate::report::export::Align;
use crate::results::summary::Summary;
use crate::results::verdict::Verdict as Typed;

/// How a case stands against production's relay as built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Standing {
    Production,
    OptionSet,
    /// A run that did not record the case's departures.
    NotRecorded,
}

/// One gate judged for one case.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Judged {
    pub pass: bool,
    /// The figure the gate saw; `None`: not measured.
    pub observed: Option<String>,
}

/// One case's row.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub case: String,
    pub standing: Standing,
    /// Its departures from production, as a person reads them.
    pub departures: String,
    /// Its runner strategy.
    pub runner: String,
    pub interrupted: bool,
    /// Per gate of [`Verdict::gates`]; `None`: the case was not given it.
    pub cells: Vec<Option<Judged>>,
}

/// A run's rollout verdict as data.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Verdict {
    /// Each rollout gate, as written.
    pub gates: Vec<String>,
    pub rows: Vec<Row>,
    /// What the verdict rests on, when it says (decided on the virtual clock).
    pub note: Option<String>,
    /// Where each gate stops holding along the run's sweeps.
    pub boundaries: Vec<crate::results::boundary::Boundary>,
    /// The smallest change that meets every gate, its envelope and assumptions.
    pub recommendation: Option<String>,
}

impl Verdict {
    /// The verdict summary.json types; `None` when the scenario declares no rollout gates.
    pub(crate) fn from_typed(s: &Summary, v: &Typed) -> Option<Verdict> {
        if v.gates.is_empty() && v.boundaries.is_empty() {
            return None;
        }
        // Each case judged on any gate, once, production's first, in the order judged.
        let mut names: Vec<(&str, Standing)> = Vec::new();
        for (production, standing) in [(true, Standing::Production), (false, Standing::OptionSet)] {
            for g in &v.gates {
                let judged = if production { &g.production } else { &g.option_sets };
                for j in judged {
                    if !names.iter().any(|(n, _)| *n == j.case) {
                        names.push((&j.case, standing));
                    }
                }
            }
        }
        let rows = names
            .into_iter()
            .map(|(name, standing)| {
                let result = s.results.iter().find(|r| r.case == name);
                let judged: Vec<Option<&crate::results::verdict::Judged>> =
                    v.gates.iter().map(|g| g.judged().find(|j| j.case == name)).collect();
                let first = judged.iter().flatten().next().expect("judged on one gate at least");
                Row {
                    case: name.to_owned(),
                    standing,
                    departures: match result {
                        Some(r) => crate::report::export::design(r),
                        None if first.departures.is_empty() => "production as built".into(),
                        None => first.departures.join(", "),
                    },
                    runner: result.map(|r| r.strategy.clone()).unwrap_or_default(),
                    interrupted: first.interrupted,
                    cells: judged
                        .iter()
                        .map(|j| {
                            j.map(|j| Judged { pass: j.pass, observed: j.observed.map(|_| j.observed_text.clone()) })
                        })
                        .collect(),
                }
            })
            .collect();
        Some(Verdict {
            gates: v.gates.iter().map(|g| g.expr.clone()).collect(),
            rows,
            note: v.decided_on_virtual_clock().then(virtual_note),
            boundaries: v.boundaries.clone(),
            recommendation: v.recommendation.as_ref().map(|r| r.text.clone()),
        })
    }

    /// The verdict summary.md gives: the gates some cases set beyond the scenario-wide
    /// ones; `None` when no case has gates of its own.
    pub(crate) fn from_gates(s: &Summary) -> Option<Verdict> {
        let gates = rows(s);
        if gates.is_empty() {
            return None;
        }
        let mut out: Vec<Row> = Vec::new();
        for want in [Design::Production, Design::OptionSet, Design::Unknown] {
            for r in s.results.iter().filter(|r| design_of(r) == want) {
                let cells: Vec<Option<Judged>> = gates
                    .iter()
                    .map(|g| {
                        let (_, judged) = g.cases.iter().find(|(c, _)| std::ptr::eq(*c, r))?;
                        Some(Judged {
                            pass: judged.pass,
                            observed: judged.observed.map(|_| judged.observed_text.clone()),
                        })
                    })
                    .collect();
                if cells.iter().all(Option::is_none) {
                    continue;
                }
                out.push(Row {
                    case: r.case.clone(),
                    standing: match want {
                        Design::Production => Standing::Production,
                        Design::OptionSet => Standing::OptionSet,
                        Design::Unknown => Standing::NotRecorded,
                    },
                    departures: crate::report::export::design(r),
                    runner: r.strategy.clone(),
                    interrupted: r.interrupted,
                    cells,
                });
            }
        }
        Some(Verdict {
            gates: gates.iter().map(|g| g.gate.expr.clone()).collect(),
            rows: out,
            note: None,
            boundaries: Vec::new(),
            recommendation: None,
        })
    }
}

/// The verdict section.
pub(super) fn render(p: &mut Page, v: &Verdict) {
    p.section("verdict", "Rollout verdict");
    if v.gates.is_empty() {
        p.el("p", "", "Only swept cases ran: no verdict of one envelope; where each rollout gate holds:");
        boundaries(p, v);
        if let Some(r) = &v.recommendation {
            p.el("p", "", r);
        }
        p.raw("</section>\n");
        return;
    }
    let total = v.gates.len();
    let prod: Vec<&Row> = v.rows.iter().filter(|r| r.standing == Standing::Production).collect();
    if v.rows.iter().any(|r| r.standing == Standing::NotRecorded) {
        p.el(
            "p",
            "",
            "Some cases of this run did not record their departures from production (a run from before they were recorded): they are listed last.",
        );
    } else if prod.is_empty() {
        p.el("p", "", "No case of this run is production's relay as built.");
    }
    production(p, v, &prod);
    let all_met: Vec<String> = v
        .rows
        .iter()
        .filter(|r| r.standing == Standing::OptionSet)
        .filter(|r| r.cells.iter().all(|c| c.as_ref().is_some_and(|j| j.pass)))
        .map(|r| format!("{} ({})", r.case, r.departures))
        .collect();
    if total > 1 && !all_met.is_empty() {
        p.el("p", "", &format!("Option sets that meet all {total} rollout gates: {}.", all_met.join("; ")));
    } else if total > 1 && v.rows.iter().any(|r| r.standing == Standing::OptionSet) {
        p.el("p", "", &format!("No option set meets every rollout gate ({total})."));
    }
    cases_table(p, v);
    boundaries(p, v);
    if let Some(r) = &v.recommendation {
        p.el("p", "", r);
    }
    if let Some(note) = &v.note {
        p.el("p", "", note);
    }
    p.el("p", "muted", "A case is judged only by the gates it was given; the scenario-wide gates every case holds are not rollout gates.");
    p.raw("</section>\n");
}

/// How each case of production as built stands: a banner each, or one block for many.
fn production(p: &mut Page, v: &Verdict, prod: &[&Row]) {
    // Each production case's standing: (met all, what it says).
    let standing: Vec<(bool, String)> = prod
        .iter()
        .map(|r| {
            let given = r.cells.iter().flatten().count();
            let missed: Vec<&str> = v
                .gates
                .iter()
                .zip(&r.cells)
                .filter(|(_, c)| c.as_ref().is_some_and(|j| !j.pass))
                .map(|(g, _)| g.as_str())
                .collect();
            if missed.is_empty() {
                (true, format!("meets all {given} of its rollout gates."))
            } else {
                (false, format!("misses {} of {given} rollout gates: {}.", missed.len(), missed.join(", ")))
            }
        })
        .collect();
    let class = |met: bool| if met { "banner pass" } else { "banner fail" };
    if prod.len() <= 2 {
        for (r, (met, said)) in prod.iter().zip(&standing) {
            p.open("p", class(*met)).raw("Production as built (<strong>").text(&r.case).raw("</strong>, runner <code>");
            p.text(&r.runner).raw("</code>) ").text(said).close("p").raw("\n");
        }
    } else {
        // Many cases of production as built (under different conditions): one block.
        let met = standing.iter().filter(|s| s.0).count();
        p.open("div", class(met == prod.len()));
        p.el("p", "", &format!("Production as built, in {} cases: {met} meet all their rollout gates.", prod.len()));
        p.raw("<ul>\n");
        for (r, (_, said)) in prod.iter().zip(&standing) {
            p.raw("<li><strong>").text(&r.case).raw("</strong> (runner <code>").text(&r.runner).raw("</code>) ");
            p.text(said).raw("</li>\n");
        }
        p.raw("</ul>\n</div>\n");
    }
}

/// The cases as rows, the rollout gates as columns, each cell the gate as judged.
fn cases_table(p: &mut Page, v: &Verdict) {
    let mut columns: Vec<(&str, Align)> = vec![("case", Align::Left), ("departs from production", Align::Left)];
    columns.extend(v.gates.iter().map(|g| (g.as_str(), Align::Left)));
    let rows: Vec<Vec<Cell>> = v
        .rows
        .iter()
        .map(|r| {
            let name = if r.interrupted { format!("{} (interrupted)", r.case) } else { r.case.clone() };
            let mut cells = vec![Cell::from(name), Cell::from(r.departures.clone())];
            cells.extend(r.cells.iter().map(|c| match c {
                None => Cell::with("not given", "muted"),
                Some(j) => {
                    let seen = j.observed.as_deref().unwrap_or("not measured");
                    if j.pass {
                        Cell::with(format!("pass, {seen}"), "pass")
                    } else {
                        Cell::with(format!("FAIL, {seen}"), "fail")
                    }
                }
            }));
            cells
        })
        .collect();
    p.table(&columns, &rows);
}

/// Where each gate holds: the section summary.md writes too
/// ([`crate::report::export::rollout::boundaries`]).
fn boundaries(p: &mut Page, v: &Verdict) {
    super::doc::blocks(p, &crate::report::export::rollout::boundaries(&v.boundaries));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::export::fixture::{archived, inferred, realistic};

    #[test]
    fn production_comes_first_and_each_cell_is_the_gate_as_judged() {
        // A run from before rollout gates were declared: inferred from the cases' own gates.
        let v = Verdict::from_gates(&inferred()).expect("a verdict");
        assert_eq!(v.gates, ["pickup.p50 < 150ms", "idle_phase_discovery_per_min <= 5.0"]);
        let first = &v.rows[0];
        assert_eq!((first.case.as_str(), first.standing), ("window-exec", Standing::Production));
        assert_eq!(first.cells[1], Some(Judged { pass: false, observed: Some("5.33".into()) }));
        let black_box = v.rows.iter().find(|r| r.case == "python-poll").unwrap();
        assert_eq!(black_box.cells[0], None, "not given the pickup gate");
        assert_eq!(black_box.cells[1].as_ref().unwrap().observed, None, "not measured");
        assert!(v.rows.iter().all(|r| r.case != "poll-only"), "a case with no rollout gate is no row");
        let mut p = Page::default();
        render(&mut p, &v);
        let html = p.finish();
        assert!(html.contains("misses 1 of 2 rollout gates: idle_phase_discovery_per_min &lt;= 5.0."), "{html}");
        assert!(html.contains("<td class=\"fail\">FAIL, 5.33</td>"), "{html}");
        assert!(html.contains("Option sets that meet all 2 rollout gates: window-exec-quiet-idle (idle_wake = false)"));
    }

    /// A run that types its verdict is shown that verdict: the declared rollout gates only,
    /// whatever gates its cases set of their own, and what a virtual-clock verdict rests on.
    #[test]
    fn the_typed_verdict_is_the_page_s_verdict() {
        let mut s = realistic();
        let typed = s.verdict.clone().expect("the fixture types its verdict");
        assert!(!typed.gates.is_empty());
        let v = Verdict::from_typed(&s, &typed).expect("a verdict");
        assert_eq!(v.gates, typed.gates.iter().map(|g| g.expr.clone()).collect::<Vec<_>>());
        let production: Vec<&str> = typed.gates[0].production.iter().map(|j| j.case.as_str()).collect();
        assert_eq!(v.rows[0].case, production[0]);
        assert_eq!(v.rows[0].standing, Standing::Production);
        let cells = v.rows[0].cells.iter().flatten().count();
        assert_eq!(cells, typed.gates.iter().filter(|g| g.judged().any(|j| j.case == production[0])).count());
        assert_eq!(v.note.is_some(), typed.decided_on_virtual_clock());
        // The page renders it, with the clock note when there is one.
        s.verdict = Some(typed.clone());
        let mut p = Page::default();
        render(&mut p, &v);
        let html = p.finish();
        for g in &typed.gates {
            assert!(html.contains(super::super::markup::escape(&g.expr).as_ref()), "{html}");
        }
        // A scenario that declares none shows none, however many gates its cases set.
        assert!(Verdict::from_typed(&s, &Default::default()).is_none());
    }

    #[test]
    fn many_cases_of_production_as_built_are_one_block() {
        let mut s = inferred();
        let prod = s.results.iter().find(|r| r.case == "window-exec").unwrap().clone();
        for name in ["limit-100", "limit-50"] {
            s.results.push(crate::results::summary::CaseResult { case: name.into(), ..prod.clone() });
        }
        let mut p = Page::default();
        render(&mut p, &Verdict::from_gates(&s).unwrap());
        let html = p.finish();
        assert!(html.contains("Production as built, in 3 cases: 0 meet all their rollout gates."), "{html}");
        assert_eq!(html.matches("<li><strong>").count(), 3);
    }

    #[test]
    fn a_run_without_own_gates_has_none_and_an_old_run_is_not_called_production() {
        let mut s = archived();
        let v = Verdict::from_gates(&s).expect("window-exec has a gate of its own");
        assert!(v.rows.iter().all(|r| r.standing == Standing::NotRecorded), "{v:?}");
        s.results.retain(|r| r.case == "poll-only");
        assert!(Verdict::from_gates(&s).is_none());
    }
}
