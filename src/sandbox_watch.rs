//! The in-sandbox watch program of the bounded-window exec strategy (SPEC §3), run as a
//! real child process: `relay-bench sandbox-watch DIR WINDOW_MS RELIST_MS [--inline]`.
//!
//! It arms a watch on DIR, lists once and finishes at once if a request is there, re-lists
//! every RELIST_MS, and finishes on the first event or when the window ends. The directory
//! travels in argv and is never given to a shell, so quotes, spaces, newlines and shell
//! metacharacters in it are harmless.
//!
//! Output, on stdout: a first line `found`, `event` or `idle` (window ended); with `--inline`,
//! then one JSON line per request present, `{"name": ..., "body": ...}`, so the runner can
//! skip its list and read round trips. Exit codes: 0 done, 2 bad arguments, 3 the watch
//! could not be armed, 4 the directory could not be listed.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::protocol::{classify, FileKind};
use crate::source::{DirWatch, ErrorOnce, Seen, WatchFilter};

/// Why the program finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// A request was already there when listed.
    Found,
    /// The watch fired.
    Event,
    /// The window ended with nothing.
    Idle,
}

impl Finish {
    pub fn word(self) -> &'static str {
        match self {
            Finish::Found => "found",
            Finish::Event => "event",
            Finish::Idle => "idle",
        }
    }
}

/// One request carried inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineRequest {
    pub name: String,
    pub body: String,
}

/// What the runner reads back from the program's stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchReport {
    pub finish: Finish,
    pub inline: Vec<InlineRequest>,
}

/// Parses the program's stdout; `None` if it is not the program's output.
pub fn parse_output(stdout: &[u8]) -> Option<WatchReport> {
    let text = std::str::from_utf8(stdout).ok()?;
    let mut lines = text.lines();
    let finish = match lines.next()? {
        "found" => Finish::Found,
        "event" => Finish::Event,
        "idle" => Finish::Idle,
        _ => return None,
    };
    let inline = lines.filter(|l| !l.is_empty()).map(serde_json::from_str).collect::<Result<_, _>>().ok()?;
    Some(WatchReport { finish, inline })
}

fn requests(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let name = e?.file_name().to_string_lossy().into_owned();
        if classify(&name) == FileKind::Request {
            out.push(name);
        }
    }
    out.sort();
    Ok(out)
}

/// The program's stdout: the finish word, then (inline) one JSON line per request carried.
pub fn render(how: Finish, carried: Vec<(String, String)>) -> String {
    let mut text = format!("{}\n", how.word());
    for (name, body) in carried {
        let line = serde_json::to_string(&InlineRequest { name, body }).expect("serializes");
        text.push_str(&line);
        text.push('\n');
    }
    text
}

fn finish(out: &mut impl Write, dir: &Path, how: Finish, inline: bool) -> i32 {
    let mut carried = Vec::new();
    if inline && how != Finish::Idle {
        for name in requests(dir).unwrap_or_default() {
            // A request deleted in the meantime, or not UTF-8, is left to the runner's list.
            if let Ok(body) = std::fs::read_to_string(dir.join(&name)) {
                carried.push((name, body));
            }
        }
    }
    let _ = out.write_all(render(how, carried).as_bytes());
    let _ = out.flush();
    0
}

/// Arms the watch on `dir`: every relevant event (a request name, or a rescan after an
/// overflow) arrives on the receiver. Exit code 3 when it cannot be armed.
fn arm(dir: &Path) -> Result<(DirWatch, std::sync::mpsc::Receiver<()>), i32> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let tx = std::sync::Mutex::new(tx);
    let on_seen = move |_: Seen<'_>| {
        let _ = tx.lock().map(|t| t.send(()));
    };
    match DirWatch::arm(dir, WatchFilter::Requests, Arc::new(ErrorOnce::default()), on_seen) {
        Ok(w) => Ok((w, rx)),
        Err(e) => {
            eprintln!("sandbox-watch: cannot watch {}: {e}", dir.display());
            Err(3)
        }
    }
}

/// Follow mode (the persistent-watcher baseline): stay up for `lifetime`, printing a line
/// `event` for every watch event and `found` for every re-list that finds requests, then a
/// last line `end`. Each line is flushed at once: the runner streams them.
pub fn follow(dir: &Path, lifetime: Duration, relist: Duration) -> i32 {
    let deadline = Instant::now() + lifetime;
    let (watch, rx) = match arm(dir) {
        Ok(w) => w,
        Err(code) => return code,
    };
    let mut out = std::io::stdout().lock();
    let mut say = |word: &str| out.write_all(format!("{word}\n").as_bytes()).and_then(|_| out.flush()).is_ok();
    let mut next_list = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline {
            watch.disarm();
            say("end");
            return 0;
        }
        if now >= next_list {
            match requests(dir) {
                Ok(found) if !found.is_empty() && !say("found") => return 0,
                Ok(_) => {}
                Err(e) => {
                    eprintln!("sandbox-watch: cannot list {}: {e}", dir.display());
                    return 4;
                }
            }
            next_list = now + relist;
        }
        match rx.recv_timeout(next_list.min(deadline).saturating_duration_since(now)) {
            // The reader went away (stdout closed): nothing left to do.
            Ok(()) if !say("event") => return 0,
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return 3,
        }
    }
}

/// Runs the program; returns its exit code.
pub fn run(dir: &Path, window: Duration, relist: Duration, inline: bool) -> i32 {
    let start = Instant::now();
    let deadline = start + window;
    // Arm first, then list: a request created between the two is seen by one or the other.
    let (watch, rx) = match arm(dir) {
        Ok(w) => w,
        Err(code) => return code,
    };
    let mut out = std::io::stdout().lock();
    let mut next_list = start;
    loop {
        let now = Instant::now();
        if now >= next_list {
            match requests(dir) {
                Ok(found) if !found.is_empty() => return finish(&mut out, dir, Finish::Found, inline),
                Ok(_) => {}
                Err(e) => {
                    eprintln!("sandbox-watch: cannot list {}: {e}", dir.display());
                    return 4;
                }
            }
            next_list = now + relist;
        }
        if now >= deadline {
            watch.disarm();
            return finish(&mut out, dir, Finish::Idle, inline);
        }
        match rx.recv_timeout(next_list.min(deadline).saturating_duration_since(now)) {
            Ok(()) => {
                watch.disarm();
                return finish(&mut out, dir, Finish::Event, inline);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                eprintln!("sandbox-watch: the watch stopped");
                return 3;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_round_trips() {
        let r = parse_output(b"event\n{\"name\":\"a.req.json\",\"body\":\"{}\"}\n").unwrap();
        assert_eq!(r.finish, Finish::Event);
        assert_eq!(r.inline, vec![InlineRequest { name: "a.req.json".into(), body: "{}".into() }]);
        assert_eq!(parse_output(b"idle\n").unwrap().finish, Finish::Idle);
        assert!(parse_output(b"Segmentation fault\n").is_none());
        assert!(parse_output(b"").is_none());
    }

    #[test]
    fn finishes_at_once_when_a_request_is_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x.req.json"), b"{}").unwrap();
        let t0 = Instant::now();
        assert_eq!(run(dir.path(), Duration::from_secs(30), Duration::from_secs(2), false), 0);
        assert!(t0.elapsed() < Duration::from_secs(20), "did not wait for the window");
    }

    #[test]
    fn an_idle_window_ends_and_a_missing_dir_fails() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(run(dir.path(), Duration::from_millis(50), Duration::from_millis(20), false), 0);
        assert_eq!(run(&dir.path().join("gone"), Duration::from_millis(50), Duration::from_millis(20), false), 3);
    }
}
