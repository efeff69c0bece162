//! Filesystem primitives of the relay on a real directory: atomic publication (temp name in
//! the same directory, then rename), the stale sweep, and leftover counting.
//!
//! These are plain blocking calls on purpose: each is one or two syscalls on a local
//! directory (microseconds), and moving them to a blocking pool would add a thread hop to
//! every measured latency.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::protocol::{classify, FileKind, TMP_MARKER};

static NONCE: AtomicU64 = AtomicU64::new(0);

/// A temp name unique within this process: `<final>.tmp.<pid>-<counter>`.
pub fn temp_name(final_name: &str) -> String {
    let n = NONCE.fetch_add(1, Ordering::Relaxed);
    format!("{final_name}{TMP_MARKER}{}-{n}", std::process::id())
}

/// Writes `bytes` to `dir/<final>.tmp.<nonce>` and renames it onto `dir/<final>`, so a
/// reader of the final name always sees complete bytes. The temp file is removed if the
/// rename fails.
pub fn publish_atomic(dir: &Path, final_name: &str, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(temp_name(final_name));
    std::fs::write(&tmp, bytes)?;
    if let Err(e) = std::fs::rename(&tmp, dir.join(final_name)) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

/// Removes a file, treating "already gone" as success.
pub fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Names of relay files (requests, responses, their temp names) in `dir`.
pub fn relay_files(dir: &Path) -> io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if classify(&name) != FileKind::Other {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// What a sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    pub removed: usize,
    /// Relay files still present after the last try.
    pub remaining: Vec<String>,
    pub tries: u32,
}

/// Before a turn the runner removes stale relay files: requests, responses and their temp
/// names, never other files; up to `tries` passes `gap` apart until the dir holds none.
pub fn sweep_stale(dir: &Path, tries: u32, gap: Duration) -> io::Result<SweepReport> {
    let mut report = SweepReport::default();
    for attempt in 1..=tries.max(1) {
        report.tries = attempt;
        let names = relay_files(dir)?;
        if names.is_empty() {
            report.remaining.clear();
            return Ok(report);
        }
        report.remaining.clear();
        for name in names {
            match remove_if_present(&dir.join(&name)) {
                Ok(()) => report.removed += 1,
                Err(_) => report.remaining.push(name),
            }
        }
        if report.remaining.is_empty() {
            return Ok(report);
        }
        if attempt < tries {
            std::thread::sleep(gap);
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn publish_is_atomic_under_a_concurrent_reader() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let big_a = vec![b'a'; 256 * 1024];
        let big_b = vec![b'b'; 256 * 1024];
        publish_atomic(&path, "x.res.json", &big_a).unwrap();
        let reader = {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let bytes = std::fs::read(path.join("x.res.json")).unwrap();
                    assert_eq!(bytes.len(), 256 * 1024, "a reader saw a partial file");
                    assert!(bytes.iter().all(|&b| b == bytes[0]), "a reader saw mixed bytes");
                    reads += 1;
                }
                reads
            })
        };
        for i in 0..200 {
            publish_atomic(&path, "x.res.json", if i % 2 == 0 { &big_b } else { &big_a }).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(relay_files(&path).unwrap(), vec!["x.res.json".to_string()], "no temp file left behind");
    }

    #[test]
    fn sweep_removes_relay_files_only() {
        let dir = tempfile::tempdir().unwrap();
        for n in ["a.req.json", "a.res.json", "b.req.json.tmp.9", "b.res.json.tmp.1-2", "keep.txt", "keep.json.tmp.1"] {
            std::fs::write(dir.path().join(n), b"{}").unwrap();
        }
        let r = sweep_stale(dir.path(), 3, Duration::from_millis(150)).unwrap();
        assert_eq!(r.removed, 4);
        assert!(r.remaining.is_empty());
        let mut left: Vec<_> =
            std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        left.sort();
        assert_eq!(left, vec!["keep.json.tmp.1", "keep.txt"]);
    }

    #[test]
    fn temp_names_are_unique_and_ignored() {
        let a = temp_name("x.req.json");
        let b = temp_name("x.req.json");
        assert_ne!(a, b);
        assert_eq!(classify(&a), FileKind::Temp);
    }
}
