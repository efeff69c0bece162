//! A directory opened once to make files in, never through a link ([`InDir`]): files made
//! through it land in that directory whatever its path names later. `conform` plays the
//! other side of a relay in a dir the implementation under test can replace; it makes every
//! file there through one of these, so a link put in the dir's place is never written
//! through.

use std::ffi::CString;
use std::io::{self, Write};
use std::os::fd::FromRawFd;
use std::path::Path;

use crate::base::fsio::{refusal, WRITE_FLAGS};

/// A directory opened once, never through a link: what is made in it through this handle
/// lands in that directory, whatever its path names later (a link someone puts in its place
/// is not followed; a directory deleted takes nothing more).
pub(crate) struct InDir {
    fd: std::os::fd::OwnedFd,
}

fn c_name(name: &str) -> io::Result<CString> {
    if name.contains('/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?}: not a plain file name")));
    }
    c_path(Path::new(name))
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl InDir {
    /// Opens `dir`; a link there (the directory replaced by one) is refused ([`NotReplaced`]).
    pub(crate) fn open(dir: &Path) -> io::Result<InDir> {
        let c = c_path(dir)?;
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        // SAFETY: open on a NUL-terminated path; the descriptor returned is owned below.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            let link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
            return Err(if link { refusal("a symbolic link") } else { e });
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(InDir { fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) } })
    }

    fn raw(&self) -> libc::c_int {
        std::os::fd::AsRawFd::as_raw_fd(&self.fd)
    }

    /// A new regular file `name` in the directory ([`create_new`]'s rules).
    pub(crate) fn create_new(&self, name: &str) -> io::Result<std::fs::File> {
        let c = c_name(name)?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | WRITE_FLAGS;
        // SAFETY: openat on this directory's descriptor and a NUL-terminated name.
        let fd = check(unsafe { libc::openat(self.raw(), c.as_ptr(), flags, 0o644) })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(unsafe { std::fs::File::from_raw_fd(fd) })
    }

    /// Writes `bytes` to a new file `name` ([`InDir::create_new`]); a failed write removes it.
    pub(crate) fn write_new(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let mut f = self.create_new(name)?;
        f.write_all(bytes).inspect_err(|_| {
            let _ = self.remove(name);
        })
    }

    /// Renames `from` onto `to`, both in this directory.
    pub(crate) fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let (a, b) = (c_name(from)?, c_name(to)?);
        // SAFETY: renameat within this directory's descriptor, NUL-terminated names.
        check(unsafe { libc::renameat(self.raw(), a.as_ptr(), self.raw(), b.as_ptr()) }).map(|_| ())
    }

    /// Removes the file `name`.
    pub(crate) fn remove(&self, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: unlinkat within this directory's descriptor, a NUL-terminated name.
        check(unsafe { libc::unlinkat(self.raw(), c.as_ptr(), 0) }).map(|_| ())
    }

    /// A symbolic link `name` to `target`.
    pub(crate) fn symlink(&self, target: &Path, name: &str) -> io::Result<()> {
        let (t, c) = (c_path(target)?, c_name(name)?);
        // SAFETY: symlinkat within this directory's descriptor, NUL-terminated strings.
        check(unsafe { libc::symlinkat(t.as_ptr(), self.raw(), c.as_ptr()) }).map(|_| ())
    }

    /// A FIFO `name`.
    pub(crate) fn mkfifo(&self, name: &str) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: mkfifoat within this directory's descriptor, a NUL-terminated name.
        check(unsafe { libc::mkfifoat(self.raw(), c.as_ptr(), 0o644) }).map(|_| ())
    }
}
