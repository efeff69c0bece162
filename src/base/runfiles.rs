//! A run directory's own files. Its marker ([`MARKER`]) is the lock of the run writing there
//! and the list of every file relay-bench wrote there (a [`Manifest`]), each listed as it is
//! made ([`note`]), so that a later run into the directory removes those files and nothing
//! else ([`clear`]): a file of the user's beside them, in `charts/` or `hdr/` included, is
//! never touched. Removal reaches a listed file through real directories only: a link planted
//! on the way, or at the name, is left where it is and nothing is removed through it.
//!
//! A marker lists paths relative to its directory, one `file: PATH` line each, appended as
//! files are made. A line a crash cut short (no newline) is not read.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::base::protocol::TMP_MARKER;

/// The file that marks a run directory, holds its lock and lists its files.
pub(crate) const MARKER: &str = ".relay-bench-run";

/// A marker's first line: what the file is.
const HEADER: &str = "# relay-bench run directory: the lock of the run writing here and every file relay-bench \
                      wrote here (a later run into it removes these files, and nothing else)";
const HOLDER: &str = "holder: ";
const FILE: &str = "file: ";

/// What a marker says: who holds the directory (or last did) and the files relay-bench wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Manifest {
    pub holder: String,
    pub files: Vec<String>,
}

impl Manifest {
    /// The manifest `text` holds; `None` when it is no marker of this form (empty, an older
    /// relay-bench's, or nobody's).
    pub(crate) fn parse(text: &str) -> Option<Manifest> {
        let mut lines = text.split_inclusive('\n');
        if lines.next()?.trim_end() != HEADER {
            return None;
        }
        let mut m = Manifest::default();
        let mut seen = HashSet::new();
        for line in lines {
            // A line a crash cut short is not read: it may name a prefix of another file.
            let Some(line) = line.strip_suffix('\n') else { break };
            if let Some(h) = line.strip_prefix(HOLDER) {
                m.holder = h.to_owned();
            } else if let Some(f) = line.strip_prefix(FILE) {
                if plain(f) && seen.insert(f) {
                    m.files.push(f.to_owned());
                }
            }
        }
        Some(m)
    }

    /// The marker's text.
    pub(crate) fn render(&self) -> String {
        let mut s = format!("{HEADER}\n{HOLDER}{}\n", self.holder.replace('\n', " "));
        for f in &self.files {
            s += &format!("{FILE}{f}\n");
        }
        s
    }
}

/// Whether `rel` is a plain relative path below a directory (its own components only: no
/// `..`, no root), and not the marker itself.
fn plain(rel: &str) -> bool {
    !rel.is_empty()
        && rel != MARKER
        && !rel.contains('\n')
        && Path::new(rel).components().all(|c| matches!(c, Component::Normal(_)))
}

/// A run directory this process holds: files made under it are listed in its marker.
struct Held {
    dir: PathBuf,
    canonical: Option<PathBuf>,
    marker: File,
    listed: HashSet<String>,
}

impl Held {
    /// `path` relative to this directory, if it lies below it.
    fn relative(&self, path: &Path) -> Option<String> {
        let rel = match path.strip_prefix(&self.dir) {
            Ok(rel) => rel.to_path_buf(),
            Err(_) => {
                let canonical = self.canonical.as_ref()?;
                let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                let full = std::fs::canonicalize(parent).ok()?.join(path.file_name()?);
                full.strip_prefix(canonical).ok()?.to_path_buf()
            }
        };
        let rel = rel.to_str()?.to_owned();
        plain(&rel).then_some(rel)
    }
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

/// A run directory held by this process ([`hold`]): released when dropped.
#[derive(Debug)]
pub(crate) struct Holding(PathBuf);

/// Lists every file made below `dir` from now on in its marker `marker` (open, locked by
/// the caller), `listed` being what it lists already.
pub(crate) fn hold(dir: &Path, marker: &File, listed: &[String]) -> io::Result<Holding> {
    let held = Held {
        dir: dir.to_path_buf(),
        canonical: std::fs::canonicalize(dir).ok(),
        marker: marker.try_clone()?,
        listed: listed.iter().cloned().collect(),
    };
    HELD.lock().unwrap_or_else(PoisonError::into_inner).push(held);
    Ok(Holding(dir.to_path_buf()))
}

impl Holding {
    /// The marker lists `files` now (rewritten by the caller): what is noted from here on is
    /// listed again.
    pub(crate) fn relist(&self, files: &[String]) {
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(h) = held.iter_mut().find(|h| h.dir == self.0) {
            h.listed = files.iter().cloned().collect();
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = held.iter().position(|h| h.dir == self.0) {
            held.swap_remove(i);
        }
    }
}

/// Lists `path` in the marker of the run directory it lies in, when this process holds one
/// (a file made anywhere else is no run's). Called before the file is made: a run killed
/// while it writes leaves its temp file listed too.
pub(crate) fn note(path: &Path) {
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    // The deepest directory holding it (a run directory's scenario folders are its own).
    let Some((h, rel)) = held
        .iter_mut()
        .filter_map(|h| h.relative(path).map(|rel| (h, rel)))
        .max_by_key(|(h, _)| h.dir.components().count())
    else {
        return;
    };
    if h.listed.insert(rel.clone()) {
        // One write of one line, at the end: the lock keeps every other writer out.
        let mut m = &h.marker;
        let _ = m.seek(io::SeekFrom::End(0)).and_then(|_| m.write_all(format!("{FILE}{rel}\n").as_bytes()));
    }
}

/// Every file named `name` listed in the run directories this process holds (their paths).
pub(crate) fn listed_named(name: &str) -> Vec<PathBuf> {
    let held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    let named = |f: &&String| Path::new(f.as_str()).file_name().is_some_and(|n| n == name);
    held.iter().flat_map(|h| h.listed.iter().filter(named).map(|f| h.dir.join(f))).collect()
}

/// Whether `name` is a temp name of `final_name`: `<final>.tmp.<16 hex>` (a publication's)
/// or `<stem>.tmp.<16 hex>.<ext>` (a staged output's, its extension kept).
pub(crate) fn is_temp_of(name: &str, final_name: &str) -> bool {
    let hex = |s: &str| s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if name.strip_prefix(final_name).and_then(|r| r.strip_prefix(TMP_MARKER)).is_some_and(hex) {
        return true;
    }
    let f = Path::new(final_name);
    let (Some(stem), Some(ext)) = (f.file_stem().and_then(|s| s.to_str()), f.extension().and_then(|e| e.to_str()))
    else {
        return false;
    };
    name.strip_prefix(stem)
        .and_then(|r| r.strip_prefix(TMP_MARKER))
        .and_then(|r| r.strip_suffix(ext))
        .and_then(|r| r.strip_suffix('.'))
        .is_some_and(hex)
}

/// Whether every component of `rel` below `dir` is a real directory (no link on the way).
fn real_dirs(dir: &Path, rel: &Path) -> bool {
    let mut at = dir.to_path_buf();
    rel.components().all(|c| {
        at.push(c);
        std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
    })
}

/// `paths` by the folder they are in: each folder's file names.
fn by_folder<'a>(paths: impl IntoIterator<Item = &'a Path>) -> BTreeMap<PathBuf, HashSet<String>> {
    let mut by = BTreeMap::<PathBuf, HashSet<String>>::new();
    for p in paths {
        if let (Some(parent), Some(name)) = (p.parent(), p.file_name().and_then(|n| n.to_str())) {
            by.entry(parent.to_path_buf()).or_default().insert(name.to_owned());
        }
    }
    by
}

/// Removes, in each folder of `by` below `dir`, the regular files it names (`finals`) and
/// their temp names; returns what was removed.
fn sweep(dir: &Path, by: &BTreeMap<PathBuf, HashSet<String>>, finals: bool) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for (folder, names) in by {
        if !real_dirs(dir, folder) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(dir.join(folder)) else { continue };
        for e in entries.flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_owned) else { continue };
            let ours = (finals && names.contains(&name)) || names.iter().any(|f| is_temp_of(&name, f));
            // The entry's own type (a link is not followed): only a regular file is removed.
            if !ours || !e.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            match std::fs::remove_file(e.path()) {
                Ok(()) => removed.push(e.path()),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(removed)
}

/// Removes the files `files` lists below `dir` (a previous run's, from its marker), their
/// temp names, and the folders that leaves empty; returns what was removed. A listed name
/// that is no longer a regular file, or is reached through a link, is left as it is.
pub(crate) fn clear(dir: &Path, files: &[String]) -> io::Result<Vec<PathBuf>> {
    // The listed files under `dir`, by the folder they are in (relative to `dir`).
    let by = by_folder(files.iter().filter(|f| plain(f)).map(Path::new));
    let mut removed = sweep(dir, &by, true)?;
    // Deepest first: a folder emptied, then its parent (never `dir` itself).
    let mut folders: Vec<&Path> = by.keys().flat_map(|f| f.ancestors()).filter(|f| !f.as_os_str().is_empty()).collect();
    folders.sort_by_key(|f| std::cmp::Reverse(f.components().count()));
    folders.dedup();
    for f in folders {
        if real_dirs(dir, f) && std::fs::remove_dir(dir.join(f)).is_ok() {
            removed.push(dir.join(f));
        }
    }
    Ok(removed)
}

/// Removes the temp names of `written` (files just written) left beside them by a process
/// killed while it wrote them.
pub(crate) fn remove_stale_temps(written: &[PathBuf]) -> io::Result<Vec<PathBuf>> {
    // Each folder is reached as the writer reached it (absolute, or from here).
    let mut removed = Vec::new();
    for (folder, names) in by_folder(written.iter().map(PathBuf::as_path)) {
        let one = BTreeMap::from([(PathBuf::new(), names)]);
        removed.extend(sweep(&folder, &one, false)?);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_back_and_a_cut_or_unsafe_line_is_not_read() {
        let m = Manifest { holder: "pid 1".into(), files: vec!["summary.json".into(), "hdr/c/pickup.hlog".into()] };
        assert_eq!(Manifest::parse(&m.render()), Some(m.clone()));
        let text = format!("{}{FILE}../../etc/passwd\n{FILE}/etc/passwd\n{FILE}{MARKER}\n{FILE}summary.m", m.render());
        assert_eq!(Manifest::parse(&text), Some(m));
        assert_eq!(Manifest::parse("pid 1 since then: relay-bench run\n"), None, "an older marker");
        assert_eq!(Manifest::parse(""), None);
    }

    #[test]
    fn temp_names_are_known_by_both_forms() {
        assert!(is_temp_of("summary.tmp.0123456789abcdef.json", "summary.json"));
        assert!(is_temp_of("events.ndjson.tmp.0123456789abcdef", "events.ndjson"));
        assert!(is_temp_of("pickup.tmp.0123456789ABCDEF.hgrm", "pickup.hgrm"));
        assert!(!is_temp_of("summary.tmp.mine.json", "summary.json"));
        assert!(!is_temp_of("notes.tmp.0123456789abcdef.json", "summary.json"));
    }

    #[test]
    fn clearing_removes_the_files_listed_and_nothing_through_a_link() {
        let t = tempfile::tempdir().unwrap();
        let (d, outside) = (t.path().join("run"), t.path().join("outside"));
        std::fs::create_dir_all(d.join("hdr/c")).unwrap();
        std::fs::create_dir_all(d.join("charts")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        for f in ["summary.json", "hdr/c/pickup.hlog", "hdr/c/pickup.tmp.0123456789abcdef.hgrm", "charts/mine.png"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        std::fs::write(outside.join("x.svg"), "precious").unwrap();
        std::os::unix::fs::symlink(&outside, d.join("linked")).unwrap();
        let listed: Vec<String> = [
            "summary.json",
            "hdr/c/pickup.hlog",
            "hdr/c/pickup.hgrm",
            "charts/a.svg",
            "linked/x.svg",
            "../outside/x.svg",
        ]
        .map(String::from)
        .to_vec();
        let mut removed = clear(&d, &listed).unwrap();
        removed.sort();
        let rel: Vec<_> = removed.iter().map(|p| p.strip_prefix(&d).unwrap().display().to_string()).collect();
        assert_eq!(
            rel,
            ["hdr", "hdr/c", "hdr/c/pickup.hlog", "hdr/c/pickup.tmp.0123456789abcdef.hgrm", "summary.json"]
        );
        assert!(d.join("charts/mine.png").is_file(), "a file not listed is kept, and its folder");
        assert_eq!(std::fs::read_to_string(outside.join("x.svg")).unwrap(), "precious");
    }
}
