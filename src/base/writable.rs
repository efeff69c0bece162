//! What relay-bench writes to, and what it refuses to: like `install` and `rsync
//! --safe-links`, a regular file or a new path only — never through a symbolic link, never
//! over a FIFO, a device, a socket or a directory ([`NotReplaced`]) — and under a run
//! directory, only into real folders ([`dirs_under`]). What is at a name is looked at
//! without following it, then checked again on the descriptor opened.

use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The flags of every open that makes or writes a file: never through a link, never
/// blocking (on a FIFO), never taking a terminal, never inherited by a child.
pub(crate) const WRITE_FLAGS: libc::c_int = libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// What an entry is, as an error names it.
pub(crate) fn kind_name(kind: std::fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "not a file"
    }
}

/// Why `path` is not a directory, as a message ends: it does not exist, or what it is
/// instead (followed as the user named it).
pub(crate) fn not_a_dir(path: &Path) -> String {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => "does not exist".to_owned(),
        Err(e) => format!("cannot be reached: {e}"),
        Ok(m) if m.is_dir() => "is a directory".to_owned(),
        Ok(m) => format!("not a directory ({})", kind_name(m.file_type())),
    }
}

/// An entry relay-bench does not write to or over: a link, a FIFO, a device, a socket or a
/// directory where a file is to go. Like `install` and `rsync --safe-links`, relay-bench
/// writes a regular file or a new path, never through a link and never over anything else.
#[derive(Debug, thiserror::Error)]
#[error("{what} is there, and relay-bench writes only a regular file or a new path (never through a link, never over a FIFO, device, socket or directory): remove it or give another path")]
pub(crate) struct NotReplaced {
    /// What is there ([`kind_name`]).
    pub(crate) what: &'static str,
}

/// Whether `e` is a [`NotReplaced`] refusal (the user's to fix, not relay-bench's).
pub(crate) fn is_refusal(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|i| i.is::<NotReplaced>() || i.is::<AtRefused>())
}

pub(crate) fn refusal(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, NotReplaced { what })
}

/// Whether a file may be written at `path` (its entry looked at, not followed): nothing
/// there, or a regular file; anything else is refused ([`NotReplaced`]).
pub(crate) fn check_replaceable(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) => Err(refusal(kind_name(m.file_type()))),
    }
}

/// Opens `path` to write (made if missing; emptied first unless `append`): only a regular
/// file or a new path, never through a link, never blocking on a FIFO ([`check_replaceable`],
/// then checked again on the descriptor opened).
pub(crate) fn open_to_write(path: &Path, append: bool) -> io::Result<std::fs::File> {
    check_replaceable(path)?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .append(append)
        .create(true)
        .custom_flags(WRITE_FLAGS)
        .open(path)
        .map_err(|e| if e.raw_os_error() == Some(libc::ELOOP) { refusal("a symbolic link") } else { e })?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(refusal(kind_name(kind)));
    }
    if !append {
        file.set_len(0)?;
    }
    Ok(file)
}

/// Makes the directories `rel` under `base` (each component of `rel` a real directory:
/// made if missing, never a link followed) and returns `base/rel`. `base` itself is the
/// user's to name and may be reached through a link.
pub(crate) fn dirs_under(base: &Path, rel: &Path) -> io::Result<PathBuf> {
    let mut at = base.to_path_buf();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(name) => at.push(name),
            std::path::Component::CurDir => continue,
            _ => {
                let why = format!("{}: not a plain relative path", rel.display());
                return Err(io::Error::new(io::ErrorKind::InvalidInput, why));
            }
        }
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => continue,
            Ok(m) => {
                return Err(io::Error::new(io::ErrorKind::AlreadyExists, at_refused(&at, kind_name(m.file_type()))))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        match std::fs::create_dir(&at) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && std::fs::symlink_metadata(&at)?.is_dir() => {}
            r => r?,
        }
    }
    Ok(at)
}

/// A refusal that names its path (a directory component under a run directory).
#[derive(Debug, thiserror::Error)]
#[error("{path}: {why}")]
struct AtRefused {
    path: String,
    why: NotReplaced,
}

fn at_refused(path: &Path, what: &'static str) -> AtRefused {
    AtRefused { path: path.display().to_string(), why: NotReplaced { what } }
}
