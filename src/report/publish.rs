//! Every output of a run ([`RunOutput`], listed in write order in [`RunOutput::ALL`]), and
//! the one loop that publishes a command's outputs ([`publish_outputs`]), a run's or another
//! command's (`conform`'s and `daemon-capacity`'s formats are [`super::side::Format`]). `run`
//! publishes [`Moment::Progress`] before a scenario, [`Moment::Case`] after each of its cases
//! and [`Moment::End`] after it; `report DIR` publishes [`Moment::Rerender`]. A new output of
//! a run is a variant of [`RunOutput`] and its renderer's file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::output::{parent_of, Dest, Input, Moment, Output, Staged, WriteError};
use super::{chart, export, html};
use crate::base::fsio::environment_failure;
use crate::base::signal::Signal;

crate::base::named! {
    /// An output of a run, declared in the order written (charts and the page read the
    /// summary.json and interval logs written before them): [`RunOutput::ALL`] lists them so.
    /// A new one is a variant: the compiler then asks for its place in each `match` below (its
    /// name, where it lands, when, and how it writes).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum RunOutput {
        /// `summary.json`: the typed results every other output reads.
        Json,
        /// `summary.md`: the report a person reads, fit for a CI job summary.
        Markdown,
        /// `hdr/<case>/<measure>.hgrm|.hlog`: each case's histograms.
        Hdr,
        /// `charts/<chart>.png|.svg`.
        Charts,
        /// `report.html`: one self-contained page.
        Html,
        /// The console table.
        Table,
        /// `--junit FILE`: the gates as JUnit XML.
        JUnit,
    }
}

impl Output<Input<'_>> for RunOutput {
    fn name(&self) -> &'static str {
        match self {
            RunOutput::Json => "summary.json",
            RunOutput::Markdown => "summary.md",
            RunOutput::Hdr => "hdr",
            RunOutput::Charts => "charts",
            RunOutput::Html => "report.html",
            RunOutput::Table => "console table",
            RunOutput::JUnit => "junit.xml",
        }
    }

    fn path(&self) -> &'static str {
        match self {
            RunOutput::Hdr => "hdr/<case>/<measure>.hgrm|.hlog",
            RunOutput::Charts => "charts/<chart>.png|.svg",
            RunOutput::Table => "stdout",
            RunOutput::JUnit => "FILE of --junit",
            RunOutput::Json | RunOutput::Markdown | RunOutput::Html => self.name(),
        }
    }

    fn dest(&self) -> Dest {
        match self {
            RunOutput::Table => Dest::Console,
            RunOutput::JUnit => Dest::Flag("--junit"),
            RunOutput::Json | RunOutput::Markdown | RunOutput::Hdr | RunOutput::Charts | RunOutput::Html => {
                Dest::RunDir
            }
        }
    }

    fn written_at(&self, moment: Moment) -> bool {
        match self {
            // It is what a re-render reads.
            RunOutput::Json => moment != Moment::Rerender,
            RunOutput::Markdown => true,
            RunOutput::Hdr => matches!(moment, Moment::Case | Moment::Rerender),
            RunOutput::Charts => moment != Moment::Progress,
            RunOutput::Html => matches!(moment, Moment::End | Moment::Rerender),
            RunOutput::Table | RunOutput::JUnit => moment == Moment::End,
        }
    }

    /// The histograms and the drawings are not: a run's results are safe in summary.json
    /// without them.
    fn essential(&self) -> bool {
        match self {
            RunOutput::Hdr | RunOutput::Charts | RunOutput::Html => false,
            RunOutput::Json | RunOutput::Markdown | RunOutput::Table | RunOutput::JUnit => true,
        }
    }

    fn per_case(&self) -> bool {
        match self {
            RunOutput::Hdr => true,
            RunOutput::Json
            | RunOutput::Markdown
            | RunOutput::Charts
            | RunOutput::Html
            | RunOutput::Table
            | RunOutput::JUnit => false,
        }
    }

    fn drawing(&self) -> bool {
        match self {
            RunOutput::Charts | RunOutput::Html => true,
            RunOutput::Json | RunOutput::Markdown | RunOutput::Hdr | RunOutput::Table | RunOutput::JUnit => false,
        }
    }

    fn write(&self, input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
        match self {
            RunOutput::Json => export::json::write(input, out),
            RunOutput::Markdown => export::markdown::write(input, out),
            RunOutput::Hdr => export::hdr::write(input, out),
            RunOutput::Charts => chart::write(input, out),
            RunOutput::Html => html::write(input, out),
            RunOutput::Table => export::table::write(input, out),
            RunOutput::JUnit => export::junit::write(input, out),
        }
    }
}

/// The paths the command line gave for [`Dest::Flag`] outputs, by flag.
#[derive(Debug, Clone, Default)]
pub(crate) struct FlagPaths(pub Vec<(&'static str, PathBuf)>);

impl FlagPaths {
    fn get(&self, flag: &str) -> Option<&Path> {
        self.0.iter().find(|(f, _)| *f == flag).map(|(_, p)| p.as_path())
    }
}

/// An output that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {output} ({path}): {why}")]
pub struct OutputError {
    pub output: &'static str,
    pub path: String,
    pub why: WriteError,
}

impl OutputError {
    /// This machine's failure, when it is one (a full disk, a quota, a read-only or failing
    /// filesystem): why.
    pub(crate) fn environment(&self) -> Option<&'static str> {
        self.why.io().and_then(environment_failure)
    }

    /// The user's to fix: an entry at an output's name that relay-bench does not write over
    /// (a link, a FIFO), or a run directory's file that does not read back.
    pub(crate) fn refused(&self) -> bool {
        matches!(self.why, WriteError::Damaged(_)) || self.why.io().is_some_and(crate::base::fsio::is_refusal)
    }
}

/// What a publication wrote.
#[derive(Debug, Default)]
pub struct Published {
    /// Every file, by output name, in order.
    pub files: Vec<(&'static str, PathBuf)>,
    /// What console outputs rendered.
    pub console: Vec<u8>,
    /// Non-essential outputs that failed (said, not fatal).
    pub warnings: Vec<String>,
}

impl Published {
    /// How many files `output` wrote.
    pub fn count(&self, output: &str) -> usize {
        self.files.iter().filter(|(o, _)| *o == output).count()
    }
}

/// The finished case's own files ([`Output::per_case`]), and nothing of the whole run's: a
/// case's publication between two rewrites of the run's report.
pub(crate) fn publish_case_only(input: &Input<'_>) -> Result<Published, OutputError> {
    let outputs: Vec<_> = RunOutput::ALL.into_iter().filter(|o| o.per_case()).collect();
    publish_outputs(&outputs, Moment::Case, input, input.dir, &FlagPaths::default(), None)
}

/// Writes every output of a run due at `moment`, stopping (each output left out whole) once
/// `stop` is closed.
pub(crate) fn publish(
    moment: Moment,
    input: &Input<'_>,
    flags: &FlagPaths,
    stop: Option<Arc<Signal>>,
) -> Result<Published, OutputError> {
    let cut_short = moment != Moment::Rerender && input.summaries.iter().any(|s| s.interrupted);
    if !cut_short {
        return publish_outputs(&RunOutput::ALL, moment, input, input.dir, flags, stop);
    }
    // Interrupted: what the run measured is written now; the drawings wait for `report`.
    let outputs: Vec<_> = RunOutput::ALL.into_iter().filter(|o| !o.drawing()).collect();
    let mut done = publish_outputs(&outputs, moment, input, input.dir, flags, stop)?;
    if moment == Moment::End {
        let left: Vec<&str> = RunOutput::ALL.iter().filter(|o| o.drawing()).map(|o| o.path()).collect();
        done.warnings.push(format!(
            "interrupted: {} not drawn; `relay-bench report {}` draws them from the files written",
            left.join(" and "),
            input.dir.display()
        ));
    }
    Ok(done)
}

/// Writes every output of `outputs` due at `moment`, in order, from `input`: run-directory
/// outputs into `dir`, flag outputs where `flags` says (skipped without their flag), console
/// outputs into [`Published::console`]. Each output's files land together or not at all; a
/// failure of an essential output (of any, at a re-render) ends the publication, another's
/// is a warning. It stops once `stop` is closed. An output that fails for want of space or
/// of a working filesystem ends the publication, essential or not: what follows would fail
/// too, and a report missing its files is no report.
pub(crate) fn publish_outputs<R: ?Sized, O: Output<R>>(
    outputs: &[O],
    moment: Moment,
    input: &R,
    dir: &Path,
    flags: &FlagPaths,
    stop: Option<Arc<Signal>>,
) -> Result<Published, OutputError> {
    let mut done = Published::default();
    for o in outputs.iter().filter(|o| o.written_at(moment)) {
        let (base, rename) = match o.dest() {
            Dest::RunDir => (dir.to_path_buf(), None),
            Dest::Console => (PathBuf::new(), None),
            Dest::Flag(flag) => match flags.get(flag) {
                Some(p) => (parent_of(p), p.file_name().map(OsString::from)),
                None => continue,
            },
        };
        let mut out = Staged::new(base, rename, stop.clone());
        match o.write(input, &mut out).and_then(|()| out.commit()) {
            Ok(files) => {
                done.files.extend(files.into_iter().map(|f| (o.name(), f)));
                done.console.extend(out.take_console());
            }
            Err(why) => {
                out.abandon();
                let why = machine_failure(why, o.dest(), dir);
                let e = OutputError { output: o.name(), path: dir.join(o.path()).display().to_string(), why };
                let fatal = e.why.io().is_some_and(|io| environment_failure(io).is_some());
                if o.essential() || moment == Moment::Rerender || fatal || matches!(e.why, WriteError::Interrupted) {
                    return Err(e);
                }
                done.warnings.push(e.to_string());
            }
        }
    }
    Ok(done)
}

/// `why`, or this machine's failure underneath it: a renderer's error (a chart that would not
/// draw) may hide a full disk, so a run-directory output that failed for another reason than
/// a file's is checked with a probe write, and a disk that takes none is the cause said.
fn machine_failure(why: WriteError, dest: Dest, dir: &Path) -> WriteError {
    if dest != Dest::RunDir || why.io().is_some() || matches!(why, WriteError::Interrupted | WriteError::Damaged(_)) {
        return why;
    }
    match crate::base::fsio::probe_write(dir, 4096) {
        Err(source) if environment_failure(&source).is_some() => {
            WriteError::File { path: dir.display().to_string(), source }
        }
        _ => why,
    }
}

/// A registry as a person reads it: name, path, when, and where.
#[cfg(test)]
pub(crate) fn describe<R: ?Sized, O: Output<R>>(outputs: &[O]) -> Vec<String> {
    outputs
        .iter()
        .map(|o| {
            let moments = [
                (Moment::Progress, "while it runs"),
                (Moment::Case, "after each case"),
                (Moment::End, "at the end"),
                (Moment::Rerender, "by report"),
            ];
            let when: Vec<&str> = moments.into_iter().filter(|(m, _)| o.written_at(*m)).map(|(_, w)| w).collect();
            let dest = match o.dest() {
                Dest::RunDir => String::new(),
                Dest::Console => " (the console)".into(),
                Dest::Flag(f) => format!(" (with {f})"),
            };
            format!("{}: {}{dest}, {}", o.name(), o.path(), when.join(", "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_output_is_registered_once_and_written_at_some_moment() {
        let mut names: Vec<&str> = RunOutput::ALL.iter().map(|o| o.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), RunOutput::ALL.len());
        for o in RunOutput::ALL {
            assert!(
                [Moment::Progress, Moment::Case, Moment::End, Moment::Rerender].iter().any(|m| o.written_at(*m)),
                "{} is never written",
                o.name()
            );
        }
        let lines = describe(&RunOutput::ALL);
        assert!(lines.iter().any(|l| l.starts_with("summary.json: summary.json")), "{lines:?}");
    }
}
