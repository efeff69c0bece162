//! The daemon a ramp runs against: one started for it on loopback (as the sandbox-agent
//! host starts one per sandbox), or one already running (`--url`, with `--pid` when it runs
//! on this machine). What the ramp reads of it through /proc (RSS, fds, threads, children,
//! limits), how it counts the held programs running (the daemon's children whose argv is
//! the ramp's own, marked with a nonce), and the cleanup: every held program killed by its
//! pid, the daemon stopped, and a last look that nothing is left.

use std::path::Path;
use std::time::Duration;

use super::NoFile;
use crate::base::clock;
use crate::results::capacity::{Limit, Readings};
use crate::sandbox::host::{AgentProcess, Url};

use crate::sandbox::host::{Endpoint, ExecError};

/// How the daemon under test ended (a ramp reads it as the daemon having died).
#[derive(Debug, thiserror::Error)]
pub(super) enum Gone {
    #[error("{0}")]
    Exited(std::process::ExitStatus),
    #[error("its process is gone")]
    Vanished,
}

/// Why the daemon's version is not known (the daemon is then not used).
#[derive(Debug, thiserror::Error)]
pub(super) enum VersionUnknown {
    #[error("{0}")]
    Exec(ExecError),
    #[error("--version through the daemon failed: {0}")]
    Failed(String),
}

/// The daemon under test.
pub(super) struct Target {
    pub endpoint: Endpoint,
    pub url: String,
    /// Its process, when it runs on this machine.
    pub pid: Option<u32>,
    started: Option<AgentProcess>,
    /// Its children seen running the held program: each one's argv is read once (a look
    /// at 1000 held execs would read 1000 files, on the cpus the daemon needs).
    seen: std::sync::Mutex<std::collections::HashSet<u32>>,
}

/// How long a command relay-bench runs through the daemon (its version, a count, the
/// cleanup) may take.
const SHORT_MS: u64 = 30_000;

impl Target {
    /// Starts `bin` on a free loopback port (killed with relay-bench, as every daemon it
    /// starts is).
    pub(super) fn start(bin: &Path) -> std::io::Result<Target> {
        let process = AgentProcess::start(bin)?;
        let addr = process.addr();
        let endpoint = Endpoint { addr, authority: addr.to_string(), token: None };
        Ok(Target::new(endpoint, process.base.clone(), process.pid(), Some(process)))
    }

    /// One already running at `url` (`pid`: its process on this machine, if it is here).
    pub(super) fn running(url: &Url, pid: Option<u32>, token: Option<String>) -> std::io::Result<Target> {
        let endpoint = Endpoint { addr: url.addr()?, authority: url.host_port(), token };
        Ok(Target::new(endpoint, url.base(), pid, None))
    }

    fn new(endpoint: Endpoint, url: String, pid: Option<u32>, started: Option<AgentProcess>) -> Target {
        Target { endpoint, url, pid, started, seen: Default::default() }
    }

    pub(super) fn started_here(&self) -> bool {
        self.started.is_some()
    }

    /// `Err` (how it ended) once the daemon's process is gone.
    pub(crate) fn alive(&self) -> Result<(), Gone> {
        if let Some(status) = self.started.as_ref().and_then(AgentProcess::exit_status) {
            return Err(Gone::Exited(status));
        }
        match self.pid {
            Some(pid) if gone(pid) => Err(Gone::Vanished),
            _ => Ok(()),
        }
    }

    /// Its resources now (nothing known of a daemon elsewhere).
    pub(super) fn readings(&self) -> Readings {
        let Some(pid) = self.pid else { return Readings::default() };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        Readings {
            rss_kib: status_field(&status, "VmRSS"),
            fds: std::fs::read_dir(format!("/proc/{pid}/fd")).ok().map(|d| d.count() as u64),
            threads: status_field(&status, "Threads"),
            children: Some(children_of(pid).len() as u64),
        }
    }

    /// A line of its /proc/PID/limits (`Max open files`).
    pub(super) fn limit(&self, name: &str) -> Option<Limit> {
        let text = std::fs::read_to_string(format!("/proc/{}/limits", self.pid?)).ok()?;
        limits_line(&text, name)
    }

    /// `pids.max` of its cgroup (v2), or of the nearest ancestor that has one.
    pub(crate) fn cgroup_pids_max(&self) -> Option<String> {
        let text = std::fs::read_to_string(format!("/proc/{}/cgroup", self.pid?)).ok()?;
        let rel = text.lines().find_map(|l| l.strip_prefix("0::"))?;
        let mut dir = Path::new("/sys/fs/cgroup").join(rel.trim_start_matches('/'));
        loop {
            if let Ok(v) = std::fs::read_to_string(dir.join("pids.max")) {
                return Some(format!("{} ({})", v.trim(), dir.display()));
            }
            if !dir.pop() || !dir.starts_with("/sys/fs/cgroup") {
                return None;
            }
        }
    }

    /// Sets the started daemon's soft open-files limit as `--nofile` asks: to its hard limit,
    /// or to a number.
    pub(crate) fn set_nofile(&self, to: NoFile) -> std::io::Result<()> {
        let pid = self
            .pid
            .filter(|_| self.started_here())
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::Unsupported, "only a daemon relay-bench started"))?;
        let old = prlimit_nofile(pid, None)?;
        let soft = if let NoFile::To(n) = to { n as libc::rlim_t } else { old.rlim_max };
        prlimit_nofile(pid, Some(&libc::rlimit { rlim_cur: soft, rlim_max: old.rlim_max })).map(drop)
    }

    /// The held programs running now (the daemon's children with the ramp's argv); `None`
    /// for a daemon elsewhere.
    pub(crate) fn held_running(&self, argv: &[String]) -> Option<u32> {
        let children = children_of(self.pid?);
        let mut seen = self.seen.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        seen.retain(|c| children.contains(c));
        for c in children {
            // A child not yet seen may be between its clone and its exec: looked at again.
            if !seen.contains(&c) && argv_of(c).as_deref() == Some(argv) {
                seen.insert(c);
            }
        }
        Some(seen.len() as u32)
    }

    /// What its own binary says to `--version` (asked through an exec: the daemon has no
    /// version endpoint, and the process it spawns reads its parent's executable).
    pub(super) async fn version(&self) -> Result<String, VersionUnknown> {
        let argv = sh(r#"exec "$(readlink /proc/$PPID/exe)" --version"#, &[]);
        let a = self.endpoint.run_alone(&argv, SHORT_MS, None).await.map_err(VersionUnknown::Exec)?;
        match a.exit_code {
            Some(0) => Ok(a.stdout.trim().to_owned()),
            _ => Err(VersionUnknown::Failed(a.stderr.trim().to_owned())),
        }
    }

    /// Kills every held program (`argv`) by its pid: on this machine through /proc, the
    /// daemon's children first (it reaps them), then any left elsewhere (orphans of a daemon
    /// that died); for a daemon elsewhere, through an exec in its sandbox. Returns how many
    /// were killed and the pids still running after.
    pub(crate) async fn kill_held(&self, argv: &[String]) -> (u32, Vec<u32>) {
        if self.pid.is_none() {
            return self.kill_held_remotely(argv).await;
        }
        let mut killed = 0;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let found = marked(argv);
            if found.is_empty() {
                // Twice empty, a moment apart: a spawn under way is not missed.
                clock::sleep(Duration::from_millis(100)).await;
                if marked(argv).is_empty() {
                    return (killed, Vec::new());
                }
                continue;
            }
            if std::time::Instant::now() >= deadline {
                return (killed, found);
            }
            for p in found {
                // SAFETY: kill() only sends a signal, to a process running this ramp's own argv.
                if unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
            }
            clock::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn kill_held_remotely(&self, argv: &[String]) -> (u32, Vec<u32>) {
        // Every process of the sandbox whose argv is the marked one, itself aside, by pid.
        let script = r#"n=0; want=$(printf '%s ' "$@"); for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = $$ ] && continue; c=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null) || continue; if [ "$c" = "$want" ]; then kill -9 "$p" 2>/dev/null && n=$((n+1)); fi; done; echo $n"#;
        let left_script = r#"want=$(printf '%s ' "$@"); for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = $$ ] && continue; c=$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null) || continue; [ "$c" = "$want" ] && echo "$p"; done; true"#;
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        let killed = match self.endpoint.run_alone(&sh(script, &args), SHORT_MS, None).await {
            Ok(a) => a.stdout.trim().parse().unwrap_or(0),
            Err(_) => 0,
        };
        clock::sleep(Duration::from_millis(200)).await;
        let left = match self.endpoint.run_alone(&sh(left_script, &args), SHORT_MS, None).await {
            Ok(a) => a.stdout.split_whitespace().filter_map(|p| p.parse().ok()).collect(),
            // Unknown: said as nothing known left would be a lie; the daemon is unreachable.
            Err(_) => vec![0],
        };
        (killed, left)
    }

    /// The held programs still running on this machine after the cleanup (a last look);
    /// nothing known of a daemon elsewhere (its cleanup said what it left).
    pub(super) fn left(&self, argv: &[String]) -> Vec<u32> {
        if self.pid.is_some() {
            marked(argv)
        } else {
            Vec::new()
        }
    }

    /// Stops the daemon relay-bench started (killed and reaped); `Some(gone)` for it, `None`
    /// for one it did not start.
    pub(super) fn stop(&mut self) -> Option<bool> {
        let process = self.started.take()?;
        drop(process);
        Some(self.pid.is_none_or(gone))
    }
}

fn sh(script: &str, args: &[&str]) -> Vec<String> {
    let mut argv = vec!["sh".to_owned(), "-c".to_owned(), script.to_owned(), "sh".to_owned()];
    argv.extend(args.iter().map(|a| (*a).to_owned()));
    argv
}

/// The open-files limit of `pid` (the daemon this process started), set to `new` if given;
/// the limit before.
fn prlimit_nofile(pid: u32, new: Option<&libc::rlimit>) -> std::io::Result<libc::rlimit> {
    let mut old = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    let new = new.map_or(std::ptr::null(), |n| n as *const libc::rlimit);
    // SAFETY: prlimit on the daemon this process started, with a valid limit or none, writing `old`.
    if unsafe { libc::prlimit(pid as libc::pid_t, libc::RLIMIT_NOFILE, new, &mut old) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(old)
}

// rlim_t is not u64 on every target.
#[allow(clippy::unnecessary_cast)]
fn rlim(v: libc::rlim_t) -> Option<u64> {
    (v != libc::RLIM_INFINITY).then_some(v as u64)
}

/// This process's open-files limit, as the kernel has it.
fn own_nofile() -> Option<libc::rlimit> {
    let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit with a valid struct.
    (unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) } == 0).then_some(l)
}

/// relay-bench's own open-files limit, its soft limit first raised to the hard one (one
/// connection per held exec: the client must not be the limit). Called after the daemon is
/// started, which keeps the limit it was given.
pub(super) fn raise_own_nofile() -> Option<Limit> {
    let l = own_nofile()?;
    let raised = libc::rlimit { rlim_cur: l.rlim_max, rlim_max: l.rlim_max };
    // SAFETY: setrlimit on this process with a valid struct.
    let l = if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 { raised } else { l };
    Some(Limit { soft: rlim(l.rlim_cur), hard: rlim(l.rlim_max) })
}

/// This process's hard open-files limit (a started daemon inherits it).
pub(super) fn own_nofile_hard() -> Option<u64> {
    rlim(own_nofile()?.rlim_max)
}

/// Whether `pid` is gone (no such process, or a zombie).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // pid (comm) STATE ...: the comm may hold spaces and parentheses; the state follows the last ')'.
        Ok(stat) => {
            stat.rsplit_once(')').is_none_or(|(_, rest)| matches!(rest.trim_start().chars().next(), Some('Z' | 'X')))
        }
        Err(_) => true,
    }
}

/// A `Name:  value kB` field of /proc/PID/status, as a number.
pub(super) fn status_field(status: &str, name: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// A line of /proc/PID/limits: `Max open files   1024   4096   files`.
pub(super) fn limits_line(limits: &str, name: &str) -> Option<Limit> {
    let line = limits.lines().find(|l| l.starts_with(name))?;
    let mut fields = line[name.len()..].split_whitespace();
    let value = |f: Option<&str>| -> Option<Option<u64>> {
        match f? {
            "unlimited" => Some(None),
            n => n.parse().ok().map(Some),
        }
    };
    Some(Limit { soft: value(fields.next())?, hard: value(fields.next())? })
}

/// The live children of `pid` (every thread's).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect::<Vec<u32>>())
        .collect()
}

fn argv_of(pid: u32) -> Option<Vec<String>> {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(raw.split(|b| *b == 0).filter(|a| !a.is_empty()).map(|a| String::from_utf8_lossy(a).into_owned()).collect())
}

/// Every process on this machine running exactly `argv` (the ramp's marked held program).
fn marked(argv: &[String]) -> Vec<u32> {
    let Ok(all) = std::fs::read_dir("/proc") else { return Vec::new() };
    all.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| argv_of(*p).as_deref() == Some(argv))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_and_limits_are_read() {
        let status = "Name:\tsandbox-agent\nVmRSS:\t   13160 kB\nThreads:\t4\n";
        assert_eq!(status_field(status, "VmRSS"), Some(13160));
        assert_eq!(status_field(status, "Threads"), Some(4));
        assert_eq!(status_field(status, "VmHWM"), None);
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max processes             96365                96365                processes \n\
                      Max open files            1024                 4096                 files     \n\
                      Max locked memory         unlimited            unlimited            bytes     \n";
        assert_eq!(limits_line(limits, "Max open files"), Some(Limit { soft: Some(1024), hard: Some(4096) }));
        assert_eq!(limits_line(limits, "Max processes"), Some(Limit { soft: Some(96365), hard: Some(96365) }));
        assert_eq!(limits_line(limits, "Max locked memory"), Some(Limit { soft: None, hard: None }));
        assert_eq!(limits_line(limits, "Max core file size"), None);
    }

    #[test]
    fn this_process_is_alive_and_reads_as_a_daemon_would() {
        let me = std::process::id();
        assert!(!gone(me));
        assert!(gone(u32::MAX - 1));
        let argv = argv_of(me).unwrap();
        assert!(!argv.is_empty());
        assert!(marked(&argv).contains(&me));
        let t = Target {
            endpoint: Endpoint { addr: ([127, 0, 0, 1], 9).into(), authority: "127.0.0.1:9".into(), token: None },
            url: "http://127.0.0.1:9".into(),
            pid: Some(me),
            started: None,
            seen: Default::default(),
        };
        let r = t.readings();
        assert!(r.rss_kib.unwrap() > 0 && r.fds.unwrap() > 0 && r.threads.unwrap() >= 1, "{r:?}");
        assert!(t.limit("Max open files").is_some());
        assert!(t.alive().is_ok());
    }
}
