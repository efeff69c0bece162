//! The comparison as GitHub-flavoured markdown, for a pull request's comment or a CI job's
//! summary: the verdict in the heading, the figures that moved past the threshold first,
//! every figure in a folded table after.

use std::fmt::Write;

use super::console::{heading, interval, ratio, tally, value, TOO_FEW, WITHIN_FLOOR};
use super::{Change, Comparison, Verdict};
use crate::report::doc::{code, escape, escape_inline};
use crate::report::export::{Align, MdTable};

use Align::{Left as L, Right as R};

fn table(o: &mut String, rows: &[&Change]) {
    let mut t = MdTable::new(
        o,
        &[("case", L), ("figure", L), ("old", R), ("new", R), ("ratio", R), ("95% noise", L), ("verdict", L)],
    );
    for ch in rows {
        let word = match ch.verdict {
            Verdict::Regression => "❌ regression".to_owned(),
            Verdict::Improvement => "✅ improvement".to_owned(),
            v => v.word().to_owned(),
        };
        t.row(&[
            ch.case.clone(),
            code(&ch.figure),
            value(ch.old, ch.unit),
            value(ch.new, ch.unit),
            ratio(ch),
            interval(ch),
            word,
        ]);
    }
}

pub(super) fn render(c: &Comparison) -> String {
    let mut o = String::new();
    let (reg, imp) = (c.regressions(), c.improvements());
    let mut head = match reg {
        0 => "✅ no regression".to_owned(),
        1 => "❌ 1 regression".to_owned(),
        n => format!("❌ {n} regressions"),
    };
    if !c.missing_from_new.is_empty() {
        head = format!("❌ {head}, {} case(s) missing from NEW", c.missing_from_new.len()).replace("❌ ✅ ", "❌ ");
    }
    let _ = writeln!(o, "### relay-bench compare: {head}\n");
    let _ = writeln!(
        o,
        "{} (OLD) against {} (NEW); a figure counts past ±{}: {reg} regression(s), {imp} improvement(s) over {} \
         figures.\n",
        code(&c.old),
        code(&c.new),
        c.threshold,
        c.changes.len()
    );
    // What the two runs' summary.json files say is anyone's text: no HTML of it passes.
    for line in heading(c) {
        let _ = writeln!(o, "- {}", escape(&line.replace('`', "'")));
    }
    o.push('\n');
    for w in &c.warnings {
        let _ = writeln!(o, "> **warning**: {}\n", escape_inline(w));
    }
    for d in &c.env_diff {
        let (field, old, new) = (escape(&d.field), code(&d.old), code(&d.new));
        let _ = writeln!(o, "> **warning**: environments differ: {field} {old} -&gt; {new}\n");
    }
    let moved: Vec<&Change> =
        c.changes.iter().filter(|ch| matches!(ch.verdict, Verdict::Regression | Verdict::Improvement)).collect();
    if moved.is_empty() {
        let _ = writeln!(o, "No figure moved past ±{}.\n", c.threshold);
    } else {
        table(&mut o, &moved);
        o.push('\n');
    }
    let _ = writeln!(o, "<details><summary>All {} figures</summary>\n", c.changes.len());
    table(&mut o, &c.changes.iter().collect::<Vec<_>>());
    o.push('\n');
    if c.changes.iter().any(|ch| ch.verdict == Verdict::TooFewSamples) {
        let _ = writeln!(o, "{TOO_FEW}.\n");
    }
    if c.changes.iter().any(|ch| ch.verdict == Verdict::WithinFloor) {
        let _ = writeln!(o, "{WITHIN_FLOOR}.\n");
    }
    if c.zero_in_both > 0 {
        let _ = writeln!(o, "{} figure(s) 0 in both runs left out.\n", c.zero_in_both);
    }
    let _ = writeln!(o, "</details>\n");
    if !c.skipped.is_empty() || !c.unmatched.is_empty() {
        let _ = writeln!(o, "Not compared:\n");
        for sk in &c.skipped {
            let _ = writeln!(o, "- {} {}: {}", escape(&sk.case), code(&sk.figure), escape_inline(&sk.why));
        }
        for u in &c.unmatched {
            let _ = writeln!(o, "- {}", escape_inline(u));
        }
        o.push('\n');
    }
    for m in &c.missing_from_new {
        let _ = writeln!(o, "**FAIL**: case {} of OLD is missing from NEW: nothing measured for it.\n", code(m));
    }
    let _ = writeln!(o, "{}.", tally(c));
    o
}
