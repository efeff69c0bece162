//! The pages that report what the committed runs found (docs/findings.md and
//! docs/rollout-gate.md) state no figure their runs do not: in every section that cites a run
//! (`reports/runs/<stamp>-<name>`), every number of its prose and tables is a number of that
//! run's summary.md or SETUP.md (or of another run the section cites). Arithmetic and
//! settings are written in code spans (`2 × 60 / 22.5 = 5.33`, `window = 27.15s`) and are not
//! figures of a run. A section that cites no run is about the design (its gates, its
//! constants) and is not checked: a section that reports a run names it.

use std::collections::HashSet;
use std::path::Path;

/// The pages held to their runs.
const PAGES: &[&str] = &["docs/findings.md", "docs/rollout-gate.md"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A number as a value: `1,000` and `1000`, `5.00` and `5` are one.
fn canonical(token: &str) -> Option<String> {
    let plain: String = token.trim_end_matches(',').chars().filter(|c| *c != ',').collect();
    let v: f64 = plain.parse().ok()?;
    Some(format!("{v}"))
}

/// The numbers of `text`, each as [`canonical`] gives it; a digit inside a word
/// (`p50`, `x86_64`, `rtt-20ms`'s profile name aside) counts as a number too.
fn numbers(text: &str) -> Vec<(String, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts_word = i > 0 && (b[i - 1].is_ascii_alphabetic() || b[i - 1] == b'_');
        if b[i].is_ascii_digit() && !starts_word {
            let start = i;
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || ((b[i] == b',' || b[i] == b'.') && i + 1 < b.len() && b[i + 1].is_ascii_digit()))
            {
                i += 1;
            }
            let token = &text[start..i];
            if let Some(c) = canonical(token) {
                out.push((token.to_owned(), c));
            }
        } else if b[i].is_ascii_digit() {
            // A digit inside a word (p50, x86_64): not a figure.
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The run folder names a section cites.
fn cited_runs(section: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = section;
    while let Some(at) = rest.find("reports/runs/") {
        rest = &rest[at + "reports/runs/".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect();
        if name.len() > 9 && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The section's prose and tables without what is not a figure of a run: code spans, link
/// targets, images, run folder names and headings' anchors.
fn prose(section: &str) -> String {
    let mut out = String::new();
    for line in section.lines() {
        if line.starts_with("![") || line.starts_with("```") {
            continue;
        }
        // Code spans out.
        let mut in_code = false;
        let mut kept = String::new();
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            } else if !in_code {
                kept.push(c);
            }
        }
        // Link targets out: `](...)`.
        while let Some(at) = kept.find("](") {
            let end = kept[at..].find(')').map_or(kept.len(), |e| at + e + 1);
            kept.replace_range(at + 1..end, "");
        }
        // Run folder names out (their stamps are dates, not figures).
        while let Some(at) = kept.find("reports/runs/") {
            let tail = &kept[at..];
            let end = tail.find(|c: char| c.is_whitespace() || c == ',' || c == ')' || c == ';').unwrap_or(tail.len());
            kept.replace_range(at..at + end, "");
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// Splits a page into its `## ` sections (the text before the first is one too).
fn sections(page: &str) -> Vec<(String, String)> {
    let mut out = vec![(String::from("(top)"), String::new())];
    for line in page.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            out.push((title.to_owned(), String::new()));
        }
        let last = out.last_mut().expect("one section at least");
        last.1.push_str(line);
        last.1.push('\n');
    }
    out
}

/// The numbers of a run's own pages: its summary.md (a conform run's conform.md) and
/// SETUP.md, and those of the runs it holds (a conform run grades several programs).
fn run_numbers(name: &str) -> Option<HashSet<String>> {
    let top = root().join("reports/runs").join(name);
    let mut dirs = vec![top.clone()];
    dirs.extend(std::fs::read_dir(&top).ok()?.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    let mut all = HashSet::new();
    let mut found = false;
    for dir in dirs {
        for f in ["summary.md", "conform.md", "SETUP.md"] {
            if let Ok(text) = std::fs::read_to_string(dir.join(f)) {
                found = true;
                all.extend(numbers(&text).into_iter().map(|(_, c)| c));
            }
        }
    }
    found.then_some(all)
}

#[test]
fn every_figure_of_a_findings_page_is_in_the_run_it_cites() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in PAGES {
        let text = std::fs::read_to_string(root().join(page)).unwrap();
        for (title, body) in sections(&text) {
            let runs = cited_runs(&body);
            let mut known = HashSet::new();
            for r in &runs {
                match run_numbers(r) {
                    Some(n) => known.extend(n),
                    None => wrong.push(format!("{page} § {title}: cites {r}, which holds no report or SETUP.md")),
                }
            }
            // The section's own title counts: a heading's number is prose too.
            if runs.is_empty() {
                continue;
            }
            for (token, value) in numbers(&prose(&body)) {
                if !known.contains(&value) {
                    wrong.push(format!("{page} § {title}: {token} is in none of {}", runs.join(", ")));
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "the pages' figures were found: {checked}");
    assert!(wrong.is_empty(), "{} figure(s) no cited run states:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn the_figure_reader_reads_what_a_page_writes() {
    let got: Vec<String> =
        numbers("1,000 sandboxes, 5.00 and 27.15s (p50, x86_64) at 4.9; 12 %").into_iter().map(|(_, c)| c).collect();
    assert_eq!(got, ["1000", "5", "27.15", "4.9", "12"]);
    assert_eq!(prose("a `2 × 60 / 22.5 = 5.33` b [c](../reports/runs/20261204-x/summary.md) 3"), "a  b [c] 3\n");
    assert_eq!(
        cited_runs("see reports/runs/20261204-rollout-gate and (reports/runs/20261204-storm)"),
        ["20261204-rollout-gate", "20261204-storm"]
    );
    // A figure a run does not state is caught.
    let known: HashSet<String> = numbers("pickup 90.0ms, idle 5.32").into_iter().map(|(_, c)| c).collect();
    let wrong: Vec<String> =
        numbers("pickup 90 ms, idle 5.33").into_iter().filter(|(_, c)| !known.contains(c)).map(|(t, _)| t).collect();
    assert_eq!(wrong, ["5.33"]);
}
