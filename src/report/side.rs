//! The outputs of a command whose result is one typed report (`conform`, `daemon-capacity`):
//! the report as JSON, its document as Markdown and as a page, and its console table. One
//! [`Output`] implementation serves both commands; the format is an enum ([`Format`]) and
//! what differs between the commands — their file names, when they write, how each format
//! renders — is the report's ([`SideReport`]).

use std::path::Path;

use super::doc::Doc;
use super::output::{Dest, Moment, Output, Staged, WriteError};
use super::publish::{publish_outputs, FlagPaths, OutputError, Published};

/// A command's report as its outputs read it.
pub(crate) trait SideReport: serde::Serialize + Sync {
    /// Its files: the JSON, the Markdown and the page, in that order (`conform.json`, ...).
    const FILES: [&'static str; 3];
    /// The console table's name and where it shows (what `list` and errors say of it).
    const CONSOLE: (&'static str, &'static str);
    /// Whether it is written at `moment`.
    fn written_at(moment: Moment) -> bool;
    /// The typed report as JSON (pretty, ending in a newline), its schema the report's own.
    fn json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self).map(|s| s + "\n")
    }
    /// The report as a document: its Markdown and its page are both written from it.
    fn document(&self) -> Doc;
    fn table(&self) -> String;
}

/// Writes every output of `report` due at `moment` into `dir` ([`SideReport::written_at`]);
/// the console table is returned, not printed.
pub(crate) fn publish<R: SideReport>(moment: Moment, report: &R, dir: &Path) -> Result<Published, OutputError> {
    publish_outputs(&FORMATS, moment, report, dir, &FlagPaths::default(), None)
}

/// One format of a command's report (`conform`, `daemon-capacity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The typed report (`conform.json`).
    Json,
    /// Its document as Markdown (`conform.md`).
    Markdown,
    /// Its document on one self-contained page (`conform.html`).
    Html,
    /// Its table on the console.
    Console,
}

/// Every format, in the order written: the outputs of `conform` and of `daemon-capacity`.
pub const FORMATS: [Format; 4] = [Format::Json, Format::Markdown, Format::Html, Format::Console];

impl<R: SideReport> Output<R> for Format {
    fn name(&self) -> &'static str {
        match self {
            Format::Json => R::FILES[0],
            Format::Markdown => R::FILES[1],
            Format::Html => R::FILES[2],
            Format::Console => R::CONSOLE.0,
        }
    }

    fn path(&self) -> &'static str {
        match self {
            Format::Console => R::CONSOLE.1,
            _ => <Format as Output<R>>::name(self),
        }
    }

    fn dest(&self) -> Dest {
        match self {
            Format::Console => Dest::Console,
            Format::Json | Format::Markdown | Format::Html => Dest::RunDir,
        }
    }

    fn written_at(&self, moment: Moment) -> bool {
        R::written_at(moment)
    }

    fn write(&self, report: &R, out: &mut Staged) -> Result<(), WriteError> {
        let name = <Format as Output<R>>::name(self);
        match self {
            Format::Json => out.put(name, report.json()?.as_bytes()),
            Format::Markdown => out.put(name, super::doc::document(&report.document()).as_bytes()),
            Format::Html => out.put(name, super::html::document_page(&report.document()).as_bytes()),
            Format::Console => {
                out.console(report.table().as_bytes());
                Ok(())
            }
        }
    }
}
