//! `events.ndjson`: every run's per-call event log, one JSON object a line, and its replay.
//!
//! Each line carries `case`, `sandbox`, `call`, `event` and `t_ns` (monotonic nanoseconds
//! from the case's first intended start). Events: `request` and `response` (a request or an
//! answer is about to be published: what the pairing invariant reads, in causal order),
//! `published`, `woke`, `picked_up`, `handler_start`, `handler_end`, `answered`,
//! `answer_read`, `call_end` (with `outcome`), `breach` (with `kind`) when the case ends,
//! and last the case's `case_end` (with `calls`: how many calls it made, each of which has
//! one `call_end`). Timeline lines are written when a side's half of the call arrives, so
//! they are not in time order: sort by `t_ns` to read a call's story. `relay-bench check`
//! replays the pairing rules (SPEC §7) over `request` and `response` lines in file order,
//! and counts the calls a `case_end` names that the log lacks (a call deleted whole) as
//! missing.
//!
//! The log is a [`Listener`] on the event channel: the recorder thread feeds it every event
//! and closes it with the case's pairing verdict.

use std::io::{self, BufRead, Write};
use std::path::Path;

use tokio::time::Instant;

use super::appended::Appended;
use super::logread::{read_log, LogError, Refused};
use crate::events::pairing::{check_pairing, BreachKind, PairEvent, PairingReport};
use crate::events::{Event, EventKind, Listener, Msg};

/// Writes one case's lines (appending to the run's file).
pub struct EventLog {
    out: Appended,
    /// The case name as a JSON string (quoted and escaped once).
    case: String,
    /// What the lines of the current event start with: `{"case":…,"call":…,"event":"`.
    head: Vec<u8>,
    epoch: Instant,
    /// The latest event time seen (the breaches are stamped with it).
    last_at: Option<Instant>,
    /// Calls ended (each one `call_end` line): what the `case_end` line counts.
    calls: u64,
}

/// Every event a log line may name; `check` refuses a line that names another.
pub(crate) const EVENTS: &[&str] = &[
    "request",
    "response",
    "response_unread",
    "answer_lost",
    "request_left",
    "parked",
    "published",
    "answer_read",
    "call_end",
    "woke",
    "picked_up",
    "handler_start",
    "handler_end",
    "answered",
    "breach",
    "case_end",
];

impl EventLog {
    /// A log appended to `path`, its events for `case`, timed from `epoch`.
    pub fn append(path: &Path, case: &str, epoch: Instant) -> io::Result<EventLog> {
        let out = Appended::open(path, 1 << 16)?;
        let case = serde_json::to_string(case).map_err(io::Error::other)?;
        Ok(EventLog { out, case, head: Vec::with_capacity(256), epoch, last_at: None, calls: 0 })
    }

    fn t(&self, at: Instant) -> i64 {
        crate::base::units::offset_ns(at, self.epoch)
    }

    /// Starts the lines of one call: the case, sandbox and call id are the same on each.
    fn head(&mut self, sandbox: u32, call: &str) {
        let h = &mut self.head;
        h.clear();
        h.extend_from_slice(b"{\"case\":");
        h.extend_from_slice(self.case.as_bytes());
        h.extend_from_slice(b",\"sandbox\":");
        h.extend_from_slice(itoa::Buffer::new().format(sandbox).as_bytes());
        h.extend_from_slice(b",\"call\":");
        // The call id goes through serde_json for escaping; writing to a Vec cannot fail.
        serde_json::to_writer(&mut *h, call).expect("a string serializes");
        h.extend_from_slice(b",\"event\":\"");
    }

    /// One line of the call whose [`head`](Self::head) is current, `extra` the bytes of its
    /// fields after `t_ns`. Lines are put together from bytes: `write!` would cost several
    /// times as much on the recorder thread.
    fn line(&mut self, event: &str, at: Instant, extra: &[&[u8]]) {
        let mut t = itoa::Buffer::new();
        let parts = [&self.head[..], event.as_bytes(), b"\",\"t_ns\":", t.format(self.t(at)).as_bytes()];
        let end: &[u8] = b"}\n";
        self.out.write(|out| parts.iter().chain(extra).chain([&end]).try_for_each(|part| out.write_all(part)));
    }

    /// The lines of one event.
    pub fn event(&mut self, ev: &Event) {
        self.head(ev.sandbox, &ev.call);
        match &ev.kind {
            EventKind::Requesting => self.line("request", ev.at, &[]),
            EventKind::Answering => self.line("response", ev.at, &[]),
            // An error answer the runner names by the request's file id alone.
            EventKind::AnsweringUnread => self.line("response_unread", ev.at, &[]),
            // A call parked with no answer: its turn ended, which closes the request.
            EventKind::Parked => self.line("parked", ev.at, &[]),
            EventKind::Writer(w) => {
                if let Some(p) = w.published {
                    self.line("published", p, &[]);
                }
                if let Some(r) = w.read {
                    self.line("answer_read", r, &[]);
                }
                let outcome = w.outcome.name();
                self.calls += 1;
                self.line("call_end", ev.at, &[b",\"outcome\":\"", outcome.as_bytes(), b"\""]);
            }
            EventKind::Runner(r) => {
                if !r.observed {
                    self.line("woke", r.woke, &[]);
                }
                self.line("picked_up", r.picked, &[]);
                if r.handler_known {
                    self.line("handler_start", r.handler_start, &[]);
                    self.line("handler_end", r.handler_end, &[]);
                }
                if let Some(a) = r.answered {
                    self.line("answered", a, &[]);
                }
            }
        }
    }

    /// The case's breaches, at its end.
    pub fn breaches(&mut self, report: &PairingReport, at: Instant) {
        for b in &report.breaches {
            self.head(b.sandbox, &b.call);
            self.line("breach", at, &[b",\"kind\":\"", b.kind.name().as_bytes(), b"\""]);
        }
    }

    /// The case's last line: how many calls it made.
    fn case_end(&mut self, at: Instant) {
        self.head(0, "");
        let mut n = itoa::Buffer::new();
        self.line("case_end", at, &[b",\"calls\":", n.format(self.calls).as_bytes()]);
    }
}

impl Listener for EventLog {
    fn message(&mut self, msg: &Msg) {
        if let Msg::Call(ev) = msg {
            self.event(ev);
            self.last_at = self.last_at.max(Some(ev.at));
        }
    }

    fn close(&mut self, pairing: &PairingReport) -> Result<(), crate::events::Incomplete> {
        if let Some(at) = self.last_at {
            self.breaches(pairing, at);
        }
        self.case_end(self.last_at.unwrap_or(self.epoch));
        self.out.flush().map_err(|why| crate::events::Incomplete { output: "the event log", why })
    }
}

/// What `relay-bench check` found in one case of a log.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CaseCheck {
    pub case: String,
    pub requests: u64,
    pub responses: u64,
    pub report: PairingReport,
    /// Calls its `case_end` line counts, when the log has one (a run killed outright
    /// leaves none).
    pub calls: Option<u64>,
    /// Calls that `case_end` counts and the log lacks (each ends with one `call_end`).
    pub missing: u64,
}

impl CaseCheck {
    /// Breaches and missing calls.
    pub(crate) fn faults(&self) -> u64 {
        self.report.total() + self.missing
    }

    /// Whether the check fails on this case: a breach, a call missing, or no `case_end` line
    /// (the log was cut short or edited: what it lacks cannot be told, so it cannot pass).
    pub(crate) fn fails(&self) -> bool {
        self.faults() > 0 || self.calls.is_none()
    }
}

/// What `relay-bench check` found: each case's pairing, and what it read past.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct LogCheck {
    pub cases: Vec<CaseCheck>,
    /// Lines skipped with a warning (a last line cut by a kill).
    pub warnings: Vec<String>,
}

/// What `relay-bench check` prints: its warnings, then per case its request, response and
/// breach counts, the breaches by kind, and the first 20 of them.
pub(crate) fn render_checks(check: &LogCheck) -> String {
    let mut out = String::new();
    for w in &check.warnings {
        out += &format!("warning: {w}\n");
    }
    for c in &check.cases {
        let r = &c.report;
        out += &format!("{}: {} requests, {} responses, {} breaches\n", c.case, c.requests, c.responses, r.total());
        if r.cut_off > 0 {
            out += &format!("  cut off by an interrupt (closed, no breach): {}\n", r.cut_off);
        }
        for k in BreachKind::ALL.iter().filter(|k| r.count(**k) > 0) {
            out += &format!("  {}: {}\n", k.name(), r.count(*k));
        }
        for b in r.breaches.iter().take(20) {
            out += &format!("    {} sandbox {} call {:?}\n", b.kind.name(), b.sandbox, b.call);
        }
        if let (Some(n), true) = (c.calls, c.missing > 0) {
            out += &format!(
                "  missing: {} of the {n} calls its case_end counts have no call_end (deleted from the log?)\n",
                c.missing
            );
        }
        if c.calls.is_none() {
            out += "  incomplete: no case_end line (the log was cut short: a killed run, a truncated file, or lines \
                    deleted): what it lacks cannot be told, so the check fails\n";
        }
    }
    out
}

/// One case's (sandbox, call id, request or response) stream.
type Stream = Vec<(u32, String, PairEvent)>;

/// What `check` gathers of one case as it reads.
#[derive(Default)]
struct Tally {
    case: String,
    stream: Stream,
    /// `call_end` lines.
    ended: u64,
    /// What its `case_end` line counts.
    calls: Option<u64>,
}

/// Replays the pairing invariant over a recorded log (ndjson or compact, [`read_log`]), case
/// by case in the order they appear. Only `request` and `response` lines count; other
/// events are skipped.
pub(crate) fn check_log(file: &str, reader: impl BufRead) -> Result<LogCheck, LogError> {
    // Cases in the order they first appear, each with its pairing stream.
    let mut cases: Vec<Tally> = Vec::new();
    let mut warnings = read_log(file, reader, |l| {
        if !EVENTS.contains(&l.event.as_str()) {
            return Err(Refused(format!("unknown event {:?}; an event log's are: {}", l.event, EVENTS.join(", "))));
        }
        let idx = cases.iter().position(|c| c.case == l.case).unwrap_or_else(|| {
            cases.push(Tally { case: l.case.clone(), ..Tally::default() });
            cases.len() - 1
        });
        let tally = &mut cases[idx];
        match l.event.as_str() {
            "call_end" => tally.ended += 1,
            "case_end" => {
                tally.calls = Some(l.calls.ok_or_else(|| Refused("a case_end line without its `calls` count".into()))?)
            }
            _ => {}
        }
        let ev = match (l.event.as_str(), l.outcome.as_deref()) {
            ("request", _) => PairEvent::Request,
            ("response" | "parked", _) => PairEvent::Response,
            ("response_unread", _) => PairEvent::ResponseByFile,
            ("call_end", Some("interrupted")) => PairEvent::CutOff,
            _ => return Ok(()),
        };
        tally.stream.push((l.sandbox, l.call, ev));
        Ok(())
    })?;
    for t in cases.iter().filter(|t| t.calls.is_none()) {
        warnings.push(format!(
            "{file}: case {} has no case_end line (the run was killed?): a call missing whole cannot be told",
            t.case
        ));
    }
    let cases = cases
        .into_iter()
        .map(|t| {
            let evs = t.stream;
            let requests = evs.iter().filter(|e| e.2 == PairEvent::Request).count() as u64;
            let responses =
                evs.iter().filter(|e| matches!(e.2, PairEvent::Response | PairEvent::ResponseByFile)).count() as u64;
            let report = check_pairing(evs.iter().map(|(s, c, e)| (*s, c.as_str(), *e)));
            let missing = t.calls.map_or(0, |n| n.saturating_sub(t.ended));
            CaseCheck { case: t.case, requests, responses, report, calls: t.calls, missing }
        })
        .collect();
    Ok(LogCheck { cases, warnings })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::pairing::PairEvent;
    use crate::events::{FailKind, RunnerSide, WriterSide};
    use crate::record::compact::{self, Line};
    use crate::record::logread::MAX_LINE_BYTES;
    use std::time::Duration;

    /// Every kind of event, written to both logs: the compact one reads back as the ndjson
    /// one's lines, in order.
    #[test]
    fn a_compact_log_reads_back_as_the_ndjson_lines() {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let calls: Vec<crate::events::CallId> =
            ["s1-t0-k0-c0", "s1-t0-k0-c1", "s12-t0-k0-c0", "é\"x", "s1-t0-k1-c0"].iter().map(|c| (*c).into()).collect();
        let mut events = Vec::new();
        for (i, call) in calls.iter().enumerate() {
            let sandbox = if i == 2 { 12 } else { 1 };
            let t = 1000 * i as u64;
            let ev = |us, kind| Event { at: at(us), sandbox, call: call.clone(), kind };
            events.push(ev(t, EventKind::Requesting));
            events.push(ev(t + 5, EventKind::Answering));
            events.push(ev(t + 7, if i == 3 { EventKind::AnsweringUnread } else { EventKind::Parked }));
            let w = WriterSide {
                intended: at(t),
                started: at(t),
                warmup: false,
                published: (i != 1).then(|| at(t + 1)),
                read: (i % 2 == 0).then(|| at(t + 2_000_000)),
                outcome: [
                    CallOutcome::Answered(crate::base::protocol::Outcome::Ok),
                    CallOutcome::Failed(FailKind::Timeout),
                    CallOutcome::Answered(crate::base::protocol::Outcome::Paused),
                    CallOutcome::Failed(FailKind::Interrupted),
                    CallOutcome::Failed(FailKind::IdCollision),
                ][i],
            };
            events.push(ev(t + 9, EventKind::Writer(w)));
            let r = RunnerSide {
                woke: at(t + 1),
                picked: at(t + 2),
                handler_start: at(t + 3),
                handler_end: at(t + 4),
                answered: (i != 4).then(|| at(t + 5)),
                observed: i == 2,
                handler_known: i != 3,
            };
            events.push(ev(t + 3, EventKind::Runner(r)));
        }
        let pairing = check_pairing([(3, "ghost", PairEvent::Response), (1, "s1-t0-k0-c0", PairEvent::Response)]);
        let dir = tempfile::tempdir().unwrap();
        let (nd, bin) = (dir.path().join("e.ndjson"), dir.path().join("e.bin"));
        for case in ["one", "two \"cases\""] {
            let epoch = at(500);
            let mut a = EventLog::append(&nd, case, epoch).unwrap();
            let mut b = compact::CompactLog::append(&bin, case, epoch, u64::MAX).unwrap();
            for e in &events {
                a.message(&Msg::Call(e.clone()));
                b.message(&Msg::Call(e.clone()));
            }
            a.close(&pairing).unwrap();
            b.close(&pairing).unwrap();
        }
        let want: Vec<Line> =
            std::fs::read_to_string(&nd).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let bytes = std::fs::read(&bin).unwrap();
        assert!(compact::is_compact(&bytes));
        let mut r = compact::CompactReader::new(&bytes[..]);
        let mut got = Vec::new();
        while let Some(l) = r.next_line().unwrap() {
            got.push(l);
        }
        assert_eq!(got, want);
        assert!(bytes.len() * 4 < std::fs::metadata(&nd).unwrap().len() as usize, "{} bytes", bytes.len());
        // Cut inside its last record: read up to it, then told so.
        let mut r = compact::CompactReader::new(&bytes[..bytes.len() - 1]);
        let mut n = 0;
        let end = loop {
            match r.next_line() {
                Ok(Some(_)) => n += 1,
                Ok(None) => break None,
                Err(e) => break Some(e),
            }
        };
        assert!(matches!(end, Some(compact::ReadError::Cut)) && n > 0 && n < want.len(), "{n}");
    }

    use crate::events::CallOutcome;

    fn line(case: &str, call: &str, event: &str) -> String {
        format!(r#"{{"case":"{case}","sandbox":0,"call":"{call}","event":"{event}","t_ns":1}}"#)
    }

    #[test]
    fn a_call_deleted_whole_is_missing_and_an_unknown_event_is_refused() {
        let call = |c: &str| {
            [
                line("k", c, "request"),
                line("k", c, "response"),
                line("k", c, "call_end").replace("}", r#","outcome":"ok"}"#),
            ]
            .join("\n")
        };
        let end = r#"{"case":"k","sandbox":0,"call":"","event":"case_end","t_ns":9,"calls":2}"#;
        let whole = format!("{}\n{}\n{end}\n", call("a"), call("b"));
        let c = check_log("e.ndjson", whole.as_bytes()).unwrap();
        assert_eq!((c.cases[0].calls, c.cases[0].missing, c.cases[0].faults()), (Some(2), 0, 0));
        let cut = format!("{}\n{end}\n", call("a"));
        let c = check_log("e.ndjson", cut.as_bytes()).unwrap();
        assert_eq!((c.cases[0].report.total(), c.cases[0].missing, c.cases[0].faults()), (0, 1, 1), "{c:?}");
        assert!(render_checks(&c).contains("missing: 1 of the 2 calls"), "{}", render_checks(&c));
        let c = check_log("e.ndjson", format!("{}\n", call("a")).as_bytes()).unwrap();
        assert!(render_checks(&c).contains("case k has no case_end line"), "{}", render_checks(&c));
        assert!(render_checks(&c).contains("  incomplete: no case_end line"), "{}", render_checks(&c));
        assert!(c.cases[0].fails() && c.cases[0].faults() == 0, "a log cut short cannot pass");
        let odd = format!("{}\n{}\n", call("a"), line("k", "a", "teleported"));
        let e = check_log("e.ndjson", odd.as_bytes()).unwrap_err();
        assert!(e.to_string().starts_with("e.ndjson:4: unknown event \"teleported\""), "{e}");
    }

    #[test]
    fn each_breach_kind_is_found_in_a_crafted_log() {
        type Crafted<'a> = (&'a str, &'a [(&'a str, &'a str)], BreachKind);
        let crafted: Vec<Crafted<'_>> = vec![
            ("unpaired", &[("a", "response")], BreachKind::UnpairedResponse),
            ("dup-answer", &[("a", "request"), ("a", "response"), ("a", "response")], BreachKind::DuplicateResponse),
            ("dup-request", &[("a", "request"), ("a", "request"), ("a", "response")], BreachKind::DuplicateRequest),
            (
                "reused",
                &[("a", "request"), ("a", "response"), ("a", "request"), ("a", "response")],
                BreachKind::ReusedId,
            ),
            ("unanswered", &[("a", "request"), ("b", "request"), ("b", "response")], BreachKind::UnansweredAtEnd),
        ];
        for (case, evs, kind) in crafted {
            let mut text: String = evs.iter().map(|(c, e)| line(case, c, e) + "\n").collect();
            text += &line(case, "a", "picked_up"); // other events are skipped
            let checks = check_log("crafted.ndjson", text.as_bytes()).unwrap().cases;
            assert_eq!(checks.len(), 1);
            let r = &checks[0].report;
            assert_eq!((r.total(), r.count(kind)), (1, 1), "{case}: {r:?}");
        }
        let clean = [line("ok", "a", "request"), line("ok", "a", "response")].join("\n");
        let checks = check_log("clean.ndjson", clean.as_bytes()).unwrap();
        let c = &checks.cases[0];
        assert_eq!((c.requests, c.responses, c.report.total()), (1, 1, 0));
        assert_eq!(
            render_checks(&checks),
            "warning: clean.ndjson: case ok has no case_end line (the run was killed?): a call missing whole cannot be told\nok: 1 requests, 1 responses, 0 breaches\n  incomplete: no case_end line (the log was cut short: a killed run, a truncated file, or lines deleted): what it lacks cannot be told, so the check fails\n"
        );
        let dup = [line("d", "a", "request"), line("d", "a", "response"), line("d", "a", "response")].join("\n");
        let mut checks = check_log("dup.ndjson", dup.as_bytes()).unwrap();
        checks.warnings.clear();
        assert_eq!(
            render_checks(&checks),
            "d: 1 requests, 2 responses, 1 breaches\n  duplicate_response: 1\n    duplicate_response sandbox 0 call \"a\"\n  \
             incomplete: no case_end line (the log was cut short: a killed run, a truncated file, or lines deleted): \
             what it lacks cannot be told, so the check fails\n"
        );
    }

    #[test]
    fn lines_are_written_as_json() {
        use crate::events::{Event, FailKind, WriterSide};
        let file = tempfile::NamedTempFile::new().unwrap();
        let t0 = Instant::now();
        let ms = |n: u64| t0 + std::time::Duration::from_millis(n);
        let mut log = EventLog::append(file.path(), "a \"case\"", ms(1)).unwrap();
        let call: crate::events::CallId = "t1-\u{e9}\"c0".into();
        let ev = |at, kind| Msg::Call(Event { at, sandbox: 3, call: call.clone(), kind });
        log.message(&ev(t0, EventKind::Requesting));
        let w = WriterSide {
            intended: ms(1),
            started: ms(1),
            warmup: false,
            published: Some(ms(2)),
            read: None,
            outcome: CallOutcome::Failed(FailKind::Timeout),
        };
        log.message(&ev(ms(9), EventKind::Writer(w)));
        log.close(&check_pairing([(3, "x", PairEvent::Response)])).unwrap();
        let text = std::fs::read_to_string(file.path()).unwrap();
        let head = r#"{"case":"a \"case\"","sandbox":3,"call":"t1-é\"c0","event":"#;
        let want = [
            format!(r#"{head}"request","t_ns":-1000000}}"#),
            format!(r#"{head}"published","t_ns":1000000}}"#),
            format!(r#"{head}"call_end","t_ns":8000000,"outcome":"timeout"}}"#),
            r#"{"case":"a \"case\"","sandbox":3,"call":"x","event":"breach","t_ns":8000000,"kind":"unpaired_response"}"#
                .to_string(),
            r#"{"case":"a \"case\"","sandbox":0,"call":"","event":"case_end","t_ns":8000000,"calls":1}"#.to_string(),
        ];
        assert_eq!(text.lines().collect::<Vec<_>>(), want);
        for l in text.lines() {
            let _: Line = serde_json::from_str(l).unwrap();
        }
    }

    #[test]
    fn a_broken_line_is_named() {
        let text = line("c", "a", "request") + "\n{not json\n";
        let e = check_log("x.ndjson", text.as_bytes()).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("x.ndjson:2: not an event line"), "{e}");
    }

    #[test]
    fn a_line_longer_than_the_cap_is_named_not_read_whole() {
        let long = format!("{}\n{}\n", line("c", "a", "request"), "x".repeat(MAX_LINE_BYTES + 1));
        let e = check_log("long.ndjson", long.as_bytes()).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().starts_with("long.ndjson:2: longer than 1048576 bytes (1 MiB); allowed:"), "{e}");
        // A line that never ends: refused at the cap, not read until memory runs out.
        let endless = std::io::BufReader::new(std::io::repeat(b'{'));
        assert_eq!(check_log("endless", endless).unwrap_err().line, 1);
        let request = line("c", "a", "request");
        let at_cap = format!("{request}{}\n", " ".repeat(MAX_LINE_BYTES - request.len()));
        assert_eq!(check_log("wide.ndjson", at_cap.as_bytes()).unwrap().cases[0].requests, 1);
    }

    #[test]
    fn a_last_line_cut_by_a_kill_is_skipped_with_a_warning() {
        let full = [line("c", "a", "request"), line("c", "a", "response"), line("c", "b", "request")].join("\n");
        let cut = &full[..full.len() - 9];
        let check = check_log("cut.ndjson", cut.as_bytes()).unwrap();
        assert_eq!((check.cases[0].requests, check.cases[0].responses), (1, 1), "the cut request is not counted");
        assert_eq!(check.warnings.len(), 2, "the cut line, and no case_end: {:?}", check.warnings);
        assert!(render_checks(&check).starts_with("warning: cut.ndjson:3: the last line has no newline"));
        // A whole last line without its newline still counts; a cut line before the last
        // one is an error, not a warning.
        assert_eq!(check_log("whole.ndjson", full.as_bytes()).unwrap().cases[0].requests, 2);
        let inside = format!("{cut}\n{}\n", line("c", "b", "response"));
        assert_eq!(check_log("inside.ndjson", inside.as_bytes()).unwrap_err().line, 3);
    }
}
