//! The gates section, in summary.md and report.html alike: every gate of every case, a
//! case's invariants that hold in one line, every other gate (and an invariant that breaks)
//! and then the rollout gates it was judged on, a line each with what was observed; the page
//! folds them under how many fail, unfolded when one does.

use crate::report::doc::{Block, Section, Span};
use crate::results::summary::Summary;
use crate::scenario::gate::GateResult;
use crate::scenario::rules::INVARIANTS;

pub(crate) fn document(s: &Summary) -> Section {
    let invariant_held = |g: &&GateResult| g.pass && INVARIANTS.contains(&g.gate.expr.as_str());
    let mut items = Vec::new();
    for r in &s.results {
        let held: Vec<String> = r
            .gates
            .iter()
            .filter(invariant_held)
            .map(|g| format!("{} {}", g.gate.metric.name().replace('_', " "), g.observed_text))
            .collect();
        if !held.is_empty() {
            items.push(vec![
                Span::Mark(true),
                Span::Text(" ".into()),
                Span::Strong(r.case.clone()),
                Span::Text(format!(" invariants hold — {}", held.join(", "))),
            ]);
        }
        let own = r.gates.iter().filter(|g| !invariant_held(g)).map(|g| (g, ""));
        for (g, kind) in own.chain(r.rollout.iter().map(|g| (g, "rollout gate "))) {
            items.push(vec![
                Span::Mark(g.pass),
                Span::Text(" ".into()),
                Span::Strong(r.case.clone()),
                Span::Text(format!(" {kind}")),
                Span::Code(g.gate.expr.clone()),
                Span::Text(format!(" — observed {}{}", g.observed_text, super::gate_spread(r, g.gate.metric))),
            ]);
        }
    }
    let all: Vec<bool> = s.results.iter().flat_map(|r| r.gates.iter().chain(&r.rollout)).map(|g| g.pass).collect();
    let failed = all.iter().filter(|p| !**p).count();
    let summary = match failed {
        0 => format!("All {} gates pass", all.len()),
        n => format!("{n} of {} gates fail", all.len()),
    };
    Section::new(
        "gates",
        "Gates",
        vec![Block::Fold { summary, open: failed > 0, in_markdown: false, blocks: vec![Block::List(items)] }],
    )
}
