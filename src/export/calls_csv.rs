//! `calls.csv` (opt-in with `run --calls-csv`, meant for small runs): one row per call,
//! with every timestamp of its timeline in microseconds from the case's first intended
//! start, and its pickup and completion. Empty cells are steps that did not happen or
//! cannot be seen (a black-box runner's wake).

use std::io::{self, BufWriter, Write};
use std::path::Path;

use tokio::time::Instant;

use crate::events::{CallOutcome, RunnerSide, WriterSide};

pub const HEADER: &str = "case,sandbox,call,outcome,intended_us,published_us,woke_us,picked_us,handler_start_us,handler_end_us,answered_us,read_us,pickup_us,completion_us";

pub struct CallsCsv {
    out: BufWriter<std::fs::File>,
    case: String,
    epoch: Instant,
    failed: Option<io::Error>,
}

impl CallsCsv {
    /// Appends to `path`, writing the header first if the file is new or empty.
    pub fn append(path: &Path, case: &str, epoch: Instant) -> io::Result<CallsCsv> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let empty = file.metadata()?.len() == 0;
        let mut out = BufWriter::new(file);
        if empty {
            writeln!(out, "{HEADER}")?;
        }
        // A case name is A-Z a-z 0-9 - _ . (validated), so it needs no quoting.
        Ok(CallsCsv { out, case: case.to_owned(), epoch, failed: None })
    }

    fn us(&self, t: Option<Instant>) -> String {
        t.map_or(String::new(), |t| {
            let us = if t >= self.epoch {
                (t - self.epoch).as_micros() as i128
            } else {
                -((self.epoch - t).as_micros() as i128)
            };
            us.to_string()
        })
    }

    /// One call's row; `r` is `None` for a call the runner never answered.
    pub fn row(&mut self, sandbox: u32, call: &str, w: &WriterSide, r: Option<&RunnerSide>) {
        if self.failed.is_some() {
            return;
        }
        let outcome = match w.outcome {
            CallOutcome::Answered(o) => o.name(),
            CallOutcome::Failed(f) => f.name(),
        };
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
        if let Err(e) = writeln!(self.out, "{line}") {
            self.failed = Some(e);
        }
    }

    pub fn finish(mut self) -> io::Result<()> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        self.out.flush()
    }
}
