//! The implementation's processes: started with placeholders substituted (never a shell),
//! in a process group of their own, their output read through pipes and capped, and every
//! process they started — a daemon that `setsid`s away from the group included — killed
//! when the case ends.
//!
//! The battery makes itself a **child subreaper** (`prctl(PR_SET_CHILD_SUBREAPER)`): a
//! process the implementation started and left behind is re-parented to the battery rather
//! than to init, so it stays a descendant the battery can find (`/proc`) and kill at the case's
//! end ([`end_descendants`]), whatever session or group it moved to.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::base::fsio::OwnGroup;

/// What is kept of an implementation's stdout (its head) and stderr (its tail).
pub(crate) const STDOUT_CAP: usize = 1 << 20;
pub(crate) const STDERR_CAP: usize = 64 << 10;

/// A placeholder's value, as `{name}` in argv and `var` in the environment. `None`: the
/// placeholder is absent (a call without a timeout, without args): its variable is unset and
/// an argument naming it is dropped, with a flag (`-…`) right before it.
pub(crate) struct Place<'a> {
    pub name: &'static str,
    pub var: &'static str,
    pub value: Option<&'a str>,
}

/// argv with every placeholder substituted, and the arguments of absent ones dropped.
pub(crate) fn substitute(command: &[String], places: &[Place<'_>]) -> Vec<String> {
    let absent = |a: &str| places.iter().any(|p| p.value.is_none() && a.contains(&format!("{{{}}}", p.name)));
    let mut argv: Vec<String> = Vec::with_capacity(command.len());
    for (i, a) in command.iter().enumerate() {
        if i > 0 && absent(a) {
            if argv.len() > 1 && argv.last().is_some_and(|f| f.starts_with('-')) {
                argv.pop();
            }
            continue;
        }
        argv.push(places.iter().fold(a.clone(), |a, p| a.replace(&format!("{{{}}}", p.name), p.value.unwrap_or(""))));
    }
    argv
}

/// Looks every 5 ms until `look` finds something, at most `bound`: what it found.
pub(crate) fn poll<T>(bound: Duration, mut look: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + bound;
    loop {
        if let Some(found) = look() {
            return Some(found);
        }
        if Instant::now() >= end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A pipe's bytes as read: the part kept and how many there were.
#[derive(Default)]
struct Kept {
    bytes: Vec<u8>,
    total: u64,
}

/// Reads `from` to its end on a thread of its own, keeping the first `cap` bytes (`head`) or
/// the last `cap` (tail); the implementation is never blocked on a full pipe.
fn drain(mut from: impl Read + Send + 'static, cap: usize, head: bool) -> Arc<Mutex<Kept>> {
    let kept = Arc::new(Mutex::new(Kept::default()));
    let k = kept.clone();
    let _ = std::thread::Builder::new().name("conform-output".into()).spawn(move || {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut k = k.lock().unwrap_or_else(|p| p.into_inner());
            k.total += n as u64;
            if head {
                let room = cap.saturating_sub(k.bytes.len());
                k.bytes.extend_from_slice(&buf[..n.min(room)]);
            } else {
                k.bytes.extend_from_slice(&buf[..n]);
                if k.bytes.len() > cap {
                    let cut = k.bytes.len() - cap;
                    k.bytes.drain(..cut);
                }
            }
        }
    });
    kept
}

/// The implementation's process: its own process group, stdout and stderr read and capped,
/// killed (the whole group) when dropped.
pub(crate) struct Proc {
    child: Child,
    _group: OwnGroup,
    stdout: Arc<Mutex<Kept>>,
    stderr: Arc<Mutex<Kept>>,
    pub started: Instant,
    /// The argv it was started with.
    pub argv: Vec<String>,
}

impl Proc {
    /// Starts `command` with `places` substituted in every argument and set in the
    /// environment.
    pub(crate) fn start(command: &[String], places: &[Place<'_>]) -> std::io::Result<Proc> {
        use std::os::unix::process::CommandExt;
        let argv = substitute(command, places);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        for p in places {
            match p.value {
                Some(v) => cmd.env(p.var, v),
                None => cmd.env_remove(p.var),
            };
        }
        let mut child =
            cmd.spawn().map_err(|e| std::io::Error::new(e.kind(), format!("cannot start {:?}: {e}", argv[0])))?;
        let group = OwnGroup::register(child.id() as i32);
        let stdout = child.stdout.take().map(|o| drain(o, STDOUT_CAP, true)).unwrap_or_default();
        let stderr = child.stderr.take().map(|e| drain(e, STDERR_CAP, false)).unwrap_or_default();
        Ok(Proc { child, _group: group, stdout, stderr, started: Instant::now(), argv })
    }

    /// Its exit code, if it has exited (`Some(None)`: killed by a signal).
    pub(crate) fn exited(&mut self) -> Option<Option<i32>> {
        self.child.try_wait().ok().flatten().map(|s| s.code())
    }

    /// Waits for it to exit, at most `bound`; its exit code and when, or `None` (still running).
    pub(crate) fn wait(&mut self, bound: Duration) -> Option<(Option<i32>, Instant)> {
        poll(bound, || self.exited().map(|code| (code, Instant::now())))
    }

    /// What it printed on stdout (its first [`STDOUT_CAP`] bytes), once the pipe is drained
    /// (a moment after it exits).
    pub(crate) fn stdout_text(&self) -> String {
        let end = Instant::now() + Duration::from_millis(200);
        loop {
            let done = Arc::strong_count(&self.stdout) == 1;
            if done || Instant::now() >= end {
                let k = self.stdout.lock().unwrap_or_else(|p| p.into_inner());
                return String::from_utf8_lossy(&k.bytes).into_owned();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// How many bytes it printed on stdout and stderr (counted, not kept).
    pub(crate) fn printed(&self) -> (u64, u64) {
        let count = |k: &Arc<Mutex<Kept>>| k.lock().unwrap_or_else(|p| p.into_inner()).total;
        (count(&self.stdout), count(&self.stderr))
    }

    /// The last line of its stderr, as evidence.
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        let k = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let s = String::from_utf8_lossy(&k.bytes);
        s.lines().rev().find(|l| !l.trim().is_empty()).map(|l| {
            let shown: String =
                l.chars().take(200).map(|c| if c.is_control() && c != '\t' { '\u{FFFD}' } else { c }).collect();
            format!("its stderr ends: {shown}")
        })
    }

    pub(crate) fn kill(&mut self) {
        // SAFETY: killpg only sends a signal, to the group this process leads.
        unsafe { libc::killpg(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Makes this process a child subreaper: orphans among its descendants are re-parented to
/// it. Whether the kernel took it.
pub(crate) fn become_subreaper() -> bool {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 }
}

/// Every live process below this one (`/proc`'s parent links), zombies left out.
pub(crate) fn descendants() -> Vec<(i32, i32)> {
    let me = std::process::id() as i32;
    let mut procs: Vec<(i32, i32, bool)> = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else { continue };
        let mut f = rest.split_whitespace();
        let zombie = f.next() == Some("Z");
        let Some(ppid) = f.next().and_then(|p| p.parse().ok()) else { continue };
        procs.push((pid, ppid, zombie));
    }
    let mut found: Vec<(i32, i32)> = Vec::new();
    let mut frontier = vec![me];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid, zombie) in &procs {
            if ppid == p && !found.iter().any(|(q, _)| *q == pid) {
                frontier.push(pid);
                if !zombie {
                    found.push((pid, ppid));
                }
            }
        }
    }
    found
}

/// SIGKILLs every process below this one, reaps the ones that were re-parented here, and
/// waits (at most `bound`) until none is left. How many were killed.
pub(crate) fn end_descendants(bound: Duration) -> usize {
    let end = Instant::now() + bound;
    let me = std::process::id() as i32;
    let mut killed = std::collections::HashSet::new();
    loop {
        let doomed = descendants();
        for (pid, ppid) in &doomed {
            // SAFETY: kill only sends a signal, to a process below this one.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
            killed.insert(*pid);
            if *ppid == me {
                // SAFETY: waitpid on one child of this process, without blocking.
                unsafe { libc::waitpid(*pid, std::ptr::null_mut(), libc::WNOHANG) };
            }
        }
        // Zombies re-parented here are reaped too (their std Child, if any, is gone).
        for pid in killed.iter() {
            // SAFETY: as above; a pid that is not a child answers ECHILD.
            unsafe { libc::waitpid(*pid, std::ptr::null_mut(), libc::WNOHANG) };
        }
        if doomed.is_empty() || Instant::now() >= end {
            return killed.len();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_placeholders_drop_their_arguments_and_their_flag() {
        let cmd: Vec<String> =
            ["call", "--id", "{id}", "--args", "{args}", "--timeout", "{timeout_ms}ms"].map(String::from).to_vec();
        let places = [
            Place { name: "id", var: "I", value: Some("a") },
            Place { name: "args", var: "A", value: None },
            Place { name: "timeout_ms", var: "T", value: None },
        ];
        assert_eq!(substitute(&cmd, &places), ["call", "--id", "a"]);
        let places = [
            Place { name: "id", var: "I", value: Some("a") },
            Place { name: "args", var: "A", value: Some("{}") },
            Place { name: "timeout_ms", var: "T", value: Some("100") },
        ];
        assert_eq!(substitute(&cmd, &places), ["call", "--id", "a", "--args", "{}", "--timeout", "100ms"]);
    }

    #[test]
    fn output_is_capped_and_counted() {
        let cmd: Vec<String> =
            ["sh", "-c", "head -c 3000000 /dev/zero; head -c 200000 /dev/zero >&2; printf '\\nlast\\n' >&2"]
                .map(String::from)
                .to_vec();
        let mut p = Proc::start(&cmd, &[]).unwrap();
        assert!(p.wait(Duration::from_secs(60)).is_some());
        assert_eq!(p.stdout_text().len(), STDOUT_CAP);
        let end = Instant::now() + Duration::from_secs(10);
        while p.printed() != (3_000_000, 200_006) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(p.printed(), (3_000_000, 200_006));
        assert_eq!(p.stderr_tail().as_deref(), Some("its stderr ends: last"));
    }
}
