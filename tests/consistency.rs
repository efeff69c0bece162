//! One verdict everywhere: every ✅/❌ and every "N of M" a committed run's summary.md and
//! report.html print is checked against its summary.json by logic of this test's own (not
//! the renderers'): a case's mark is its gates', a sweep's count is its points' cases that
//! meet every gate (their rollout gates too), a boundary's marks are its points' gate
//! results, production's mark in the verdict is its cases'. A line with a mark this test
//! cannot place fails it, so a new kind of mark is checked or the test says so. A mark
//! flipped in a summary.md is caught.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use relay_bench::{CaseResult, Summary};

const PASS: char = '✅';
const FAIL: char = '❌';

/// The committed runs with a summary.json.
fn runs() -> Vec<PathBuf> {
    // RELAY_BENCH_RUNS: another folder of runs to check (runs re-rendered before committing).
    let root = std::env::var_os("RELAY_BENCH_RUNS")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/runs"), PathBuf::from);
    let mut out: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    out.sort();
    out
}

/// A case's gates as this test reads them: (own met, own, rollout met, rollout).
fn counts(r: &CaseResult) -> (usize, usize, usize, usize) {
    let own = r.gates.iter().filter(|x| x.pass).count();
    let rollout = r.rollout.iter().filter(|x| x.pass).count();
    (own, r.gates.len(), rollout, r.rollout.len())
}

fn meets_every_gate(r: &CaseResult) -> bool {
    let (a, b, c, d) = counts(r);
    !r.interrupted && r.runner.stuck == 0 && a == b && c == d
}

fn mark(held: bool) -> char {
    if held {
        PASS
    } else {
        FAIL
    }
}

/// The cells of a table row.
fn cells(line: &str) -> Vec<String> {
    line.trim().trim_start_matches('|').trim_end_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect()
}

/// Checks every mark of `text` (summary.md, or report.html as lines) against `s`; the
/// problems found.
fn check(s: &Summary, text: &str) -> Vec<String> {
    let by_name: HashMap<&str, &CaseResult> = s.results.iter().map(|r| (r.case.as_str(), r)).collect();
    let mut problems = Vec::new();
    let mut header: Vec<String> = Vec::new();
    let mut heading = String::new();
    let mut gate = String::new();
    let mut bad = |line: &str, why: String| problems.push(format!("{why}: {line}"));
    for line in text.lines() {
        let t = line.trim();
        if let Some(h) = t.strip_prefix("## ") {
            heading = h.to_owned();
            header.clear();
        }
        if t.starts_with("**`") && t.ends_with("`**") {
            gate = t.trim_matches('*').trim_matches('`').to_owned();
        }
        if t.starts_with('|') && !t.starts_with("|---") {
            if header.is_empty() {
                header = cells(t);
                continue;
            }
        } else if !t.starts_with('|') {
            header.clear();
        }
        // "N of M points meet every gate" for the sweep under this heading.
        if let Some(at) = t.find(" points meet every gate") {
            let case = heading.split_whitespace().nth(1).unwrap_or_default();
            let Some(w) = s.sweeps.iter().find(|w| w.case == case) else {
                bad(t, format!("a count of points under {heading:?}, no such sweep"));
                continue;
            };
            let words: Vec<&str> = t[..at].split_whitespace().collect();
            let number =
                |k: usize| words.iter().rev().nth(k).and_then(|x| x.parse::<usize>().ok()).unwrap_or(usize::MAX);
            let (n, of) = (number(2), number(0));
            let want =
                w.points.iter().filter(|p| by_name.get(p.case.as_str()).is_some_and(|r| meets_every_gate(r))).count();
            if n != want {
                bad(t, format!("{n} points said to meet every gate, {want} do"));
            }
            if of != w.points.len() {
                bad(t, format!("{of} points said, the sweep has {}", w.points.len()));
            }
        }
        // The boundaries' legend names the marks; it marks nothing.
        if !t.contains(PASS) && !t.contains(FAIL) || t.contains("each ✅ met or ❌ missed") {
            continue;
        }
        // The page's title: the run's outcome.
        if let Some(outcome) = t.strip_prefix(&format!("relay-bench: {} — ", s.scenario)) {
            if !s.interrupted && outcome != mark(s.pass).to_string() {
                bad(t, format!("the run's outcome is {}", s.pass));
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("- ").filter(|r| r.starts_with(PASS) || r.starts_with(FAIL)) {
            check_gate_item(rest, &by_name, &mut bad);
        } else if t.starts_with('|') {
            let row = cells(t);
            check_row(s, &header, &heading, &gate, &row, &by_name, &mut bad);
        } else {
            bad(t, "a mark this test does not know how to check".into());
        }
    }
    problems
}

/// `✅ **case** invariants hold — ...`, `❌ **case** rollout gate `expr` — ...`.
fn check_gate_item(rest: &str, by_name: &HashMap<&str, &CaseResult>, bad: &mut impl FnMut(&str, String)) {
    let held = rest.starts_with(PASS);
    let Some(case) = rest.split("**").nth(1) else { return bad(rest, "no case".into()) };
    let Some(r) = by_name.get(case) else { return bad(rest, format!("no case {case:?}")) };
    let after = rest.splitn(3, "**").nth(2).unwrap_or_default().trim_start();
    if after.starts_with("invariants hold") {
        if !held {
            bad(rest, "invariants said to fail in a line that only holds".into());
        }
        return;
    }
    let Some(expr) = after.split('`').nth(1) else { return bad(rest, "no gate".into()) };
    let gates = if after.starts_with("rollout gate") { &r.rollout } else { &r.gates };
    match gates.iter().find(|g| g.gate.expr == expr) {
        Some(g) if g.pass == held => {}
        Some(g) => bad(rest, format!("{case}'s `{expr}` is {}", g.pass)),
        None => bad(rest, format!("{case} has no gate `{expr}`")),
    }
}

/// A case's gates cell: `✅ 5/5 · rollout ❌ 1/2`.
fn check_cell(cell: &str, r: &CaseResult, bad: &mut impl FnMut(&str, String)) {
    if cell == "interrupted" {
        if !r.interrupted {
            bad(cell, format!("{} said interrupted", r.case));
        }
        return;
    }
    let (a, b, c, d) = counts(r);
    let own = format!("{} {a}/{b}", mark(a == b && r.runner.stuck == 0));
    if !cell.starts_with(&own) {
        bad(cell, format!("{}'s own gates are {own}", r.case));
    }
    let rollout = format!("rollout {} {c}/{d}", mark(c == d));
    if d > 0 && !cell.contains(&rollout) {
        bad(cell, format!("{}'s rollout gates are {rollout}", r.case));
    }
    if d == 0 && cell.contains("rollout") {
        bad(cell, format!("{} was judged on no rollout gate", r.case));
    }
}

fn check_row(
    s: &Summary,
    header: &[String],
    heading: &str,
    gate: &str,
    row: &[String],
    by_name: &HashMap<&str, &CaseResult>,
    bad: &mut impl FnMut(&str, String),
) {
    let line = row.join(" | ");
    let first = header.first().map(String::as_str).unwrap_or_default();
    match first {
        "case" if header.get(1).map(String::as_str) == Some("strategy") => {
            let name = row[0].trim_end_matches(" *virtual*");
            match by_name.get(name) {
                Some(r) => check_cell(row.last().unwrap(), r, bad),
                None => bad(&line, format!("no case {name:?}")),
            }
        }
        "case" if header.get(1).map(String::as_str) == Some("fault") => {
            let (case, kind) = (row[0].as_str(), row[1].trim_matches('`'));
            let ok = by_name.get(case).and_then(|r| r.faults.iter().find(|f| f.kind == kind)).map(|f| f.ok);
            match ok {
                Some(ok) if row.last().unwrap().contains(mark(ok)) => {}
                _ => bad(&line, format!("{case}'s fault {kind} is not as marked")),
            }
        }
        "rollout gate" => {
            let expr = row[0].trim_matches('`');
            let Some(v) = s.verdict.as_ref() else { return bad(&line, "no verdict in summary.json".into()) };
            let Some(g) = v.gates.iter().find(|g| g.gate.expr == expr) else {
                return bad(&line, "no such gate".into());
            };
            for j in &g.production {
                let want = format!("{} **{}", mark(j.pass), j.case);
                let case_pass =
                    by_name.get(j.case.as_str()).and_then(|r| r.rollout.iter().find(|x| x.gate.expr == expr));
                if !row[1].contains(&want) || case_pass.is_none_or(|x| x.pass != j.pass) {
                    bad(&line, format!("production's {} on `{expr}`: {}", j.case, j.pass));
                }
            }
        }
        "along" => {
            // `case `axis` [at x]`, then `✅ value (observed) · ...`.
            let case = row[0].split_whitespace().next().unwrap_or_default();
            let Some(v) = s.verdict.as_ref() else { return bad(&line, "no verdict".into()) };
            let at = row[0].split(" at ").nth(1).map(str::to_owned);
            let Some(b) = v.boundaries.iter().find(|b| b.gate == gate && b.case == case && b.at == at) else {
                return bad(&line, format!("no boundary of `{gate}` along {case}"));
            };
            // ⏹: a search's probe stopped early, shown but not judged on this gate.
            let marks: Vec<Option<bool>> = row[1]
                .chars()
                .filter_map(|c| match c {
                    PASS | FAIL => Some(Some(c == PASS)),
                    '⏹' => Some(None),
                    _ => None,
                })
                .collect();
            let want: Vec<Option<bool>> = b
                .points
                .iter()
                .map(|p| {
                    let r = by_name.get(p.case.as_str());
                    if p.not_judged {
                        // Only a probe that stopped early goes unjudged.
                        return r.filter(|r| r.stopped_early.is_none()).map(|_| false);
                    }
                    Some(r.and_then(|r| r.rollout.iter().find(|g| g.gate.expr == gate)).is_some_and(|g| g.pass))
                })
                .collect();
            if marks != want {
                bad(&line, format!("the points of `{gate}` along {case} are {want:?}"));
            }
        }
        _ if heading.starts_with("Sweep: ") || heading.starts_with("Search: ") => {
            let case = heading.split_whitespace().nth(1).unwrap_or_default();
            let Some(w) = s.sweeps.iter().find(|w| w.case == case) else { return bad(&line, "no such sweep".into()) };
            let labels: Vec<String> = w.axes.iter().zip(row).map(|(a, v)| format!("{}={v}", a.label)).collect();
            let name = format!("{case}@{}", labels.join(","));
            match by_name.get(name.as_str()) {
                Some(r) => check_cell(row.last().unwrap().trim_end_matches(" **best**"), r, bad),
                None => bad(&line, format!("no point {name:?}")),
            }
        }
        _ => bad(&line, format!("a mark in a table this test does not know ({first:?})")),
    }
}

/// report.html as the lines summary.md would have: headings, table rows, list items; the
/// page's marks (its ✓/✗ spans and its pass/FAIL words) as ✅/❌, its markup as Markdown's.
fn html_lines(html: &str) -> String {
    let mut s = html
        .replace("<span class=\"pass\">✓</span>", "✅")
        .replace("<span class=\"fail\">✗</span>", "❌")
        .replace("<span class=\"pass\">pass</span>", "✅")
        .replace("<span class=\"fail\">FAIL</span>", "❌")
        .replace("<strong>", "**")
        .replace("</strong>", "**")
        .replace("<code>", "`")
        .replace("</code>", "`")
        .replace("<h2>", "\n## ")
        .replace("<h3>", "\n### ")
        .replace("<tr>", "\n| ")
        .replace("</td>", " | ")
        .replace("</th>", " | ")
        .replace("<li>", "\n- ");
    // Tags out, entities back.
    let mut out = String::with_capacity(s.len());
    let mut in_tag = false;
    for c in s.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    s = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    // A table's rows: the header first (its cells end with " | "), then a rule for the checker.
    s.lines()
        .map(|l| l.trim_end().trim_end_matches('|').trim_end().to_owned())
        .map(|l| if l.starts_with("| ") { format!("{l} |") } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_mark_of_every_committed_run_is_its_summary_json() {
    let mut checked = 0;
    let mut all = Vec::new();
    for run in runs() {
        let s = Summary::read(&run).unwrap();
        let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
        all.extend(check(&s, &md).into_iter().map(|p| format!("{}/summary.md: {p}", run.display())));
        if let Ok(html) = std::fs::read_to_string(run.join("report.html")) {
            all.extend(
                check(&s, &html_lines(&html)).into_iter().map(|p| format!("{}/report.html: {p}", run.display())),
            );
        }
        checked += 1;
    }
    assert!(all.is_empty(), "{} marks that are not their summary.json's:\n{}", all.len(), all.join("\n"));
    assert!(checked >= 5, "the committed runs were found: {checked}");
}

#[test]
fn a_flipped_mark_is_caught() {
    let run =
        runs().into_iter().rfind(|r| r.to_string_lossy().ends_with("-rollout-gate")).expect("a committed rollout gate");
    let s = Summary::read(&run).unwrap();
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(check(&s, &md).is_empty());
    let mut flipped = 0;
    for (at, c) in md.char_indices().filter(|(_, c)| *c == PASS || *c == FAIL) {
        let other = if c == PASS { FAIL } else { PASS };
        let text = format!("{}{other}{}", &md[..at], &md[at + c.len_utf8()..]);
        assert!(!check(&s, &text).is_empty(), "the mark at byte {at} flipped is not caught");
        flipped += 1;
        if flipped == 40 {
            break;
        }
    }
    assert!(flipped > 10, "{flipped}");
    // A count of points changed is caught too.
    let count = md.find(" points meet every gate").expect("a sweep's count");
    let digit = md[..count].rfind(|c: char| c.is_ascii_digit()).unwrap();
    let n: u32 = md[digit..digit + 1].parse().unwrap();
    let text = format!("{}{}{}", &md[..digit], (n + 1) % 10, &md[digit + 1..]);
    assert!(!check(&s, &text).is_empty(), "a count changed is not caught");
}
