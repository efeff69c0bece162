//! The recorder: turns the event stream into per-call timelines, HDR histograms, outcome
//! counters and the pairing check.
//!
//! It runs on its own thread at the end of the event channel, so the measured tasks pay
//! only for a timestamp and a send. A call's timeline is folded into the histograms as soon
//! as it is complete and then dropped, so memory stays flat however long a case runs.

use std::collections::hash_map::{Entry, OccupiedEntry};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use foldhash::HashMap;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::eventlog::EventLog;
use crate::events::{CallOutcome, EventInbox, EventKind, FailKind, Msg, RunnerSide, WriterSide};
use crate::export::calls_csv::CallsCsv;
use crate::pairing::{call_key, CallKey, PairEvent, Pairing, PairingReport};
use crate::protocol::Outcome;

/// The measures of SPEC §4, the parts a call's time splits into, and the pacer's lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Wake,
    Pickup,
    Completion,
    CompletionUncorrected,
    RelayOverhead,
    ScheduleLag,
    /// The handler's own time (handler start -> end).
    Handler,
    /// Handler end -> the answer's rename completed.
    AnswerPublish,
    /// The answer's rename -> the writer has read it (hop 1).
    Hop1,
}

impl Measure {
    pub const ALL: [Measure; 9] = [
        Measure::Wake,
        Measure::Pickup,
        Measure::Completion,
        Measure::CompletionUncorrected,
        Measure::RelayOverhead,
        Measure::ScheduleLag,
        Measure::Handler,
        Measure::AnswerPublish,
        Measure::Hop1,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Measure::Wake => "wake",
            Measure::Pickup => "pickup",
            Measure::Completion => "completion",
            Measure::CompletionUncorrected => "completion_uncorrected",
            Measure::RelayOverhead => "relay_overhead",
            Measure::ScheduleLag => "schedule_lag",
            Measure::Handler => "handler",
            Measure::AnswerPublish => "answer_publish",
            Measure::Hop1 => "hop1",
        }
    }

    pub fn from_name(s: &str) -> Option<Measure> {
        Measure::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// Nanosecond histograms from 1 ns to one hour at 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Summary statistics of one histogram, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl LatencyStats {
    pub fn of(h: &Histogram<u64>) -> LatencyStats {
        if h.is_empty() {
            return LatencyStats::default();
        }
        let us = |ns: u64| (ns as f64 / 1000.0 * 10.0).round() / 10.0;
        LatencyStats {
            count: h.len(),
            min: us(h.min()),
            p50: us(h.value_at_quantile(0.5)),
            p90: us(h.value_at_quantile(0.9)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
            mean: (h.mean() / 1000.0 * 10.0).round() / 10.0,
        }
    }

    /// A statistic by its gate name (`p50`, `p99`, `max`, ...), in microseconds.
    pub fn get(&self, stat: &str) -> Option<f64> {
        Some(match stat {
            "min" => self.min,
            "p50" | "median" => self.p50,
            "p90" => self.p90,
            "p99" => self.p99,
            "p999" => self.p999,
            "max" => self.max,
            "mean" => self.mean,
            _ => return None,
        })
    }

    pub const STATS: [&'static str; 7] = ["min", "p50", "p90", "p99", "p999", "max", "mean"];
}

/// The two halves of one call's timeline, joined as they arrive.
#[derive(Debug, Default)]
struct Timeline {
    writer: Option<WriterSide>,
    runner: Option<RunnerSide>,
}

/// Call outcome counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCounts {
    /// Calls the writers started (warm-up included).
    pub started: u64,
    /// Calls whose answer the writer read.
    pub completed: u64,
    pub ok: u64,
    pub error: u64,
    pub paused: u64,
    pub timeout: u64,
    pub id_collision: u64,
    pub publish_error: u64,
    pub interrupted: u64,
    /// Calls in the warm-up, excluded from the histograms.
    pub warmup: u64,
}

/// Everything the recorder learned in one case.
pub struct Recording {
    hist: [Histogram<u64>; 9],
    pub calls: CallCounts,
    pub pairing: PairingReport,
    pub notices: Vec<String>,
    pub notices_total: u64,
    /// Notices with their time and sandbox (capped at [`MAX_TIMED_NOTICES`]).
    pub timed_notices: Vec<TimedNotice>,
    /// Per span given to [`Recorder::with_spans`], in order: the calls it touched.
    pub spans: Vec<SpanStats>,
    /// Why the event log is incomplete, if it is.
    pub log_error: Option<String>,
    /// Pickup per interval, if asked for.
    pub intervals: Option<Intervals>,
    /// Calls the writer saw answered whose runner half never arrived (an answer the
    /// runner did not announce); they are not in the histograms.
    pub incomplete: u64,
}

impl Recording {
    pub fn histogram(&self, m: Measure) -> &Histogram<u64> {
        &self.hist[m as usize]
    }

    pub fn stats(&self, m: Measure) -> LatencyStats {
        LatencyStats::of(self.histogram(m))
    }
}

/// At most this many notices are kept verbatim; all are counted.
pub const MAX_NOTICES: usize = 200;
/// At most this many notices are kept with their time, for the fault report.
pub const MAX_TIMED_NOTICES: usize = 50_000;

/// A case's histograms, for the HdrHistogram exports and charts.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseHdr {
    pub measures: Vec<(Measure, Histogram<u64>)>,
    pub intervals: Option<Intervals>,
    /// The case's length (from its first intended start).
    pub length: Duration,
}

/// Pickup histograms per interval of publication time (the `.hlog` and pickup-over-time
/// chart); created only for intervals with calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Intervals {
    pub epoch: Instant,
    pub interval: Duration,
    /// Index i covers [epoch + i * interval, epoch + (i + 1) * interval).
    pub hists: Vec<Option<Histogram<u64>>>,
    max: usize,
}

impl Intervals {
    fn record(&mut self, at: Instant, v: Option<Duration>) {
        let Some(v) = v else { return };
        let i = (at.saturating_duration_since(self.epoch).as_nanos() / self.interval.as_nanos().max(1)) as usize;
        let i = i.min(self.max - 1);
        if self.hists.len() <= i {
            self.hists.resize(i + 1, None);
        }
        self.hists[i].get_or_insert_with(new_histogram).saturating_record((v.as_nanos() as u64).max(1));
    }
}

/// A stretch of time in one sandbox (a fault and its aftermath) whose calls are followed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub sandbox: u32,
    pub from: Instant,
    pub to: Instant,
}

impl Span {
    fn overlaps(&self, sandbox: u32, start: Instant, end: Instant) -> bool {
        sandbox == self.sandbox && start <= self.to && end >= self.from
    }
}

/// The calls whose life overlapped a [`Span`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpanStats {
    pub calls: u64,
    pub answered: u64,
    pub failed: u64,
    pub worst_pickup: Option<Duration>,
    pub worst_completion: Option<Duration>,
}

/// A notice with its time and sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedNotice {
    pub at: Instant,
    pub sandbox: u32,
    pub what: String,
}

/// The recorder's state. Feed it with [`Recorder::ingest`], end with [`Recorder::finish`].
pub struct Recorder {
    timelines: HashMap<CallKey, Timeline>,
    hist: [Histogram<u64>; 9],
    calls: CallCounts,
    pairing: Pairing,
    notices: Vec<String>,
    notices_total: u64,
    timed: Vec<TimedNotice>,
    spans: Vec<(Span, SpanStats)>,
    log: Option<EventLog>,
    intervals: Option<Intervals>,
    live: Option<Arc<AtomicU64>>,
    csv: Option<CallsCsv>,
    /// The latest event time seen (the log's breaches are stamped with it).
    last_at: Option<Instant>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::with_capacity(0)
    }
}

impl Recorder {
    /// A recorder sized for about `calls` calls, so the hot path never rehashes.
    pub fn with_capacity(calls: usize) -> Self {
        Recorder {
            timelines: HashMap::default(),
            hist: std::array::from_fn(|_| new_histogram()),
            calls: CallCounts::default(),
            pairing: Pairing::with_capacity(calls),
            notices: Vec::new(),
            notices_total: 0,
            timed: Vec::new(),
            spans: Vec::new(),
            log: None,
            intervals: None,
            live: None,
            csv: None,
            last_at: None,
        }
    }

    /// Keeps pickup histograms per `interval` from `epoch` (by publication time), at most
    /// `max` of them (later calls fold into the last).
    pub fn with_intervals(mut self, epoch: Instant, interval: Duration, max: usize) -> Self {
        self.intervals = Some(Intervals { epoch, interval, hists: Vec::new(), max: max.max(1) });
        self
    }

    /// Writes every event to `log` as well (`events.ndjson`).
    pub fn with_log(mut self, log: EventLog) -> Self {
        self.log = Some(log);
        self
    }

    /// Follows the calls of each span (see [`Recording::spans`]).
    pub fn with_spans(mut self, spans: &[Span]) -> Self {
        self.spans = spans.iter().map(|s| (*s, SpanStats::default())).collect();
        self
    }
}

fn entry(map: &mut HashMap<CallKey, Timeline>, key: CallKey) -> OccupiedEntry<'_, CallKey, Timeline> {
    match map.entry(key) {
        Entry::Occupied(o) => o,
        Entry::Vacant(v) => v.insert_entry(Timeline::default()),
    }
}

fn span(from: Option<Instant>, to: Option<Instant>) -> Option<Duration> {
    Some(to?.saturating_duration_since(from?))
}

impl Recorder {
    /// Drains an inbox until every sender is gone.
    pub fn run(inbox: EventInbox) -> Recording {
        Recorder::default().drain(inbox)
    }

    /// Drains an inbox into this recorder until every sender is gone.
    pub fn drain(mut self, mut inbox: EventInbox) -> Recording {
        let mut published = std::time::Instant::now();
        loop {
            let closed = inbox.is_closed();
            let n = inbox.take(|msg| self.ingest(msg));
            // The live median for a progress bar, at most five times a second.
            if let Some(live) = &self.live {
                if published.elapsed() >= std::time::Duration::from_millis(200) {
                    let h = &self.hist[Measure::Pickup as usize];
                    live.store(if h.is_empty() { 0 } else { h.value_at_quantile(0.5) }, Ordering::Relaxed);
                    published = std::time::Instant::now();
                }
            }
            if closed {
                return self.finish();
            }
            if n == 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }

    /// Writes a row per call to `csv` as well (`calls.csv`).
    pub fn with_calls_csv(mut self, csv: CallsCsv) -> Self {
        self.csv = Some(csv);
        self
    }

    /// Publishes the running pickup median (ns; 0 before any sample) into `live`.
    pub fn with_live(mut self, live: Arc<AtomicU64>) -> Self {
        self.live = Some(live);
        self
    }

    pub fn ingest(&mut self, msg: Msg) {
        let ev = match msg {
            Msg::Call(ev) => ev,
            Msg::Notice(n) => {
                self.notices_total += 1;
                if self.notices.len() < MAX_NOTICES {
                    self.notices.push(format!("sandbox {}: {}", n.sandbox, n.what));
                }
                if self.timed.len() < MAX_TIMED_NOTICES {
                    self.timed.push(TimedNotice { at: n.at, sandbox: n.sandbox, what: n.what });
                }
                return;
            }
        };
        if let Some(log) = &mut self.log {
            log.event(&ev);
            self.last_at = self.last_at.max(Some(ev.at));
        }
        let key = call_key(ev.sandbox, &ev.call);
        let entry = match ev.kind {
            EventKind::Requesting => return self.pairing.observe(key, ev.sandbox, &ev.call, PairEvent::Request),
            EventKind::Answering => return self.pairing.observe(key, ev.sandbox, &ev.call, PairEvent::Response),
            EventKind::Writer(w) => {
                self.count(&w);
                if let CallOutcome::Failed(_) = w.outcome {
                    if let Some(csv) = &mut self.csv {
                        csv.row(ev.sandbox, &ev.call, &w, None);
                    }
                    for (s, st) in &mut self.spans {
                        if s.overlaps(ev.sandbox, w.intended, ev.at) {
                            st.calls += 1;
                            st.failed += 1;
                        }
                    }
                    self.timelines.remove(&key);
                    return;
                }
                let mut e = entry(&mut self.timelines, key);
                e.get_mut().writer = Some(w);
                e
            }
            EventKind::Runner(r) => {
                let mut e = entry(&mut self.timelines, key);
                e.get_mut().runner = Some(r);
                e
            }
        };
        let t = entry.get();
        if let (Some(w), Some(r)) = (&t.writer, &t.runner) {
            if let Some(csv) = &mut self.csv {
                csv.row(ev.sandbox, &ev.call, w, Some(r));
            }
            if !w.warmup {
                Self::fold(&mut self.hist, w, r);
                if let (Some(iv), Some(p)) = (&mut self.intervals, w.published) {
                    iv.record(p, span(w.published, Some(r.handler_start)));
                }
            }
            for (s, st) in &mut self.spans {
                if s.overlaps(ev.sandbox, w.intended, w.read.unwrap_or(ev.at)) {
                    st.calls += 1;
                    st.answered += 1;
                    let pickup = span(w.published, Some(r.handler_start));
                    let completion = span(Some(w.intended), w.read);
                    st.worst_pickup = st.worst_pickup.max(pickup);
                    st.worst_completion = st.worst_completion.max(completion);
                }
            }
            entry.remove();
        }
    }

    fn count(&mut self, w: &WriterSide) {
        let c = &mut self.calls;
        c.started += 1;
        c.warmup += u64::from(w.warmup);
        match w.outcome {
            CallOutcome::Answered(o) => {
                c.completed += 1;
                match o {
                    Outcome::Ok => c.ok += 1,
                    Outcome::Error => c.error += 1,
                    Outcome::Paused => c.paused += 1,
                }
            }
            CallOutcome::Failed(FailKind::Timeout) => c.timeout += 1,
            CallOutcome::Failed(FailKind::IdCollision) => c.id_collision += 1,
            CallOutcome::Failed(FailKind::PublishError) => c.publish_error += 1,
            CallOutcome::Failed(FailKind::Interrupted) => c.interrupted += 1,
        }
    }

    fn fold(hist: &mut [Histogram<u64>; 9], w: &WriterSide, r: &RunnerSide) {
        let handler = r.handler_end.saturating_duration_since(r.handler_start);
        let uncorrected = span(Some(w.started), w.read);
        // A black-box runner's wake (and, unless stated, handler time) is not visible.
        let values = [
            (Measure::Wake, span(w.published, Some(r.woke)).filter(|_| !r.observed)),
            (Measure::Pickup, span(w.published, Some(r.handler_start))),
            (Measure::Completion, span(Some(w.intended), w.read)),
            (Measure::CompletionUncorrected, uncorrected),
            (Measure::RelayOverhead, uncorrected.map(|u| u.saturating_sub(handler)).filter(|_| r.handler_known)),
            (Measure::ScheduleLag, Some(w.started.saturating_duration_since(w.intended))),
            (Measure::Handler, Some(handler).filter(|_| r.handler_known)),
            (Measure::AnswerPublish, span(Some(r.handler_end), r.answered).filter(|_| r.handler_known)),
            (Measure::Hop1, span(r.answered, w.read)),
        ];
        for (m, v) in values {
            if let Some(d) = v {
                hist[m as usize].saturating_record((d.as_nanos() as u64).max(1));
            }
        }
    }

    pub fn finish(mut self) -> Recording {
        let pairing = std::mem::take(&mut self.pairing).finish();
        let log_error = self.log.take().and_then(|mut log| {
            if let Some(at) = self.last_at {
                log.breaches(&pairing, at);
            }
            log.finish().err().map(|e| format!("cannot write the event log: {e}"))
        });
        let log_error = match self.csv.take().map(CallsCsv::finish) {
            Some(Err(e)) => Some(format!("cannot write calls.csv: {e}")),
            _ => log_error,
        };
        let incomplete = self.timelines.values().filter(|t| t.writer.is_some()).count() as u64;
        Recording {
            hist: self.hist,
            calls: self.calls,
            pairing,
            log_error,
            intervals: self.intervals.take(),
            notices: self.notices,
            notices_total: self.notices_total,
            timed_notices: self.timed,
            spans: self.spans.into_iter().map(|(_, st)| st).collect(),
            incomplete,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{CallOutcome, Event, EventKind as K, RunnerSide, WriterSide};

    fn ev(call: &str, kind: K) -> Msg {
        Msg::Call(Event { at: Instant::now(), sandbox: 0, call: std::sync::Arc::from(call), kind })
    }

    /// One call's full timeline: published 2 ms after its intended start, woke at 5 ms,
    /// handler 7..17 ms, answer read at 20 ms.
    fn timeline(t0: Instant, call: &str, warmup: bool) -> Vec<Msg> {
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        vec![
            ev(call, K::Requesting),
            ev(call, K::Answering),
            ev(
                call,
                K::Runner(RunnerSide {
                    woke: at(5),
                    picked: at(6),
                    handler_start: at(7),
                    handler_end: at(17),
                    answered: Some(at(18)),
                    observed: false,
                    handler_known: true,
                }),
            ),
            ev(
                call,
                K::Writer(WriterSide {
                    intended: t0,
                    started: at(1),
                    warmup,
                    published: Some(at(2)),
                    read: Some(at(20)),
                    outcome: CallOutcome::Answered(Outcome::Ok),
                }),
            ),
        ]
    }

    #[test]
    fn a_timeline_yields_exact_measures() {
        let mut r = Recorder::default();
        for m in timeline(Instant::now(), "c1", false) {
            r.ingest(m);
        }
        assert!(r.timelines.is_empty(), "a complete timeline is folded and dropped");
        let rec = r.finish();
        // HDR histograms at 3 significant digits: exact to 0.1 %.
        let check = |m: Measure, want: f64| {
            let got = rec.stats(m).p50;
            assert!((got - want).abs() <= want * 0.001, "{m:?}: {got} µs, want {want}");
        };
        check(Measure::Wake, 3000.0);
        check(Measure::Pickup, 5000.0);
        check(Measure::Completion, 20000.0);
        check(Measure::CompletionUncorrected, 19000.0);
        check(Measure::RelayOverhead, 9000.0);
        check(Measure::ScheduleLag, 1000.0);
        assert_eq!(rec.calls.ok, 1);
        assert_eq!(rec.pairing.total(), 0);
    }

    #[test]
    fn order_of_arrival_does_not_matter_and_warmup_is_excluded() {
        let mut r = Recorder::default();
        let mut msgs = timeline(Instant::now(), "c1", false);
        // The writer's half may arrive before the runner's.
        msgs.swap(2, 3);
        for m in msgs {
            r.ingest(m);
        }
        for m in timeline(Instant::now(), "warm", true) {
            r.ingest(m);
        }
        let rec = r.finish();
        assert_eq!(rec.stats(Measure::Pickup).count, 1);
        assert_eq!(rec.calls.warmup, 1);
        assert_eq!(rec.calls.completed, 2);
    }

    #[test]
    fn failures_and_breaches_are_counted() {
        let mut r = Recorder::default();
        let t = Instant::now();
        r.ingest(ev("a", K::Requesting));
        r.ingest(ev(
            "a",
            K::Writer(WriterSide {
                intended: t,
                started: t,
                warmup: false,
                published: Some(t),
                read: None,
                outcome: CallOutcome::Failed(FailKind::Timeout),
            }),
        ));
        r.ingest(ev("b", K::Answering));
        r.ingest(Msg::Notice(crate::events::Notice { at: Instant::now(), sandbox: 0, what: "odd file".into() }));
        let rec = r.finish();
        assert_eq!(rec.calls.timeout, 1);
        assert_eq!(rec.pairing.count(crate::pairing::BreachKind::UnansweredAtEnd), 1);
        assert_eq!(rec.pairing.count(crate::pairing::BreachKind::UnpairedResponse), 1);
        assert_eq!(rec.notices, vec!["sandbox 0: odd file".to_string()]);
    }
}
