//! `calls.csv` (opt-in with `run --calls-csv`, meant for small runs): one row per call,
//! with every timestamp of its timeline in microseconds from the case's first intended
//! start, and its pickup and completion. Empty cells are steps that did not happen or
//! cannot be seen (a black-box runner's wake).
//!
//! It is a [`Listener`] on the event channel: it joins each call's halves itself and
//! writes the row when the call is whole (or the writer gave up), in that order.

use std::io::{self, Write};
use std::path::Path;

use tokio::time::Instant;

use super::appended::Appended;
use crate::events::pairing::PairingReport;
use crate::events::timeline::Halves;
use crate::events::{CallId, CallOutcome, EventKind, Incomplete, Listener, Msg, RunnerSide, WriterSide};

/// The header line of `calls.csv`.
pub const HEADER: &str = "case,sandbox,call,outcome,intended_us,published_us,woke_us,picked_us,handler_start_us,handler_end_us,answered_us,read_us,pickup_us,completion_us";

pub(crate) struct CallsCsv {
    out: Appended,
    case: String,
    epoch: Instant,
    waiting: Halves<(u32, CallId)>,
}

impl CallsCsv {
    /// Appends to `path`, writing the header first if the file is new or empty.
    pub(crate) fn append(path: &Path, case: &str, epoch: Instant) -> io::Result<CallsCsv> {
        let mut out = Appended::open(path, 8 << 10)?;
        if out.is_empty()? {
            out.write(|o| writeln!(o, "{HEADER}"));
        }
        // A case name is A-Z a-z 0-9 - _ . and, a sweep's point, @ = , (validated): only the
        // comma of a point of two options needs quoting (it holds no quote).
        let case = if case.contains(',') { format!("\"{case}\"") } else { case.to_owned() };
        Ok(CallsCsv { out, case, epoch, waiting: Halves::default() })
    }

    fn us(&self, t: Option<Instant>) -> String {
        t.map_or(String::new(), |t| (crate::base::units::offset_ns(t, self.epoch) / 1000).to_string())
    }

    /// One call's row; `r` is `None` for a call the runner never answered.
    pub(crate) fn row(&mut self, sandbox: u32, call: &str, w: &WriterSide, r: Option<&RunnerSide>) {
        let outcome = w.outcome.name();
        let span = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
            (Some(a), Some(b)) => b.saturating_duration_since(a).as_micros().to_string(),
            _ => String::new(),
        };
        let woke = r.filter(|r| !r.observed).map(|r| r.woke);
        let known = r.filter(|r| r.handler_known);
        // Call ids are free text: quoted, with inner quotes doubled.
        let call = format!("\"{}\"", call.replace('"', "\"\""));
        let line = [
            self.case.clone(),
            sandbox.to_string(),
            call,
            outcome.to_owned(),
            self.us(Some(w.intended)),
            self.us(w.published),
            self.us(woke),
            self.us(r.map(|r| r.picked)),
            self.us(known.map(|r| r.handler_start)),
            self.us(known.map(|r| r.handler_end)),
            self.us(r.and_then(|r| r.answered)),
            self.us(w.read),
            span(w.published, r.map(|r| r.handler_start)),
            span(Some(w.intended), w.read),
        ]
        .join(",");
        self.out.write(|o| writeln!(o, "{line}"));
    }
}

impl Listener for CallsCsv {
    fn message(&mut self, msg: &Msg) {
        let Msg::Call(ev) = msg else { return };
        let key = (ev.sandbox, ev.call.clone());
        match &ev.kind {
            EventKind::Writer(w) if matches!(w.outcome, CallOutcome::Failed(_)) => {
                self.waiting.forget(&key);
                self.row(ev.sandbox, &ev.call, w, None);
            }
            EventKind::Writer(w) => {
                if let Some(r) = self.waiting.writer(key, w) {
                    self.row(ev.sandbox, &ev.call, w, Some(&r));
                }
            }
            EventKind::Runner(r) => {
                if let Some(w) = self.waiting.runner(key, r) {
                    self.row(ev.sandbox, &ev.call, &w, Some(r));
                }
            }
            EventKind::Requesting | EventKind::Answering | EventKind::AnsweringUnread | EventKind::Parked => {}
        }
    }

    fn close(&mut self, _pairing: &PairingReport) -> Result<(), Incomplete> {
        self.out.flush().map_err(|why| Incomplete { output: "calls.csv", why })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::Outcome;
    use crate::events::{Event, FailKind};

    #[test]
    fn a_row_per_call_when_it_is_whole_or_the_writer_gave_up() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let t0 = Instant::now();
        let us = |n: u64| t0 + std::time::Duration::from_micros(n);
        let mut csv = CallsCsv::append(file.path(), "case", t0).unwrap();
        let runner = RunnerSide {
            woke: us(3),
            picked: us(4),
            handler_start: us(5),
            handler_end: us(9),
            answered: Some(us(10)),
            observed: false,
            handler_known: true,
        };
        let writer = |outcome| WriterSide {
            intended: t0,
            started: us(1),
            warmup: false,
            published: Some(us(2)),
            read: Some(us(12)),
            outcome,
        };
        let ok = writer(CallOutcome::Answered(Outcome::Ok));
        let mut send = |call: &str, kind| {
            csv.message(&Msg::Call(Event { at: us(20), sandbox: 1, call: call.into(), kind }));
        };
        send("runner-first", EventKind::Runner(runner.clone()));
        send("runner-first", EventKind::Writer(ok.clone()));
        send("writer-first", EventKind::Writer(ok));
        send("given-up", EventKind::Runner(runner.clone()));
        send("given-up", EventKind::Writer(writer(CallOutcome::Failed(FailKind::Timeout))));
        send("writer-first", EventKind::Runner(runner));
        csv.close(&PairingReport::default()).unwrap();
        let text = std::fs::read_to_string(file.path()).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows[0], HEADER);
        assert_eq!(rows[1], r#"case,1,"runner-first",ok,0,2,3,4,5,9,10,12,3,12"#);
        assert_eq!(rows[2], r#"case,1,"given-up",timeout,0,2,,,,,,12,,12"#);
        assert_eq!(rows[3], r#"case,1,"writer-first",ok,0,2,3,4,5,9,10,12,3,12"#);
        assert_eq!(rows.len(), 4);
        // A sweep's point of two options has a comma in its name: quoted.
        let two = tempfile::NamedTempFile::new().unwrap();
        let mut csv = CallsCsv::append(two.path(), "w@window=5s,idle_timeout=none", t0).unwrap();
        csv.message(&Msg::Call(Event {
            at: us(20),
            sandbox: 0,
            call: "c".into(),
            kind: EventKind::Writer(writer(CallOutcome::Failed(FailKind::Timeout))),
        }));
        csv.close(&PairingReport::default()).unwrap();
        let text = std::fs::read_to_string(two.path()).unwrap();
        assert!(text.lines().nth(1).unwrap().starts_with(r#""w@window=5s,idle_timeout=none",0,"c",timeout"#), "{text}");
    }
}
