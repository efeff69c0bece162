//! The process's two outputs, written so that neither ever panics (`print!` and `eprintln!`
//! do on a write error: `2>/dev/full` killed a run with its report half written).
//!
//! - [`out`]: stdout, the commands' results. A reader that went away (`| head -1`, EPIPE)
//!   read what it wanted: not an error. Any other failure (a full disk, an I/O error) is
//!   remembered ([`stdout_failure`]): the command goes on (a run finishes its report files)
//!   and the CLI exits with its own code at the end.
//! - [`err`] / [`err_raw`]: stderr, notices and progress. A failure there has nowhere to be
//!   said; it is dropped.

use std::io::Write;
use std::sync::Mutex;

/// The first stdout failure that was not a closed pipe.
static STDOUT_FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Writes `text` to stdout whole and flushes it.
pub(crate) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            STDOUT_FAILED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(e.to_string());
        }
    }
}

/// Why stdout could not be written, if it could not (a closed pipe aside).
pub(crate) fn stdout_failure() -> Option<String> {
    STDOUT_FAILED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

/// Writes a line to stderr, if it can.
pub(crate) fn err(line: &str) {
    err_raw(&format!("{line}\n"));
}

/// Writes `text` to stderr as it is (a progress bar redrawn in place), if it can.
pub(crate) fn err_raw(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes()).and_then(|()| stderr.flush());
}
