//! The watch program's in-memory twin: what `relay-bench sandbox-watch` does on a real
//! directory (see [`crate::sandbox_watch`]), done on a [`SimDir`](super::SimDir) in virtual
//! time. It takes the same argv, follows the same steps (arm, list once and finish at once
//! if a request is there, re-list every RELIST_MS, finish on the first event or when the
//! window ends), prints the same output and exits with the same codes.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::sim::{Inner, SimFault, Step};
use super::LineDelay;
use crate::host::{ExecOutput, Lines};
use crate::protocol::{classify, FileKind};
use crate::sandbox_watch::{render, Finish};
use crate::source::{Signal, Wake, WatchFilter};

/// What the program was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchMode {
    /// One bounded window; `inline` prints the requests found.
    Window { inline: bool },
    /// A stream of lines for the whole lifetime.
    Follow,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchArgs {
    pub mode: WatchMode,
    pub dir: PathBuf,
    pub window: Duration,
    pub relist: Duration,
}

/// Parses `PROGRAM sandbox-watch [--inline|--follow] -- DIR WINDOW_MS RELIST_MS`, the argv
/// [`crate::source::ProgramExec`] and the follow strategy build.
pub fn parse_watch_argv(argv: &[OsString]) -> Result<WatchArgs, String> {
    let rest = argv.get(1..).unwrap_or_default();
    let (sub, rest) = rest.split_first().ok_or("no subcommand")?;
    if sub != OsStr::new("sandbox-watch") {
        return Err(format!("unknown command {sub:?}"));
    }
    let mut mode = WatchMode::Window { inline: false };
    let mut it = rest.iter();
    loop {
        match it.next().and_then(|a| a.to_str()) {
            Some("--inline") => mode = WatchMode::Window { inline: true },
            Some("--follow") => mode = WatchMode::Follow,
            Some("--") => break,
            other => return Err(format!("expected an option or `--`, got {other:?}")),
        }
    }
    let dir = PathBuf::from(it.next().ok_or("no DIR")?);
    let mut ms = |what: &str| -> Result<Duration, String> {
        let v = it.next().and_then(|a| a.to_str()).ok_or(format!("no {what}"))?;
        v.parse().map(Duration::from_millis).map_err(|_| format!("{what} {v:?} is not a number of milliseconds"))
    };
    let (window, relist) = (ms("WINDOW_MS")?, ms("RELIST_MS")?);
    Ok(WatchArgs { mode, dir, window, relist })
}

fn exit(code: i32, stdout: String, stderr: String) -> ExecOutput {
    ExecOutput { code: Some(code), stdout: stdout.into_bytes(), stderr: stderr.into_bytes() }
}

fn requests(dir: &Inner) -> io::Result<Vec<String>> {
    Ok(dir.list()?.into_iter().filter(|n| classify(n) == FileKind::Request).collect())
}

/// The sandbox's answer to an exec of `argv`.
pub(super) async fn exec(dir: Arc<Inner>, argv: Vec<OsString>) -> io::Result<ExecOutput> {
    dir.log_exec();
    // Starting a program gives the CPU away: the runner's pickups run before it lists, as
    // they would while a real process starts (here it costs no simulated time).
    tokio::task::yield_now().await;
    if dir.has_fault(SimFault::ProgramMissing) {
        let prog = argv.first().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
        return Ok(exit(127, String::new(), format!("sh: {prog}: not found")));
    }
    let args = match parse_watch_argv(&argv) {
        Ok(a) => a,
        Err(e) => return Ok(exit(2, String::new(), format!("sandbox-watch: {e}"))),
    };
    if dir.has_fault(SimFault::ExecHang) {
        std::future::pending::<()>().await;
    }
    if dir.has_fault(SimFault::ExecFail) {
        return Ok(exit(1, String::new(), "sandbox-watch: killed (simulated failure)".into()));
    }
    let WatchMode::Window { inline } = args.mode else {
        return Ok(exit(2, String::new(), "sandbox-watch: --follow streams; use a followed exec".into()));
    };
    if args.dir != dir.path() {
        return Ok(exit(4, String::new(), format!("sandbox-watch: cannot list {:?}: not found", args.dir)));
    }
    Ok(window(&dir, args.window, args.relist, inline).await)
}

async fn window(dir: &Arc<Inner>, window: Duration, relist: Duration, inline: bool) -> ExecOutput {
    dir.step(Step::BeforeArm);
    let signal = Arc::new(Signal::new());
    let s = signal.clone();
    // Arm first, then list: a request created between the two is seen by one or the other.
    let _watch = match dir.watch(WatchFilter::Requests, Box::new(move |_| s.raise())) {
        Ok(w) => w,
        Err(e) => return exit(3, String::new(), format!("sandbox-watch: cannot watch {:?}: {e}", dir.path())),
    };
    dir.step(Step::ArmedBeforeList);
    let deadline = Instant::now() + window;
    let mut first = true;
    let how = loop {
        match requests(dir) {
            Ok(found) if !found.is_empty() => break Finish::Found,
            Ok(_) => {}
            Err(e) => return exit(4, String::new(), format!("sandbox-watch: cannot list {:?}: {e}", dir.path())),
        }
        if std::mem::take(&mut first) {
            dir.step(Step::ListedBeforeWait);
        }
        let now = Instant::now();
        if now >= deadline {
            break Finish::Idle;
        }
        if signal.wait((deadline - now).min(relist)).await == Wake::Activity {
            break Finish::Event;
        }
    };
    let carried = if inline && how != Finish::Idle {
        let names = requests(dir).unwrap_or_default();
        // A request deleted meanwhile, or not UTF-8, is left to the runner's list.
        names.into_iter().filter_map(|n| Some((n.clone(), String::from_utf8(dir.read(&n).ok()?).ok()?))).collect()
    } else {
        Vec::new()
    };
    exit(0, render(how, carried), String::new())
}

/// Follow mode: `event` per watch event, `found` per re-list that finds requests, `end`
/// when the lifetime is over. The stream stops when the receiver is dropped.
pub(super) fn follow(dir: Arc<Inner>, argv: Vec<OsString>, delay: Option<LineDelay>) -> io::Result<Lines> {
    dir.log_exec();
    if dir.has_fault(SimFault::ProgramMissing) {
        return Err(io::Error::new(io::ErrorKind::NotFound, "the watch program is not installed"));
    }
    let args = parse_watch_argv(&argv).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let (hang, fail) = (dir.has_fault(SimFault::ExecHang), dir.has_fault(SimFault::ExecFail));
    tokio::spawn(async move {
        if fail || args.dir != dir.path() {
            return; // the stream ends without `end`: a drop
        }
        if hang {
            tx.closed().await;
            return;
        }
        let signal = Arc::new(Signal::new());
        let s = signal.clone();
        let Ok(_watch) = dir.watch(WatchFilter::Requests, Box::new(move |_| s.raise())) else { return };
        let say = |line: &'static str| {
            let (tx, delay) = (tx.clone(), delay.clone());
            async move {
                if let Some(d) = delay {
                    d().await;
                }
                tx.send(line.to_owned()).await.is_ok()
            }
        };
        let deadline = Instant::now() + args.window;
        let mut next_list = Instant::now();
        loop {
            let now = Instant::now();
            if now >= deadline {
                say("end").await;
                return;
            }
            if now >= next_list {
                match requests(&dir) {
                    Ok(found) if !found.is_empty() && !say("found").await => return,
                    Ok(_) => {}
                    Err(_) => return,
                }
                next_list = now + args.relist;
            }
            let wait = next_list.min(deadline).saturating_duration_since(now);
            tokio::select! {
                w = signal.wait(wait) => if w == Wake::Activity && !say("event").await { return },
                _ = tx.closed() => return,
            }
        }
    });
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_argv_the_strategies_build() {
        let argv: Vec<OsString> =
            ["rb", "sandbox-watch", "--inline", "--", "/tmp/a b", "25000", "2000"].iter().map(Into::into).collect();
        let a = parse_watch_argv(&argv).unwrap();
        assert_eq!(a.mode, WatchMode::Window { inline: true });
        assert_eq!(a.dir, PathBuf::from("/tmp/a b"));
        assert_eq!((a.window, a.relist), (Duration::from_secs(25), Duration::from_secs(2)));
        let bad: Vec<OsString> = ["rb", "sandbox-watch", "--", "/d", "soon", "1"].iter().map(Into::into).collect();
        assert!(parse_watch_argv(&bad).unwrap_err().contains("WINDOW_MS"));
    }
}
