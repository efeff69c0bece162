//! Black-box runners: a relay dir served by someone else's program.
//!
//! The suite starts the command (argv, `{dir}` and `{sandbox}` substituted, never a shell),
//! keeps its stderr in a file, and watches the relay dir from outside with its own inotify
//! watch: a request file vanishing is the pickup (or, for a runner that does not delete,
//! its answer appearing), an answer appearing is the answer (and one pairing event per
//! appearance, so a doubled answer is a duplicate). Wake and handler time happen inside the
//! program and are not measured; relay overhead only when the scenario states the
//! handler's time. At the end the program is killed and reaped.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{EventKind as NotifyKind, ModifyKind, RenameMode};
use notify::{RecursiveMode, Watcher};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::events::{CallId, EventKind, EventSink, RunnerSide};
use crate::protocol::{classify, file_id_of, FileKind};
use crate::runner::RunnerReport;
use crate::source::{ActivitySource, TimerSource, Wake};

/// An external runner, as a case gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalSpec {
    /// argv; `{dir}` and `{sandbox}` are substituted in every element.
    pub command: Vec<String>,
    /// The handler's time, if the program states one (for relay overhead).
    pub handler: Option<Duration>,
}

impl ExternalSpec {
    pub fn argv(&self, dir: &Path, sandbox: u32) -> Vec<String> {
        let d = dir.to_string_lossy();
        self.command.iter().map(|a| a.replace("{dir}", &d).replace("{sandbox}", &sandbox.to_string())).collect()
    }
}

#[derive(Default)]
struct Seen {
    /// When each request name vanished (first time).
    deleted: HashMap<String, Instant>,
    /// Answers seen per file id.
    answers: HashMap<String, u32>,
    report: RunnerReport,
}

/// Starts the program and the observer; the task ends (program killed and reaped) when
/// the returned source is closed.
pub fn start(
    spec: &ExternalSpec,
    sandbox: u32,
    dir: &Path,
    stderr_to: &Path,
    sink: EventSink,
) -> (Arc<dyn ActivitySource>, JoinHandle<RunnerReport>) {
    let stop: Arc<TimerSource> = Arc::new(TimerSource::new());
    let argv = spec.argv(dir, sandbox);
    let handler = spec.handler;
    let (dir, stderr_to, stop2) = (dir.to_path_buf(), stderr_to.to_path_buf(), stop.clone());
    let task = tokio::spawn(async move {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let watch = observe(&dir, sandbox, handler, seen.clone(), sink.clone());
        if let Err(e) = &watch {
            sink.notice(sandbox, format!("cannot watch {} from outside: {e}; nothing measured", dir.display()));
        }
        let child = spawn(&argv, &stderr_to);
        let mut child = match child {
            Ok(c) => Some(c),
            Err(e) => {
                sink.notice(sandbox, format!("cannot start the external runner {argv:?}: {e}"));
                None
            }
        };
        // Wait for the stop, noticing an early exit of the program.
        loop {
            let exited = match &mut child {
                Some(c) => tokio::select! {
                    st = c.wait() => Some(st),
                    w = stop2.wait(Duration::from_secs(86_400)) => { if w == Wake::Closed { break } None }
                },
                None => {
                    if stop2.wait(Duration::from_secs(86_400)).await == Wake::Closed {
                        break;
                    }
                    None
                }
            };
            if let Some(st) = exited {
                let how = st.map_or_else(|e| e.to_string(), |s| s.to_string());
                sink.notice(sandbox, format!("the external runner exited early ({how}); see {}", stderr_to.display()));
                child = None;
            }
        }
        if let Some(mut c) = child {
            let _ = c.start_kill();
            let _ = c.wait().await; // reaped
        }
        drop(watch);
        let seen = seen.lock().expect("observer poisoned");
        seen.report.clone()
    });
    (stop, task)
}

fn spawn(argv: &[String], stderr_to: &Path) -> std::io::Result<tokio::process::Child> {
    let (prog, args) = argv.split_first().ok_or_else(|| std::io::Error::other("empty command"))?;
    let stderr = std::fs::File::create(stderr_to)?;
    tokio::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
}

/// The outside watch: request deletions and answer appearances, timestamped as they arrive.
fn observe(
    dir: &Path,
    sandbox: u32,
    handler: Option<Duration>,
    seen: Arc<Mutex<Seen>>,
    sink: EventSink,
) -> notify::Result<notify::RecommendedWatcher> {
    let mut w = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(ev) = res else { return };
        let now = Instant::now();
        let gone = matches!(ev.kind, NotifyKind::Remove(_) | NotifyKind::Modify(ModifyKind::Name(RenameMode::From)));
        // A rename comes as `To` and again as `Both` (from and to paired): only `To` counts,
        // so one publication is one appearance.
        let appears = matches!(ev.kind, NotifyKind::Create(_) | NotifyKind::Modify(ModifyKind::Name(RenameMode::To)));
        for p in &ev.paths {
            let Some(name) = p.file_name().and_then(|n| n.to_str()) else { continue };
            let kind = classify(name);
            let mut s = seen.lock().expect("observer poisoned");
            match (kind, gone, appears) {
                (FileKind::Request, true, _) => {
                    s.deleted.entry(name.to_owned()).or_insert(now);
                }
                (FileKind::Response, _, true) => {
                    let Some(id) = file_id_of(name) else { continue };
                    let n = {
                        let c = s.answers.entry(id.to_owned()).or_insert(0);
                        *c += 1;
                        *c
                    };
                    let call: CallId = Arc::from(id);
                    sink.emit_at(now, sandbox, &call, EventKind::Answering);
                    if n == 1 {
                        s.report.requests += 1;
                        let req = format!("{id}.req.json");
                        let picked = s.deleted.get(&req).copied().filter(|t| *t <= now).unwrap_or(now);
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
        }
    })?;
    w.watch(dir, RecursiveMode::NonRecursive)?;
    Ok(w)
}
