//! Filesystem primitives of the relay on a real directory: publication ([`publish_file`]: a
//! new temp file under an unpredictable name, created exclusively and never through a link,
//! then renamed onto its final name; [`crate::sandbox::dir::publish_now`] is the same over a
//! relay dir) and removal that tolerates a file already gone; the one bounded reader every
//! input goes through ([`read_bounded`]); what a file may be written over (re-exported from
//! [`crate::base::writable`]); and what an abort must undo: the process groups relay-bench
//! leads ([`OwnGroup`]) and the temp files of the outputs it is writing ([`stage`]).
//!
//! Whoever else can write a relay dir (the sandbox, another writer) can plant entries in it:
//! a symbolic link, a FIFO or a file at a name relay-bench is about to use. No primitive here
//! follows a link or blocks on one. A temp file is opened `O_CREAT|O_EXCL|O_NOFOLLOW|
//! O_NONBLOCK` ([`create_new`]): an entry already at its name (a link, a FIFO, a file) makes
//! the open fail at once, and the publication tries a fresh name ([`TEMP_TRIES`]). The rename
//! onto the final name replaces an entry there (a link included) without following it.
//!
//! These are plain blocking calls on purpose: each is one or two syscalls on a local
//! directory (microseconds), and moving them to a blocking pool would add a thread hop to
//! every measured latency.

use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::protocol::TMP_MARKER;

pub(crate) use super::writable::{
    check_replaceable, dirs_under, is_refusal, kind_name, not_a_dir, open_to_write, refusal, WRITE_FLAGS,
};

static NONCE: AtomicU64 = AtomicU64::new(0);

/// How many fresh temp names a publication tries before it gives up: a name taken is an
/// entry someone else put there (64 random bits do not collide by chance).
pub(crate) const TEMP_TRIES: u32 = 8;

/// 64 bits nobody outside this process can predict: the kernel's generator, or (where it
/// fails) the clock, the pid and a counter mixed.
fn unpredictable() -> u64 {
    let mut buf = [0u8; 8];
    // SAFETY: getrandom writes at most `buf.len()` bytes into `buf`.
    let got = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), libc::GRND_NONBLOCK) };
    if got == buf.len() as isize {
        return u64::from_ne_bytes(buf);
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut z = nanos ^ (u64::from(std::process::id()) << 32) ^ NONCE.fetch_add(1, Ordering::Relaxed);
    // splitmix64's finaliser.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A fresh temp name for `final_name`: `<final>.tmp.<16 hex digits>`, unpredictable (a name
/// another party could guess is a name it could plant a link or a FIFO at first). A final
/// name too long for that to fit a file name (255 bytes: a request named with 234 or more)
/// is cut first, at a character: the temp name is still one, and the rename still lands
/// on the whole final name.
pub(crate) fn temp_name(final_name: &str) -> String {
    let room = NAME_MAX - TMP_MARKER.len() - 16;
    let mut cut = final_name.len().min(room);
    while !final_name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{TMP_MARKER}{:016x}", &final_name[..cut], unpredictable())
}

/// The longest file name, in bytes (Linux's `NAME_MAX`).
pub(crate) const NAME_MAX: usize = 255;

/// Whether `e` will fail the same way however often it is tried (a name too long, a
/// [`permanent`] refusal): a retry only delays saying so.
pub(crate) fn is_permanent(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENAMETOOLONG) || e.get_ref().is_some_and(|i| i.is::<Permanent>())
}

/// A refusal no retry changes, saying why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Permanent(String);

/// An error [`is_permanent`] knows, saying `why`.
pub(crate) fn permanent(why: String) -> io::Error {
    io::Error::other(Permanent(why))
}

/// The directory a file was to be made in is gone: deleted or moved away under the run by
/// something outside it ([`dir_gone`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}: the directory is gone (deleted or moved away under the run)")]
struct DirGone(String);

/// The error of a file that could not be made because `dir` is gone.
pub(crate) fn dir_gone(dir: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, DirGone(dir.display().to_string()))
}

/// Why `e` is this machine's failure rather than the relay's, when it is: a full disk, a
/// quota, a file-size limit, a read-only or failing filesystem, a directory deleted under the
/// run ([`dir_gone`]).
pub(crate) fn environment_failure(e: &io::Error) -> Option<&'static str> {
    if e.get_ref().is_some_and(|i| i.is::<DirGone>()) {
        return Some("its directory is gone (deleted or moved away under the run by something outside it)");
    }
    Some(match e.raw_os_error()? {
        libc::ENOSPC => "no space left on the device (the disk is full)",
        libc::EDQUOT => "the disk quota is used up",
        libc::EFBIG => "a file-size limit was hit",
        libc::EROFS => "the filesystem is read-only",
        libc::EIO => "the filesystem failed (I/O error)",
        _ => return None,
    })
}

/// Whether a failed create means the name was taken (retry under a fresh one).
pub(crate) fn is_taken(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ELOOP)
}

/// Creates a new regular file at `path` to write: never an existing entry (a file, a FIFO,
/// a link: [`is_taken`]), never through a link, never blocking.
pub(crate) fn create_new(path: &Path) -> io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(WRITE_FLAGS).open(path)
}

/// Writes `bytes` to a new file at `path` ([`create_new`]); a failed write removes the
/// file it made (no 0-byte file is left behind by a full disk).
pub(crate) fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create_new(path)?;
    file.write_all(bytes).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })
}

/// Makes a new file under a fresh temp name beside `final_path` with `make` (which gets the
/// temp path and must create it with [`create_new`]), retrying a taken name up to
/// [`TEMP_TRIES`] times. Returns the temp path and what `make` returned.
pub(crate) fn fresh_temp<T>(
    final_path: &Path,
    mut make: impl FnMut(&Path) -> io::Result<T>,
) -> io::Result<(PathBuf, T)> {
    let dir = final_path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = final_path.file_name().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let mut last = None;
    for _ in 0..TEMP_TRIES {
        let tmp = dir.join(temp_name(&name.to_string_lossy()));
        match make(&tmp) {
            Ok(t) => return Ok((tmp, t)),
            Err(e) if is_taken(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(taken_every_time(last))
}

/// The error of a publication whose every temp name was taken.
pub(crate) fn taken_every_time(last: Option<io::Error>) -> io::Error {
    io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{TEMP_TRIES} fresh temp names in a row were already taken (someone is planting entries in the dir){}",
            last.map(|e| format!(": {e}")).unwrap_or_default()
        ),
    )
}

/// Publishes `bytes` as `path`: a new temp file beside it ([`fresh_temp`], [`write_new`]),
/// then a rename onto `path`. On any failure the temp file is removed and `path` is as it was.
pub(crate) fn publish_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (tmp, ()) = fresh_temp(path, |tmp| write_new(tmp, bytes))?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
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
    let path = dir.join(format!(".relay-bench-probe.{:016x}", unpredictable()));
    let written = create_new(&path).and_then(|mut f| f.write_all(&vec![0; size]).and_then(|()| f.sync_all()));
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
    pub(crate) const fn new(what: &'static str, max: u64) -> Bound {
        Bound { what, max, follow_links: false }
    }

    /// ... and a link followed to the file it names.
    pub(crate) const fn following_links(self) -> Bound {
        Bound { follow_links: true, ..self }
    }

    /// The error of `path`, read under this bound, refused for `why`.
    fn refused(self, path: &Path, why: Refused) -> BoundedReadError {
        BoundedReadError { what: self.what, path: path.display().to_string(), why }
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
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !bound.follow_links {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(flags).open(path).map_err(|e| {
        let link = !bound.follow_links && e.raw_os_error() == Some(libc::ELOOP);
        bound.refused(path, if link { Refused::Symlink } else { Refused::Io(e) })
    })?;
    let kind = file.metadata().map_err(|e| bound.refused(path, Refused::Io(e)))?.file_type();
    if !kind.is_file() {
        return Err(bound.refused(path, Refused::NotRegular(kind_name(kind))));
    }
    Ok(file)
}

/// Opens a regular file of at most `bound.max` bytes ([`open_regular`]'s rules); its size.
fn open_capped(path: &Path, bound: Bound) -> Result<(std::fs::File, u64), BoundedReadError> {
    let file = open_regular(path, bound)?;
    match file.metadata() {
        Ok(m) if m.len() > bound.max => Err(bound.refused(path, Refused::TooLarge { cap: bound.max })),
        Ok(m) => Ok((file, m.len())),
        Err(e) => Err(bound.refused(path, Refused::Io(e))),
    }
}

/// Reads a whole regular file of at most `bound.max` bytes ([`open_regular`]'s rules); a
/// file that grows while it is read is still read no further than the cap.
pub(crate) fn read_bounded(path: &Path, bound: Bound) -> Result<Vec<u8>, BoundedReadError> {
    let (file, len) = open_capped(path, bound)?;
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(bound.max + 1).read_to_end(&mut bytes).map_err(|e| bound.refused(path, Refused::Io(e)))?;
    if bytes.len() as u64 > bound.max {
        return Err(bound.refused(path, Refused::TooLarge { cap: bound.max }));
    }
    Ok(bytes)
}

/// Checks that [`read_bounded`] would read `path` (its kind and size), without reading it.
pub(crate) fn check_bounded(path: &Path, bound: Bound) -> Result<(), BoundedReadError> {
    open_capped(path, bound).map(drop)
}

/// [`read_bounded`], as UTF-8 text.
pub(crate) fn read_bounded_text(path: &Path, bound: Bound) -> Result<String, BoundedReadError> {
    String::from_utf8(read_bounded(path, bound)?).map_err(|e| {
        bound.refused(path, Refused::Io(io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8 text: {e}"))))
    })
}

/// Temp files this process is writing (staged outputs), while it writes them: an abort (a
/// second Ctrl-C) exits without the drops that would remove them, so it removes these first
/// ([`remove_staged`]). `None` once it has: no temp file is made after.
static STAGED: std::sync::Mutex<Option<std::collections::BTreeSet<PathBuf>>> =
    std::sync::Mutex::new(Some(std::collections::BTreeSet::new()));

/// Makes a temp file with `make` (its path and whatever else it returns) and lists it, under
/// one lock: an abort removes every temp file made, none is made after it.
pub(crate) fn stage<T>(make: impl FnOnce() -> io::Result<(PathBuf, T)>) -> io::Result<(PathBuf, T)> {
    let mut staged = STAGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(set) = staged.as_mut() else {
        return Err(io::Error::new(io::ErrorKind::Interrupted, "aborted: no file is written after an abort"));
    };
    let (tmp, made) = make()?;
    set.insert(tmp.clone());
    Ok((tmp, made))
}

/// A temp file listed by [`stage`] renamed into place or removed: no longer listed.
pub(crate) fn staged_done(tmp: &Path) {
    if let Some(set) = STAGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_mut() {
        set.remove(tmp);
    }
}

/// Removes every temp file listed by [`stage`], and makes no more (an abort's last act
/// before it exits).
pub(crate) fn remove_staged() {
    let taken = STAGED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
    for tmp in taken.unwrap_or_default() {
        let _ = std::fs::remove_file(tmp);
    }
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

    /// SIGKILLs the group (whatever of it is still alive).
    pub(crate) fn kill(&self) {
        // SAFETY: killpg only sends a signal, to a group relay-bench created and leads.
        unsafe { libc::killpg(self.0, libc::SIGKILL) };
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
    fn a_new_file_is_never_made_through_a_link_or_at_a_fifo_and_a_taken_name_is_tried_again() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("outside.txt");
        std::fs::write(&victim, "precious").unwrap();
        let (link, dangling, fifo) = (t.path().join("l"), t.path().join("d"), t.path().join("f"));
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        std::os::unix::fs::symlink(t.path().join("nowhere"), &dangling).unwrap();
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for p in [&link, &dangling, &fifo] {
            let e = write_new(p, b"answer").unwrap_err();
            assert!(is_taken(&e), "{}: {e}", p.display());
        }
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!t.path().join("nowhere").exists(), "a dangling link is not followed either");
        // Every name `fresh_temp` offers is taken first by a planted link: tried again, each
        // under a new name, then given up.
        let fin = t.path().join("x.res.json");
        let mut offered = Vec::new();
        let e = fresh_temp(&fin, |tmp| {
            std::os::unix::fs::symlink(&victim, tmp).unwrap();
            offered.push(tmp.to_path_buf());
            write_new(tmp, b"answer")
        })
        .unwrap_err();
        assert_eq!(offered.len(), TEMP_TRIES as usize);
        assert!(e.to_string().contains("already taken"), "{e}");
        offered.sort();
        offered.dedup();
        assert_eq!(offered.len(), TEMP_TRIES as usize, "a fresh name each time");
        // One taken name, then a free one: published, and the link left as it was.
        let mut first = true;
        let (tmp, ()) = fresh_temp(&fin, |tmp| {
            if std::mem::take(&mut first) {
                std::os::unix::fs::symlink(&victim, tmp).unwrap();
            }
            write_new(tmp, b"answer")
        })
        .unwrap();
        assert_eq!(std::fs::read(&tmp).unwrap(), b"answer");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        publish_file(&fin, b"final").unwrap();
        assert_eq!(std::fs::read(&fin).unwrap(), b"final");
        // A link at the final name is replaced, not followed.
        std::os::unix::fs::symlink(&victim, t.path().join("y.res.json")).unwrap();
        publish_file(&t.path().join("y.res.json"), b"final").unwrap();
        assert!(!t.path().join("y.res.json").symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    }

    #[test]
    fn a_temp_name_fits_a_file_name_however_long_its_final_name() {
        let t = tempfile::tempdir().unwrap();
        for len in [200, 233, 234, 246, 255] {
            let fin = format!("{}.res.json", "é".repeat((len - 9) / 2) + &"a".repeat((len - 9) % 2));
            assert!(fin.len() <= NAME_MAX);
            let tmp = temp_name(&fin);
            assert!(tmp.len() <= NAME_MAX && tmp.contains(TMP_MARKER), "{len}: {} bytes", tmp.len());
            publish_file(&t.path().join(&fin), b"{}").unwrap_or_else(|e| panic!("{len}: {e}"));
            assert_eq!(std::fs::read(t.path().join(&fin)).unwrap(), b"{}");
        }
    }

    #[test]
    fn temp_names_are_unpredictable() {
        let a = temp_name("x.req.json");
        let hex = a.strip_prefix("x.req.json.tmp.").unwrap();
        assert!(hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()), "{a}");
    }

    #[test]
    fn temp_names_are_unique_and_ignored() {
        let a = temp_name("x.req.json");
        let b = temp_name("x.req.json");
        assert_ne!(a, b);
        assert_eq!(classify(&a), FileKind::Temp);
    }
}
