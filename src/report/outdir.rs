//! The directory a run writes (`run --out DIR`, or a new one under `reports/`): taken by one
//! run at a time, holding one run, and holding only what relay-bench wrote there and the
//! user's own files, which it never touches.
//!
//! - **Refused** unless it is new, empty, or a run directory of relay-bench's: it holds the
//!   marker ([`MARKER`]) that lists the files relay-bench wrote there
//!   ([`crate::base::runfiles`]). A directory with a `summary.json` and no such marker is
//!   refused (its files cannot be told from the user's), as is one of other files; and
//!   never `/`. A marker that is a link, a FIFO or a device is refused, never written through.
//! - **Locked** for the whole run: an exclusive `flock` on [`MARKER`], which names the run
//!   holding it (pid, start, command). A second run into it, or `report` on it, is refused,
//!   naming that one.
//! - **Probed**: a file is written there and removed before the run, so a full disk is an
//!   error up front, not a report cut short; a refused directory is left as it was found.
//! - **Cleared** of the files the marker lists before the new run writes (and of their temp
//!   names, and of the folders that leaves empty): a file not listed — the user's notes, a
//!   picture in `charts/`, a folder holding a `summary.json` — stays as it is.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::base::fsio::{kind_name, read_bounded, Bound};
use crate::base::runfiles::{Holding, Manifest};
use crate::report::export::hdr::HLOG;
use crate::results::summary::MAX_SUMMARY_BYTES;

pub(crate) use crate::base::runfiles::MARKER;

/// What a probe writes where a run will write (the relay root, `--out`) before it starts.
pub(crate) const PROBE_BYTES: usize = 64 << 10;

/// Files of a run directory written outside the output registry (by the run's recorders).
pub(crate) const RUN_FILES: &[&str] = &["events.ndjson", "events.bin", "calls.csv"];

/// The largest marker read (a line per file a run wrote: a 900-point sweep's is ~1 MB).
const MAX_MARKER_BYTES: u64 = 64 << 20;

#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    #[error("--out {0}: refusing to write a run into the root directory; give a directory of its own")]
    Root(String),
    #[error("--out {0}: not a directory")]
    NotADir(String),
    #[error(
        "--out {dir}: not empty and not a relay-bench run directory (it holds {first:?} and {count} more); \
         give a new or empty directory, or one a previous run wrote"
    )]
    Foreign { dir: String, first: String, count: usize },
    #[error(
        "--out {dir}: it holds a summary.json but no relay-bench marker ({MARKER}) listing the files a run wrote \
         there, so relay-bench cannot tell them from yours and clears nothing: give a new or empty directory, or \
         move its files away first (`relay-bench report {dir}` still redraws it)"
    )]
    Unmarked { dir: String },
    #[error("{dir}: its marker {MARKER} is {what}, not a file relay-bench wrote; it is not opened, written through or replaced: remove it, or give another directory")]
    BadMarker { dir: String, what: &'static str },
    #[error("{dir}: another run writes there ({holder}); wait for it, or give another directory")]
    Busy { dir: String, holder: String },
    #[error("--out {dir}: {what}: {source}")]
    Io { dir: String, what: &'static str, source: io::Error },
}

/// A run directory taken by this process: the lock is held while this lives, and the files
/// made below it are listed in its marker.
#[derive(Debug)]
pub(crate) struct OutLock {
    dir: PathBuf,
    marker: File,
    holder: String,
    /// What the marker listed when it was taken (a previous run's files).
    previous: Vec<String>,
    /// `None`: an older relay-bench's marker, locked but not rewritten.
    holding: Option<Holding>,
}

impl OutLock {
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Opens the marker of `dir` to read and write (made when `create`), refusing anything but a
/// regular file there, and locks it; `None` when there is none and `create` is off.
fn open_marker(dir: &Path, create: bool) -> Result<Option<File>, OutDirError> {
    let path = dir.join(MARKER);
    let bad = |what| OutDirError::BadMarker { dir: dir.display().to_string(), what };
    let io = |what: &'static str| move |source| OutDirError::Io { dir: dir.display().to_string(), what, source };
    match std::fs::symlink_metadata(&path) {
        Ok(m) if !m.is_file() => return Err(bad(kind_name(m.file_type()))),
        Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
        _ => {}
    }
    let marker = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .custom_flags(crate::base::fsio::WRITE_FLAGS)
        .open(&path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                bad("a symbolic link")
            } else {
                io("cannot open its lock file")(e)
            }
        })?;
    let kind = marker.metadata().map_err(io("cannot open its lock file"))?.file_type();
    if !kind.is_file() {
        return Err(bad(kind_name(kind)));
    }
    // SAFETY: flock on a descriptor this function owns; the lock goes with the descriptor.
    if unsafe { libc::flock(marker.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let said = read_marker(&marker);
            let holder = Manifest::parse(&said).map_or_else(|| said.trim().to_owned(), |m| m.holder);
            return Err(OutDirError::Busy {
                dir: dir.display().to_string(),
                holder: if holder.is_empty() { "unknown".into() } else { holder },
            });
        }
        return Err(io("cannot lock it")(e));
    }
    Ok(Some(marker))
}

fn read_marker(mut marker: &File) -> String {
    let mut said = String::new();
    let _ = marker.rewind().and_then(|()| marker.take(MAX_MARKER_BYTES).read_to_string(&mut said));
    said
}

fn write_marker(mut marker: &File, m: &Manifest) -> io::Result<()> {
    marker.set_len(0)?;
    marker.rewind()?;
    marker.write_all(m.render().as_bytes())?;
    marker.sync_all()
}

/// Checks `dir` (made if missing), locks it for this run, and says who holds it in its
/// marker (`holder`: what this run is, for a second run's refusal).
pub(crate) fn take(dir: &Path, holder: &str) -> Result<OutLock, OutDirError> {
    let name = || dir.display().to_string();
    let io = |what: &'static str| move |source| OutDirError::Io { dir: name(), what, source };
    if dir.exists() && !dir.is_dir() {
        return Err(OutDirError::NotADir(name()));
    }
    let made = !dir.exists();
    std::fs::create_dir_all(dir).map_err(io("cannot create it"))?;
    if dir.canonicalize().map_err(io("cannot resolve it"))? == Path::new("/") {
        return Err(OutDirError::Root(name()));
    }
    let had_marker = std::fs::symlink_metadata(dir.join(MARKER)).is_ok();
    // A refusal after this point takes back what it made (a full disk leaves nothing).
    let undo = |e: OutDirError| {
        if !had_marker {
            let _ = std::fs::remove_file(dir.join(MARKER));
        }
        if made {
            let _ = std::fs::remove_dir(dir);
        }
        e
    };
    let marker = open_marker(dir, true).map_err(undo)?.expect("made when missing");
    let previous = Manifest::parse(&read_marker(&marker));
    if previous.is_none() {
        // No run of this relay-bench listed its files here: only an empty directory is taken.
        let mut others = std::fs::read_dir(dir)
            .map_err(io("cannot list it"))
            .map_err(undo)?
            .flatten()
            .filter(|e| e.file_name() != MARKER);
        if let Some(first) = others.next() {
            let e = if std::fs::symlink_metadata(dir.join("summary.json")).is_ok() {
                OutDirError::Unmarked { dir: name() }
            } else {
                OutDirError::Foreign {
                    dir: name(),
                    first: first.file_name().to_string_lossy().into_owned(),
                    count: others.count(),
                }
            };
            return Err(undo(e));
        }
    }
    let previous = previous.map(|m| m.files).unwrap_or_default();
    // The previous run's files stay listed until they are cleared.
    let manifest = Manifest { holder: holder.to_owned(), files: previous.clone() };
    write_marker(&marker, &manifest).map_err(io("cannot write its lock file")).map_err(undo)?;
    crate::base::fsio::probe_write(dir, PROBE_BYTES).map_err(io("cannot write in it")).map_err(undo)?;
    let holding = crate::base::runfiles::hold(dir, &marker, &previous).map_err(io("cannot hold its lock file"))?;
    Ok(OutLock { dir: dir.to_path_buf(), marker, holder: holder.to_owned(), previous, holding: Some(holding) })
}

/// A new run directory `parent/stem` (or `stem-2`, ...: [`create_unique_dir`]), taken.
pub(crate) fn take_new(parent: &Path, stem: &str, holder: &str) -> io::Result<OutLock> {
    let dir = create_unique_dir(parent, stem)?;
    take(&dir, holder).map_err(|e| match e {
        OutDirError::Io { source, .. } => source,
        e => io::Error::other(e.to_string()),
    })
}

/// Locks the run directory `relay-bench report` redraws, when a run marked it (its own
/// marker, or for one scenario of a run of several, the run's): `None` when none did. A run
/// writing there makes it [`OutDirError::Busy`]. The files it draws are listed as the run's.
pub(crate) fn lock_for_rerender(dir: &Path, holder: &str) -> Result<Option<OutLock>, OutDirError> {
    let mut at = (dir.to_path_buf(), None::<String>);
    if std::fs::symlink_metadata(dir.join(MARKER)).is_err() {
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name().and_then(|n| n.to_str())) else {
            return Ok(None);
        };
        let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
        if std::fs::symlink_metadata(parent.join(MARKER)).is_err() {
            return Ok(None);
        }
        at = (parent.to_path_buf(), Some(format!("{name}/summary.json")));
    }
    let (top, must_list) = at;
    let Some(marker) = open_marker(&top, false)? else { return Ok(None) };
    let Some(mut m) = Manifest::parse(&read_marker(&marker)) else {
        // An older relay-bench's marker: locked, left as it is.
        return Ok((must_list.is_none()).then(|| OutLock {
            dir: top,
            marker,
            holder: holder.into(),
            previous: Vec::new(),
            holding: None,
        }));
    };
    if must_list.is_some_and(|f| !m.files.contains(&f)) {
        return Ok(None);
    }
    m.holder = holder.to_owned();
    let io = |source| OutDirError::Io { dir: top.display().to_string(), what: "cannot write its lock file", source };
    write_marker(&marker, &m).map_err(io)?;
    let holding = crate::base::runfiles::hold(&top, &marker, &m.files).map_err(io)?;
    Ok(Some(OutLock { dir: top, marker, holder: holder.to_owned(), previous: m.files, holding: Some(holding) }))
}

/// What this process is, for a marker: `pid N since TIME: relay-bench run ARGS`.
pub(crate) fn this_run(started: &str) -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("pid {} since {started}: relay-bench {}", std::process::id(), args.join(" "))
}

/// Removes the previous run's files from the locked directory (those its marker lists, their
/// temp names, the folders that leaves empty), and lists none from now on; returns what was
/// removed.
pub(crate) fn clear(lock: &OutLock) -> Result<Vec<PathBuf>, OutDirError> {
    let fail = |what, source| OutDirError::Io { dir: lock.dir.display().to_string(), what, source };
    let removed = crate::base::runfiles::clear(&lock.dir, &lock.previous)
        .map_err(|e| fail("cannot remove the previous run's files", e))?;
    if let Some(holding) = &lock.holding {
        let m = Manifest { holder: lock.holder.clone(), files: Vec::new() };
        write_marker(&lock.marker, &m).map_err(|e| fail("cannot write its lock file", e))?;
        holding.relist(&[]);
    }
    Ok(removed)
}

/// Marks every summary.json this process wrote and still holds as interrupted (an abort, a
/// second Ctrl-C, exits without the report a first one writes: what is on disk must not
/// claim the run finished). Best effort: a summary that does not read back is left.
pub(crate) fn mark_interrupted() {
    for path in crate::base::runfiles::listed_named("summary.json") {
        let Some(dir) = path.parent() else { continue };
        let Ok(mut summary) = crate::results::summary::Summary::read(dir) else { continue };
        if summary.interrupted {
            continue;
        }
        summary.interrupted = true;
        summary.recompute_pass();
        if let Ok(bytes) = crate::report::export::json::render(&summary) {
            let _ = crate::base::fsio::publish_file(&path, &bytes);
        }
    }
}

/// Copies a run directory's summary.json and hdr/ tree to `to` (replacing it). Every file is
/// read as a run directory's files are ([`read_bounded`]: regular files, no link followed,
/// capped); a link or a FIFO planted under hdr/ is refused, not followed or waited on.
pub(crate) fn save_baseline(from: &Path, to: &Path) -> std::io::Result<()> {
    fn copy(from: &Path, to: &Path, bound: Bound) -> std::io::Result<()> {
        let bytes = read_bounded(from, bound).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        crate::base::fsio::publish_file(to, &bytes)
    }
    fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(to)?;
        for e in std::fs::read_dir(from)? {
            let e = e?;
            if e.file_type()?.is_dir() {
                copy_tree(&e.path(), &to.join(e.file_name()))?;
            } else {
                copy(&e.path(), &to.join(e.file_name()), HLOG)?;
            }
        }
        Ok(())
    }
    if to.exists() {
        std::fs::remove_dir_all(to)?;
    }
    std::fs::create_dir_all(to)?;
    let summary = Bound::new("a run's summary.json", MAX_SUMMARY_BYTES);
    copy(&from.join("summary.json"), &to.join("summary.json"), summary)?;
    if from.join("hdr").is_dir() {
        copy_tree(&from.join("hdr"), &to.join("hdr"))?;
    }
    Ok(())
}

/// How many suffixes [`create_unique_dir`] tries before it gives up.
const MAX_SUFFIX: u32 = 1000;

/// Creates a new directory `parent/stem`, or `parent/stem-2`, `-3`, ... when that name is
/// taken, and returns it. The last component is made with `create_dir`, which fails on a
/// name that exists, so two runs started in the same second get a directory each and never
/// share one (`parent` itself may exist).
pub(crate) fn create_unique_dir(parent: &Path, stem: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(parent)?;
    for n in 1..=MAX_SUFFIX {
        let dir = parent.join(if n == 1 { stem.to_owned() } else { format!("{stem}-{n}") });
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!("{}/{stem} and its suffixes -2 to -{MAX_SUFFIX} all exist", parent.display()),
    ))
}

/// Now in UTC: (`2026-11-29T18:30:00Z`, `20261129T183000Z`).
pub(crate) fn utc_stamps() -> (String, String) {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (h, mi, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    (format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"), format!("{y:04}{m:02}{d:02}T{h:02}{mi:02}{s:02}Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_dir_is_taken_once_and_a_foreign_or_root_dir_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("out");
        let first = take(&d, "pid 1 since then: relay-bench run a.toml").unwrap();
        let e = take(&d, "second").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: another run writes there (pid 1 since then: relay-bench run a.toml); wait for it, or give another directory",
                d.display()
            )
        );
        drop(first);
        take(&d, "third").unwrap();
        let foreign = t.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("thesis.tex"), "").unwrap();
        assert!(matches!(take(&foreign, "x"), Err(OutDirError::Foreign { count: 0, .. })));
        assert!(matches!(take(Path::new("/"), "x"), Err(OutDirError::Root(_))));
        assert!(matches!(take(&foreign.join("thesis.tex"), "x"), Err(OutDirError::NotADir(_))));
    }

    #[test]
    fn only_the_files_a_run_listed_are_cleared_and_an_unmarked_run_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("out");
        let lock = take(&d, "first").unwrap();
        for f in ["summary.json", "hdr/c/pickup.hlog", "charts/a.svg", "sub/summary.json"] {
            let p = d.join(f);
            crate::base::runfiles::note(&p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        drop(lock);
        // The user's own files, beside the run's and in its folders.
        for f in [
            "notes.txt",
            "charts/mine.png",
            "hdr/c/mine.txt",
            "photos/summary.json",
            "hdr/c/pickup.tmp.0123456789abcdef.hgrm",
        ] {
            let p = d.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let lock = take(&d, "second").unwrap();
        let mut removed: Vec<String> =
            clear(&lock).unwrap().iter().map(|p| p.strip_prefix(&d).unwrap().display().to_string()).collect();
        removed.sort();
        assert_eq!(removed, ["charts/a.svg", "hdr/c/pickup.hlog", "sub", "sub/summary.json", "summary.json"]);
        for kept in [
            "notes.txt",
            "charts/mine.png",
            "hdr/c/mine.txt",
            "photos/summary.json",
            "hdr/c/pickup.tmp.0123456789abcdef.hgrm",
        ] {
            assert!(d.join(kept).is_file(), "{kept} kept");
        }
        let marker = std::fs::read_to_string(d.join(MARKER)).unwrap();
        assert_eq!(Manifest::parse(&marker).unwrap(), Manifest { holder: "second".into(), files: vec![] });
        drop(lock);
        // A summary.json without the marker: refused, nothing touched.
        let unmarked = t.path().join("unmarked");
        std::fs::create_dir_all(unmarked.join("charts")).unwrap();
        std::fs::write(unmarked.join("summary.json"), "{}").unwrap();
        std::fs::write(unmarked.join("charts/mine.png"), "").unwrap();
        let e = take(&unmarked, "x").unwrap_err();
        assert!(matches!(e, OutDirError::Unmarked { .. }), "{e}");
        assert!(e.to_string().contains("no relay-bench marker (.relay-bench-run)"), "{e}");
        assert!(!unmarked.join(MARKER).exists() && unmarked.join("charts/mine.png").is_file());
        // A marker that is a link is not written through.
        let victim = t.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let linked = t.path().join("linked");
        std::fs::create_dir(&linked).unwrap();
        std::os::unix::fs::symlink(&victim, linked.join(MARKER)).unwrap();
        let e = take(&linked, "x").unwrap_err();
        assert!(matches!(e, OutDirError::BadMarker { what: "a symbolic link", .. }), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn run_directories_made_in_the_same_second_are_distinct() {
        let t = tempfile::tempdir().unwrap();
        let parent = t.path().join("reports");
        let (_, stamp) = utc_stamps();
        let stem = format!("{stamp}-default");
        let a = create_unique_dir(&parent, &stem).unwrap();
        let b = create_unique_dir(&parent, &stem).unwrap();
        assert_eq!(a, parent.join(&stem));
        assert_eq!(b, parent.join(format!("{stem}-2")));
        // At once from several threads: one directory each, none shared.
        let made: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| create_unique_dir(&parent, &stem).unwrap())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let distinct: std::collections::BTreeSet<_> = made.iter().chain([&a, &b]).collect();
        assert_eq!(distinct.len(), 10);
        assert!(made.iter().all(|d| d.is_dir()));
    }

    #[test]
    fn a_baseline_copies_regular_files_only() {
        let t = tempfile::tempdir().unwrap();
        let (from, to) = (t.path().join("run"), t.path().join("base"));
        std::fs::create_dir_all(from.join("hdr/c")).unwrap();
        std::fs::write(from.join("summary.json"), "{}").unwrap();
        std::fs::write(from.join("hdr/c/pickup.hlog"), "log").unwrap();
        save_baseline(&from, &to).unwrap();
        assert_eq!(std::fs::read(to.join("hdr/c/pickup.hlog")).unwrap(), b"log");
        std::fs::remove_file(from.join("hdr/c/pickup.hlog")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", from.join("hdr/c/pickup.hlog")).unwrap();
        let e = save_baseline(&from, &to).unwrap_err();
        assert!(e.to_string().contains("a symbolic link, not followed here"), "{e}");
    }

    #[test]
    fn stamps_look_right() {
        let (iso, compact) = utc_stamps();
        assert_eq!(iso.len(), 20);
        assert!(iso.starts_with("20") && iso.ends_with('Z'));
        assert_eq!(compact.len(), 16);
    }
}
