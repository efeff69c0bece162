//! What a `conform` run directory holds: the formats every side command writes
//! ([`FORMATS`](super::side::FORMATS)), rendered from the conform report and published by the same
//! loop as a run's outputs ([`super::side::publish`]) at the battery's end: `conform.json` (the
//! typed report, `reports/conform.schema.json`), `conform.md` (a row per case, then each case's
//! evidence), `conform.html` (the same document on one self-contained page) and the console table:
//! the formats of [`super::side`], which `daemon-capacity` shares.

use super::doc::{inline, plain, Block, Doc, Section, Table};
use super::output::Moment;
use super::side::SideReport;
use crate::results::conform::{ConformReport, Verdict};

impl SideReport for ConformReport {
    const FILES: [&'static str; 3] = ["conform.json", "conform.md", "conform.html"];
    const CONSOLE: (&'static str, &'static str) = ("console", "(stdout)");

    /// A conform report is written once, when the battery ends (or is interrupted).
    fn written_at(moment: Moment) -> bool {
        moment == Moment::End
    }

    /// The conform report as a document, for conform.md and conform.html alike: the verdict
    /// line and how the battery ran, a row per case, then each case's expectation, outcome and
    /// evidence.
    fn document(&self) -> Doc {
        let mut lead = vec![
            Block::Para(plain(verdict(self))),
            Block::Para(inline(format!(
                "Command: `{}`. Started {} UTC; each case bounded at {} ms in a fresh relay dir.",
                self.command.join(" "),
                self.started,
                self.case_bound_ms
            ))),
        ];
        lead.extend(setting(self).map(|l| Block::Para(plain(l))));
        let rows = self.cases.iter().map(|c| {
            vec![
                c.name.clone(),
                c.section.clone(),
                format!("{} {}", icon(c.verdict), c.verdict.name()),
                c.reason.clone(),
            ]
        });
        let table = Table::new("case|§|verdict|why", rows);
        let cases = self.cases.iter().flat_map(|c| {
            [
                Block::Heading(format!("{} — {}", c.name, c.verdict.name())),
                Block::Para(inline(format!("Expected (SPEC {}): {}", c.section, c.expectation))),
                Block::Para(inline(format!("{} ({} ms)", c.reason, c.duration_ms))),
                Block::List(c.evidence.iter().map(|e| plain(e.clone())).collect()),
            ]
        });
        Doc {
            title: format!("relay-bench conform --{}", self.side.name()),
            outcome: outcome(self),
            verdict: None,
            lead,
            sections: vec![
                Section::new("results", "Results", vec![Block::Table(table)]),
                Section::new("cases", "Cases", cases.collect()),
            ],
        }
    }

    /// The console table: a row per case, then the verdict line.
    fn table(&self) -> String {
        let w = self.cases.iter().map(|c| c.name.len()).max().unwrap_or(4).max(4);
        let mut s = format!("{:<w$}  {:<13}  {:<7}  why\n", "case", "verdict", "§");
        for c in &self.cases {
            s.push_str(&format!("{:<w$}  {:<13}  {:<7}  {}\n", c.name, c.verdict.name(), c.section, c.reason));
        }
        s.push_str(&verdict(self));
        s.push('\n');
        s
    }
}

/// What the battery came to, and whether it passed: FAILED when any case failed.
fn outcome(r: &ConformReport) -> (&'static str, bool) {
    if r.failed() {
        ("FAILED", false)
    } else if r.inconclusive() {
        ("INCONCLUSIVE", false)
    } else {
        ("PASSED", true)
    }
}

/// The battery's verdict line: FAILED when any case failed.
pub(crate) fn verdict(r: &ConformReport) -> String {
    let c = &r.counts;
    format!(
        "{}: {} OK, {} NON-STRICT, {} FAILED, {} INFORMATIONAL{}{}",
        outcome(r).0,
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

/// conform.md, rendered from the report alone.
pub fn markdown(r: &ConformReport) -> String {
    super::doc::document(&r.document())
}

/// conform.html: the same document on one self-contained page.
pub fn html(r: &ConformReport) -> String {
    super::html::document_page(&r.document())
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
