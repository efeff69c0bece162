//! The docs state no figure their runs do not: in every section (`## ` or `### `) of a page
//! under docs/ that cites a run (`reports/runs/<stamp>-<name>`), every number of its prose
//! and tables is a number of that run's own pages (its summary.md, SETUP.md, a conform run's
//! conform.md, a bench's table), or of another run the section cites. The pages an operator
//! acts on ([`STRICT`]) are held to those pages alone; the others may also state a value of
//! the run's JSON (summary.json's, rounded to at most three decimals; its time series left
//! out, too many values to tell a figure from a coincidence). Arithmetic and settings are written in code spans
//! (`2 × 60 / 22.5 = 5.33`, `window = 27.15s`) and are not figures of a run. A section that
//! cites no run is about the design (its gates, its constants) or a test's figures, and is
//! not checked: a section that reports a run names it.
//!
//! Not checked: the sections [`EXEMPT`] names, each with why.

use std::collections::HashSet;
use std::path::Path;

/// The pages held to their runs' pages alone (no JSON value).
const STRICT: &[&str] = &["docs/findings.md", "docs/rollout-gate.md"];

/// The sections not held to their runs (a page, a section title or `*`, why).
const EXEMPT: &[(&str, &str, &str)] = &[
    ("docs/performance.md", "*", "relay-bench's own speed: profilers' and benches' output, rounded in prose"),
    ("docs/fleet.md", "How far the virtual clock carries a fleet", "relay-bench's own speed and memory, rounded"),
    ("docs/virtual-time.md", "Speed", "relay-bench's own speed: runs' wall times beside a criterion bench's"),
    ("docs/reports.md", "compare", "compare's own constants (resamples, thresholds, caps) beside a run it cites"),
];

/// The pages held to their runs: every page under docs/.
fn pages() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    out.sort();
    out
}

fn exempt(page: &str, title: &str) -> bool {
    EXEMPT.iter().any(|(p, t, _)| *p == page && (*t == "*" || *t == title))
}

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

/// Splits a page into its `## ` and `### ` sections (the text before the first is one too).
fn sections(page: &str) -> Vec<(String, String)> {
    let mut out = vec![(String::from("(top)"), String::new())];
    for line in page.lines() {
        if let Some(title) = line.strip_prefix("## ").or_else(|| line.strip_prefix("### ")) {
            out.push((title.to_owned(), String::new()));
        }
        let last = out.last_mut().expect("one section at least");
        last.1.push_str(line);
        last.1.push('\n');
    }
    out
}

/// Every number of a JSON value, as it is and rounded to 0 to 3 decimals.
fn json_numbers(v: &serde_json::Value, out: &mut HashSet<String>) {
    match v {
        serde_json::Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.insert(format!("{x}"));
                for k in 0..4 {
                    let p = 10f64.powi(k);
                    out.insert(format!("{}", (x * p).round() / p));
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| json_numbers(x, out)),
        serde_json::Value::Object(o) => {
            o.iter().filter(|(k, _)| *k != "timeline").for_each(|(_, x)| json_numbers(x, out))
        }
        _ => {}
    }
}

/// The numbers of a run's own files: its pages (summary.md, SETUP.md, a conform run's
/// conform.md, a bench's table) and its JSON, and those of the runs it holds (a conform run
/// grades several programs).
fn run_numbers(name: &str, with_json: bool) -> Option<HashSet<String>> {
    let top = root().join("reports/runs").join(name);
    let mut dirs = vec![top.clone()];
    dirs.extend(std::fs::read_dir(&top).ok()?.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    let mut all = HashSet::new();
    let mut found = false;
    for dir in dirs {
        for f in std::fs::read_dir(&dir).ok()?.flatten().map(|e| e.path()) {
            let ext = f.extension().and_then(|e| e.to_str()).unwrap_or_default();
            let Ok(text) = std::fs::read_to_string(&f) else { continue };
            match ext {
                "md" => all.extend(numbers(&text).into_iter().map(|(_, c)| c)),
                "json" if with_json => match serde_json::from_str(&text) {
                    Ok(v) => json_numbers(&v, &mut all),
                    Err(_) => continue,
                },
                _ => continue,
            }
            found = true;
        }
    }
    found.then_some(all)
}

#[test]
fn every_figure_of_a_page_is_in_the_run_it_cites() {
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(root().join(&page)).unwrap();
        for (title, body) in sections(&text) {
            if exempt(&page, &title) {
                continue;
            }
            let runs = cited_runs(&body);
            let mut known = HashSet::new();
            for r in &runs {
                match run_numbers(r, !STRICT.contains(&page.as_str())) {
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
