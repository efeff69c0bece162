//! What a `conform` run directory holds, in a registry of its own ([`CONFORM_OUTPUTS`]) of
//! the same [`Output`] trait as a run's, rendered from the conform report and published by
//! the same loop ([`publish_outputs`]) at the battery's end: `conform.json` (the typed
//! report, `reports/conform.schema.json`), `conform.md` (a row per case, then each case's
//! evidence), `conform.html` (the same on one self-contained page, no script) and the
//! console table. A new format is a type implementing `Output<ConformReport>` and a line in
//! [`CONFORM_OUTPUTS`].

use std::path::Path;

use super::output::{Dest, Moment, Output, Staged, WriteError};
use super::publish::{publish_outputs, FlagPaths, OutputError, Published};
use crate::results::conform::{ConformReport, Verdict};

/// Every output of a conform run, in the order they are written.
pub const CONFORM_OUTPUTS: &[&dyn Output<ConformReport>] =
    &[&ConformJson, &ConformMarkdown, &ConformHtml, &ConformTable];

/// Writes every output of `report` into `dir`; the console table is returned, not printed.
pub(crate) fn publish_conform(report: &ConformReport, dir: &Path) -> Result<Published, OutputError> {
    publish_outputs(CONFORM_OUTPUTS, Moment::End, report, dir, &FlagPaths::default())
}

/// A conform report is written once, when the battery ends (or is interrupted).
fn at_end(moment: Moment) -> bool {
    moment == Moment::End
}

pub(crate) struct ConformJson;
pub(crate) struct ConformMarkdown;
pub(crate) struct ConformTable;
pub(crate) struct ConformHtml;

impl Output<ConformReport> for ConformHtml {
    fn name(&self) -> &'static str {
        "conform.html"
    }
    fn path(&self) -> &'static str {
        "conform.html"
    }
    fn written_at(&self, moment: Moment) -> bool {
        at_end(moment)
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), WriteError> {
        out.put("conform.html", html(report).as_bytes())
    }
}

impl Output<ConformReport> for ConformJson {
    fn name(&self) -> &'static str {
        "conform.json"
    }
    fn path(&self) -> &'static str {
        "conform.json"
    }
    fn written_at(&self, moment: Moment) -> bool {
        at_end(moment)
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), WriteError> {
        out.put("conform.json", report.to_json()?.as_bytes())
    }
}

impl Output<ConformReport> for ConformMarkdown {
    fn name(&self) -> &'static str {
        "conform.md"
    }
    fn path(&self) -> &'static str {
        "conform.md"
    }
    fn written_at(&self, moment: Moment) -> bool {
        at_end(moment)
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), WriteError> {
        out.put("conform.md", markdown(report).as_bytes())
    }
}

impl Output<ConformReport> for ConformTable {
    fn name(&self) -> &'static str {
        "console"
    }
    fn path(&self) -> &'static str {
        "(stdout)"
    }
    fn dest(&self) -> Dest {
        Dest::Console
    }
    fn written_at(&self, moment: Moment) -> bool {
        at_end(moment)
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), WriteError> {
        out.console(table(report).as_bytes());
        Ok(())
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

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// conform.md, rendered from the report alone.
pub fn markdown(r: &ConformReport) -> String {
    let mut s = format!("# relay-bench conform --{}: {}\n\n", r.side.name(), verdict(r));
    s.push_str(&format!(
        "Command: `{}`  \nStarted {} UTC; each case bounded at {} ms in a fresh relay dir.\n\n",
        r.command.join(" "),
        r.started,
        r.case_bound_ms
    ));
    s.push_str(&setting(r).map(|l| format!("{l}\n\n")).unwrap_or_default());
    s.push_str("| case | § | verdict | why |\n|---|---|---|---|\n");
    for c in &r.cases {
        s.push_str(&format!(
            "| {} | {} | {} {} | {} |\n",
            c.name,
            c.section,
            icon(c.verdict),
            c.verdict.label(),
            cell(&c.reason)
        ));
    }
    s.push_str("\n## Cases\n");
    for c in &r.cases {
        s.push_str(&format!(
            "\n### {} — {}\n\nExpected (SPEC {}): {}\n\n",
            c.name,
            c.verdict.label(),
            c.section,
            c.expectation
        ));
        s.push_str(&format!("{} ({} ms)\n\n", c.reason, c.duration_ms));
        for e in &c.evidence {
            s.push_str(&format!("- {}\n", cell(e)));
        }
    }
    s
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
        s.push_str(&format!("{:<w$}  {:<13}  {:<7}  {}\n", c.name, c.verdict.label(), c.section, c.reason));
    }
    s.push_str(&verdict(r));
    s.push('\n');
    s
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn class(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "ok",
        Verdict::NonStrict => "ns",
        Verdict::Failed => "failed",
        Verdict::Informational => "info",
        Verdict::Inconclusive => "inc",
    }
}

/// conform.html: the verdict, a row per case (its link to the case's evidence below), then each
/// case. Self-contained: inline style, no script, nothing fetched.
pub fn html(r: &ConformReport) -> String {
    let title = format!("relay-bench conform --{}", r.side.name());
    let mut s = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\n<style>\n\
body{{font:15px/1.45 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}}\n\
table{{border-collapse:collapse;width:100%}}td,th{{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}}\n\
.v{{font-weight:600;white-space:nowrap}}.ok{{color:#1a7f37}}.ns{{color:#9a6700}}.failed{{color:#cf222e}}.info{{color:#0969da}}.inc{{color:#6e7781}}\n\
code{{font-size:90%}}li{{word-break:break-all}}section{{margin-top:1.5rem}}\n</style></head><body>\n",
        esc(&title)
    );
    s.push_str(&format!(
        "<h1>{}</h1>\n<p class=\"v {}\">{}</p>\n<p>Command: <code>{}</code><br>Started {} UTC; each case bounded at {} ms in a fresh relay dir.</p>\n",
        esc(&title),
        if r.failed() {
            "failed"
        } else if r.inconclusive() {
            "inc"
        } else {
            "ok"
        },
        esc(&verdict(r)),
        esc(&r.command.join(" ")),
        esc(&r.started),
        r.case_bound_ms
    ));
    if let Some(l) = setting(r) {
        s.push_str(&format!("<p>{}</p>\n", esc(&l)));
    }
    s.push_str("<table><tr><th>case</th><th>§</th><th>verdict</th><th>why</th></tr>\n");
    for c in &r.cases {
        s.push_str(&format!(
            "<tr><td><a href=\"#{n}\">{n}</a></td><td>{}</td><td class=\"v {}\">{}</td><td>{}</td></tr>\n",
            esc(&c.section),
            class(c.verdict),
            c.verdict.label(),
            esc(&c.reason),
            n = esc(&c.name)
        ));
    }
    s.push_str("</table>\n");
    for c in &r.cases {
        s.push_str(&format!(
            "<section id=\"{n}\"><h2>{n} — <span class=\"v {}\">{}</span></h2>\n<p>Expected (SPEC {}): {}</p>\n<p>{} ({} ms)</p>\n<ul>",
            class(c.verdict),
            c.verdict.label(),
            esc(&c.section),
            esc(&c.expectation),
            esc(&c.reason),
            c.duration_ms,
            n = esc(&c.name)
        ));
        for e in &c.evidence {
            s.push_str(&format!("<li>{}</li>", esc(e)));
        }
        s.push_str("</ul></section>\n");
    }
    s.push_str("</body></html>\n");
    s
}
