//! A scenario's searches: in rounds (the first beside the scenario's cases, the others after
//! them), each round the next probes of every line still open side by side
//! ([`crate::scenario::search`]), each probe a point of its case's sweep in the summary (its
//! value added to the searched axis as it is probed), each line's bracket narrowed by what
//! its probes met, until every line has found its boundary to its precision, or said why
//! not.

use crate::results::summary::Summary;
use crate::results::sweep::{SearchLine, SweepPoint};
use crate::scenario::search::{Line, Next, Search};
use crate::scenario::{CaseSpec, Scenario};

use super::{BenchError, Run};

/// The probes a round takes across every line of a scenario's searches (a single line
/// probes two points of its bracket at once, on a 2-core machine side by side; many lines
/// one each). A constant, not the machine's cores: the probes a search makes are part of
/// its result, which `--jobs` and `--shard` must not change.
const PROBES_PER_ROUND: usize = 2;

/// One line of one search under way.
#[derive(Default)]
struct Open {
    /// The searched case's sweep (its index in the scenario's and the summary's sweeps).
    sweep: usize,
    /// The line's index, and its values on the other axes.
    line: usize,
    at: Vec<usize>,
    state: Line,
    /// The probes of the round under way: value and case name.
    pending: Vec<(f64, String)>,
    /// Each probe's value and whether each repeat of it met every gate with margin (under
    /// `--repeat`).
    repeats: Vec<(f64, Vec<bool>)>,
    ended: Option<Next>,
}

/// Every line of a scenario's searches under way, and how many probes a line takes at once.
pub(super) struct Searches {
    open: Vec<Open>,
    per_line: usize,
}

/// The searches of `s`, their first round's probes made (each a point of its case's sweep in
/// `summary`): probes known before anything runs, so the run deals them to its workers with
/// its cases ([`run_searches`] takes their results from there).
pub(super) fn start(s: &Scenario, summary: &mut Summary) -> Result<(Searches, Vec<CaseSpec>), BenchError> {
    let mut open: Vec<Open> = Vec::new();
    for (k, w) in s.sweeps.iter().enumerate().filter(|(_, w)| w.search.is_some()) {
        for (line, at) in w.lines.iter().enumerate() {
            open.push(Open { sweep: k, line, at: at.clone(), ..Default::default() });
        }
    }
    // How many probes a line takes at once: the same on every machine and in every part of
    // a split run (a search's probes are a result: never the cores' or the parts' doing).
    let lines: usize =
        s.whole.as_deref().unwrap_or(s).sweeps.iter().filter(|w| w.search.is_some()).map(|w| w.lines.len()).sum();
    let mut searches = Searches { open, per_line: (PROBES_PER_ROUND / lines.max(1)).max(1) };
    let first = searches.next_round(s, summary)?;
    Ok((searches, first))
}

impl Searches {
    /// The next round's probes of every line still open, each made a point of its case's
    /// sweep in `summary`; a line with none to make has ended.
    fn next_round(&mut self, s: &Scenario, summary: &mut Summary) -> Result<Vec<CaseSpec>, BenchError> {
        let mut probes: Vec<CaseSpec> = Vec::new();
        for o in self.open.iter_mut().filter(|o| o.ended.is_none()) {
            let w = &s.sweeps[o.sweep];
            let search = w.search.as_ref().expect("a searched sweep");
            let (next, values) = o.state.next(search, self.per_line);
            if values.is_empty() {
                o.ended = Some(next);
                continue;
            }
            for x in values {
                let case = s.probe(w, &o.at, x).map_err(|e| BenchError::Search { case: w.case.clone(), why: e })?;
                add_point(summary, o, search, x, &case.name);
                o.pending.push((x, case.name.clone()));
                probes.push(case);
            }
        }
        Ok(probes)
    }

    /// The round's probes' results, read from `summary`, narrow each line's bracket.
    fn settle_round(&mut self, s: &Scenario, summary: &mut Summary) {
        for o in self.open.iter_mut() {
            for (x, name) in std::mem::take(&mut o.pending) {
                let Some(r) = summary.results.iter().find(|r| r.case == name) else { continue };
                o.state.probes.push((x, r.standing().meets_with_margin()));
                if let Some(each) = each_repeat(r) {
                    o.repeats.push((x, each));
                }
                if r.interrupted {
                    o.ended = Some(Next::Probe(0));
                }
            }
            record(summary, o, &s.sweeps[o.sweep].search);
        }
        summary.recompute_pass();
    }
}

/// Runs every search of `run`'s scenario to its end (or to an interrupt), from the round
/// [`start`] made (already run, with the run's cases), each round's results joining
/// `summary` as they finish.
pub(super) async fn run_searches(
    run: &Run<'_>,
    summary: &mut Summary,
    mut searches: Searches,
) -> Result<(), BenchError> {
    let s = run.s;
    searches.settle_round(s, summary);
    loop {
        if run.env.interrupt.is_closed() {
            summary.interrupted = true;
            break;
        }
        if searches.open.iter().all(|o| o.ended.is_some()) {
            break;
        }
        let probes = searches.next_round(s, summary)?;
        if probes.is_empty() {
            continue;
        }
        run_round(run, probes, summary).await?;
        searches.settle_round(s, summary);
    }
    if searches.open.is_empty() {
        return Ok(());
    }
    for o in &searches.open {
        record(summary, o, &s.sweeps[o.sweep].search);
    }
    summary.recompute_pass();
    // The lines' ends are said in the reports when they are next rewritten (at the end at
    // the latest).
    run.changed();
    Ok(())
}

/// The probe's value on the searched axis of its sweep (added when new), and the point.
fn add_point(summary: &mut Summary, o: &Open, search: &Search, x: f64, case: &str) {
    let w = &mut summary.sweeps[o.sweep];
    let axis = w.axes.last_mut().expect("a searched sweep has its axis");
    let text = search.text(x);
    let i = axis.values.iter().position(|v| *v == text).unwrap_or_else(|| {
        axis.values.push(text);
        axis.numbers.get_or_insert_with(Vec::new).push(x);
        axis.values.len() - 1
    });
    let mut at = o.at.clone();
    at.push(i);
    w.points.push(SweepPoint { case: case.to_owned(), at, pass: None, figures: Vec::new() });
}

/// Where line `o` stands, into its sweep's search result.
fn record(summary: &mut Summary, o: &Open, search: &Option<Search>) {
    let Some(search) = search else { return };
    let Some(result) = summary.sweeps[o.sweep].search.as_mut() else { return };
    let bracket = o.state.bracket(search.meets);
    let outcome = match o.ended {
        None | Some(Next::Probe(_)) => "running",
        Some(Next::Found { .. }) => "found",
        Some(Next::OutOfProbes { .. }) => "out of probes",
        Some(Next::MeetsEverywhere) => "meets everywhere",
        Some(Next::MissedEverywhere) => "missed everywhere",
    };
    let line = SearchLine {
        at: o.at.clone(),
        outcome: outcome.into(),
        miss: bracket.map(|b| b.0),
        meet: bracket.map(|b| b.1),
        probes: o.state.probes.len(),
        across_repeats: across_repeats(&o.repeats, search)
            .filter(|a| bracket.is_some_and(|b| *a != [b.0.min(b.1), b.0.max(b.1)])),
    };
    if let Some(slot) = result.lines.get_mut(o.line) {
        *slot = line;
    }
}

/// Whether each repeat of a probe met every gate it was judged on with margin, from the
/// repeats' own figures; `None` when it ran once.
fn each_repeat(r: &crate::results::summary::CaseResult) -> Option<Vec<bool>> {
    let rep = r.repeat.as_ref()?;
    let n = rep.seeds.len();
    let gates: Vec<&crate::scenario::gate::GateResult> = r.gates.iter().chain(&r.rollout).collect();
    let each = (0..n)
        .map(|k| {
            gates.iter().all(|g| {
                let v = rep.get(&g.gate.metric.name()).and_then(|f| f.values.get(k).copied().flatten());
                match v {
                    // A figure the repeats kept apart: that repeat's own value judged.
                    Some(v) => {
                        let j = g.gate.evaluate(Some(v));
                        j.pass && !j.on_edge()
                    }
                    // Read whole (an invariant, the worst repeat's): as the case was judged.
                    None => g.pass && !g.on_edge(),
                }
            })
        })
        .collect();
    Some(each)
}

/// Where the boundary lies across the repeats: the widest bracket any repeat's own probes
/// give (the lowest value one of them missed at, up to the highest one met at, or the other
/// way for a search whose values meet below).
fn across_repeats(probes: &[(f64, Vec<bool>)], search: &Search) -> Option<[f64; 2]> {
    let n = probes.first()?.1.len();
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for k in 0..n {
        let line = Line { probes: probes.iter().filter_map(|(x, m)| Some((*x, *m.get(k)?))).collect() };
        let (miss, meet) = line.bracket(search.meets)?;
        lo = lo.min(miss.min(meet));
        hi = hi.max(miss.max(meet));
    }
    lo.is_finite().then_some([lo, hi])
}

/// Runs one round's probes as a scenario of their own (side by side, each with its
/// repeats), their results joining `summary`.
async fn run_round(run: &Run<'_>, probes: Vec<CaseSpec>, summary: &mut Summary) -> Result<(), BenchError> {
    let round = Scenario { cases: probes, ..run.s.clone() };
    // The run's own clock of rewrites: a round's probes are rewritten as the run's cases.
    let r = Run::new(&round, run.opts, run.env.clone(), run.tty, run.written.clone());
    r.cases(summary).await?;
    run.written.set(r.written.get());
    Ok(())
}
