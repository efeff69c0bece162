//! The declared rollout verdict ([`Verdict`]) as each report shows it: the section right
//! after summary.md's title, the last lines of the console, the JUnit testsuite's cases.
//! A run that declares no rollout gates shows none of it.

use std::fmt::Write;

use crate::base::units::readable;
use crate::report::doc::{inline, mark, plain, Block, Section, Span, Table};
use crate::results::boundary::Boundary;
use crate::results::summary::Summary;
use crate::results::verdict::{Judged, RolloutGate, Verdict, CLOCK_EVIDENCE};

/// `production as built meets all 2 rollout gates`, `... misses 1 of 2 ...`, or that no
/// case of production as built ran.
pub(crate) fn headline(v: &Verdict) -> String {
    let n = v.gates.len();
    let gates = if n == 1 { "rollout gate" } else { "rollout gates" };
    match v.pass {
        Some(true) if n == 1 => "production as built meets its rollout gate".to_owned(),
        Some(true) => format!("production as built meets all {n} {gates}"),
        Some(false) => format!("production as built misses {} of {n} {gates}", v.missed().len()),
        None => format!("no case of this run is production as built: {n} {gates}, judged on option sets only"),
    }
}

/// The spread of a judged case's figure across its repeats (` (4.92–5.33)`, ` [lo–hi]`);
/// empty when the case ran once.
fn spread(s: &Summary, g: &RolloutGate, j: &Judged) -> String {
    match s.results.iter().find(|r| r.case == j.case) {
        Some(r) if j.observed.is_some() => super::gate_spread(r, g.gate.metric),
        _ => String::new(),
    }
}

/// `window-exec 5.17`, `window-exec not measured`, `window-exec (interrupted) 93.1ms`, and
/// the figure's spread across repeats after it.
fn figure(j: &Judged, spread: &str) -> String {
    let cut = if j.interrupted { " (interrupted)" } else { "" };
    let value = if j.observed.is_some() { j.observed_text.as_str() } else { "not measured" };
    format!("{}{cut} {value}{spread}", j.case)
}

/// `**case** (its departures) figure`.
fn option_set(j: &Judged, spread: &str) -> String {
    let cut = if j.interrupted { " (interrupted)" } else { "" };
    let value = if j.observed.is_some() { format!(" {}", j.observed_text) } else { " not measured".into() };
    format!("**{}**{cut} ({}){value}{spread}", j.case, j.departures.join(", "))
}

/// Production's cases whose repeats fall on both sides of a rollout gate: the verdict holds at
/// the median, but one run could have given the other. A line each, for the reports to say.
pub(crate) fn on_the_edge(v: &Verdict, s: &Summary) -> Vec<String> {
    let mut lines = Vec::new();
    for g in &v.gates {
        for j in &g.production {
            let Some(r) = s.results.iter().find(|r| r.case == j.case) else { continue };
            let Some(p) = r.repeat.as_ref() else { continue };
            let Some(f) = p.get(&g.gate.metric.name()) else { continue };
            let passed = f.values.iter().flatten().filter(|&&x| g.gate.op.holds(x, g.gate.threshold)).count();
            let measured = f.values.iter().flatten().count();
            if passed > 0 && passed < measured {
                lines.push(format!(
                    "{}'s `{}` is {} at the median of {measured} repeats but holds in {passed} of them: \
a single run could give either verdict",
                    j.case, g.gate.expr, j.observed_text
                ));
            }
        }
    }
    lines
}

/// The option sets a gate's cell lists: those that `met` it, or those that did not.
fn sets(s: &Summary, g: &RolloutGate, met: bool) -> String {
    let listed: Vec<String> =
        g.option_sets.iter().filter(|j| j.pass == met).map(|j| option_set(j, &spread(s, g, j))).collect();
    listed.join("; ")
}

/// The rollout verdict's section, for summary.md (right under its title) and the page alike,
/// and whether production as built met it; `None` without rollout gates or boundaries.
pub(crate) fn section(v: &Verdict, s: &Summary) -> Option<(Section, bool)> {
    let mut blocks = Vec::new();
    let title = if v.gates.is_empty() {
        // Only swept cases ran: no verdict of the stated envelope, the boundaries still.
        if v.boundaries.is_empty() {
            return None;
        }
        blocks.push(Block::Para(plain("Only swept cases ran: no verdict of one envelope.")));
        "Rollout gates: where they hold".to_owned()
    } else {
        blocks.push(Block::Table(gates_table(v, s)));
        blocks.extend(
            on_the_edge(v, s).into_iter().map(|line| Block::Quote(inline(format!("**On the edge:** {line}.")))),
        );
        let judged_sets = v.gates.iter().any(|g| !g.option_sets.is_empty());
        if v.gates.len() > 1 && judged_sets {
            let named: Vec<String> = v
                .meet_all
                .iter()
                .map(|case| {
                    let d = v.gates.iter().flat_map(|g| &g.option_sets).find(|j| j.case == *case);
                    format!("**{case}** ({})", d.map(|j| j.departures.join(", ")).unwrap_or_default())
                })
                .collect();
            blocks.push(Block::Para(inline(if named.is_empty() {
                "No option set meets every rollout gate.".to_owned()
            } else {
                format!("Option sets that meet every rollout gate: {}.", named.join("; "))
            })));
        }
        format!("Rollout verdict: {}", headline(v))
    };
    blocks.extend(boundaries(&v.boundaries));
    if let Some(r) = &v.recommendation {
        blocks.extend(recommendation(r));
    }
    if !v.gates.is_empty() && v.decided_on_virtual_clock() {
        blocks.push(Block::Para(inline(virtual_note())));
    }
    Some((Section::new("verdict", title, blocks), v.pass == Some(true)))
}

/// A row per rollout gate: how production as built fared, the option sets that meet it and
/// those that miss it.
fn gates_table(v: &Verdict, s: &Summary) -> Table {
    let rows = v.gates.iter().map(|g| {
        let production: Vec<String> =
            g.production.iter().map(|j| format!("{} **{}**{}", mark(j.pass), figure(j, ""), spread(s, g, j))).collect();
        let production = if production.is_empty() { "not in this run".to_owned() } else { production.join("; ") };
        vec![format!("`{}`", g.gate.expr), production, sets(s, g, true), sets(s, g, false)]
    });
    Table::new("rollout gate|production as built|option sets that meet it|option sets that miss it", rows)
}

/// An axis value with its unit, as the maps say it.
fn axis_value(b: &Boundary, x: f64) -> String {
    format!("{}{}{}", readable(x, 2), if b.unit.is_empty() { "" } else { " " }, b.unit)
}

/// `### Where each rollout gate holds`, for summary.md and the page alike: per gate, a row per
/// swept axis, each point with its value and whether it met the gate, then the boundary in
/// words. Nothing when no case was swept.
pub(crate) fn boundaries(all: &[Boundary]) -> Vec<Block> {
    if all.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Block::Heading("Where each rollout gate holds".into()),
        Block::Para(inline(
            "Each swept case's points in order along its axis, each ✅ met or ❌ missed; the boundary lies between \
the last point that meets the gate and the first that misses it (measured, not extrapolated). A sweep over \
profiles is placed by its measured round trip (twice the median leg the daemon paid).",
        )),
    ];
    if all.iter().flat_map(|b| &b.points).any(|p| p.not_judged) {
        out.push(Block::Para(inline(
            "⏹: a search's probe stopped at its first lost call past what its gates allow: judged on its `lost` \
gates only, the others having seen only the part that ran.",
        )));
    }
    let mut gates: Vec<&str> = Vec::new();
    for b in all {
        if !gates.contains(&b.gate.as_str()) {
            gates.push(&b.gate);
        }
    }
    for gate in gates {
        out.push(Block::Para(vec![Span::StrongCode(gate.to_owned())]));
        let rows = all.iter().filter(|b| b.gate == gate).map(|b| {
            let at = b.at.as_ref().map_or_else(String::new, |at| format!(" at {at}"));
            let along = format!("{} `{}`{at}", b.case, b.axis);
            let map: Vec<String> = b
                .points
                .iter()
                .map(|p| match p.not_judged {
                    true => format!("⏹ {} (stopped early: not judged)", axis_value(b, p.value)),
                    false => format!("{} {} ({})", mark(p.pass), axis_value(b, p.value), p.observed_text),
                })
                .collect();
            vec![along, map.join(" · "), b.sentence()]
        });
        out.push(Block::Table(Table::new("along|points|boundary", rows)));
    }
    out
}

/// The recommendation: its lead, then the other options that meet every rollout gate
/// inside production's envelope, least invasive first, then those that meet them only
/// outside it, with what crossing cost.
pub(crate) fn recommendation(r: &crate::results::recommend::Recommendation) -> Vec<Block> {
    let mut out = vec![Block::Para(inline(r.text.clone()))];
    let item = |c: &crate::results::recommend::Choice| {
        let mut line = format!("{}: {}", c.name(), c.margins_text());
        if c.on_edge {
            line += " — on the edge";
        }
        if let Some(s) = &c.searched {
            line += &format!("; {s}");
        }
        inline(line)
    };
    if !r.others.is_empty() {
        out.push(Block::Para(inline(
            "Other options that meet every rollout gate inside production's envelope, least invasive first:",
        )));
        out.push(Block::List(r.others.iter().map(item).collect()));
    }
    if !r.outside.is_empty() {
        out.push(Block::Para(inline(
            "Not recommended: options that meet every rollout gate only by leaving production's envelope, and what \
             crossing it cost in this run:",
        )));
        out.push(Block::List(
            r.outside
                .iter()
                .map(|c| {
                    let mut line = item(c);
                    line.extend(inline(format!(
                        ". Outside the envelope: {}. Cost: {}",
                        c.outside_envelope.join("; "),
                        c.costs.join(", ")
                    )));
                    line
                })
                .collect(),
        ));
    }
    out
}

/// What a verdict decided on the virtual clock rests on, and how to confirm it.
pub(crate) fn virtual_note() -> String {
    format!(
        "Decided on the virtual clock. The `clock-check` scenario runs the same cases on both clocks and gates \
their wake, pickup and completion p50 and p90 and their discovery rates against each other: {CLOCK_EVIDENCE} \
(its summary.md). `run --clock real` confirms this verdict on the real clock."
    )
}

/// The verdict as the console's last lines: the headline, then a line per gate.
pub(crate) fn console(o: &mut String, v: &Verdict, s: &Summary, note: impl Fn(&mut String, &str)) {
    if v.gates.is_empty() {
        for b in &v.boundaries {
            console_boundary(o, b, &note);
        }
        if let Some(r) = v.recommendation.as_ref().filter(|_| !v.boundaries.is_empty()) {
            note(o, &r.text);
        }
        return;
    }
    let word = match v.pass {
        Some(true) => "PASS",
        Some(false) => "FAIL",
        None => "no verdict",
    };
    let _ = writeln!(o, "\nrollout verdict: {word}: {}", headline(v));
    for g in &v.gates {
        let state = match g.production_pass() {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "-",
        };
        let production: Vec<String> = g.production.iter().map(|j| figure(j, &spread(s, g, j))).collect();
        let met: Vec<&str> = g.option_sets.iter().filter(|j| j.pass).map(|j| j.case.as_str()).collect();
        let mut line = format!("{state} {}", g.gate.expr);
        if !production.is_empty() {
            let _ = write!(line, ": {}", production.join(", "));
        }
        if !g.option_sets.is_empty() {
            let met = if met.is_empty() { "none".to_owned() } else { met.join(", ") };
            let _ = write!(line, "; option sets that meet it: {met}");
        }
        note(o, &line);
    }
    if v.gates.len() > 1 && !v.meet_all.is_empty() {
        note(o, &format!("every rollout gate met by: {}", v.meet_all.join(", ")));
    }
    for line in on_the_edge(v, s) {
        note(o, &format!("on the edge: {line}"));
    }
    for b in &v.boundaries {
        console_boundary(o, b, &note);
    }
    if let Some(r) = &v.recommendation {
        note(o, &r.text);
    }
    if v.decided_on_virtual_clock() {
        note(o, &format!("decided on the virtual clock ({CLOCK_EVIDENCE}); --clock real confirms"));
    }
}

/// One boundary as a console line.
fn console_boundary(o: &mut String, b: &Boundary, note: &impl Fn(&mut String, &str)) {
    let at = b.at.as_ref().map_or(String::new(), |a| format!(" at {a}"));
    note(o, &format!("boundary {} along {} `{}`{at}: {}", b.gate, b.case, b.axis, b.sentence()));
}

#[cfg(test)]
mod tests {
    use super::super::fixture::realistic;
    use super::*;

    /// The section as summary.md writes it.
    fn markdown(o: &mut String, v: &Verdict, s: &Summary) {
        if let Some((sec, _)) = section(v, s) {
            crate::report::doc::markdown(o, &sec);
        }
    }

    #[test]
    fn the_section_names_production_and_the_option_sets_per_gate() {
        let s = realistic();
        let mut o = String::new();
        markdown(&mut o, s.verdict.as_ref().unwrap(), &s);
        assert!(o.starts_with("\n## Rollout verdict: production as built misses 1 of 2 rollout gates\n"), "{o}");
        let idle = o.lines().find(|l| l.starts_with("| `idle_phase")).unwrap();
        assert!(idle.contains("| ❌ **window-exec 5.33** |"), "{idle}");
        assert!(idle.contains("**window-exec-quiet-idle** (idle_wake = false) 4.63"), "{idle}");
        assert!(
            idle.contains(
                "**python-poll** (runner = external program (not the suite's model of production)) not measured |"
            ),
            "{idle}"
        );
        let pickup = o.lines().find(|l| l.starts_with("| `pickup")).unwrap();
        assert!(pickup.contains("✅ **window-exec 95.9ms**"), "{pickup}");
        assert!(!pickup.contains("python-poll"), "a case is judged only on the gates it was given: {pickup}");
        assert!(o.contains("Option sets that meet every rollout gate: **window-exec-quiet-idle** (idle_wake = false); **window-exec-inline** (inline = true)."), "{o}");
        assert!(!o.contains("lost == 0"));
    }

    #[test]
    fn without_rollout_gates_nothing_is_said() {
        let (mut o, v, s) = (String::new(), Verdict::default(), realistic());
        markdown(&mut o, &v, &s);
        console(&mut o, &v, &s, |o, l| o.push_str(l));
        assert!(o.is_empty());
    }

    /// `realistic()` with production's window-exec run five times, its idle figure `values`.
    fn repeated(values: [f64; 5]) -> Summary {
        use crate::results::repeat::{Repeats, Spread};
        let mut s = realistic();
        let r = s.results.iter_mut().find(|r| r.case == "window-exec").unwrap();
        let mut sorted = values;
        sorted.sort_by(f64::total_cmp);
        r.repeat = Some(Repeats {
            seeds: vec![1, 2, 3, 4, 5],
            figures: vec![Spread {
                figure: "idle_phase_discovery_per_min".into(),
                unit: "/min".into(),
                values: values.map(Some).to_vec(),
                value: sorted[2],
                rule: None,
                median: sorted[2],
                min: sorted[0],
                max: sorted[4],
                ci95: None,
            }],
        });
        s
    }

    #[test]
    fn a_repeated_figure_shows_its_spread_and_a_verdict_either_seed_could_flip_is_said_to_be() {
        let s = repeated([5.33, 4.92, 5.4, 5.35, 5.1]);
        let (mut md, mut console_text) = (String::new(), String::new());
        let v = s.verdict.as_ref().unwrap();
        markdown(&mut md, v, &s);
        console(&mut console_text, v, &s, |o, l| {
            o.push_str(l);
            o.push('\n');
        });
        let idle = md.lines().find(|l| l.starts_with("| `idle_phase")).unwrap();
        assert!(idle.contains("| ❌ **window-exec 5.33** (4.92–5.4) |"), "{idle}");
        let edge = "window-exec's `idle_phase_discovery_per_min <= 5.0` is 5.33 at the median of 5 repeats \
but holds in 1 of them: a single run could give either verdict";
        assert!(md.contains(&format!("> **On the edge:** {edge}.")), "{md}");
        assert!(console_text.contains(&format!("on the edge: {edge}")), "{console_text}");
        assert!(console_text.contains("window-exec 5.33 (4.92–5.4)"), "{console_text}");

        // Every repeat on one side: the spread is shown, nothing is said to be on the edge.
        let s = repeated([5.33, 5.2, 5.4, 5.35, 5.1]);
        let mut md = String::new();
        markdown(&mut md, s.verdict.as_ref().unwrap(), &s);
        assert!(md.contains("(5.1–5.4)"), "{md}");
        assert!(!md.contains("On the edge"), "{md}");
    }
}
