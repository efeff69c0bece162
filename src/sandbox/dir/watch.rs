//! A directory watch on this machine: inotify, with the mask production's `fs.watch` (libuv)
//! asks for: names created, moved in or out, deleted, modified, their attributes changed,
//! and the directory itself deleted or moved. Not opens and closes: libuv does not ask for
//! them, and on a relay dir every list and every read would be an event for every watch.
//! Every change is told to the callback (temp names and other files included); a queue
//! overflow is a rescan; an error after arming is told once as [`Seen::Failed`].

use std::ffi::OsStr;
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

/// One live watch on one directory: an inotify instance, the thread that reads it, and the
/// handle that removes the watch (which ends the thread).
pub struct DirWatch {
    live: Mutex<Option<(Watches, WatchDescriptor)>>,
}

impl DirWatch {
    /// Arms a watch on `dir`; `on_seen` runs on the watch's thread for every change.
    pub fn arm(dir: &Path, on_seen: OnSeen) -> std::io::Result<DirWatch> {
        let inotify = Inotify::init()?;
        let mut watches = inotify.watches();
        let wd = watches.add(dir, MASK).map_err(|e| match e.raw_os_error() {
            Some(28) => std::io::Error::other("inotify watch limit reached (ENOSPC)"),
            _ => e,
        })?;
        std::thread::Builder::new().name("relay-bench-watch".into()).spawn(move || read_loop(inotify, on_seen))?;
        Ok(DirWatch { live: Mutex::new(Some((watches, wd))) })
    }
}

fn read_loop(mut inotify: Inotify, on_seen: OnSeen) {
    let mut buf = [0u8; 4096];
    loop {
        let events = match inotify.read_events_blocking(&mut buf) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return on_seen(Seen::Failed),
        };
        for ev in events {
            if ev.mask.contains(EventMask::IGNORED) {
                return;
            }
            if ev.mask.contains(EventMask::Q_OVERFLOW) {
                on_seen(Seen::Rescan);
                continue;
            }
            let change = if ev.mask.intersects(EventMask::CREATE | EventMask::MOVED_TO) {
                Change::Appeared
            } else if ev.mask.intersects(EventMask::DELETE | EventMask::MOVED_FROM) {
                Change::Removed
            } else if ev.mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
                on_seen(Seen::Rescan);
                continue;
            } else {
                Change::Modified
            };
            match ev.name.and_then(OsStr::to_str) {
                Some(name) => on_seen(Seen::Name(name, change)),
                None => on_seen(Seen::Rescan),
            }
        }
    }
}

impl WatchHandle for DirWatch {
    /// Removes the watch: the kernel queues IN_IGNORED and the reading thread ends. Idempotent.
    fn disarm(&self) {
        if let Some((mut watches, wd)) = self.live.lock().expect("watch lock poisoned").take() {
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
