//! The live progress line of a run: redrawn in place on a terminal, a line a minute in a log.

use std::sync::Arc;
use std::time::Duration;

use crate::base::console;
use crate::engine::Progress;

/// The live progress line, and whether stderr is a terminal: there it is redrawn in place
/// (at most 5 times a second); in a log it is a line a minute, so a long run shows it is
/// alive without filling the log; `--quiet` turns it off.
pub(super) fn progress_bar(quiet: bool) -> (Progress, bool) {
    if quiet {
        return (None, false);
    }
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let every = if tty { Duration::from_millis(200) } else { Duration::from_secs(60) };
    // A log's first line comes a minute in: a short run stays quiet.
    let now = std::time::Instant::now();
    let last = std::sync::Mutex::new(if tty { now.checked_sub(every).unwrap_or(now) } else { now });
    let progress: Progress = Some(Arc::new(move |line: &str| {
        let mut last = last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.elapsed() < every {
            return;
        }
        *last = std::time::Instant::now();
        if tty {
            let line: String = line.chars().take(99).collect();
            console::err_raw(&format!("\r\x1b[2K{line}"));
        } else {
            console::err(line.trim_start());
        }
    }) as Arc<dyn Fn(&str) + Send + Sync>);
    (progress, tty)
}
