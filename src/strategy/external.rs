//! Black-box runners: a relay dir served by someone else's program.
//!
//! The suite starts the command (argv, `{dir}` and `{sandbox}` substituted, never a shell),
//! keeps its stderr in a file, and waits until the program is ready: a probe call
//! (`relay-bench-probe`) answered, unless `ready = "none"`. Only then does the schedule
//! start, so whatever the program does at start-up (a stale sweep) touches no measured
//! call; the report gives the start-up time. The suite watches the relay dir from outside
//! with its own watch: a request file vanishing is the pickup (or, for a runner that does
//! not delete, its answer appearing), an answer appearing is the answer (and one pairing
//! event per appearance, so a doubled answer is a duplicate). Wake and handler time happen
//! inside the program and are not measured; relay overhead only when the scenario states
//! the handler's time. At the end the program is killed and reaped.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::Parts;
use crate::base::clock;
use crate::base::fields::{Fields, ScenarioError};
use crate::base::notice::{Say, StrategyNotice};
use crate::base::protocol::{classify, file_id_of, req_name, res_name, FileKind, Request};
use crate::base::units::human;
use crate::events::{CallId, EventKind, EventSink, RunnerSide};
use crate::relay::runner::{Control, RunnerReport, Started};
use crate::sandbox::dir::{Change, RelayDir, Seen, WatchHandle};

/// The probe call's id: the observer ignores it.
pub(crate) const PROBE_ID: &str = "relay-bench-probe";
/// How long a black-box runner gets to answer the probe.
pub(crate) const READY_BOUND: Duration = Duration::from_secs(30);

/// An external runner, as a case gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalSpec {
    /// argv; `{dir}` and `{sandbox}` are substituted in every element.
    pub command: Vec<String>,
    /// The handler's time, if the program states one (for relay overhead).
    pub handler: Option<Duration>,
    /// Wait for a probe call's answer before the schedule starts.
    pub probe: bool,
}

impl ExternalSpec {
    pub(crate) fn argv(&self, dir: &Path, sandbox: u32) -> Vec<String> {
        let d = dir.to_string_lossy();
        self.command.iter().map(|a| a.replace("{dir}", &d).replace("{sandbox}", &sandbox.to_string())).collect()
    }
}

#[derive(Default)]
struct Observed {
    /// When each request name vanished (first time).
    deleted: HashMap<String, Instant>,
    /// Answers seen per file id.
    answers: HashMap<String, u32>,
    report: RunnerReport,
    /// The probe's answer appeared.
    probe_answered: bool,
}

pub(crate) const NAME: &str = "external";
pub(super) const ABOUT: &str = "someone else's runner program (`runner = { command = [...] }`), measured from outside";

/// Reads `runner = { command = [...], handler = "5ms", ready = "probe" }`.
pub(super) fn parse(table: Option<&mut Fields<'_>>) -> Result<ExternalSpec, ScenarioError> {
    let Some(t) = table else {
        return Err(ScenarioError {
            file: String::new(),
            key: "runner".into(),
            msg: "an external runner needs `command`".into(),
        });
    };
    let command: Vec<String> = t.strings("command")?.into_iter().map(str::to_owned).collect();
    if command.is_empty() || command[0].is_empty() {
        return Err(
            t.err("command", "must be a non-empty array: the program and its arguments ({dir} is the relay dir)")
        );
    }
    let handler = t.duration("handler")?;
    let probe = t.choice("ready", &["probe", "none"])? != Some("none");
    Ok(ExternalSpec { command, handler, probe })
}

/// One of each notice of its own it says.
pub(super) fn notices() -> Vec<Say> {
    vec![Say::strategy(BlackBoxSaid("the external runner exited early (exit status: 1)".into()))]
}

/// What is said of a black-box runner (it exited, could not be watched): a line of its own,
/// no recovery step, never a degradation of a source (it has none of ours).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BlackBoxSaid(pub String);

impl fmt::Display for BlackBoxSaid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl StrategyNotice for BlackBoxSaid {}

impl ExternalSpec {
    pub(super) fn params(&self) -> String {
        format!(
            "command {:?}{}{}",
            self.command,
            self.handler.map_or_else(|| ", handler time not stated".into(), |h| format!(", handler {}", human(h))),
            if self.probe { ", ready when a probe call is answered" } else { "" }
        )
    }

    pub(super) fn departures(&self) -> Vec<super::Departure> {
        vec![super::Departure::design("runner = external program (not the suite's model of production)")]
    }

    pub(super) fn unavailable(&self) -> Vec<String> {
        let mut v = vec![
            "wake: happens inside the external runner, not visible from outside".to_owned(),
            "request counts: the external runner's own list/read/delete calls are not seen".to_owned(),
        ];
        if self.handler.is_none() {
            v.push("relay_overhead: the external runner's handler time is not known (state it with `handler` in the runner table)".to_owned());
        }
        v
    }

    pub(super) fn start(&self, parts: &Parts<'_>) -> Started {
        let stop = Arc::new(crate::base::signal::Signal::new());
        let stop2 = stop.clone();
        let control = Arc::new(Control::new(None).on_stop(move || stop2.close()));
        let (spec, dir, sink, reporter) = (self.clone(), parts.dir.clone(), parts.sink.clone(), parts.reporter.clone());
        let (sandbox, stderr_to) = (parts.sandbox, parts.stderr_to.to_path_buf());
        let c = control.clone();
        let task = tokio::spawn(async move {
            let observed = Arc::new(Mutex::new(Observed::default()));
            let watch = observe(&*dir, sandbox, spec.handler, observed.clone(), sink);
            if let Err(e) = &watch {
                reporter.say(Say::strategy(BlackBoxSaid(format!(
                    "cannot watch {} from outside: {e}; nothing measured",
                    dir.path().display()
                ))));
            }
            let argv = spec.argv(dir.path(), sandbox);
            let mut child = match spawn(&argv, &stderr_to) {
                Ok(ch) => Some(ch),
                Err(e) => {
                    c.fail_start(format!("cannot start the external runner {argv:?}: {e}"));
                    None
                }
            };
            // The group outlives an early exit of its leader: what it started is killed too.
            let group = child.as_ref().and_then(|ch| ch.id()).and_then(|p| i32::try_from(p).ok());
            let listed = group.map(crate::base::fsio::OwnGroup::register);
            let t0 = clock::now();
            if let (Some(ch), true) = (&mut child, spec.probe) {
                match probe(&*dir, &observed, &stop, ch).await {
                    Probe::Answered => c.mark_ready(),
                    Probe::Stopped => {}
                    Probe::TimedOut => c.fail_start(format!(
                        "the external runner did not answer the probe call within {}; see {}",
                        human(READY_BOUND),
                        stderr_to.display()
                    )),
                    Probe::Unpublished(e) => c.fail_start(format!("the probe call could not be published: {e}")),
                    Probe::Exited(how) => {
                        c.fail_start(format!(
                            "the external runner exited ({how}) before answering; see {}",
                            stderr_to.display()
                        ));
                        child = None;
                    }
                }
            } else if child.is_some() {
                c.mark_ready();
            }
            let startup = t0.elapsed();
            // Until the stop, noticing an early exit of the program (the outside watch stays
            // armed either way).
            if let Some(ch) = &mut child {
                tokio::select! {
                    st = ch.wait() => {
                        let how = st.map_or_else(|e| e.to_string(), |s| s.to_string());
                        reporter.say(Say::strategy(BlackBoxSaid(format!(
                            "the external runner exited early ({how}); see {}",
                            stderr_to.display()
                        ))));
                        child = None;
                    }
                    () = stop.closed() => {}
                }
            }
            stop.closed().await;
            kill_group(group, child).await;
            drop(listed);
            if let Ok(w) = watch {
                w.disarm();
            }
            let mut report = observed.lock().expect("observer poisoned").report.clone();
            report.startup = startup;
            report
        });
        Started { control, task }
    }
}

/// How the probe ended.
enum Probe {
    Answered,
    TimedOut,
    /// The program ended first (how it exited).
    Exited(String),
    /// The case was stopped first.
    Stopped,
    /// The probe request could not be written into the relay dir (the program still runs).
    Unpublished(String),
}

/// Publishes probe requests until one is answered (a fresh one every second: a runner that
/// sweeps its dir at start-up may remove the first unread), or the program exits, or the
/// bound passes; cleans them all up.
async fn probe(
    dir: &dyn RelayDir,
    observed: &Mutex<Observed>,
    stop: &crate::base::signal::Signal,
    child: &mut tokio::process::Child,
) -> Probe {
    let deadline = clock::now() + READY_BOUND;
    let mut ids = Vec::new();
    let mut next = clock::now();
    let end = loop {
        if observed.lock().expect("observer poisoned").probe_answered
            || ids.iter().any(|id: &String| dir.read(&res_name(id)).is_ok())
        {
            break Probe::Answered;
        }
        if let Ok(Some(status)) = child.try_wait() {
            break Probe::Exited(status.to_string());
        }
        let now = clock::now();
        if stop.is_closed() {
            break Probe::Stopped;
        }
        if now >= deadline {
            break Probe::TimedOut;
        }
        if now >= next {
            let id = format!("{PROBE_ID}-{}", ids.len() + 1);
            let body = Request::new(PROBE_ID, &id, None).expect("valid").encode();
            if let Err(e) = dir.publish(&req_name(&id), &body).await {
                break Probe::Unpublished(e.to_string());
            }
            ids.push(id);
            next = now + Duration::from_secs(1);
        }
        clock::sleep(Duration::from_millis(5)).await;
    };
    // Give a late answer to the other probes a moment, then leave nothing behind.
    clock::sleep(Duration::from_millis(50)).await;
    for id in &ids {
        let _ = dir.remove(&res_name(id));
        let _ = dir.remove(&req_name(id));
    }
    end
}

/// What is kept of a black-box runner's stderr: its first and its last 32 KiB (as `conform`
/// keeps 64 KiB of an implementation's), whatever it prints.
pub(crate) const STDERR_KEPT: usize = 64 << 10;

/// Starts the program in a process group of its own, so that whatever it starts in turn
/// ends with it ([`kill_group`]). Its stderr goes through a pipe into `stderr_to` (a regular
/// file or a new one, never through a link), capped at [`STDERR_KEPT`]: a program that
/// prints without end cannot fill the disk the run's reports are written to.
fn spawn(argv: &[String], stderr_to: &Path) -> std::io::Result<tokio::process::Child> {
    let (prog, args) = argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    crate::base::runfiles::note(stderr_to);
    // Appended to: a runner the case restarts adds to what it printed before.
    let file = crate::base::fsio::open_to_write(stderr_to, true)?;
    let (read, write) = pipe()?;
    let child = tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(write))
        .process_group(0)
        .kill_on_drop(true)
        .spawn()?;
    keep_stderr(std::fs::File::from(read), file);
    Ok(child)
}

/// A pipe (read end, write end), both closed on exec.
fn pipe() -> std::io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills `fds` with two new descriptors this function then owns.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just made and are owned by nobody else.
    Ok(unsafe { (std::os::fd::OwnedFd::from_raw_fd(fds[0]), std::os::fd::OwnedFd::from_raw_fd(fds[1])) })
}

/// Copies what arrives on `from` into `to` on a thread of its own until the pipe closes:
/// the first half of [`STDERR_KEPT`] as it comes, the last half when it ends, and a line
/// saying how much was left out between them. A write that fails ends the copy, not the
/// program (the pipe is still read, so it never blocks on a full one).
fn keep_stderr(mut from: std::fs::File, mut to: std::fs::File) {
    use std::io::{Read, Write};
    let half = STDERR_KEPT / 2;
    let _ = std::thread::Builder::new().name("runner-stderr".into()).spawn(move || {
        let (mut head, mut tail, mut left_out) = (half, Vec::<u8>::new(), 0u64);
        let mut ok = true;
        let mut buf = vec![0u8; 16 << 10];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let now = n.min(head);
            ok = ok && to.write_all(&buf[..now]).is_ok();
            head -= now;
            tail.extend_from_slice(&buf[now..n]);
            if tail.len() > half {
                let cut = tail.len() - half;
                tail.drain(..cut);
                left_out += cut as u64;
            }
        }
        if ok && left_out > 0 {
            let note = format!(
                "\n[relay-bench: {left_out} bytes of stderr left out here; the first and last {} KiB are kept]\n",
                half >> 10
            );
            ok = to.write_all(note.as_bytes()).is_ok();
        }
        if ok {
            let _ = to.write_all(&tail);
        }
    });
}

/// Kills the program's whole process group (what it started too) and reaps the program.
async fn kill_group(group: Option<i32>, child: Option<tokio::process::Child>) {
    if let Some(pgid) = group {
        // SAFETY: killpg only sends a signal, to the group spawn() created for the program.
        unsafe { libc::killpg(pgid, libc::SIGKILL) };
    }
    if let Some(mut ch) = child {
        let _ = ch.start_kill();
        let _ = ch.wait().await; // reaped
    }
}

/// The outside watch: request deletions and answer appearances, timestamped as they arrive.
fn observe(
    dir: &dyn RelayDir,
    sandbox: u32,
    handler: Option<Duration>,
    observed: Arc<Mutex<Observed>>,
    sink: EventSink,
) -> std::io::Result<Box<dyn WatchHandle>> {
    dir.watch(Box::new(move |seen| {
        let Seen::Name(name, change) = seen else { return };
        let now = clock::now();
        let mut s = observed.lock().expect("observer poisoned");
        if name.starts_with(PROBE_ID) {
            s.probe_answered |= classify(name) == FileKind::Response && change == Change::Appeared;
            return;
        }
        match (classify(name), change) {
            (FileKind::Request, Change::Removed) => {
                s.deleted.entry(name.to_owned()).or_insert(now);
            }
            (FileKind::Response, Change::Appeared) => {
                let Some(id) = file_id_of(name) else { return };
                let n = {
                    let c = s.answers.entry(id.to_owned()).or_insert(0);
                    *c += 1;
                    *c
                };
                let call: CallId = Arc::from(id);
                sink.emit_at(now, sandbox, &call, EventKind::Answering);
                if n == 1 {
                    s.report.requests += 1;
                    let picked = s.deleted.get(&req_name(id)).copied().filter(|t| *t <= now).unwrap_or(now);
                    let side = RunnerSide {
                        woke: picked,
                        picked,
                        handler_start: picked,
                        handler_end: handler.map_or(picked, |h| picked + h),
                        answered: Some(now),
                        observed: true,
                        handler_known: handler.is_some(),
                    };
                    sink.emit_at(now, sandbox, &call, EventKind::Runner(side));
                }
            }
            _ => {}
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_substitution() {
        let s = ExternalSpec {
            command: vec!["r".into(), "{dir}".into(), "--n={sandbox}".into()],
            handler: None,
            probe: true,
        };
        assert_eq!(s.argv(Path::new("/d x"), 3), vec!["r", "/d x", "--n=3"]);
    }
}
