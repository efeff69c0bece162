//! What a `conform` run directory holds: the formats every side command writes
//! ([`FORMATS`]), rendered from the conform report and published by the same loop as a run's
//! outputs ([`publish_outputs`]) at the battery's end: `conform.json` (the typed
//! report, `reports/conform.schema.json`), `conform.md` (a row per case, then each case's
//! evidence), `conform.html` (the same document on one self-contained page) and the
//! console table: the formats of [`super::side`], which `daemon-capacity` shares.

use std::path::Path;

use super::doc::{inline, plain, Block, Doc, Section, Table};
use super::output::Moment;
use super::publish::{publish_outputs, FlagPaths, OutputError, Published};
use super::side::{SideReport, FORMATS};
use crate::results::conform::{ConformReport, Verdict};

/// Writes every output of `report` into `dir`; the console table is returned, not printed.
pub(crate) fn publish_conform(report: &ConformReport, dir: &Path) -> Result<Published, OutputError> {
    publish_outputs(&FORMATS, Moment::End, report, dir, &FlagPaths::default())
}

impl SideReport for ConformReport {
    const FILES: [&'static str; 3] = ["conform.json", "conform.md", "conform.html"];
    const CONSOLE: (&'static str, &'static str) = ("console", "(stdout)");

    /// A conform report is written once, when the battery ends (or is interrupted).
    fn written_at(moment: Moment) -> bool {
        moment == Moment::End
    }

    fn document(&self) -> Doc {
        document(self)
    }

    fn table(&self) -> String {
        table(self)
    }
}

/// The battery's verdict line: FAILED when any case failed.
pub(crate) fn verdict(r: &ConformReport) -> String {
    let c = &r.counts;
    format!(
        "{}: {} OK, {} NON-STRICT, {} FAILED, {} INFORMATIONAL{}{}",
        if r.failed() {
            "FAILED"
        } else if r.inconclusive() {
            "INCONCLUSIVE"
        } else {
            "PASSED"
        },
        c.ok,
        c.non_strict,
        c.failed,
        c.informational,
        if c.inconclusive > 0 { format!(", {} INCONCLUSIVE", c.inconclusive) } else { String::new() },
        if r.interrupted { " (interrupted: the cases run so far)" } else { "" }
    )
}

fn icon(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "✅",
        Verdict::NonStrict => "⚠️",
        Verdict::Failed => "❌",
        Verdict::Informational => "ℹ️",
        Verdict::Inconclusive => "❔",
    }
}

/// The conform report as a document, for conform.md and conform.html alike: the verdict
/// line and how the battery ran, a row per case, then each case's expectation, outcome and
/// evidence.
fn document(r: &ConformReport) -> Doc {
    let outcome = if r.failed() {
        ("FAILED", false)
    } else if r.inconclusive() {
        ("INCONCLUSIVE", false)
    } else {
        ("PASSED", true)
    };
    let mut lead = vec![
        Block::Para(plain(verdict(r))),
        Block::Para(inline(format!(
            "Command: `{}`. Started {} UTC; each case bounded at {} ms in a fresh relay dir.",
            r.command.join(" "),
            r.started,
            r.case_bound_ms
        ))),
    ];
    lead.extend(setting(r).map(|l| Block::Para(plain(l))));
    let rows = r.cases.iter().map(|c| {
        vec![c.name.clone(), c.section.clone(), format!("{} {}", icon(c.verdict), c.verdict.name()), c.reason.clone()]
    });
    let table = Table::new("case|§|verdict|why", rows);
    let cases = r.cases.iter().flat_map(|c| {
        [
            Block::Heading(format!("{} — {}", c.name, c.verdict.name())),
            Block::Para(inline(format!("Expected (SPEC {}): {}", c.section, c.expectation))),
            Block::Para(inline(format!("{} ({} ms)", c.reason, c.duration_ms))),
            Block::List(c.evidence.iter().map(|e| plain(e.clone())).collect()),
        ]
    });
    Doc {
        title: format!("relay-bench conform --{}", r.side.name()),
        outcome,
        verdict: None,
        lead,
        sections: vec![
            Section::new("results", "Results", vec![Block::Table(table)]),
            Section::new("cases", "Cases", cases.collect()),
        ],
    }
}

/// conform.md, rendered from the report alone.
pub fn markdown(r: &ConformReport) -> String {
    super::side::markdown(r)
}

/// conform.html: the same document on one self-contained page.
pub fn html(r: &ConformReport) -> String {
    super::side::html(r)
}

/// Where the relay dir was and the machine's pace, when the report says (one line).
fn setting(r: &ConformReport) -> Option<String> {
    let host = r.host.as_ref().map(|h| format!("Relay dir: {h}."));
    let pace = r.calibration.map(|c| {
        format!(
            "This machine: a trivial command {:.1} ms, a rename seen in {:.2} ms; every wait x{:.2}.",
            c.trivial_start_us as f64 / 1e3,
            c.rename_seen_us as f64 / 1e3,
            c.factor
        )
    });
    let parts: Vec<String> = host.into_iter().chain(pace).collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The console table: a row per case, then the verdict line.
pub(crate) fn table(r: &ConformReport) -> String {
    let w = r.cases.iter().map(|c| c.name.len()).max().unwrap_or(4).max(4);
    let mut s = format!("{:<w$}  {:<13}  {:<7}  why\n", "case", "verdict", "§");
    for c in &r.cases {
        s.push_str(&format!("{:<w$}  {:<13}  {:<7}  {}\n", c.name, c.verdict.name(), c.section, c.reason));
    }
    s.push_str(&verdict(r));
    s.push('\n');
    s
}
