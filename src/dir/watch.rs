//! A directory watch on this machine: inotify through `notify`.
//!
//! Every change in the directory is told to the callback, as production's `fs.watch` (libuv
//! over inotify) tells it: names appearing, changing and going away, temp names and other
//! files included. Opens and closes are not changes (libuv does not ask inotify for them,
//! and `notify` does: they are dropped here). A queue overflow is a rescan; an error after
//! arming is told once as [`Seen::Failed`].

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use notify::event::{EventKind, ModifyKind, RenameMode};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use super::{Change, OnSeen, Seen, WatchHandle};

/// One live watch on one directory.
pub struct DirWatch {
    watcher: Mutex<Option<RecommendedWatcher>>,
}

impl DirWatch {
    /// Arms a watch on `dir`; `on_seen` runs on the watcher's thread for every change.
    pub fn arm(dir: &Path, on_seen: OnSeen) -> std::io::Result<DirWatch> {
        let failed = AtomicBool::new(false);
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            Ok(ev) => {
                if ev.need_rescan() {
                    return on_seen(Seen::Rescan);
                }
                let change = match ev.kind {
                    EventKind::Access(_) => return,
                    EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(RenameMode::To)) => Change::Appeared,
                    EventKind::Modify(ModifyKind::Name(RenameMode::From)) | EventKind::Remove(_) => Change::Removed,
                    // A rename within the dir, told once more with both paths: the first
                    // went away, the second appeared (already told as From and To).
                    EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => return,
                    EventKind::Modify(_) => Change::Modified,
                    EventKind::Any | EventKind::Other => return on_seen(Seen::Rescan),
                };
                if ev.paths.is_empty() {
                    return on_seen(Seen::Rescan);
                }
                for p in &ev.paths {
                    match p.file_name().and_then(|n| n.to_str()) {
                        Some(name) => on_seen(Seen::Name(name, change)),
                        // A non-UTF-8 name is still a change.
                        None => on_seen(Seen::Rescan),
                    }
                }
            }
            Err(_) => {
                if !failed.swap(true, Ordering::AcqRel) {
                    on_seen(Seen::Failed);
                }
            }
        })
        .map_err(to_io)?;
        watcher.watch(dir, RecursiveMode::NonRecursive).map_err(to_io)?;
        Ok(DirWatch { watcher: Mutex::new(Some(watcher)) })
    }
}

fn to_io(e: notify::Error) -> std::io::Error {
    match e.kind {
        notify::ErrorKind::Io(io) => io,
        notify::ErrorKind::PathNotFound => std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
        notify::ErrorKind::MaxFilesWatch => std::io::Error::other("inotify watch limit reached (ENOSPC)"),
        other => std::io::Error::other(format!("{other:?}")),
    }
}

impl WatchHandle for DirWatch {
    /// Drops the watcher (and its thread). Idempotent.
    fn disarm(&self) {
        self.watcher.lock().expect("watcher lock poisoned").take();
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
