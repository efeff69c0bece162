//! A relay dir on this machine: plain syscalls, inotify, child processes.
//!
//! Its entries are untrusted: anyone who can write the dir can put a FIFO, a device, a
//! directory, a symbolic link or a huge file under a relay name, or a name that is not
//! UTF-8. A read opens without following links and without blocking, checks that it holds a
//! regular file and reads at most [`RealDir::DEFAULT_MAX_BYTES`] (or the dir's own cap); a
//! refusal is an [`UnsafeEntry`] error, which the runner reports once and skips.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{DirWatch, ExecOutput, LineDelay, Lines, OnSeen, RelayDir, WatchHandle};
use crate::base::clock;
use crate::base::fsio;
use crate::base::BoxFut;

/// A relay dir on this machine's filesystem.
#[derive(Debug, Clone)]
pub struct RealDir {
    dir: PathBuf,
    max_bytes: u64,
}

/// Why an entry under a relay name was not read: it is not a relay file, whatever its name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UnsafeEntry {
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
    #[error("a symbolic link (not followed)")]
    Symlink,
    #[error("larger than the {cap}-byte cap")]
    TooLarge { cap: u64 },
    #[error("its name is not UTF-8")]
    NotUtf8,
}

impl UnsafeEntry {
    /// The refusal inside `e`, if `e` is one.
    pub(crate) fn of(e: &io::Error) -> Option<&UnsafeEntry> {
        e.get_ref().and_then(|inner| inner.downcast_ref::<UnsafeEntry>())
    }

    fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }
}

impl RealDir {
    /// The read cap unless a dir is given its own: 16 MiB.
    pub(crate) const DEFAULT_MAX_BYTES: u64 = 16 << 20;

    /// The dir at `dir`, with the default read cap.
    pub fn new(dir: impl Into<PathBuf>) -> RealDir {
        RealDir { dir: dir.into(), max_bytes: Self::DEFAULT_MAX_BYTES }
    }

    /// Reads of more than `max_bytes` are refused.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> RealDir {
        self.max_bytes = max_bytes;
        self
    }

    /// `e`, or, when it is a missing entry because the dir itself is gone (deleted under the
    /// run), that: the machine's doing, not the relay's.
    fn gone_or(&self, e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::NotFound && std::fs::symlink_metadata(&self.dir).is_err() {
            fsio::dir_gone(&self.dir)
        } else {
            e
        }
    }
}

/// Reads a regular file without following a link or blocking on a FIFO, at most `cap` bytes
/// ([`fsio::read_bounded`]); a refusal is an [`UnsafeEntry`], a failure the plain error.
pub(crate) fn read_untrusted(path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    fsio::read_bounded(path, fsio::Bound::new("a relay file", cap)).map_err(|e| match e.why {
        fsio::Refused::Io(e) => e,
        fsio::Refused::NotRegular(what) => UnsafeEntry::NotRegular(what).into_io(),
        fsio::Refused::Symlink => UnsafeEntry::Symlink.into_io(),
        fsio::Refused::TooLarge { cap } => UnsafeEntry::TooLarge { cap }.into_io(),
    })
}

impl RelayDir for RealDir {
    fn list(&self) -> io::Result<Vec<String>> {
        // A name that is not UTF-8 is listed lossily (U+FFFD for each bad byte): no file has
        // that name, so its read fails and says why (see `read`).
        std::fs::read_dir(&self.dir)
            .map_err(|e| self.gone_or(e))?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect()
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        match read_untrusted(&self.dir.join(name), self.max_bytes) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && name.contains(char::REPLACEMENT_CHARACTER) => {
                Err(UnsafeEntry::NotUtf8.into_io())
            }
            other => other,
        }
    }

    fn stat(&self, name: &str) -> io::Result<u64> {
        std::fs::symlink_metadata(self.dir.join(name)).map(|m| m.len())
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        fsio::write_new(&self.dir.join(name), bytes).map_err(|e| self.gone_or(e))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        // A publication's temp file written, then its dir deleted before the rename: the same.
        std::fs::rename(self.dir.join(from), self.dir.join(to)).map_err(|e| self.gone_or(e))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        fsio::remove_if_present(&self.dir.join(name))
    }

    fn watch(&self, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>> {
        DirWatch::arm(&self.dir, on_seen).map(|w| Box::new(w) as Box<dyn WatchHandle>)
    }

    fn exec(&self, argv: &[OsString], timeout: Duration) -> BoxFut<'static, io::Result<ExecOutput>> {
        let argv = argv.to_vec();
        Box::pin(async move { run_child(&argv, timeout).await })
    }

    fn exec_follow(&self, argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines> {
        follow_child(argv, delay)
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}

/// Starts `argv` on this machine, no stdin, its stdout piped and its stderr to `stderr`,
/// killed when the child is dropped.
fn spawn(argv: &[OsString], stderr: std::process::Stdio) -> io::Result<tokio::process::Child> {
    let (prog, args) = argv.split_first().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty argv"))?;
    tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
}

/// Runs `argv` as a child process on this machine, killed (and reaped) after `timeout` or
/// when the future is dropped.
pub(crate) async fn run_child(argv: &[OsString], timeout: Duration) -> io::Result<ExecOutput> {
    let child = spawn(argv, std::process::Stdio::piped())?;
    match clock::timeout(timeout, child.wait_with_output()).await {
        Ok(out) => {
            let out = out?;
            Ok(ExecOutput { code: out.status.code(), stdout: out.stdout, stderr: out.stderr, timed_out: false })
        }
        // Dropping the wait drops the child: killed (kill_on_drop) and reaped by tokio.
        Err(_) => Ok(ExecOutput::timed_out()),
    }
}

/// Starts `argv` with its stdout followed line by line. Each line waits `delay()` before it
/// is handed on (a remote stream's response leg); dropping the receiver kills the program.
pub(crate) fn follow_child(argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines> {
    use tokio::io::AsyncBufReadExt;
    let mut child = spawn(argv, std::process::Stdio::null())?;
    let stdout = child.stdout.take().ok_or_else(|| io::Error::other("no stdout"))?;
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        let _child = child; // killed when this task ends
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(d) = &delay {
                d().await;
            }
            if tx.send(line).await.is_err() {
                break;
            }
        }
    });
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_child_past_its_timeout_is_killed_and_says_so() {
        let argv: Vec<OsString> = ["sleep", "30"].iter().map(Into::into).collect();
        let t0 = std::time::Instant::now();
        let out = run_child(&argv, Duration::from_millis(100)).await.unwrap();
        assert!(out.timed_out && out.code.is_none(), "{out:?}");
        assert!(t0.elapsed() < Duration::from_secs(20), "killed, not waited for");
        let argv: Vec<OsString> = ["sh", "-c", "echo hi; exit 3"].iter().map(Into::into).collect();
        let out = run_child(&argv, Duration::from_secs(20)).await.unwrap();
        assert_eq!((out.code, out.stdout.as_slice(), out.timed_out), (Some(3), &b"hi\n"[..], false));
    }

    #[test]
    fn an_untrusted_read_takes_regular_files_up_to_the_cap_only() {
        let dir = tempfile::tempdir().unwrap();
        let d = RealDir::new(dir.path()).with_max_bytes(8);
        std::fs::write(dir.path().join("eight.req.json"), b"12345678").unwrap();
        std::fs::write(dir.path().join("nine.req.json"), b"123456789").unwrap();
        std::os::unix::fs::symlink("eight.req.json", dir.path().join("link.req.json")).unwrap();
        assert_eq!(d.read("eight.req.json").unwrap(), b"12345678");
        let refused = |name: &str| UnsafeEntry::of(&d.read(name).unwrap_err()).cloned();
        assert_eq!(refused("nine.req.json"), Some(UnsafeEntry::TooLarge { cap: 8 }));
        assert_eq!(refused("link.req.json"), Some(UnsafeEntry::Symlink), "not followed, even inside the dir");
        assert_eq!(d.stat("link.req.json").unwrap(), "eight.req.json".len() as u64, "the link's own size");
        let gone = d.read("gone.req.json").unwrap_err();
        assert!(
            gone.kind() == io::ErrorKind::NotFound && UnsafeEntry::of(&gone).is_none(),
            "a vanished file is no refusal"
        );
    }

    #[test]
    fn publish_is_atomic_under_a_concurrent_reader() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let real = RealDir::new(&path);
        let stop = Arc::new(AtomicBool::new(false));
        let big_a = vec![b'a'; 256 * 1024];
        let big_b = vec![b'b'; 256 * 1024];
        super::super::publish_now(&real, "x.res.json", &big_a).unwrap();
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
            super::super::publish_now(&real, "x.res.json", if i % 2 == 0 { &big_b } else { &big_a }).unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(real.relay_files().unwrap(), vec!["x.res.json".to_string()], "no temp file left behind");
    }
}
