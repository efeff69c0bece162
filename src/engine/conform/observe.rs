//! The battery's eyes on a relay dir: the sandbox's recording watch ([`DirWatch::record`])
//! kept as a record of every event on the dir
//! with its time (names created, written, closed after writing, moved in or out with the
//! name they came from, deleted, opened; the dir itself opened, as a list does), and reads
//! the bytes of a final relay name the moment one appears. Cases grade from this record:
//! how a final name came to exist (a rename from a `.tmp.` name in the same dir, or a file
//! written in place), when a request vanished, what an answer held.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::base::fsio::{read_bounded, Bound};
use crate::base::protocol::{classify, FileKind};
use crate::sandbox::dir::{DirWatch, Raw};

/// What happened to a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum What {
    /// Created in place (`open(O_CREAT)`): a final name created so is not published atomically.
    Created,
    /// Written to.
    Modified,
    /// Closed after writing.
    ClosedWrite,
    /// Renamed onto this name, from `from` in the same dir (`None`: from outside it).
    MovedIn {
        from: Option<String>,
    },
    MovedOut,
    Deleted,
    /// Opened (read or written) by anyone, this battery included.
    Opened,
    /// The dir itself opened: a list.
    Listed,
    /// The watched dir was deleted or moved away.
    DirGone,
}

#[derive(Debug, Clone)]
pub(crate) struct Ev {
    pub at: Instant,
    pub name: String,
    pub what: What,
    /// For a final relay name that appeared: its bytes, read at once (or why not).
    pub bytes: Option<Result<Vec<u8>, Arc<crate::base::fsio::Refused>>>,
}

impl Ev {
    /// The bytes read as the name appeared (none when they were not, or could not be, read).
    pub(crate) fn read(&self) -> &[u8] {
        match &self.bytes {
            Some(Ok(b)) => b,
            _ => &[],
        }
    }
}

type Shared = Arc<(Mutex<Vec<Ev>>, Condvar)>;

/// A running watch on one dir ([`DirWatch::record`]); the watch goes when this is dropped.
pub(crate) struct Observer {
    shared: Shared,
    read: FileKind,
    watches: Mutex<Vec<DirWatch>>,
}

/// Largest answer or request the battery reads back (the oversized case writes 17 MiB).
const READ_CAP: u64 = 64 << 20;

/// The record, whoever panicked while holding it (a grader reads what was recorded).
fn lock(m: &Mutex<Vec<Ev>>) -> MutexGuard<'_, Vec<Ev>> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One watch's reading of the raw events into the record: a move's two halves paired by
/// their cookie, and the bytes of a final name of kind `read` read as it appears.
struct Recorder {
    shared: Shared,
    dir: PathBuf,
    read: FileKind,
    moved: HashMap<u32, String>,
    in_place: HashSet<String>,
}

impl Recorder {
    fn hear(&mut self, raw: Raw<'_>) {
        let at = Instant::now();
        let (name, what) = match raw {
            Raw::DirGone => (String::new(), What::DirGone),
            Raw::Listed => (String::new(), What::Listed),
            Raw::Opened(n) => (n.to_owned(), What::Opened),
            Raw::Created(n) => (n.to_owned(), What::Created),
            Raw::Modified(n) => (n.to_owned(), What::Modified),
            Raw::ClosedWrite(n) => (n.to_owned(), What::ClosedWrite),
            Raw::MovedFrom { name, cookie } => {
                self.moved.insert(cookie, name.to_owned());
                (name.to_owned(), What::MovedOut)
            }
            Raw::MovedTo { name, cookie } => (name.to_owned(), What::MovedIn { from: self.moved.remove(&cookie) }),
            Raw::Deleted(n) => (n.to_owned(), What::Deleted),
            Raw::DirChanged | Raw::Overflow | Raw::Failed => return,
        };
        // A close after writing is an appearance only for a name written in place:
        // a process forked while another thread wrote a temp name closes its copy of
        // the fd at exec, after the rename, and that close is reported under the
        // final name (no write, no new bytes).
        let appeared = match what {
            What::MovedIn { .. } => true,
            What::ClosedWrite => self.in_place.contains(&name),
            _ => false,
        };
        match what {
            What::Created | What::Modified => drop(self.in_place.insert(name.clone())),
            What::Opened | What::Listed => {}
            _ => drop(self.in_place.remove(&name)),
        }
        let fin = classify(&name) == self.read;
        let bytes = (appeared && fin).then(|| {
            read_bounded(&self.dir.join(&name), Bound::new("a relay file", READ_CAP)).map_err(|e| Arc::new(e.why))
        });
        let (log, cv) = &*self.shared;
        lock(log).push(Ev { at, name, what, bytes });
        cv.notify_all();
    }
}

impl Observer {
    /// Arms a watch on `dir` (its events from now on); the bytes of every final name of kind
    /// `read` are read as it appears (a runner battery reads answers, a writer one requests:
    /// never the other side's files, whose opens are the implementation's to be seen).
    pub(crate) fn watch(dir: &Path, read: FileKind) -> std::io::Result<Observer> {
        let obs = Observer { shared: Arc::default(), read, watches: Mutex::new(Vec::new()) };
        obs.rearm(dir)?;
        Ok(obs)
    }

    /// Watches `dir` (again, when it was deleted and made anew: a new inode), into the same
    /// record. The watch is armed when this returns.
    pub(crate) fn rearm(&self, dir: &Path) -> std::io::Result<()> {
        let mut rec = Recorder {
            shared: self.shared.clone(),
            dir: dir.to_path_buf(),
            read: self.read,
            moved: HashMap::new(),
            in_place: HashSet::new(),
        };
        let w = DirWatch::record(dir, Box::new(move |raw| rec.hear(raw)))?;
        self.watches.lock().unwrap_or_else(|p| p.into_inner()).push(w);
        Ok(())
    }

    pub(crate) fn events(&self) -> Vec<Ev> {
        lock(&self.shared.0).clone()
    }

    /// Waits until `find` finds something in the record, at most `bound`; what it found.
    pub(crate) fn wait_for<T>(&self, bound: Duration, mut find: impl FnMut(&[Ev]) -> Option<T>) -> Option<T> {
        let (log, cv) = &*self.shared;
        let end = Instant::now() + bound;
        let mut log = lock(log);
        loop {
            if let Some(found) = find(&log) {
                return Some(found);
            }
            let now = Instant::now();
            if now >= end {
                return None;
            }
            log = cv.wait_timeout(log, end - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// The first appearance of final name `name` at or after `since`.
    pub(crate) fn wait_appeared(&self, name: &str, since: Instant, bound: Duration) -> Option<Ev> {
        self.wait_for(bound, |evs| evs.iter().find(|e| e.at >= since && e.name == name && e.bytes.is_some()).cloned())
    }

    /// When `name` was deleted (or moved out) at or after `since`, waiting at most `bound`.
    pub(crate) fn wait_gone(&self, name: &str, since: Instant, bound: Duration) -> Option<Instant> {
        let gone = |e: &&Ev| e.at >= since && e.name == name && matches!(e.what, What::Deleted | What::MovedOut);
        self.wait_for(bound, |evs| evs.iter().find(gone).map(|e| e.at))
    }
}

/// How a final name was published, from the record: `Ok(())` for a rename from a `.tmp.`
/// name in the same dir with no write in place (a create or a modify under the final name; a
/// close alone writes nothing, see [`Recorder`]); else what was wrong, and whether it was only
/// a departure (a temp outside the dir or not a `.tmp.` name) or a breach (written in place).
pub(crate) fn publication(evs: &[Ev], name: &str) -> Result<(), (bool, String)> {
    let mut seen_in = false;
    for e in evs.iter().filter(|e| e.name == name) {
        match &e.what {
            What::Created | What::Modified => {
                return Err((true, format!("{name} was written in place ({:?}), not renamed onto", e.what)));
            }
            What::MovedIn { from: None } => {
                return Err((false, format!("{name} was renamed from outside the relay dir")));
            }
            What::MovedIn { from: Some(f) } if !f.contains(crate::base::protocol::TMP_MARKER) => {
                return Err((false, format!("{name} was renamed from {f:?}, not a `.tmp.` name")));
            }
            What::MovedIn { .. } => seen_in = true,
            _ => {}
        }
    }
    if seen_in {
        Ok(())
    } else {
        Err((true, format!("{name} never appeared")))
    }
}

/// Bytes as evidence: UTF-8 (lossy) cut to `max` chars, quoted.
pub(crate) fn shown(bytes: &[u8], max: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    if s.chars().count() > max {
        format!("{:?}… ({} bytes)", s.chars().take(max).collect::<String>(), bytes.len())
    } else {
        format!("{s:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_from_a_temp_name_is_atomic_and_a_write_in_place_is_not() {
        let t = tempfile::tempdir().unwrap();
        let obs = Observer::watch(t.path(), FileKind::Response).unwrap();
        let since = Instant::now();
        std::fs::write(t.path().join("a.res.json.tmp.1"), b"{\"ok\":true}").unwrap();
        std::fs::rename(t.path().join("a.res.json.tmp.1"), t.path().join("a.res.json")).unwrap();
        std::fs::write(t.path().join("b.res.json"), b"{\"ok\":true}").unwrap();
        std::fs::write(t.path().join("c.tmp"), b"{}").unwrap();
        std::fs::rename(t.path().join("c.tmp"), t.path().join("c.res.json")).unwrap();
        let a = obs.wait_appeared("a.res.json", since, Duration::from_secs(5)).expect("a appeared");
        assert_eq!(a.bytes.unwrap().unwrap(), b"{\"ok\":true}");
        let b = obs.wait_appeared("b.res.json", since, Duration::from_secs(5)).expect("b appeared, at its close");
        assert_eq!(b.what, What::ClosedWrite);
        obs.wait_appeared("c.res.json", since, Duration::from_secs(5)).expect("c appeared");
        let evs = obs.events();
        assert_eq!(publication(&evs, "a.res.json"), Ok(()));
        assert!(matches!(publication(&evs, "b.res.json"), Err((true, _))), "written in place: a breach");
        assert!(matches!(publication(&evs, "c.res.json"), Err((false, _))), "not a `.tmp.` name: a departure");
        assert!(matches!(publication(&evs, "d.res.json"), Err((true, _))), "never appeared");
    }

    #[test]
    fn a_close_of_a_renamed_file_is_no_second_appearance() {
        use std::io::Write;
        let t = tempfile::tempdir().unwrap();
        let obs = Observer::watch(t.path(), FileKind::Response).unwrap();
        let since = Instant::now();
        // The fd outlives the rename, as a forked child's inherited copy does.
        let mut f = std::fs::File::create(t.path().join("a.res.json.tmp.1")).unwrap();
        f.write_all(b"{\"ok\":true}").unwrap();
        std::fs::rename(t.path().join("a.res.json.tmp.1"), t.path().join("a.res.json")).unwrap();
        drop(f);
        obs.wait_appeared("a.res.json", since, Duration::from_secs(5)).expect("appeared");
        std::thread::sleep(Duration::from_millis(100));
        let evs = obs.events();
        assert_eq!(evs.iter().filter(|e| e.name == "a.res.json" && e.bytes.is_some()).count(), 1, "{evs:?}");
        assert_eq!(publication(&evs, "a.res.json"), Ok(()));
    }
}
