//! The comparison as GitHub-flavoured markdown, for a pull request's comment or a CI job's
//! summary: the verdict in the heading, the figures that moved past the threshold first,
//! every figure in a folded table after. Its blocks are the report model's
//! ([`crate::report::doc`]), written by the same Markdown writer as summary.md.

use super::console::{heading, interval, ratio, tally, value, TOO_FEW, WITHIN_FLOOR};
use super::{Change, Comparison, Verdict};
use crate::report::doc::{self, code, inline, plain, Block, Span, Table};

fn table(rows: &[&Change]) -> Block {
    let rows = rows.iter().map(|ch| {
        let word = match ch.verdict {
            Verdict::Regression => "❌ regression".to_owned(),
            Verdict::Improvement => "✅ improvement".to_owned(),
            v => v.name().to_owned(),
        };
        vec![
            ch.case.clone(),
            code(&ch.figure),
            value(ch.old, ch.unit),
            value(ch.new, ch.unit),
            ratio(ch),
            interval(ch),
            word,
        ]
    });
    Block::Table(Table::new("case|figure|>old|>new|>ratio|95% noise|verdict", rows))
}

/// The heading: how many figures regressed, and the cases NEW lacks.
fn head(c: &Comparison) -> String {
    let mut head = match c.regressions() {
        0 => "✅ no regression".to_owned(),
        1 => "❌ 1 regression".to_owned(),
        n => format!("❌ {n} regressions"),
    };
    if !c.missing_from_new.is_empty() {
        head = format!("❌ {head}, {} case(s) missing from NEW", c.missing_from_new.len()).replace("❌ ✅ ", "❌ ");
    }
    head
}

/// What the two runs were and how they differ, before the tables.
fn lead(c: &Comparison) -> Vec<Block> {
    let (reg, imp) = (c.regressions(), c.improvements());
    let mut out = vec![Block::Para(vec![
        Span::Code(c.old.clone()),
        Span::Text(" (OLD) against ".into()),
        Span::Code(c.new.clone()),
        Span::Text(format!(
            " (NEW); a figure counts past ±{}: {reg} regression(s), {imp} improvement(s) over {} figures.",
            c.threshold,
            c.changes.len()
        )),
    ])];
    // What the two runs' summary.json files say is anyone's text: no HTML of it passes.
    out.push(Block::List(heading(c).iter().map(|line| plain(line.replace('`', "'"))).collect()));
    let warning = |rest: Vec<Span>| {
        let mut line = vec![Span::Strong("warning".into()), Span::Text(": ".into())];
        line.extend(rest);
        Block::Quote(line)
    };
    out.extend(c.warnings.iter().map(|w| warning(inline(w.clone()))));
    out.extend(c.env_diff.iter().map(|d| {
        warning(vec![
            Span::Text(format!("environments differ: {} ", d.field)),
            Span::Code(d.old.clone()),
            Span::Text(" -> ".into()),
            Span::Code(d.new.clone()),
        ])
    }));
    out
}

/// Every figure, folded, with what its marks mean.
fn every_figure(c: &Comparison) -> Block {
    let mut inner = vec![table(&c.changes.iter().collect::<Vec<_>>())];
    if c.changes.iter().any(|ch| ch.verdict == Verdict::TooFewSamples) {
        inner.push(Block::Para(plain(format!("{TOO_FEW}."))));
    }
    if c.changes.iter().any(|ch| ch.verdict == Verdict::WithinFloor) {
        inner.push(Block::Para(plain(format!("{WITHIN_FLOOR}."))));
    }
    if c.zero_in_both > 0 {
        inner.push(Block::Para(plain(format!("{} figure(s) 0 in both runs left out.", c.zero_in_both))));
    }
    let summary = format!("All {} figures", c.changes.len());
    Block::Fold { summary, open: false, in_markdown: true, blocks: inner }
}

pub(super) fn render(c: &Comparison) -> String {
    let mut blocks = lead(c);
    let moved: Vec<&Change> =
        c.changes.iter().filter(|ch| matches!(ch.verdict, Verdict::Regression | Verdict::Improvement)).collect();
    blocks.push(if moved.is_empty() {
        Block::Para(plain(format!("No figure moved past ±{}.", c.threshold)))
    } else {
        table(&moved)
    });
    blocks.push(every_figure(c));
    if !c.skipped.is_empty() || !c.unmatched.is_empty() {
        blocks.push(Block::Para(plain("Not compared:")));
        let skipped = c.skipped.iter().map(|sk| {
            vec![
                Span::Text(format!("{} ", sk.case)),
                Span::Code(sk.figure.clone()),
                Span::Text(": ".into()),
                Span::Inline(sk.why.clone()),
            ]
        });
        blocks.push(Block::List(skipped.chain(c.unmatched.iter().map(|u| inline(u.clone()))).collect()));
    }
    for m in &c.missing_from_new {
        blocks.push(Block::Para(vec![
            Span::Strong("FAIL".into()),
            Span::Text(": case ".into()),
            Span::Code(m.clone()),
            Span::Text(" of OLD is missing from NEW: nothing measured for it.".into()),
        ]));
    }
    blocks.push(Block::Para(plain(format!("{}.", tally(c)))));
    let mut o = format!("### relay-bench compare: {}\n", head(c));
    doc::blocks(&mut o, &blocks);
    o
}
