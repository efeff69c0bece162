//! Reading a recorded event log back: an `events.ndjson` a bounded line at a time, or an
//! `events.bin` ([`compact`]) as the lines it stands for. `check` and `check --ndjson` read
//! through [`read_log`]; what a line means is theirs to say ([`super::eventlog`]).

use std::io::{self, BufRead};

use super::compact::{self, Line};

/// Why a reader of the log's lines stops at one: said after the line's place.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub String);

/// A log that cannot be read: which line, and why.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {msg}", if *line > 0 { format!(":{line}") } else { String::new() })]
pub(crate) struct LogError {
    pub file: String,
    /// The line of an ndjson log (0: a compact log's, whose `msg` names the byte).
    pub line: usize,
    pub msg: String,
}

/// The longest line `relay-bench check` reads (1 MiB). The suite's lines are a few hundred
/// bytes; a longer one means the file is not an event log, and reading it whole could
/// take all the memory there is.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

/// How reading one line ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineEnd {
    /// A whole line, its newline read.
    Newline,
    /// The file's last bytes, with no newline after them.
    EndOfFile,
    /// Longer than the cap: the rest was not read.
    TooLong,
    /// Nothing left.
    Nothing,
}

/// Reads one line (without its newline) into `buf`, never more than `max` bytes of it.
fn read_line_bounded(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<LineEnd> {
    buf.clear();
    // One byte past the cap tells a line that is too long from one that is just right.
    io::Read::take(&mut *r, max as u64 + 1).read_until(b'\n', buf)?;
    Ok(match buf.last() {
        None => LineEnd::Nothing,
        Some(b'\n') => {
            buf.pop();
            LineEnd::Newline
        }
        Some(_) if buf.len() > max => LineEnd::TooLong,
        Some(_) => LineEnd::EndOfFile,
    })
}

/// Hands every line of a recorded log to `f`, in order: an `events.ndjson`, or an
/// `events.bin` ([`compact`]) read back as the lines it stands for. Returns the warnings:
/// a last line (or record) cut by a kill is skipped with one. An ndjson line is read at
/// most [`MAX_LINE_BYTES`] at a time. An `Err` of `f` stops the reading, naming the line.
pub(crate) fn read_log(
    file: &str,
    mut reader: impl BufRead,
    mut f: impl FnMut(Line) -> Result<(), Refused>,
) -> Result<Vec<String>, LogError> {
    let head =
        reader.fill_buf().map_err(|e| LogError { file: file.to_owned(), line: 0, msg: format!("cannot read: {e}") })?;
    if compact::is_compact(head) {
        return read_compact(file, reader, f);
    }
    let mut warnings = Vec::new();
    let mut buf = Vec::new();
    for n in 1.. {
        let err = |msg: String| LogError { file: file.to_owned(), line: n, msg };
        let end =
            read_line_bounded(&mut reader, &mut buf, MAX_LINE_BYTES).map_err(|e| err(format!("cannot read: {e}")))?;
        match end {
            LineEnd::Nothing => break,
            LineEnd::TooLong => {
                return Err(err(format!(
                    "longer than {MAX_LINE_BYTES} bytes (1 MiB); allowed: event lines, a few hundred bytes each"
                )))
            }
            LineEnd::Newline | LineEnd::EndOfFile => {}
        }
        if buf.trim_ascii().is_empty() {
            continue;
        }
        match serde_json::from_slice(&buf) {
            Ok(l) => f(l).map_err(|Refused(msg)| err(msg))?,
            Err(_) if end == LineEnd::EndOfFile => {
                warnings.push(format!(
                    "{file}:{n}: the last line has no newline and is not an event line (cut by a kill?): skipped"
                ));
                break;
            }
            Err(e) => return Err(err(format!("not an event line: {e}"))),
        }
    }
    Ok(warnings)
}

/// [`read_log`] of a compact log; an error names the byte offset (as `line`'s place).
fn read_compact(
    file: &str,
    reader: impl BufRead,
    mut f: impl FnMut(Line) -> Result<(), Refused>,
) -> Result<Vec<String>, LogError> {
    let err = |msg: String| LogError { file: file.to_owned(), line: 0, msg };
    let mut r = compact::CompactReader::new(reader);
    loop {
        match r.next_line() {
            Ok(Some(l)) => {
                let at = r.offset();
                f(l).map_err(|Refused(msg)| err(format!("at byte {at}: {msg}")))?
            }
            Ok(None) => return Ok(Vec::new()),
            Err(compact::ReadError::Cut) => {
                let at = r.offset();
                return Ok(vec![format!("{file}: byte {at}: the last record is cut short (by a kill?): skipped")]);
            }
            Err(compact::ReadError::Bad(at, what)) => {
                return Err(err(format!(
                    "byte {at}: {what}; allowed: a relay-bench event log (events.bin or events.ndjson)"
                )));
            }
            Err(compact::ReadError::Io(e)) => return Err(err(format!("cannot read: {e}"))),
        }
    }
}
