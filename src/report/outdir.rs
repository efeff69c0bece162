//! The directory `run --out DIR` writes: taken by one run at a time, and holding one run.
//!
//! - **Refused** unless it is new, empty, or a previous relay-bench run (it holds
//!   [`MARKER`], or a `summary.json` from before the marker); and never `/`. A directory of
//!   other files is not written into.
//! - **Locked** for the whole run: an exclusive `flock` on [`MARKER`], which names the run
//!   holding it (pid, start, command). A second run into it is refused, naming that one.
//! - **Probed**: a file is written there and removed before the run, so a full disk is an
//!   error up front, not a report cut short; a refused directory is left as it was found.
//! - **Cleared** of the previous run's files before the new run writes: everything a run
//!   writes in a run directory ([`RUN_FILES`] and the registry's outputs), at the top and in
//!   each subdirectory that is a run directory (one per scenario of a run of several), and
//!   their temp names. Files that are not a run's are left as they are.

use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use crate::base::fsio::{read_bounded, Bound};
use crate::base::protocol::TMP_MARKER;
use crate::report::export::hdr::HLOG;
use crate::report::output::Dest;
use crate::report::publish::OUTPUTS;
use crate::results::summary::MAX_SUMMARY_BYTES;

/// The file that marks a run directory and holds its lock.
pub(crate) const MARKER: &str = ".relay-bench-run";

/// What a probe writes where a run will write (the relay root, `--out`) before it starts.
pub(crate) const PROBE_BYTES: usize = 64 << 10;

/// Files of a run directory written outside the output registry (by the run's recorders).
pub(crate) const RUN_FILES: &[&str] = &["events.ndjson", "events.bin", "calls.csv"];

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
    #[error("--out {dir}: another run writes there ({holder}); wait for it or give another --out")]
    Busy { dir: String, holder: String },
    #[error("--out {dir}: {what}: {source}")]
    Io { dir: String, what: &'static str, source: io::Error },
}

/// A run directory taken by this run: the lock is held while this lives.
#[derive(Debug)]
pub(crate) struct OutLock {
    dir: PathBuf,
    _marker: File,
}

impl OutLock {
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
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
    let had_marker = dir.join(MARKER).exists();
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
    if !dir.join(MARKER).is_file() && !dir.join("summary.json").is_file() {
        let mut entries = std::fs::read_dir(dir).map_err(io("cannot list it"))?.flatten();
        if let Some(first) = entries.next() {
            let first = first.file_name().to_string_lossy().into_owned();
            return Err(OutDirError::Foreign { dir: name(), first, count: entries.count() });
        }
    }
    let mut marker = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(MARKER))
        .map_err(io("cannot open its lock file"))?;
    // SAFETY: flock on a descriptor this function owns; the lock goes with the descriptor.
    if unsafe { libc::flock(marker.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            let mut said = String::new();
            let _ = (&marker).take(4096).read_to_string(&mut said);
            let holder = said.trim().to_owned();
            return Err(OutDirError::Busy {
                dir: name(),
                holder: if holder.is_empty() { "unknown".into() } else { holder },
            });
        }
        return Err(io("cannot lock it")(e));
    }
    marker
        .set_len(0)
        .and_then(|()| marker.rewind())
        .and_then(|()| writeln!(marker, "{holder}"))
        .and_then(|()| marker.sync_all())
        .map_err(io("cannot write its lock file"))
        .map_err(undo)?;
    crate::base::fsio::probe_write(dir, PROBE_BYTES).map_err(io("cannot write in it")).map_err(undo)?;
    Ok(OutLock { dir: dir.to_path_buf(), _marker: marker })
}

/// What this process is, for a marker: `pid N since TIME: relay-bench run ARGS`.
pub(crate) fn this_run(started: &str) -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("pid {} since {started}: relay-bench {}", std::process::id(), args.join(" "))
}

/// The names a run writes at the top of a run directory (files or folders).
fn run_names() -> Vec<String> {
    let registered = OUTPUTS
        .iter()
        .filter(|o| o.dest() == Dest::RunDir)
        .filter_map(|o| o.path().split('/').next().map(|first| first.split('|').next().unwrap_or(first).to_owned()));
    registered.chain(RUN_FILES.iter().map(|s| (*s).to_owned())).collect()
}

/// Removes the previous run's files from the locked directory: every name a run writes,
/// their temp names, and the subdirectories that are run directories; returns what was
/// removed.
pub(crate) fn clear(lock: &OutLock) -> Result<Vec<PathBuf>, OutDirError> {
    let mut removed = Vec::new();
    clear_run_dir(lock.dir(), &mut removed)?;
    let entries = std::fs::read_dir(lock.dir()).map_err(|source| OutDirError::Io {
        dir: lock.dir().display().to_string(),
        what: "cannot list it",
        source,
    })?;
    for e in entries.flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) && (p.join("summary.json").is_file() || p.join(MARKER).is_file()) {
            clear_run_dir(&p, &mut removed)?;
            let _ = std::fs::remove_file(p.join(MARKER));
            // Emptied: removed too (a run of several scenarios makes it again if it has it).
            if std::fs::remove_dir(&p).is_ok() {
                removed.push(p);
            }
        }
    }
    Ok(removed)
}

fn clear_run_dir(dir: &Path, removed: &mut Vec<PathBuf>) -> Result<(), OutDirError> {
    let names = run_names();
    let fail = |what, source| OutDirError::Io { dir: dir.display().to_string(), what, source };
    for e in std::fs::read_dir(dir).map_err(|e| fail("cannot list it", e))?.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        // A staged file's temp name keeps its extension: `summary.tmp.<nonce>.json`.
        let stem = |n: &str| n.split('.').next().unwrap_or(n).to_owned();
        let ours = names.iter().any(|n| {
            file == *n
                || file.starts_with(&format!("{n}{TMP_MARKER}"))
                || file.starts_with(&format!("{}{TMP_MARKER}", stem(n)))
        });
        if !ours {
            continue;
        }
        let p = e.path();
        let gone = if e.file_type().is_ok_and(|t| t.is_dir()) {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        gone.map_err(|e| fail("cannot remove the previous run's files", e))?;
        removed.push(p);
    }
    Ok(())
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
                "--out {}: another run writes there (pid 1 since then: relay-bench run a.toml); wait for it or give another --out",
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
    fn the_previous_runs_files_are_cleared_and_others_kept() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        for f in [
            "summary.json",
            "summary.md",
            "events.ndjson",
            "calls.csv",
            "notes.txt",
            "summary.json.tmp.1-2",
            "summary.tmp.1-3.json",
        ] {
            std::fs::write(d.join(f), "").unwrap();
        }
        std::fs::create_dir_all(d.join("hdr/old-case")).unwrap();
        std::fs::create_dir_all(d.join("charts")).unwrap();
        std::fs::create_dir_all(d.join("other-scenario/hdr")).unwrap();
        std::fs::write(d.join("other-scenario/summary.json"), "").unwrap();
        std::fs::create_dir_all(d.join("photos")).unwrap();
        let lock = take(d, "x").unwrap();
        clear(&lock).unwrap();
        let mut left: Vec<String> =
            std::fs::read_dir(d).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        left.sort();
        assert_eq!(left, [MARKER, "notes.txt", "photos"]);
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
