//! Filesystem primitives of the relay on a real directory: unique temp names (publication
//! writes one, then renames it: [`crate::sandbox::dir::publish_now`]) and removal that tolerates a
//! file already gone; the one bounded reader every input goes through ([`read_bounded`]);
//! and the process groups relay-bench leads ([`OwnGroup`]).
//!
//! These are plain blocking calls on purpose: each is one or two syscalls on a local
//! directory (microseconds), and moving them to a blocking pool would add a thread hop to
//! every measured latency.

use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::protocol::TMP_MARKER;

static NONCE: AtomicU64 = AtomicU64::new(0);

/// A temp name unique within this process: `<final>.tmp.<pid>-<counter>`.
pub(crate) fn temp_name(final_name: &str) -> String {
    let n = NONCE.fetch_add(1, Ordering::Relaxed);
    format!("{final_name}{TMP_MARKER}{}-{n}", std::process::id())
}

/// The first `program` file in a directory of `PATH`, as a shell would find it.
pub(crate) fn on_path(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Removes a file, treating "already gone" as success.
pub(crate) fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Writes `size` bytes to a new file in `dir`, syncs and removes it: whether `dir` takes
/// files now. A full disk fails here (ENOSPC) before a run, not as lost calls or a half
/// report during it.
pub(crate) fn probe_write(dir: &Path, size: usize) -> io::Result<()> {
    use std::io::Write;
    let path = dir.join(format!(".relay-bench-probe.{}-{}", std::process::id(), NONCE.fetch_add(1, Ordering::Relaxed)));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| f.write_all(&vec![0; size]).and_then(|()| f.sync_all()));
    let removed = remove_if_present(&path);
    written.and(removed)
}

/// How a file is read: what it is (for the error), its size cap, and whether a symbolic link
/// to it is followed (only where the user names the file itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bound {
    pub what: &'static str,
    pub max: u64,
    pub follow_links: bool,
}

impl Bound {
    /// `what`, at most `max` bytes, a link refused.
    pub const fn new(what: &'static str, max: u64) -> Bound {
        Bound { what, max, follow_links: false }
    }

    /// ... and a link followed to the file it names.
    pub const fn following_links(self) -> Bound {
        Bound { follow_links: true, ..self }
    }
}

/// A file [`read_bounded`] would not read, or could not.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {what}: {why}")]
pub struct BoundedReadError {
    pub what: &'static str,
    pub path: String,
    pub why: Refused,
}

/// Why a bounded read did not read a file.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("cannot read: {0}")]
    Io(io::Error),
    #[error("not a regular file ({0}); give a regular file")]
    NotRegular(&'static str),
    #[error("a symbolic link, not followed here; give the file itself")]
    Symlink,
    #[error("larger than the {cap}-byte cap")]
    TooLarge { cap: u64 },
}

/// Opens a regular file to read, never blocking (a FIFO with no writer is refused, not
/// waited on) and, unless `bound` follows links, never through a symbolic link.
pub(crate) fn open_regular(path: &Path, bound: Bound) -> Result<std::fs::File, BoundedReadError> {
    let fail = |why| BoundedReadError { what: bound.what, path: path.display().to_string(), why };
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !bound.follow_links {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path).map_err(|e| {
        fail(if !bound.follow_links && e.raw_os_error() == Some(libc::ELOOP) {
            Refused::Symlink
        } else {
            Refused::Io(e)
        })
    })?;
    let kind = file.metadata().map_err(|e| fail(Refused::Io(e)))?.file_type();
    if !kind.is_file() {
        let what = if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_dir() {
            "a directory"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(fail(Refused::NotRegular(what)));
    }
    Ok(file)
}

/// Reads a whole regular file of at most `bound.max` bytes ([`open_regular`]'s rules); a
/// file that grows while it is read is still read no further than the cap.
pub(crate) fn read_bounded(path: &Path, bound: Bound) -> Result<Vec<u8>, BoundedReadError> {
    let fail = |why| BoundedReadError { what: bound.what, path: path.display().to_string(), why };
    let file = open_regular(path, bound)?;
    let len = file.metadata().map_err(|e| fail(Refused::Io(e)))?.len();
    if len > bound.max {
        return Err(fail(Refused::TooLarge { cap: bound.max }));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(bound.max + 1).read_to_end(&mut bytes).map_err(|e| fail(Refused::Io(e)))?;
    if bytes.len() as u64 > bound.max {
        return Err(fail(Refused::TooLarge { cap: bound.max }));
    }
    Ok(bytes)
}

/// Checks that [`read_bounded`] would read `path` (its kind and size), without reading it.
pub(crate) fn check_bounded(path: &Path, bound: Bound) -> Result<(), BoundedReadError> {
    let file = open_regular(path, bound)?;
    let fail = |why| BoundedReadError { what: bound.what, path: path.display().to_string(), why };
    match file.metadata() {
        Ok(m) if m.len() > bound.max => Err(fail(Refused::TooLarge { cap: bound.max })),
        Ok(_) => Ok(()),
        Err(e) => Err(fail(Refused::Io(e))),
    }
}

/// [`read_bounded`], as UTF-8 text.
pub(crate) fn read_bounded_text(path: &Path, bound: Bound) -> Result<String, BoundedReadError> {
    let bytes = read_bounded(path, bound)?;
    String::from_utf8(bytes).map_err(|e| BoundedReadError {
        what: bound.what,
        path: path.display().to_string(),
        why: Refused::Io(io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8 text: {e}"))),
    })
}

/// Process groups of programs relay-bench started in a group of their own (black-box
/// runners), while they run. An abort (a second Ctrl-C) exits without the stops that would
/// kill them: it kills these first ([`kill_own_groups`]).
static OWN_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// A process group relay-bench leads, listed while this lives.
pub(crate) struct OwnGroup(i32);

impl OwnGroup {
    pub(crate) fn register(pgid: i32) -> OwnGroup {
        OWN_GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(pgid);
        OwnGroup(pgid)
    }
}

impl Drop for OwnGroup {
    fn drop(&mut self) {
        let mut groups = OWN_GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = groups.iter().position(|g| *g == self.0) {
            groups.swap_remove(i);
        }
    }
}

/// SIGKILLs every process group listed (an abort's last act).
pub(crate) fn kill_own_groups() {
    for pgid in OWN_GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter() {
        // SAFETY: killpg only sends a signal, to a group relay-bench created and leads.
        unsafe { libc::killpg(*pgid, libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::{classify, FileKind};

    #[test]
    fn a_bounded_read_takes_regular_files_up_to_the_cap_and_refuses_the_rest() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("s.toml");
        std::fs::write(&file, b"12345678").unwrap();
        let b = Bound::new("the scenario file", 8);
        assert_eq!(read_bounded(&file, b).unwrap(), b"12345678");
        let e = read_bounded(&file, Bound::new("the scenario file", 7)).unwrap_err();
        assert_eq!(e.to_string(), format!("{}: the scenario file: larger than the 7-byte cap", file.display()));
        let link = t.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(read_bounded(&link, b).unwrap_err().why, Refused::Symlink));
        assert_eq!(read_bounded(&link, b.following_links()).unwrap(), b"12345678");
        let fifo = t.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let fifo_link = t.path().join("fifo-link");
        std::os::unix::fs::symlink(&fifo, &fifo_link).unwrap();
        for (p, b) in [(&fifo, b), (&fifo_link, b.following_links())] {
            let e = read_bounded(p, b).unwrap_err();
            assert!(e.to_string().ends_with("not a regular file (a FIFO); give a regular file"), "{e}");
        }
        let e = read_bounded(Path::new("/dev/zero"), b.following_links()).unwrap_err();
        assert!(matches!(e.why, Refused::NotRegular("a device")), "{e}");
        assert!(matches!(read_bounded(t.path(), b).unwrap_err().why, Refused::NotRegular("a directory")));
        let gone = read_bounded(&t.path().join("gone"), b).unwrap_err();
        assert!(matches!(&gone.why, Refused::Io(e) if e.kind() == io::ErrorKind::NotFound), "{gone}");
    }

    #[test]
    fn a_probe_write_leaves_nothing() {
        let t = tempfile::tempdir().unwrap();
        probe_write(t.path(), 64 << 10).unwrap();
        assert_eq!(std::fs::read_dir(t.path()).unwrap().count(), 0);
        assert!(probe_write(&t.path().join("missing"), 1).is_err());
    }

    #[test]
    fn temp_names_are_unique_and_ignored() {
        let a = temp_name("x.req.json");
        let b = temp_name("x.req.json");
        assert_ne!(a, b);
        assert_eq!(classify(&a), FileKind::Temp);
    }
}
