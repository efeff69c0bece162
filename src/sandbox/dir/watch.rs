//! A directory watch on this machine: inotify, one reading thread per watch.
//!
//! [`DirWatch::arm`] asks for the mask production's `fs.watch` (libuv) asks for: names
//! created, moved in or out, deleted, modified, their attributes changed, and the directory
//! itself deleted or moved. Not opens and closes: libuv does not ask for them, and on a relay
//! dir every list and every read would be an event for every watch. Every change is told to
//! the callback (temp names and other files included); a queue overflow is a rescan; an error
//! after arming is told once as [`Seen::Failed`].
//!
//! [`DirWatch::record`] is the same watch with every event a grader needs ([`Raw`]): opens
//! (a list is an open of the directory itself), closes after writing, and each move with the
//! cookie that pairs its two halves, told as inotify reports them, for a consumer that keeps
//! its own record (`relay-bench conform`'s observer).

use std::path::Path;
use std::sync::Mutex;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};

use super::{Change, OnSeen, Seen, WatchHandle};

/// libuv's mask for `fs.watch` on Linux.
const MASK: WatchMask = WatchMask::ATTRIB
    .union(WatchMask::CREATE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::DELETE)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO);

/// The recording mask: libuv's, and opens and closes after writing.
const RECORD_MASK: WatchMask = MASK.union(WatchMask::OPEN).union(WatchMask::CLOSE_WRITE);

/// One inotify event as a recording watch tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Raw<'a> {
    /// `name` created in place (`open(O_CREAT)`, `mkdir`, `symlink`, `mkfifo`).
    Created(&'a str),
    /// `name`'s bytes written.
    Modified(&'a str),
    /// `name` closed after it was opened for writing.
    ClosedWrite(&'a str),
    /// `name` renamed away; `cookie` pairs it with its [`Raw::MovedTo`] (none: out of the dir).
    MovedFrom {
        name: &'a str,
        cookie: u32,
    },
    /// A rename onto `name`; `cookie` pairs it with its [`Raw::MovedFrom`] (none: from outside).
    MovedTo {
        name: &'a str,
        cookie: u32,
    },
    Deleted(&'a str),
    /// `name` opened, for reading or writing, by anyone.
    Opened(&'a str),
    /// The directory itself opened: a list.
    Listed,
    /// The directory deleted or moved away: the watch ends.
    DirGone,
    /// The directory's own attributes changed, or a name that is not UTF-8 changed.
    DirChanged,
    /// The kernel dropped events (queue overflow).
    Overflow,
    /// The watch failed after arming (it delivers nothing more).
    Failed,
}

/// A recording watch's callback.
pub(super) type OnRaw = Box<dyn FnMut(Raw<'_>) + Send>;

/// One live watch on one directory: an inotify instance, the thread that reads it, and the
/// handle that removes the watch (which ends the thread).
pub(crate) struct DirWatch {
    live: Mutex<Option<(Watches, WatchDescriptor)>>,
}

impl DirWatch {
    /// Arms a watch on `dir` with libuv's mask; `on_seen` runs on the watch's thread for every
    /// change.
    pub(crate) fn arm(dir: &Path, on_seen: OnSeen) -> std::io::Result<DirWatch> {
        DirWatch::start(dir, MASK, Box::new(move |raw| tell(&on_seen, raw)))
    }

    /// Arms a recording watch on `dir`: every event of [`Raw`], in the kernel's order, to
    /// `on_raw` on the watch's thread.
    pub(crate) fn record(dir: &Path, on_raw: OnRaw) -> std::io::Result<DirWatch> {
        DirWatch::start(dir, RECORD_MASK, on_raw)
    }

    fn start(dir: &Path, mask: WatchMask, on_raw: OnRaw) -> std::io::Result<DirWatch> {
        let inotify = Inotify::init().map_err(instance_limit)?;
        let mut watches = inotify.watches();
        let wd = watches.add(dir, mask).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOSPC) => std::io::Error::other(
                "inotify watch limit reached (ENOSPC: fs.inotify.max_user_watches; raise it with sysctl)",
            ),
            _ => e,
        })?;
        std::thread::Builder::new().name("relay-bench-watch".into()).spawn(move || read_loop(inotify, on_raw))?;
        Ok(DirWatch { live: Mutex::new(Some((watches, wd))) })
    }
}

/// An inotify instance that could not be made, said as what it is: EMFILE from
/// `inotify_init` is this user's instance limit (`fs.inotify.max_user_instances`), not the
/// process's open files ("Too many open files" misleads).
fn instance_limit(e: std::io::Error) -> std::io::Error {
    if e.raw_os_error() != Some(libc::EMFILE) || open_files_full() {
        return e;
    }
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .map(|l| format!(" = {}", l.trim()))
        .unwrap_or_default();
    std::io::Error::new(
        e.kind(),
        format!(
            "inotify instance limit reached (EMFILE: fs.inotify.max_user_instances{limit}, this user's inotify \
             instances; other programs' watches count too): raise it with sysctl, or end what holds them"
        ),
    )
}

/// Whether this process's open files are at its limit (the other EMFILE of `inotify_init`).
fn open_files_full() -> bool {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into `lim`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return false;
    }
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    open + 1 >= lim.rlim_cur
}

/// A raw event as libuv's watch tells it.
fn tell(on_seen: &OnSeen, raw: Raw<'_>) {
    let (name, change) = match raw {
        Raw::Created(n) | Raw::MovedTo { name: n, .. } => (n, Change::Appeared),
        Raw::Deleted(n) | Raw::MovedFrom { name: n, .. } => (n, Change::Removed),
        Raw::Modified(n) => (n, Change::Modified),
        Raw::DirGone | Raw::DirChanged | Raw::Overflow => return on_seen(Seen::Rescan),
        Raw::Failed => return on_seen(Seen::Failed),
        Raw::ClosedWrite(_) | Raw::Opened(_) | Raw::Listed => return,
    };
    on_seen(Seen::Name(name, change))
}

fn read_loop(mut inotify: Inotify, mut on_raw: OnRaw) {
    let mut buf = [0u8; 4096];
    loop {
        let events = match inotify.read_events_blocking(&mut buf) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return on_raw(Raw::Failed),
        };
        for ev in events {
            if ev.mask.contains(EventMask::IGNORED) {
                return;
            }
            let m = ev.mask;
            // A name that is not UTF-8 is no relay name; libuv's consumer rescans.
            let named = ev.name.map(|n| n.to_str());
            let raw = if m.contains(EventMask::Q_OVERFLOW) {
                Raw::Overflow
            } else if m.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
                Raw::DirGone
            } else {
                match named {
                    None if m.contains(EventMask::OPEN) => Raw::Listed,
                    None | Some(None) => Raw::DirChanged,
                    Some(Some(n)) => match m {
                        _ if m.contains(EventMask::CREATE) => Raw::Created(n),
                        _ if m.contains(EventMask::MOVED_TO) => Raw::MovedTo { name: n, cookie: ev.cookie },
                        _ if m.contains(EventMask::MOVED_FROM) => Raw::MovedFrom { name: n, cookie: ev.cookie },
                        _ if m.contains(EventMask::DELETE) => Raw::Deleted(n),
                        _ if m.contains(EventMask::OPEN) => Raw::Opened(n),
                        _ if m.contains(EventMask::CLOSE_WRITE) => Raw::ClosedWrite(n),
                        _ => Raw::Modified(n),
                    },
                }
            };
            on_raw(raw);
        }
    }
}

impl WatchHandle for DirWatch {
    /// Removes the watch: the kernel queues IN_IGNORED and the reading thread ends. Idempotent.
    fn disarm(&self) {
        if let Some((mut watches, wd)) = self.live.lock().unwrap_or_else(|p| p.into_inner()).take() {
            // Already gone when the directory was deleted: nothing to remove.
            let _ = watches.remove(wd);
        }
    }
}

impl Drop for DirWatch {
    fn drop(&mut self) {
        self.disarm();
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inotify_inits_emfile_is_said_as_the_instance_limit_it_is() {
        let e = instance_limit(std::io::Error::from_raw_os_error(libc::EMFILE)).to_string();
        assert!(e.starts_with("inotify instance limit reached (EMFILE: fs.inotify.max_user_instances"), "{e}");
        assert!(!e.contains("Too many open files"), "{e}");
        let other = instance_limit(std::io::Error::from_raw_os_error(libc::ENOMEM));
        assert_eq!(other.raw_os_error(), Some(libc::ENOMEM));
    }
    use std::sync::mpsc;
    use std::time::Duration;

    fn recv_until(rx: &mpsc::Receiver<(String, Change)>, want: (&str, Change)) -> bool {
        // Generous bound: events normally arrive in microseconds.
        while let Ok((n, c)) = rx.recv_timeout(Duration::from_secs(20)) {
            if n == want.0 && c == want.1 {
                return true;
            }
        }
        false
    }

    #[test]
    fn every_change_is_told_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let w = DirWatch::arm(
            dir.path(),
            Box::new(move |s| {
                if let Seen::Name(n, c) = s {
                    let _ = tx.lock().unwrap().send((n.to_owned(), c));
                }
            }),
        )
        .unwrap();
        std::fs::write(dir.path().join("a.req.json.tmp.1"), b"{}").unwrap();
        assert!(recv_until(&rx, ("a.req.json.tmp.1", Change::Appeared)), "temp names are changes too");
        std::fs::rename(dir.path().join("a.req.json.tmp.1"), dir.path().join("a.req.json")).unwrap();
        assert!(recv_until(&rx, ("a.req.json", Change::Appeared)));
        std::fs::remove_file(dir.path().join("a.req.json")).unwrap();
        assert!(recv_until(&rx, ("a.req.json", Change::Removed)));
        w.disarm();
    }

    #[test]
    fn a_missing_dir_cannot_be_watched() {
        let dir = tempfile::tempdir().unwrap();
        assert!(DirWatch::arm(&dir.path().join("gone"), Box::new(|_| {})).is_err());
    }
}
