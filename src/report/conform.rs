//! What a `conform` run directory holds, in a registry of its own ([`CONFORM_OUTPUTS`]),
//! published the way a run's outputs are ([`super::output::Staged`]): `conform.json` (the
//! typed report, `reports/conform.schema.json`), `conform.md` (a row per case, then each
//! case's evidence) and the console table. Its own registry because its input is a conform
//! report, not a run's summaries.

use std::path::Path;

use super::output::{Dest, Staged};
use super::publish::{OutputError, Published};
use crate::results::conform::{ConformReport, Verdict};

/// One output of a conform run.
pub trait ConformOutput: Sync {
    fn name(&self) -> &'static str;
    fn path(&self) -> &'static str;
    fn dest(&self) -> Dest {
        Dest::RunDir
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), String>;
}

/// Every output of a conform run, in the order they are written.
pub const CONFORM_OUTPUTS: &[&dyn ConformOutput] = &[&ConformJson, &ConformMarkdown, &ConformTable];

/// Writes every output of `report` into `dir`; the console table is returned, not printed.
pub fn publish_conform(report: &ConformReport, dir: &Path) -> Result<Published, OutputError> {
    let mut done = Published::default();
    for o in CONFORM_OUTPUTS {
        let base = match o.dest() {
            Dest::RunDir => dir.to_path_buf(),
            _ => std::path::PathBuf::new(),
        };
        let mut out = Staged::new(base, None);
        match o.write(report, &mut out).and_then(|()| out.commit()) {
            Ok(files) => {
                done.files.extend(files.into_iter().map(|f| (o.name(), f)));
                done.console.extend(out.take_console());
            }
            Err(why) => {
                out.abandon();
                return Err(OutputError { output: o.name(), path: dir.join(o.path()).display().to_string(), why });
            }
        }
    }
    Ok(done)
}

pub struct ConformJson;
pub struct ConformMarkdown;
pub struct ConformTable;

impl ConformOutput for ConformJson {
    fn name(&self) -> &'static str {
        "conform.json"
    }
    fn path(&self) -> &'static str {
        "conform.json"
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), String> {
        out.put("conform.json", report.to_json().map_err(|e| e.to_string())?.as_bytes())
    }
}

impl ConformOutput for ConformMarkdown {
    fn name(&self) -> &'static str {
        "conform.md"
    }
    fn path(&self) -> &'static str {
        "conform.md"
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), String> {
        out.put("conform.md", markdown(report).as_bytes())
    }
}

impl ConformOutput for ConformTable {
    fn name(&self) -> &'static str {
        "console"
    }
    fn path(&self) -> &'static str {
        "(stdout)"
    }
    fn dest(&self) -> Dest {
        Dest::Console
    }
    fn write(&self, report: &ConformReport, out: &mut Staged) -> Result<(), String> {
        out.console(table(report).as_bytes());
        Ok(())
    }
}

/// The battery's verdict line: FAILED when any case failed.
pub fn verdict(r: &ConformReport) -> String {
    let c = &r.counts;
    format!(
        "{}: {} OK, {} NON-STRICT, {} FAILED, {} INFORMATIONAL{}",
        if r.failed() { "FAILED" } else { "PASSED" },
        c.ok,
        c.non_strict,
        c.failed,
        c.informational,
        if r.interrupted { " (interrupted: the cases run so far)" } else { "" }
    )
}

fn icon(v: Verdict) -> &'static str {
    match v {
        Verdict::Ok => "✅",
        Verdict::NonStrict => "⚠️",
        Verdict::Failed => "❌",
        Verdict::Informational => "ℹ️",
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

/// The console table: a row per case, then the verdict line.
pub fn table(r: &ConformReport) -> String {
    let w = r.cases.iter().map(|c| c.name.len()).max().unwrap_or(4).max(4);
    let mut s = format!("{:<w$}  {:<13}  {:<7}  why\n", "case", "verdict", "§");
    for c in &r.cases {
        s.push_str(&format!("{:<w$}  {:<13}  {:<7}  {}\n", c.name, c.verdict.label(), c.section, c.reason));
    }
    s.push_str(&verdict(r));
    s.push('\n');
    s
}
