//! What an output is ([`Output`]): its name, where it lands, when it is written and whether a
//! failure to write it ends the command; and how it writes ([`Staged`]): every file under a
//! temp name in its final directory, renamed onto its final name once the output has rendered
//! whole, so a reader never sees half a report. One trait for every command's outputs, generic
//! over what they render from: a run's summaries ([`Input`]), a conform report, a capacity
//! report. It has two implementations, each an enum: a run's outputs
//! ([`crate::report::publish::RunOutput`]) and the formats `conform` and `daemon-capacity`
//! share ([`crate::report::side::Format`]); one loop publishes them all
//! ([`crate::report::publish::publish_outputs`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::base::signal::Signal;
use crate::results::summary::Summary;

/// When outputs are written. A run publishes at each of them; `conform` publishes at
/// [`Moment::End`]; `daemon-capacity` after each step ([`Moment::Case`]) and at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Before a scenario's first case, and when it is cut short between two cases: a
    /// killed run still leaves its report.
    Progress,
    /// A case has finished: it is the last result, its histograms still in memory (for
    /// `daemon-capacity`: a step of the ramp has).
    Case,
    /// A scenario (a battery, a ramp) has finished.
    End,
    /// `relay-bench report DIR`: drawn again from the run directory's own files.
    Rerender,
}

/// Where an output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// Files under the run directory.
    RunDir,
    /// The console (the caller prints it).
    Console,
    /// The file a command-line flag names; written only when the flag is given.
    Flag(&'static str),
}

/// What a run's outputs render from.
pub struct Input<'a> {
    /// The scenarios of this run so far, in order; the last is the one being written.
    pub summaries: &'a [Summary],
    /// The run directory of the last one.
    pub dir: &'a Path,
}

impl Input<'_> {
    /// The scenario being written.
    pub fn summary(&self) -> &Summary {
        self.summaries.last().expect("an output is written for a scenario")
    }
}

/// One output of a command whose outputs render from `R`: a variant of the command's enum of
/// outputs, each fact below a `match` of it.
pub trait Output<R: ?Sized>: Sync {
    /// The output's name (what `list` prints).
    fn name(&self) -> &'static str;
    /// Where it lands, as a person reads it (`summary.json`, `charts/<chart>.png|.svg`): its
    /// name unless it says otherwise.
    fn path(&self) -> &'static str {
        self.name()
    }
    /// Where it goes: the run directory, the console, or a file a flag names.
    fn dest(&self) -> Dest {
        Dest::RunDir
    }
    /// Whether it is written at `moment` (a command publishes at the moments it has).
    fn written_at(&self, moment: Moment) -> bool;
    /// Whether a failure to write it is the command's error; otherwise it is a warning while
    /// a scenario runs (its results are safe elsewhere). At a re-render every failure counts.
    fn essential(&self) -> bool {
        true
    }
    /// Whether its files at [`Moment::Case`] are the finished case's own (its histograms),
    /// not the whole run's: written after every case, where the run's whole report is
    /// rewritten at most every few seconds (a sweep of hundreds of points would rewrite it
    /// hundreds of times).
    fn per_case(&self) -> bool {
        false
    }
    /// Whether it only draws what the run directory's other files hold (charts, the page),
    /// so `relay-bench report DIR` can draw it later: an interrupted run leaves it out and
    /// ends at once rather than drawing.
    fn drawing(&self) -> bool {
        false
    }
    /// Renders into `out`; an `Err` says why it could not.
    fn write(&self, input: &R, out: &mut Staged) -> Result<(), WriteError>;
}

/// Why an output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A file could not be made, written or renamed into place (free space or permissions
    /// at `path`).
    #[error("{path}: {source}")]
    File { path: String, source: std::io::Error },
    /// The report would not serialize.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A renderer's own error: its inputs unreadable, a chart that would not draw.
    #[error(transparent)]
    Render(Box<dyn std::error::Error + Send + Sync>),
    /// A run directory's own file it draws from does not read back (damaged, or not one):
    /// the user's to fix, or to draw again with `relay-bench run`.
    #[error(transparent)]
    Damaged(Box<dyn std::error::Error + Send + Sync>),
    /// Stopped (Ctrl-C) before it was whole: nothing of it was renamed into place.
    #[error("interrupted before it was written whole (nothing of it was kept)")]
    Interrupted,
}

impl WriteError {
    /// A renderer's error, its type kept as the source.
    pub(crate) fn render(e: impl std::error::Error + Send + Sync + 'static) -> WriteError {
        WriteError::Render(Box::new(e))
    }

    fn file(path: &Path) -> impl FnOnce(std::io::Error) -> WriteError + '_ {
        move |source| WriteError::File { path: path.display().to_string(), source }
    }

    /// The file error underneath, if it is one (a renderer's error searched through its
    /// sources).
    pub(crate) fn io(&self) -> Option<&std::io::Error> {
        let mut at: Option<&(dyn std::error::Error + 'static)> = match self {
            WriteError::File { source, .. } => return Some(source),
            WriteError::Render(e) => Some(e.as_ref()),
            _ => None,
        };
        while let Some(e) = at {
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                return Some(io);
            }
            at = e.source();
        }
        None
    }
}

pub(crate) fn parent_of(p: &Path) -> PathBuf {
    p.parent().filter(|d| !d.as_os_str().is_empty()).map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// An output's files while it renders: each under a temp name beside its final one,
/// renamed into place once the output has rendered whole ([`Staged::commit`]).
pub struct Staged {
    base: PathBuf,
    /// A flag output's file name, replacing the name it renders under.
    rename: Option<OsString>,
    /// (temp, final).
    temps: Vec<(PathBuf, PathBuf)>,
    console: Vec<u8>,
    /// Closed: stop staging (`report` told to stop); what was staged is removed.
    stop: Option<std::sync::Arc<Signal>>,
}

impl Staged {
    /// An output's files under `base` (a flag output's under `rename`), staged until `stop`
    /// is closed.
    pub(crate) fn new(base: PathBuf, rename: Option<OsString>, stop: Option<std::sync::Arc<Signal>>) -> Staged {
        Staged { base, rename, temps: Vec::new(), console: Vec::new(), stop }
    }

    fn stopped(&self) -> Result<(), WriteError> {
        match &self.stop {
            Some(s) if s.is_closed() => Err(WriteError::Interrupted),
            _ => Ok(()),
        }
    }

    /// The console text rendered.
    pub(crate) fn take_console(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.console)
    }

    fn final_path(&self, rel: &Path) -> PathBuf {
        match &self.rename {
            Some(name) => self.base.join(name),
            None => self.base.join(rel),
        }
    }

    /// The directory `fin` goes in, made: the output's directory, then each folder of `rel`
    /// below it a real directory (made if missing, never a link followed: a `charts/` that
    /// links elsewhere is refused, not written through).
    fn folder(&self, rel: &Path) -> Result<PathBuf, WriteError> {
        self.stopped()?;
        if self.rename.is_some() {
            return Ok(self.base.clone());
        }
        let sub = rel.parent().unwrap_or(Path::new(""));
        if !self.base.as_os_str().is_empty() {
            std::fs::create_dir_all(&self.base).map_err(WriteError::file(&self.base))?;
        }
        // A refusal names the folder refused itself.
        crate::base::fsio::dirs_under(&self.base, sub).map_err(|e| {
            let at = if crate::base::fsio::is_refusal(&e) { self.base.clone() } else { self.base.join(sub) };
            WriteError::file(&at)(e)
        })
    }

    /// A temp path for the file `rel` (relative to the output's directory), its extension
    /// kept (a chart backend picks its format by it), its directory made; the caller writes
    /// it whole.
    pub(crate) fn draw(&mut self, rel: impl AsRef<Path>) -> Result<PathBuf, WriteError> {
        let fin = self.final_path(rel.as_ref());
        let dir = self.folder(rel.as_ref())?;
        let (tmp, file) = self.fresh(&fin, &dir)?;
        drop(file);
        Ok(tmp)
    }

    /// A new file under a fresh temp name for `fin` in `dir`, its extension kept, created
    /// exclusively (never through a link planted at the name: [`crate::base::fsio::create_new`]).
    fn fresh(&mut self, fin: &Path, dir: &Path) -> Result<(PathBuf, std::fs::File), WriteError> {
        let stem = fin.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let ext = fin.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
        // Listed in its run directory's marker before it is made: a kill leaves nothing unlisted.
        crate::base::runfiles::note(fin);
        // The extension goes after the temp marker: `summary.tmp.<hex>.json`.
        let (tmp, file) = crate::base::fsio::stage(|| {
            crate::base::fsio::fresh_temp(&dir.join(&stem), |stemmed| {
                let named = PathBuf::from(format!("{}{ext}", stemmed.display()));
                crate::base::fsio::create_new(&named).map(|f| (named, f))
            })
            .map(|(_, made)| made)
        })
        .map_err(WriteError::file(fin))?;
        self.temps.push((tmp.clone(), fin.to_path_buf()));
        Ok((tmp, file))
    }

    /// Stages `bytes` as the file `rel`.
    pub fn put(&mut self, rel: impl AsRef<Path>, bytes: &[u8]) -> Result<(), WriteError> {
        use std::io::Write;
        let fin = self.final_path(rel.as_ref());
        let dir = self.folder(rel.as_ref())?;
        let (tmp, mut file) = self.fresh(&fin, &dir)?;
        file.write_all(bytes).map_err(WriteError::file(&tmp))
    }

    /// Text for the console.
    pub fn console(&mut self, bytes: &[u8]) {
        self.console.extend_from_slice(bytes);
    }

    /// Renames every staged file onto its final name; returns the final names. A final name
    /// held by anything but a regular file (a link, a FIFO, a device, a directory) is refused,
    /// not replaced, and nothing of the output is renamed.
    pub(crate) fn commit(&mut self) -> Result<Vec<PathBuf>, WriteError> {
        self.stopped()?;
        for (_, fin) in &self.temps {
            crate::base::fsio::check_replaceable(fin).map_err(WriteError::file(fin))?;
        }
        let mut done = Vec::new();
        let mut temps = std::mem::take(&mut self.temps).into_iter();
        while let Some((tmp, fin)) = temps.next() {
            crate::base::fsio::staged_done(&tmp);
            if let Err(e) = std::fs::rename(&tmp, &fin) {
                let _ = std::fs::remove_file(&tmp);
                // The rest are abandoned (removed), not left behind.
                self.temps.extend(temps);
                return Err(WriteError::file(&fin)(e));
            }
            done.push(fin);
        }
        Ok(done)
    }

    /// Removes what was staged (an output that failed leaves nothing half-written).
    pub(crate) fn abandon(&mut self) {
        for (tmp, _) in self.temps.drain(..) {
            let _ = crate::base::fsio::remove_if_present(&tmp);
            crate::base::fsio::staged_done(&tmp);
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        self.abandon();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_output_leaves_no_temp_file_and_a_flag_output_lands_at_its_flag() {
        let t = tempfile::tempdir().unwrap();
        let mut out = Staged::new(t.path().into(), None, None);
        out.put("a/b.txt", b"x").unwrap();
        let tmp = out.temps[0].0.clone();
        assert!(tmp.is_file() && tmp.extension().is_some_and(|e| e == "txt"), "{tmp:?}");
        out.abandon();
        assert!(!tmp.exists() && !t.path().join("a/b.txt").exists());
        let mut out = Staged::new(t.path().into(), Some("gates.xml".into()), None);
        out.put("junit.xml", b"<x/>").unwrap();
        assert_eq!(out.commit().unwrap(), vec![t.path().join("gates.xml")]);
        assert_eq!(std::fs::read(t.path().join("gates.xml")).unwrap(), b"<x/>");
        let left: Vec<_> = std::fs::read_dir(t.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 2, "a/ and gates.xml, no temp: {left:?}");
    }
}
