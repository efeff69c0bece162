//! One runner per relay dir: `serve` takes an exclusive `flock` on the directory it serves
//! ([`Claim::take`]) and keeps it on the directory *now at the path*. A lock lives on an
//! inode, so a dir that is deleted and made again (`rm -rf d; mkdir d`) leaves the lock on
//! the old one, and a second runner would find the new one free. Every list of the runner
//! goes through [`ClaimedDir`], which checks first that the path still names the locked
//! directory; on a new one it takes the lock again ([`ClaimNote::Retaken`]) or, when
//! another runner holds it already, gives the dir up ([`ClaimNote::Lost`]): its lists fail
//! from then on and `serve` stops with that error. The check costs one `stat` per list.
//!
//! What this cannot close: a replacement and a second runner's claim both between this
//! runner's check and its list (microseconds); and a dir replaced by a tool that keeps no
//! lock (nothing to be refused).

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::base::BoxFut;
use crate::sandbox::dir::{ExecOutput, LineDelay, Lines, OnSeen, RealDir, RelayDir, WatchHandle};

/// Why a dir cannot be (or stay) this runner's.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ClaimError {
    #[error("{dir}: {why} (give the relay dir to serve)")]
    NotADir { dir: String, why: String },
    #[error("{dir}: not a relay dir this runner can use: cannot list it: {source}")]
    Unlistable { dir: String, source: io::Error },
    #[error("{dir}: not a relay dir this runner can use: cannot lock it: {source}")]
    Lock { dir: String, source: io::Error },
    #[error(
        "{dir}: not a relay dir this runner can write (a runner must write answers and delete requests there): \
         {source}"
    )]
    Unwritable { dir: String, source: io::Error },
    #[error("{0}: another runner serves this dir (it holds its lock); two runners would answer calls twice")]
    Taken(String),
    #[error(
        "{dir}: the directory was replaced (inode {old} -> {new}) and another runner holds the new one's lock: \
         this runner stopped (two runners would answer calls twice)"
    )]
    Replaced { dir: String, old: u64, new: u64 },
}

impl ClaimError {
    fn io(&self) -> io::Error {
        io::Error::new(io::ErrorKind::PermissionDenied, self.to_string())
    }
}

/// What happened to a claim while the runner served.
#[derive(Debug)]
pub(crate) enum ClaimNote {
    /// The dir was replaced; the lock is taken again on the new one.
    Retaken { old: u64, new: u64 },
    /// The dir was replaced and another runner holds the new one: given up.
    Lost(ClaimError),
}

struct Held {
    /// The locked directory's descriptor (the lock goes with it).
    _file: File,
    dev: u64,
    ino: u64,
}

/// An exclusive lock on the directory at a path, kept on whatever directory is there.
pub(crate) struct Claim {
    path: PathBuf,
    held: Mutex<Option<Held>>,
    notes: tokio::sync::mpsc::UnboundedSender<ClaimNote>,
    /// How many times the dir was replaced (and the lock taken again on the new one).
    generation: std::sync::atomic::AtomicU64,
}

impl Claim {
    /// Checks that `dir` is a directory that can be listed and written, and locks it; what
    /// the claim notes later goes to the returned receiver.
    pub(crate) fn take(dir: &Path) -> Result<(Claim, tokio::sync::mpsc::UnboundedReceiver<ClaimNote>), ClaimError> {
        let name = || dir.display().to_string();
        if !dir.is_dir() {
            return Err(ClaimError::NotADir { dir: name(), why: crate::base::fsio::not_a_dir(dir) });
        }
        std::fs::read_dir(dir).map_err(|source| ClaimError::Unlistable { dir: name(), source })?;
        // The lock first: a refused second runner does not touch the dir it was refused.
        let held = lock(dir)?.ok_or_else(|| ClaimError::Taken(name()))?;
        probe_write(dir)?;
        let (notes, rx) = tokio::sync::mpsc::unbounded_channel();
        Ok((Claim { path: dir.to_path_buf(), held: Mutex::new(Some(held)), notes, generation: Default::default() }, rx))
    }

    /// Checks that the path still names the locked directory; takes the lock on a new one.
    /// An error: the dir cannot be used now (gone for the moment, or lost for good).
    pub(crate) fn check(&self) -> io::Result<()> {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(h) = held.as_ref() else {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "the relay dir was given up to another runner",
            ));
        };
        let now = std::fs::metadata(&self.path)?;
        if (now.dev(), now.ino()) == (h.dev, h.ino) {
            return Ok(());
        }
        let old = h.ino;
        let dir = self.path.display().to_string();
        match lock(&self.path) {
            Ok(Some(new)) => {
                let ino = new.ino;
                *held = Some(new);
                self.generation.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                let _ = self.notes.send(ClaimNote::Retaken { old, new: ino });
                Ok(())
            }
            Ok(None) => {
                let lost = ClaimError::Replaced { dir, old, new: now.ino() };
                let e = lost.io();
                *held = None;
                let _ = self.notes.send(ClaimNote::Lost(lost));
                Err(e)
            }
            Err(e) => Err(e.io()),
        }
    }
}

/// Opens the directory at `dir` and locks it: `None` when another process holds its lock.
fn lock(dir: &Path) -> Result<Option<Held>, ClaimError> {
    let name = || dir.display().to_string();
    let file = File::open(dir).map_err(|source| ClaimError::Lock { dir: name(), source })?;
    let meta = file.metadata().map_err(|source| ClaimError::Lock { dir: name(), source })?;
    if !meta.is_dir() {
        return Err(ClaimError::NotADir { dir: name(), why: crate::base::fsio::not_a_dir(dir) });
    }
    // SAFETY: flock on a descriptor this function owns; the lock goes with the descriptor.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Ok(None);
        }
        return Err(ClaimError::Lock { dir: name(), source: e });
    }
    Ok(Some(Held { _file: file, dev: meta.dev(), ino: meta.ino() }))
}

/// Writes and removes a probe file: a runner (or writer) that cannot write its files must
/// not start (a dir it may not write, a full disk, a pseudo filesystem such as /proc).
pub(crate) fn probe_write(dir: &Path) -> Result<(), ClaimError> {
    crate::base::fsio::probe_write(dir, 4096)
        .map_err(|source| ClaimError::Unwritable { dir: dir.display().to_string(), source })
}

/// A [`RealDir`] whose every list first checks the [`Claim`] on it, and whose answers go
/// only into the directory their requests were read from: a request read before the dir was
/// replaced (moved away, deleted and made again) is not answered into the new one, where no
/// writer of it waits.
pub(crate) struct ClaimedDir {
    dir: RealDir,
    claim: Arc<Claim>,
    /// The claim's generation when each request (by file id) was read.
    read_in: Mutex<std::collections::HashMap<String, u64>>,
}

impl ClaimedDir {
    pub(crate) fn new(dir: RealDir, claim: Arc<Claim>) -> ClaimedDir {
        ClaimedDir { dir, claim, read_in: Mutex::default() }
    }

    fn generation(&self) -> u64 {
        self.claim.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether the answer `name` may be published here now: not when its request was read
    /// from a directory since replaced (checked against the path now).
    fn answer_belongs(&self, name: &str) -> io::Result<()> {
        let Some(id) = crate::base::protocol::file_id_of(name).filter(|_| name.ends_with(".res.json")) else {
            return Ok(());
        };
        let read_in = self.read_in.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(id);
        let Some(read_in) = read_in else { return Ok(()) };
        self.claim.check()?;
        if read_in == self.generation() {
            return Ok(());
        }
        Err(crate::base::fsio::permanent(format!(
            "{}: the relay dir was replaced after its request was read; the answer is not published into the new \
             one (no writer of it waits there)",
            self.dir.path().join(name).display()
        )))
    }
}

impl RelayDir for ClaimedDir {
    fn list(&self) -> io::Result<Vec<String>> {
        self.claim.check()?;
        self.dir.list()
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        let generation = self.generation();
        let bytes = self.dir.read(name)?;
        if let Some(id) = crate::base::protocol::file_id_of(name).filter(|_| name.ends_with(".req.json")) {
            self.read_in.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.to_owned(), generation);
        }
        Ok(bytes)
    }

    fn stat(&self, name: &str) -> io::Result<u64> {
        self.dir.stat(name)
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> crate::base::BoxFut<'a, io::Result<()>> {
        Box::pin(std::future::ready(self.answer_belongs(name).and_then(|()| super::publish_now(self, name, bytes))))
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        self.dir.write(name, bytes)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        self.dir.rename(from, to)
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.dir.remove(name)
    }

    fn watch(&self, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>> {
        self.dir.watch(on_seen)
    }

    fn exec(&self, argv: &[OsString], timeout: Duration) -> BoxFut<'static, io::Result<ExecOutput>> {
        self.dir.exec(argv, timeout)
    }

    fn exec_follow(&self, argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines> {
        self.dir.exec_follow(argv, delay)
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replace(dir: &Path) {
        std::fs::remove_dir_all(dir).unwrap();
        std::fs::create_dir(dir).unwrap();
    }

    #[test]
    fn a_second_claim_is_refused_and_a_replaced_dir_is_locked_again() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("relay");
        std::fs::create_dir(&d).unwrap();
        let (first, mut notes) = Claim::take(&d).unwrap();
        assert!(matches!(Claim::take(&d), Err(ClaimError::Taken(_))));
        replace(&d);
        first.check().unwrap();
        assert!(matches!(notes.try_recv(), Ok(ClaimNote::Retaken { .. })));
        let e = Claim::take(&d).err().unwrap();
        assert!(e.to_string().contains("another runner serves this dir"), "{e}");
        first.check().unwrap();
        assert!(notes.try_recv().is_err(), "the same dir: nothing to say");
    }

    #[test]
    fn a_replaced_dir_another_runner_took_first_is_given_up() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("relay");
        std::fs::create_dir(&d).unwrap();
        let (first, mut notes) = Claim::take(&d).unwrap();
        let claimed = ClaimedDir::new(RealDir::new(&d), Arc::new(first));
        replace(&d);
        let (_second, _) = Claim::take(&d).unwrap();
        let e = claimed.list().unwrap_err();
        assert!(e.to_string().contains("was replaced"), "{e}");
        let Ok(ClaimNote::Lost(lost)) = notes.try_recv() else { panic!("the loss is noted") };
        assert!(lost.to_string().contains("another runner holds the new one's lock: this runner stopped"), "{lost}");
        assert!(claimed.list().is_err(), "given up for good");
    }

    #[test]
    fn a_dir_gone_for_a_moment_fails_a_list_without_giving_up() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("relay");
        std::fs::create_dir(&d).unwrap();
        let (first, mut notes) = Claim::take(&d).unwrap();
        let claimed = ClaimedDir::new(RealDir::new(&d), Arc::new(first));
        std::fs::remove_dir(&d).unwrap();
        assert_eq!(claimed.list().unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::create_dir(&d).unwrap();
        assert_eq!(claimed.list().unwrap(), Vec::<String>::new());
        assert!(matches!(notes.try_recv(), Ok(ClaimNote::Retaken { .. })));
    }
}
