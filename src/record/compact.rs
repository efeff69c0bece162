//! `events.bin`: the event log in a compact binary form, the same events as `events.ndjson`
//! line for line, about a twentieth of its size (a fleet's day of calls in tens of MB rather
//! than gigabytes). `relay-bench check` reads either form; `relay-bench check --ndjson`
//! prints a compact log's events as the ndjson lines it stands for.
//!
//! The format (integers are LEB128 varints; a signed one is zigzag-coded first):
//!
//! - Each case's events are a section: the 8 bytes [`MAGIC`], the case name (length, bytes),
//!   then records to the next section or the end of the file. Sections append, as the
//!   ndjson log's lines do.
//! - A record is a tag byte, the call, then the event's own fields:
//!   `1` request, `2` response, `3` response_unread, `4` parked: a time;
//!   `5` a writer's half: flags (bit 0 published, bit 1 answer read, bits 2–5 the outcome,
//!   an index into [`OUTCOMES`]), then the published and answer-read times (when there),
//!   then the call's end; `6` a runner's half: flags (bit 0 observed from outside, bit 1 the
//!   handler's times known, bit 2 answered), then woke (unless observed), picked up, handler
//!   start and end (when known), answered (when it was); `7` a breach: its kind (an index
//!   into [`BreachKind::ALL`]), a time; `8` the case's end: how many calls it made, a time.
//! - The call is the sandbox, then its id coded against the last id written for that
//!   sandbox in the section: the length of the prefix they share, then the rest (length,
//!   bytes). A record of the call before it costs three bytes.
//! - A time is nanoseconds from the case's first intended start, as the difference from the
//!   time written before it in the section, zigzag-coded and tagged by its unit in the low
//!   two bits (0 ns, 1 µs, 2 ms): the virtual clock moves in whole milliseconds, so most
//!   times are one or two bytes.

use std::collections::HashMap;
use std::io::{self, BufRead};
use std::path::Path;

use tokio::time::Instant;

use super::appended::Appended;
use crate::events::pairing::{BreachKind, PairingReport};
use crate::events::{CallOutcome, Event, EventKind, FailKind, Incomplete, Listener, Msg};
use serde::{Deserialize, Serialize};

/// Where a decoded record's lines go: (event, time in ns, its outcome `(true, _)` or kind
/// `(false, _)`).
type LineOut<'a> = dyn FnMut(&str, i64, Option<(bool, String)>) + 'a;

/// One line of the event log (an ndjson line; a compact record reads back as one or more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Line {
    pub case: String,
    pub sandbox: u32,
    pub call: String,
    pub event: String,
    /// Nanoseconds from the case's first intended start (negative before it).
    pub t_ns: i64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub outcome: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kind: Option<String>,
    /// `case_end`: how many calls the case made.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub calls: Option<u64>,
}

/// What every section of a compact log starts with (a 0 byte: no record's tag).
pub(crate) const MAGIC: &[u8; 8] = b"\0RBLOG1\n";

/// A writer's outcomes as their index in the log; the names are the ndjson log's.
pub(crate) const OUTCOMES: [&str; 8] =
    ["ok", "error", "paused", "timeout", "id_collision", "publish_error", "interrupted", "environment"];

const REQUEST: u8 = 1;
const RESPONSE: u8 = 2;
const RESPONSE_UNREAD: u8 = 3;
const PARKED: u8 = 4;
const WRITER: u8 = 5;
const RUNNER: u8 = 6;
const BREACH: u8 = 7;
const CASE_END: u8 = 8;

fn outcome_index(o: CallOutcome) -> u8 {
    let i = match o {
        CallOutcome::Answered(a) => match a {
            crate::base::protocol::Outcome::Ok => 0,
            crate::base::protocol::Outcome::Error => 1,
            crate::base::protocol::Outcome::Paused => 2,
        },
        CallOutcome::Failed(FailKind::Timeout) => 3,
        CallOutcome::Failed(FailKind::IdCollision) => 4,
        CallOutcome::Failed(FailKind::PublishError) => 5,
        CallOutcome::Failed(FailKind::Interrupted) => 6,
        CallOutcome::Failed(FailKind::Environment) => 7,
    };
    debug_assert_eq!(OUTCOMES[i as usize], o.name());
    i
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Writes one case's section (appending to the run's file), at most `max` bytes of it.
pub(crate) struct CompactLog {
    out: Appended,
    rec: Vec<u8>,
    epoch: Instant,
    /// The time written last (ns from the epoch).
    last_t: i64,
    /// The id written last for each sandbox.
    last_id: HashMap<u32, Box<str>>,
    written: u64,
    max: u64,
    last_at: Option<Instant>,
    /// Calls ended (writer halves): what the case's end record counts.
    calls: u64,
}

impl CompactLog {
    /// Appends the section of case `case` to `path`; once `max` bytes are written, the rest
    /// of the case is left out and its close says so.
    pub(crate) fn append(path: &Path, case: &str, epoch: Instant, max: u64) -> io::Result<CompactLog> {
        let mut log = CompactLog {
            out: Appended::open(path, 1 << 16)?,
            rec: Vec::with_capacity(64),
            epoch,
            last_t: 0,
            last_id: HashMap::new(),
            written: 0,
            max,
            last_at: None,
            calls: 0,
        };
        log.rec.extend_from_slice(MAGIC);
        put_varint(&mut log.rec, case.len() as u64);
        log.rec.extend_from_slice(case.as_bytes());
        log.flush_record();
        Ok(log)
    }

    fn time(&mut self, at: Instant) {
        let t = crate::base::units::offset_ns(at, self.epoch);
        let d = t.wrapping_sub(self.last_t);
        self.last_t = t;
        let coded = if d % 1_000_000 == 0 {
            (zigzag(d / 1_000_000) << 2) | 2
        } else if d % 1_000 == 0 {
            (zigzag(d / 1_000) << 2) | 1
        } else {
            zigzag(d) << 2
        };
        put_varint(&mut self.rec, coded);
    }

    fn call(&mut self, sandbox: u32, id: &str) {
        put_varint(&mut self.rec, u64::from(sandbox));
        let last = self.last_id.get(&sandbox).map_or("", |s| s);
        let shared = last.bytes().zip(id.bytes()).take_while(|(a, b)| a == b).count();
        // Cut on a char boundary, so both parts stay UTF-8.
        let shared = (0..=shared).rev().find(|&n| id.is_char_boundary(n)).unwrap_or(0);
        put_varint(&mut self.rec, shared as u64);
        put_varint(&mut self.rec, (id.len() - shared) as u64);
        self.rec.extend_from_slice(&id.as_bytes()[shared..]);
        if shared != id.len() || last.len() != id.len() {
            self.last_id.insert(sandbox, id.into());
        }
    }

    fn flush_record(&mut self) {
        if self.written < self.max {
            self.written += self.rec.len() as u64;
            let rec = &self.rec;
            self.out.write(|out| io::Write::write_all(out, rec));
        }
        self.rec.clear();
    }

    /// The record of one event.
    pub(crate) fn event(&mut self, ev: &Event) {
        let tag = match &ev.kind {
            EventKind::Requesting => REQUEST,
            EventKind::Answering => RESPONSE,
            EventKind::AnsweringUnread => RESPONSE_UNREAD,
            EventKind::Parked => PARKED,
            EventKind::Writer(_) => WRITER,
            EventKind::Runner(_) => RUNNER,
        };
        self.rec.push(tag);
        self.call(ev.sandbox, &ev.call);
        match &ev.kind {
            EventKind::Writer(w) => {
                self.calls += 1;
                let flags = u8::from(w.published.is_some()) | u8::from(w.read.is_some()) << 1;
                self.rec.push(flags | outcome_index(w.outcome) << 2);
                for t in [w.published, w.read].into_iter().flatten() {
                    self.time(t);
                }
                self.time(ev.at);
            }
            EventKind::Runner(r) => {
                let flags = u8::from(r.observed) | u8::from(r.handler_known) << 1 | u8::from(r.answered.is_some()) << 2;
                self.rec.push(flags);
                if !r.observed {
                    self.time(r.woke);
                }
                self.time(r.picked);
                if r.handler_known {
                    self.time(r.handler_start);
                    self.time(r.handler_end);
                }
                if let Some(a) = r.answered {
                    self.time(a);
                }
            }
            _ => self.time(ev.at),
        }
        self.flush_record();
    }

    /// The case's breaches, at its end.
    pub(crate) fn breaches(&mut self, report: &PairingReport, at: Instant) {
        for b in &report.breaches {
            self.rec.push(BREACH);
            self.call(b.sandbox, &b.call);
            let kind = BreachKind::ALL.iter().position(|k| *k == b.kind).unwrap_or(0);
            self.rec.push(kind as u8);
            self.time(at);
            self.flush_record();
        }
    }
}

impl Listener for CompactLog {
    fn message(&mut self, msg: &Msg) {
        if let Msg::Call(ev) = msg {
            self.event(ev);
            self.last_at = self.last_at.max(Some(ev.at));
        }
    }

    fn close(&mut self, pairing: &PairingReport) -> Result<(), Incomplete> {
        if let Some(at) = self.last_at {
            self.breaches(pairing, at);
        }
        // The case's end, unless the log was cut short (its calls are missing then).
        if self.written < self.max {
            self.rec.push(CASE_END);
            self.call(0, "");
            put_varint(&mut self.rec, self.calls);
            self.time(self.last_at.unwrap_or(self.epoch));
            self.flush_record();
        }
        let fail = |why| Incomplete { output: "the event log", why };
        self.out.flush().map_err(fail)?;
        if self.written >= self.max {
            let why = format!("it reached --max-event-log ({} bytes): the rest of the case is left out", self.max);
            return Err(fail(io::Error::other(why)));
        }
        Ok(())
    }
}

/// Whether a log's first bytes are a compact log's.
pub(crate) fn is_compact(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// Why a compact log could not be read further.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The file ends inside a record (a kill cut it).
    Cut,
    /// Bytes that are not a record, at this offset.
    Bad(u64, &'static str),
    Io(io::Error),
}

/// Reads a compact log back as the ndjson lines it stands for, in order.
pub(crate) struct CompactReader<R> {
    r: R,
    offset: u64,
    case: Option<String>,
    last_t: i64,
    last_id: HashMap<u32, String>,
    /// Lines of the record read last, not handed out yet.
    pending: std::collections::VecDeque<Line>,
}

impl<R: BufRead> CompactReader<R> {
    pub(crate) fn new(r: R) -> Self {
        CompactReader { r, offset: 0, case: None, last_t: 0, last_id: HashMap::new(), pending: Default::default() }
    }

    /// How far into the file the reader is (bytes).
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    fn byte(&mut self) -> Result<Option<u8>, ReadError> {
        let buf = self.r.fill_buf().map_err(ReadError::Io)?;
        let Some(&b) = buf.first() else { return Ok(None) };
        self.r.consume(1);
        self.offset += 1;
        Ok(Some(b))
    }

    fn need(&mut self) -> Result<u8, ReadError> {
        self.byte()?.ok_or(ReadError::Cut)
    }

    fn varint(&mut self) -> Result<u64, ReadError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.need()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(ReadError::Bad(self.offset, "a varint longer than 64 bits"))
    }

    fn bytes(&mut self, n: u64) -> Result<Vec<u8>, ReadError> {
        if n > 1 << 20 {
            return Err(ReadError::Bad(self.offset, "a string longer than 1 MiB"));
        }
        let mut out = vec![0; n as usize];
        for b in out.iter_mut() {
            *b = self.need()?;
        }
        Ok(out)
    }

    fn string(&mut self, n: u64) -> Result<String, ReadError> {
        let at = self.offset;
        String::from_utf8(self.bytes(n)?).map_err(|_| ReadError::Bad(at, "a string that is not UTF-8"))
    }

    fn time(&mut self) -> Result<i64, ReadError> {
        let v = self.varint()?;
        let d = unzigzag(v >> 2);
        let d = match v & 3 {
            0 => d,
            1 => d.wrapping_mul(1_000),
            2 => d.wrapping_mul(1_000_000),
            _ => return Err(ReadError::Bad(self.offset, "a time of no known unit")),
        };
        self.last_t = self.last_t.wrapping_add(d);
        Ok(self.last_t)
    }

    fn call(&mut self) -> Result<(u32, String), ReadError> {
        let sandbox = u32::try_from(self.varint()?).map_err(|_| ReadError::Bad(self.offset, "a sandbox past u32"))?;
        let shared = self.varint()? as usize;
        let rest = self.varint()?;
        let rest = self.string(rest)?;
        let last = self.last_id.get(&sandbox).map_or("", String::as_str);
        let Some(prefix) = last.get(..shared) else {
            return Err(ReadError::Bad(self.offset, "a call id sharing more than the last one had"));
        };
        let id = format!("{prefix}{rest}");
        self.last_id.insert(sandbox, id.clone());
        Ok((sandbox, id))
    }

    fn section(&mut self) -> Result<(), ReadError> {
        for &want in &MAGIC[1..] {
            if self.need()? != want {
                return Err(ReadError::Bad(self.offset, "not a compact event log's section"));
            }
        }
        let n = self.varint()?;
        self.case = Some(self.string(n)?);
        self.last_t = 0;
        self.last_id.clear();
        Ok(())
    }

    /// The next line, `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<Line>, ReadError> {
        loop {
            if let Some(l) = self.pending.pop_front() {
                return Ok(Some(l));
            }
            let Some(tag) = self.byte()? else { return Ok(None) };
            if tag == MAGIC[0] {
                self.section()?;
                continue;
            }
            let Some(case) = self.case.clone() else {
                return Err(ReadError::Bad(self.offset, "a record before any section"));
            };
            let (sandbox, call) = self.call()?;
            let mut lines = Vec::new();
            let mut line = |event: &str, t_ns: i64, extra: Option<(bool, String)>| {
                let (outcome, kind) = match extra {
                    Some((true, o)) => (Some(o), None),
                    Some((false, k)) => (None, Some(k)),
                    None => (None, None),
                };
                lines.push(Line {
                    case: case.clone(),
                    sandbox,
                    call: call.clone(),
                    event: event.to_owned(),
                    t_ns,
                    outcome,
                    kind,
                    calls: None,
                });
            };
            let calls = self.record(tag, &mut line)?;
            if let (Some(calls), Some(l)) = (calls, lines.last_mut()) {
                l.calls = Some(calls);
            }
            self.pending.extend(lines);
        }
    }

    /// Decodes one record of kind `tag` into its lines, each given to `line` (event, time,
    /// its outcome `(true, _)` or kind `(false, _)`); a case's end gives its call count.
    fn record(&mut self, tag: u8, line: &mut LineOut<'_>) -> Result<Option<u64>, ReadError> {
        match tag {
            REQUEST | RESPONSE | RESPONSE_UNREAD | PARKED => {
                let event = ["request", "response", "response_unread", "parked"][usize::from(tag - 1)];
                line(event, self.time()?, None);
            }
            WRITER => {
                let flags = self.need()?;
                let outcome = OUTCOMES
                    .get(usize::from(flags >> 2))
                    .ok_or(ReadError::Bad(self.offset, "an outcome of no known kind"))?;
                if flags & 1 != 0 {
                    line("published", self.time()?, None);
                }
                if flags & 2 != 0 {
                    line("answer_read", self.time()?, None);
                }
                line("call_end", self.time()?, Some((true, (*outcome).to_owned())));
            }
            RUNNER => {
                let flags = self.need()?;
                if flags & 1 == 0 {
                    line("woke", self.time()?, None);
                }
                line("picked_up", self.time()?, None);
                if flags & 2 != 0 {
                    line("handler_start", self.time()?, None);
                    line("handler_end", self.time()?, None);
                }
                if flags & 4 != 0 {
                    line("answered", self.time()?, None);
                }
            }
            BREACH => {
                let kind = BreachKind::ALL
                    .get(usize::from(self.need()?))
                    .ok_or(ReadError::Bad(self.offset, "a breach of no known kind"))?;
                line("breach", self.time()?, Some((false, kind.name().to_owned())));
            }
            CASE_END => {
                let calls = self.varint()?;
                line("case_end", self.time()?, None);
                return Ok(Some(calls));
            }
            _ => return Err(ReadError::Bad(self.offset - 1, "a record of no known kind")),
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_past_its_cap_says_so_at_its_close() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.bin");
        let t0 = Instant::now();
        let mut log = CompactLog::append(&p, "c", t0, 64).unwrap();
        for i in 0..100 {
            let call: crate::events::CallId = format!("call-{i}").into();
            log.message(&Msg::Call(Event { at: t0, sandbox: 0, call, kind: EventKind::Requesting }));
        }
        let e = log.close(&PairingReport::default()).unwrap_err();
        assert!(e.to_string().contains("--max-event-log"), "{e}");
        assert!(std::fs::metadata(&p).unwrap().len() < 100);
    }
}
