//! The in-sandbox watch program of the bounded-window exec strategy (SPEC §3, §8), written
//! once over [`RelayDir`]: `relay-bench sandbox-watch` runs it over a real directory as a
//! child process, and the in-memory sandbox runs the same function in virtual time.
//!
//! `sandbox-watch [--events any|requests] [--report] [--inline] [--follow] -- DIR WINDOW_MS
//! RELIST_MS` ([`WatchArgs`] is the one definition of that argv). As production's program
//! does by default: arm a watch on DIR first, then list once and finish at once if a
//! `*.req.json` is there; re-list every RELIST_MS; finish on any watch event (or a watch
//! error), on a re-list that sees a request, or when the window ends; print nothing; exit 0.
//! A directory that cannot be watched leaves the re-list running for the window. The
//! directory travels in argv, never in a shell string.
//!
//! Options, each an improvement measured against that baseline: `--events requests` ends a
//! window only on a request name appearing (not on temp files or the runner's own answers);
//! `--report` prints why it finished (`found`, `event` or `idle`), so a runner can tell an
//! idle window from a wake; `--inline` prints, after that, one JSON line per request present
//! (`{"name":..,"body":..}`), so the runner can skip its list and read round trips;
//! `--follow` streams a line per event (`event`), per re-list that finds requests (`found`),
//! and `end` when the window (the stream's lifetime) is over: the persistent watcher.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{EventFilter, ExecOutput, RelayDir};
use crate::base::clock;
use crate::base::protocol::{classify, FileKind};
use crate::base::signal::{Signal, Wake};

/// The same window as a Node script (`src/dir/watch.js`), for `program = "node"`: what
/// production execs (`node -e`), with Node's start-up in every window.
pub(crate) const NODE_SCRIPT: &str = include_str!("watch.js");

/// `node -e SCRIPT DIR WINDOW_MS RELIST_MS`: production's defaults only (no options).
pub fn node_argv(dir: &Path, window: Duration, relist: Duration) -> Vec<OsString> {
    vec![
        "node".into(),
        "-e".into(),
        NODE_SCRIPT.into(),
        dir.into(),
        window.as_millis().to_string().into(),
        relist.as_millis().to_string().into(),
    ]
}

/// The hidden subcommand that runs the program.
pub(crate) const SUBCOMMAND: &str = "sandbox-watch";

/// What the program is asked to do: the one definition of its argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatchArgs {
    pub dir: PathBuf,
    /// The window (with `follow`: the stream's lifetime).
    pub window: Duration,
    pub relist: Duration,
    /// Which watch events end a window (or make a `follow` line).
    pub events: EventFilter,
    /// Print why the window finished.
    pub report: bool,
    /// Print the requests found (implies `report`).
    pub inline: bool,
    /// Stream lines for the whole lifetime instead of finishing on the first event.
    pub follow: bool,
}

impl WatchArgs {
    /// Production's program: any event ends the window, nothing printed.
    pub(crate) fn window(dir: impl Into<PathBuf>, window: Duration, relist: Duration) -> WatchArgs {
        WatchArgs {
            dir: dir.into(),
            window,
            relist,
            events: EventFilter::Any,
            report: false,
            inline: false,
            follow: false,
        }
    }

    /// `PROGRAM sandbox-watch [options] -- DIR WINDOW_MS RELIST_MS`.
    pub(crate) fn argv(&self, program: &Path) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![program.into(), SUBCOMMAND.into()];
        if self.events != EventFilter::Any {
            argv.extend(["--events".into(), self.events.name().into()]);
        }
        let flags = [(self.report && !self.inline, "--report"), (self.inline, "--inline"), (self.follow, "--follow")];
        argv.extend(flags.into_iter().filter(|(on, _)| *on).map(|(_, flag)| flag.into()));
        // `--` ends the options: a directory starting with `-` is still a directory.
        argv.extend(["--".into(), self.dir.clone().into()]);
        argv.extend([self.window.as_millis().to_string().into(), self.relist.as_millis().to_string().into()]);
        argv
    }

    /// Parses a whole argv as [`WatchArgs::argv`] builds it (program and subcommand first).
    pub(crate) fn parse_argv(argv: &[OsString]) -> Result<WatchArgs, WatchArgsError> {
        match argv.get(1) {
            Some(sub) if sub == OsStr::new(SUBCOMMAND) => Self::parse(&argv[2..]),
            other => Err(WatchArgsError::Subcommand(other.cloned())),
        }
    }

    /// Parses the subcommand's own arguments: `[options] -- DIR WINDOW_MS RELIST_MS`.
    pub(crate) fn parse(args: &[OsString]) -> Result<WatchArgs, WatchArgsError> {
        let mut a = WatchArgs::window("", Duration::ZERO, Duration::ZERO);
        let mut it = args.iter();
        loop {
            match it.next().map(|s| s.to_str()) {
                Some(Some("--report")) => a.report = true,
                Some(Some("--inline")) => (a.report, a.inline) = (true, true),
                Some(Some("--follow")) => a.follow = true,
                Some(Some("--events")) => {
                    a.events = match it.next().and_then(|v| v.to_str()) {
                        Some("any") => EventFilter::Any,
                        Some("requests") => EventFilter::Requests,
                        v => return Err(WatchArgsError::Events(v.map(str::to_owned))),
                    }
                }
                Some(Some("--")) => break,
                other => return Err(WatchArgsError::Option(other.map(|o| o.map(str::to_owned)))),
            }
        }
        a.dir = PathBuf::from(it.next().ok_or(WatchArgsError::Missing("DIR"))?);
        let mut ms = |what: &'static str| -> Result<Duration, WatchArgsError> {
            let v = it.next().and_then(|a| a.to_str()).ok_or(WatchArgsError::Missing(what))?;
            v.parse().map(Duration::from_millis).map_err(|_| WatchArgsError::NotMillis { what, value: v.to_owned() })
        };
        (a.window, a.relist) = (ms("WINDOW_MS")?, ms("RELIST_MS")?);
        if a.relist.is_zero() {
            return Err(WatchArgsError::RelistZero);
        }
        if it.next().is_some() {
            return Err(WatchArgsError::Extra);
        }
        Ok(a)
    }
}

/// Arguments the watch program refuses: each names the argument and what it takes. They
/// come from relay-bench itself ([`WatchArgs::argv`]), so one means mismatched builds:
/// run the same relay-bench on both sides.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WatchArgsError {
    #[error("expected the {SUBCOMMAND} subcommand, got {0:?}")]
    Subcommand(Option<OsString>),
    #[error("--events takes any or requests, got {0:?}")]
    Events(Option<String>),
    #[error("expected an option or `--`, got {0:?}")]
    Option(Option<Option<String>>),
    #[error("no {0}")]
    Missing(&'static str),
    #[error("{what} {value:?} is not a number of milliseconds")]
    NotMillis { what: &'static str, value: String },
    #[error("RELIST_MS must be at least 1")]
    RelistZero,
    #[error("unexpected arguments after RELIST_MS")]
    Extra,
}

crate::base::named! {
/// Why a window finished (printed with `--report`, its name a line of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// A request was there when listed.
    Found,
    /// The watch told of a change (or failed).
    Event,
    /// The window ended with nothing.
    Idle,
}
names ["found", "event", "idle"]
}

/// One request carried inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InlineRequest {
    pub name: String,
    pub body: String,
}

/// What a runner reads back from a `--report` program's stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchReport {
    pub finish: Finish,
    pub inline: Vec<InlineRequest>,
}

/// Parses a `--report` program's stdout; `None` if it is not the program's output.
pub fn parse_report(stdout: &[u8]) -> Option<WatchReport> {
    let text = std::str::from_utf8(stdout).ok()?;
    let mut lines = text.lines();
    let finish = Finish::from_name(lines.next()?)?;
    let inline = lines.filter(|l| !l.is_empty()).map(serde_json::from_str).collect::<Result<_, _>>().ok()?;
    Some(WatchReport { finish, inline })
}

/// A boundary inside the program where the in-memory sandbox lets a test act.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Started, before the watch is armed.
    BeforeArm,
    /// Armed (or not armable), before the first list.
    ArmedBeforeList,
    /// Listed (nothing found), before waiting.
    ListedBeforeWait,
}

fn requests(dir: &dyn RelayDir) -> Vec<String> {
    // A listing error counts as no request, as in production's program.
    let mut names: Vec<String> =
        dir.list().unwrap_or_default().into_iter().filter(|n| classify(n) == FileKind::Request).collect();
    names.sort();
    names
}

/// Arms the watch; `None` when the directory cannot be watched (the program degrades to
/// its re-list).
fn arm(dir: &dyn RelayDir, filter: EventFilter, signal: &Arc<Signal>) -> Option<Box<dyn super::WatchHandle>> {
    let s = signal.clone();
    dir.watch(Box::new(move |seen| {
        if filter.wants(seen) {
            s.raise();
        }
    }))
    .ok()
}

/// One window (the default mode), over `dir`; `step` is told each boundary.
///
/// A re-list can find only what a watch missed. While the watch can say it sees every change
/// of the directory ([`super::WatchHandle::on_stale`]: the in-memory sandbox's), the program
/// waits for it alone; once told the directory was replaced under it, it re-lists on the
/// same 2 s grid it would have kept all along. (A real event that coincides with that notice
/// is taken at the next re-list.)
pub(crate) async fn run(dir: &dyn RelayDir, args: &WatchArgs, step: &(dyn Fn(Step) + Sync)) -> ExecOutput {
    let deadline = clock::now() + args.window;
    step(Step::BeforeArm);
    let signal = Arc::new(Signal::new());
    let watch = arm(dir, args.events, &signal);
    let stale = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut certain = watch.as_ref().is_some_and(|w| {
        let (s, f) = (signal.clone(), stale.clone());
        w.on_stale(Box::new(move || {
            f.store(true, std::sync::atomic::Ordering::Release);
            s.raise();
        }))
    });
    step(Step::ArmedBeforeList);
    let mut first = true;
    let t0 = clock::now();
    let how = loop {
        if !requests(dir).is_empty() {
            break Finish::Found;
        }
        if std::mem::take(&mut first) {
            step(Step::ListedBeforeWait);
        }
        let now = clock::now();
        if now >= deadline {
            break Finish::Idle;
        }
        let wait = if certain { deadline - now } else { (deadline - now).min(args.relist) };
        if signal.wait(wait).await == Wake::Activity {
            if !(certain && stale.swap(false, std::sync::atomic::Ordering::AcqRel)) {
                break Finish::Event;
            }
            // The watch went stale: back to re-listing, from the grid's next point.
            certain = false;
            let since = clock::now().saturating_duration_since(t0).as_nanos();
            let step_ns = args.relist.as_nanos().max(1);
            let next = t0 + args.relist * u32::try_from(since / step_ns + 1).unwrap_or(u32::MAX);
            if next >= deadline {
                tokio::time::sleep_until(deadline).await;
                break Finish::Idle;
            }
            if signal.wait(next.saturating_duration_since(clock::now())).await == Wake::Activity {
                break Finish::Event;
            }
            continue;
        }
        if clock::now() >= deadline {
            break Finish::Idle;
        }
    };
    if let Some(w) = watch {
        w.disarm();
    }
    let mut out = if args.report { format!("{}\n", how.name()) } else { String::new() };
    if args.inline && how != Finish::Idle {
        for name in requests(dir) {
            // A request deleted meanwhile, or not UTF-8, is left to the runner's list.
            let Some(body) = dir.read(&name).ok().and_then(|b| String::from_utf8(b).ok()) else { continue };
            out += &serde_json::to_string(&InlineRequest { name, body }).expect("serializes");
            out.push('\n');
        }
    }
    ExecOutput::exited(0, out, Vec::new())
}

/// Follow mode: `event` per watch event, `found` per re-list that finds requests, `end` when
/// the lifetime is over. Stops when the receiver of `out` is gone.
pub(crate) async fn follow(dir: &dyn RelayDir, args: &WatchArgs, out: tokio::sync::mpsc::Sender<String>) {
    let deadline = clock::now() + args.window;
    let signal = Arc::new(Signal::new());
    let _watch = arm(dir, args.events, &signal);
    let mut next_list = clock::now();
    loop {
        let now = clock::now();
        if now >= deadline {
            let _ = out.send("end".into()).await;
            return;
        }
        if now >= next_list {
            if !requests(dir).is_empty() && out.send("found".into()).await.is_err() {
                return;
            }
            next_list = now + args.relist;
        }
        let wait = next_list.min(deadline).saturating_duration_since(now);
        tokio::select! {
            w = signal.wait(wait) => if w == Wake::Activity && out.send("event".into()).await.is_err() { return },
            _ = out.closed() => return,
        }
    }
}

/// The `sandbox-watch` subcommand: the program over a real directory, on a runtime of its
/// own; returns the exit code (2 for bad arguments).
pub(crate) fn main(args: &[OsString]) -> i32 {
    let fail = |why: String, code: i32| {
        // Not `eprintln!`, which panics on a closed or full stderr.
        let _ = writeln!(std::io::stderr(), "{SUBCOMMAND}: {why}");
        code
    };
    let args = match WatchArgs::parse(args) {
        Ok(a) => a,
        Err(e) => return fail(e.to_string(), 2),
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_time().build() {
        Ok(rt) => rt,
        Err(e) => return fail(format!("cannot start a runtime: {e}"), 3),
    };
    let dir = super::RealDir::new(&args.dir);
    rt.block_on(async {
        let mut stdout = std::io::stdout().lock();
        if args.follow {
            let (tx, mut rx) = tokio::sync::mpsc::channel(64);
            let writer = async {
                while let Some(line) = rx.recv().await {
                    // The reader went away (stdout closed): nothing left to do.
                    if writeln!(stdout, "{line}").and_then(|_| stdout.flush()).is_err() {
                        return;
                    }
                }
            };
            tokio::join!(follow(&dir, &args, tx), writer);
            return 0;
        }
        let out = run(&dir, &args, &|_| {}).await;
        let _ = stdout.write_all(&out.stdout).and_then(|_| stdout.flush());
        out.code.unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(Into::into).collect()
    }

    #[test]
    fn the_argv_round_trips() {
        let mut a = WatchArgs::window("/tmp/a b\n'$(x)'", Duration::from_secs(25), Duration::from_secs(2));
        let argv = a.argv(Path::new("rb"));
        assert_eq!(argv, os(&["rb", "sandbox-watch", "--", "/tmp/a b\n'$(x)'", "25000", "2000"]), "production's argv");
        assert_eq!(WatchArgs::parse_argv(&argv).unwrap(), a);
        (a.events, a.inline, a.report) = (EventFilter::Requests, true, true);
        assert_eq!(WatchArgs::parse_argv(&a.argv(Path::new("rb"))).unwrap(), a);
        a.follow = true;
        assert_eq!(WatchArgs::parse_argv(&a.argv(Path::new("rb"))).unwrap(), a);
        let e = WatchArgs::parse(&os(&["--", "/d", "soon", "1"])).unwrap_err().to_string();
        assert!(e.contains("WINDOW_MS"), "{e}");
        assert!(WatchArgs::parse(&os(&["--events", "all", "--", "/d", "1", "1"])).is_err());
        assert!(WatchArgs::parse(&os(&["/d", "1", "1"])).is_err());
    }

    #[test]
    fn a_report_round_trips() {
        let r = parse_report(b"event\n{\"name\":\"a.req.json\",\"body\":\"{}\"}\n").unwrap();
        assert_eq!(r.finish, Finish::Event);
        assert_eq!(r.inline, vec![InlineRequest { name: "a.req.json".into(), body: "{}".into() }]);
        assert_eq!(parse_report(b"idle\n").unwrap().finish, Finish::Idle);
        assert!(parse_report(b"Segmentation fault\n").is_none());
        assert!(parse_report(b"").is_none());
    }
}
