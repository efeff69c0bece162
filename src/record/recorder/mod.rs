//! The recorder: turns the event stream into per-call timelines, HDR histograms, outcome
//! counters and the pairing check.
//!
//! It runs on its own thread at the end of the event channel, so the measured tasks pay
//! only for a timestamp and a send. Its drain loop blocks on the channel and hands each
//! batch to the recorder and then to the case's other [`Listener`]s (the event log,
//! `calls.csv`), which it closes with the pairing verdict at the end. A call's timeline is
//! folded into the histograms as soon as both halves are in and then dropped; what stays
//! per call is its 16-byte pairing key, and under agent turns only until its turn ends (the
//! pairing scope of SPEC §7 is one agent run), so a fleet's memory does not grow with its day.

mod causes;
mod fleet;
mod follow;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

pub(crate) use crate::record::measure::samples_needed;
pub(crate) use crate::record::measure::{new_histogram, LatencyStats, Measure};
use crate::record::measure::{CallTimes, COUNT};
pub(crate) use fleet::{Fleet, FleetRecording, HealthPoint};
pub(crate) use follow::{CaseHdr, Intervals, Span, SpanStats, TimedNotice};

use self::causes::Causes;
pub(crate) use self::causes::{is_zero, CauseReport, RAN_LATE};
use crate::base::protocol::Outcome;
use crate::events::pairing::{call_key, CallKey, PairEvent, Pairing, PairingReport};
use crate::events::timeline::Halves;
use crate::events::{
    CallOutcome, Event, EventInbox, EventKind, FailKind, Listener, Msg, Notice, RunnerSide, WriterSide,
};

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
    /// Requests the machine failed to publish ([`FailKind::Environment`]).
    #[serde(default)]
    pub environment: u64,
    pub interrupted: u64,
    /// Calls in the warm-up, excluded from the histograms.
    pub warmup: u64,
}

/// Everything the recorder learned in one case.
pub struct Recording {
    hist: [Histogram<u64>; COUNT],
    /// Calls by how they ended.
    pub calls: CallCounts,
    /// What the pairing check found.
    pub pairing: PairingReport,
    /// The distinct notices, each once.
    pub notices: Vec<String>,
    /// Every notice said, repeats included.
    pub notices_total: u64,
    /// Writes this machine failed (a full disk, ...): [`Say::Environment`](crate::base::notice::Say::Environment) notices.
    pub environment_failures: u64,
    /// Notices with their time and sandbox (capped at [`MAX_TIMED_NOTICES`]).
    pub timed_notices: Vec<TimedNotice>,
    /// Per span given to [`Recorder::with_spans`], in order: the calls it touched.
    pub spans: Vec<SpanStats>,
    /// Why an output of the case (the event log, `calls.csv`) is incomplete, if one is.
    pub log_error: Option<String>,
    /// Pickup per interval, if asked for.
    pub intervals: Option<Intervals>,
    /// Calls the writer saw answered whose runner half never arrived (an answer the
    /// runner did not announce); they are not in the histograms.
    pub unmeasured: u64,
    /// The fleet's turns, if followed ([`Recorder::with_fleet`]).
    pub fleet: Option<FleetRecording>,
    /// Why calls were lost, answered twice, or run after their writer gave up.
    pub causes: CauseReport,
}

impl Recording {
    /// The whole case's histogram of `m`.
    pub fn histogram(&self, m: Measure) -> &Histogram<u64> {
        &self.hist[m.index()]
    }

    /// The percentiles of `m`.
    pub fn stats(&self, m: Measure) -> LatencyStats {
        LatencyStats::of(self.histogram(m))
    }
}

/// A histogram per measure, in [`Measure::ALL`]'s order.
struct Hists([Histogram<u64>; COUNT]);

impl Default for Hists {
    fn default() -> Self {
        Hists(std::array::from_fn(|_| new_histogram()))
    }
}

/// At most this many notices are kept verbatim; all are counted.
pub(crate) const MAX_NOTICES: usize = 200;
/// At most this many notices are kept with their time, for the fault report.
pub(crate) const MAX_TIMED_NOTICES: usize = 50_000;
/// How often the drain loop publishes the running pickup median, at most.
const LIVE_EVERY: Duration = Duration::from_millis(200);

/// The recorder's state. Feed it with [`Recorder::ingest`], end with [`Recorder::finish`],
/// or let [`Recorder::drain`] do both on the recorder thread.
#[derive(Default)]
pub struct Recorder {
    /// Calls with one half of their timeline in.
    waiting: Halves<CallKey>,
    hist: Hists,
    calls: CallCounts,
    pairing: Pairing,
    notices: Vec<String>,
    notices_total: u64,
    environment_failures: u64,
    timed: Vec<TimedNotice>,
    spans: Vec<(Span, SpanStats)>,
    intervals: Option<Intervals>,
    live: Option<Arc<AtomicU64>>,
    fleet: Option<Fleet>,
    /// The latest time any message carried.
    last_at: Option<Instant>,
    causes: Causes,
}

impl Recorder {
    /// A recorder sized for about `calls` calls, so the hot path never rehashes.
    pub(crate) fn with_capacity(calls: usize) -> Self {
        Recorder { pairing: Pairing::with_capacity(calls), ..Recorder::default() }
    }

    /// Scopes the pairing check by agent turns ([`Pairing::scoped_by_turns`]).
    pub(crate) fn scoped_by_turns(mut self) -> Self {
        self.pairing = std::mem::take(&mut self.pairing).scoped_by_turns();
        self
    }

    /// Follows the fleet's turns and health (see [`Fleet::new`]).
    pub(crate) fn with_fleet(mut self, fleet: Fleet) -> Self {
        self.fleet = Some(fleet);
        self
    }

    /// Keeps pickup histograms per `interval` from `epoch` (by publication time), at most
    /// `max` of them (later calls fold into the last).
    pub(crate) fn with_intervals(mut self, epoch: Instant, interval: Duration, max: usize) -> Self {
        self.intervals = Some(Intervals { epoch, interval, hists: Vec::new(), max: max.max(1) });
        self
    }

    /// Follows the calls of each span (see [`Recording::spans`]).
    pub(crate) fn with_spans(mut self, spans: &[Span]) -> Self {
        self.spans = spans.iter().map(|s| (*s, SpanStats::default())).collect();
        self
    }

    /// Publishes the running pickup median (ns; 0 before any sample) into `live`.
    pub(crate) fn with_live(mut self, live: Arc<AtomicU64>) -> Self {
        self.live = Some(live);
        self
    }

    /// Drains an inbox until every sender is gone, with no other listener.
    pub fn run(inbox: EventInbox) -> Recording {
        Recorder::default().drain(inbox, Vec::new())
    }

    /// The recorder thread's loop: blocks on `inbox` until every sender is gone, handing
    /// each batch to this recorder and then to each of `listeners` in turn; at the end
    /// closes them with the pairing verdict (their errors go to [`Recording::log_error`]).
    pub(crate) fn drain(mut self, mut inbox: EventInbox, mut listeners: Vec<Box<dyn Listener>>) -> Recording {
        let mut batch = Vec::with_capacity(1024);
        let mut published = std::time::Instant::now();
        while inbox.recv(&mut batch) {
            batch.iter().for_each(|m| self.ingest(m));
            for l in &mut listeners {
                batch.iter().for_each(|m| l.message(m));
            }
            batch.clear();
            // The live median for a progress bar, at most five times a second.
            if let Some(live) = &self.live {
                if published.elapsed() >= LIVE_EVERY {
                    let h = &self.hist.0[Measure::Pickup.index()];
                    live.store(if h.is_empty() { 0 } else { h.value_at_quantile(0.5) }, Ordering::Relaxed);
                    published = std::time::Instant::now();
                }
            }
        }
        let mut rec = self.finish();
        let errors: Vec<String> =
            listeners.iter_mut().filter_map(|l| l.close(&rec.pairing).err()).map(|e| e.to_string()).collect();
        if !errors.is_empty() {
            rec.log_error = Some(errors.join("; "));
        }
        rec
    }

    /// Takes one message off the channel.
    pub fn ingest(&mut self, msg: &Msg) {
        let ev = match msg {
            Msg::Call(ev) => ev,
            Msg::Notice(n) => return self.notice(n),
            Msg::Turn(m) => {
                self.last_at = self.last_at.max(Some(m.at));
                if matches!(m.what, crate::events::TurnEvent::Ended { .. }) {
                    self.pairing.turn_ended(m.sandbox);
                }
                if let Some(f) = &mut self.fleet {
                    f.mark(m);
                }
                return;
            }
        };
        let key = call_key(ev.sandbox, &ev.call);
        let breach = match &ev.kind {
            EventKind::Requesting => self.pairing.observe(key, ev.sandbox, &ev.call, PairEvent::Request),
            // A parked call's turn ended with no answer: that closes its request.
            EventKind::Answering | EventKind::Parked => {
                self.pairing.observe(key, ev.sandbox, &ev.call, PairEvent::Response)
            }
            EventKind::AnsweringUnread => {
                // Known by its file id: the read failed for the call in flight it names, which
                // this answer closes (a file no writer requested pairs with nothing).
                let Some((k, call)) = self.pairing.resolve_file(ev.sandbox, &ev.call) else { return };
                self.causes.read_failed(k, ev.sandbox, &call);
                // Its request stays on disk: a later turn may answer it again.
                self.pairing.keep(k);
                self.pairing.observe(k, ev.sandbox, &call, PairEvent::Response)
            }
            EventKind::Writer(w) => {
                self.count(w);
                // Cut off, or never published (the machine failed it): closed, no breach.
                if matches!(w.outcome, CallOutcome::Failed(FailKind::Interrupted | FailKind::Environment)) {
                    self.pairing.observe(key, ev.sandbox, &ev.call, PairEvent::CutOff);
                }
                if let CallOutcome::Failed(why) = w.outcome {
                    self.causes.gave_up(key, ev.sandbox, &ev.call, ev.at, why);
                    if let Some(r) = self.waiting.forget(&key) {
                        self.causes.ran(key, ev.sandbox, &ev.call, &r);
                    }
                    return self.failed(ev, w);
                }
                if let Some(r) = self.waiting.writer(key, w) {
                    self.joined(ev, w, &r);
                }
                None
            }
            EventKind::Runner(r) => {
                self.causes.ran(key, ev.sandbox, &ev.call, r);
                if let Some(w) = self.waiting.runner(key, r) {
                    self.joined(ev, &w, r);
                }
                None
            }
        };
        // (An error answer by file id pairs only with an open request: never a duplicate.)
        if let Some(kind) = breach {
            self.causes.breach(key, ev.sandbox, &ev.call, kind);
        }
    }

    fn notice(&mut self, n: &Notice) {
        if let Some(f) = &mut self.fleet {
            f.notice(n.sandbox, &n.what, n.at);
        }
        self.notices_total += 1;
        self.environment_failures += u64::from(n.what.is_environment());
        if self.notices.len() < MAX_NOTICES {
            self.notices.push(format!("sandbox {}: {}", n.sandbox, n.what));
        }
        if self.timed.len() < MAX_TIMED_NOTICES {
            self.timed.push(n.clone().into());
        }
    }

    /// A call the writer gave up on (or never published).
    fn failed(&mut self, ev: &Event, w: &WriterSide) {
        for (s, st) in &mut self.spans {
            if s.overlaps(ev.sandbox, w.intended, ev.at) {
                st.calls += 1;
                st.failed += 1;
            }
        }
    }

    /// A call with both halves of its timeline in: `ev` is the later one.
    fn joined(&mut self, ev: &Event, w: &WriterSide, r: &RunnerSide) {
        let pickup = || span(w.published, Some(r.handler_start));
        if !w.warmup {
            fold(&mut self.hist.0, w, r);
            if let (Some(iv), Some(p), Some(v)) = (&mut self.intervals, w.published, pickup()) {
                iv.record(p, v);
            }
        }
        for (s, st) in &mut self.spans {
            if s.overlaps(ev.sandbox, w.intended, w.read.unwrap_or(ev.at)) {
                st.calls += 1;
                st.answered += 1;
                st.worst_pickup = st.worst_pickup.max(pickup());
                st.worst_completion = st.worst_completion.max(span(Some(w.intended), w.read));
            }
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
            CallOutcome::Failed(FailKind::Environment) => c.environment += 1,
            CallOutcome::Failed(FailKind::Interrupted) => c.interrupted += 1,
        }
    }

    /// Ends the recording: the pairing check finishes (calls still open included) and the
    /// recording is handed over.
    pub fn finish(mut self) -> Recording {
        let pairing = std::mem::take(&mut self.pairing).finish();
        let end = self.last_at;
        let fleet = self.fleet.take().map(|f| f.finish(end.unwrap_or_else(Instant::now)));
        Recording {
            hist: self.hist.0,
            calls: self.calls,
            pairing,
            log_error: None,
            intervals: self.intervals.take(),
            notices: self.notices,
            notices_total: self.notices_total,
            environment_failures: self.environment_failures,
            timed_notices: self.timed,
            spans: self.spans.into_iter().map(|(_, st)| st).collect(),
            unmeasured: self.waiting.writers_waiting(),
            fleet,
            causes: self.causes.finish(),
        }
    }
}

impl Listener for Recorder {
    fn message(&mut self, msg: &Msg) {
        self.ingest(msg);
    }
}

impl From<Notice> for TimedNotice {
    fn from(n: Notice) -> TimedNotice {
        TimedNotice { at: n.at, sandbox: n.sandbox, what: n.what }
    }
}

fn span(from: Option<Instant>, to: Option<Instant>) -> Option<Duration> {
    Some(to?.saturating_duration_since(from?))
}

/// Records one call's measures. Every instant is read once, as nanoseconds from the
/// intended start; each measure is [`Measure::of`] those.
fn fold(hist: &mut [Histogram<u64>; COUNT], w: &WriterSide, r: &RunnerSide) {
    let base = w.intended;
    let at = |t: Instant| crate::base::units::offset_ns(t, base);
    let call = CallTimes {
        started: at(w.started),
        published: w.published.map(at),
        woke: at(r.woke),
        observed: r.observed,
        handler_start: at(r.handler_start),
        handler_end: at(r.handler_end),
        handler_known: r.handler_known,
        answered: r.answered.map(at),
        read: w.read.map(at),
    };
    for (h, m) in hist.iter_mut().zip(Measure::ALL) {
        if let Some(v) = m.of(&call) {
            h.saturating_record(v.max(1));
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

    #[tokio::test(start_paused = true)]
    async fn an_error_answer_to_an_unread_request_pairs_with_it_and_is_said_unmeasured() {
        // The runner could not read the request (a daemon restarting): it answers under the
        // file id alone; the writer reads the error answer and ends the call.
        let t0 = Instant::now();
        let mut r = Recorder::default();
        r.ingest(&ev("s1-t2-k0-c0", K::Requesting));
        r.ingest(&ev("s1-t2-k0-c0", K::AnsweringUnread));
        r.ingest(&ev(
            "s1-t2-k0-c0",
            K::Writer(WriterSide {
                intended: t0,
                started: t0,
                warmup: false,
                published: Some(t0),
                read: Some(t0 + Duration::from_millis(9)),
                outcome: CallOutcome::Answered(Outcome::Error),
            }),
        ));
        let rec = r.finish();
        assert_eq!(rec.pairing.total(), 0, "{:?}", rec.pairing.breaches);
        assert_eq!((rec.calls.error, rec.unmeasured), (1, 1), "answered, with no runner timeline");
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
            r.ingest(&m);
        }
        assert!(r.waiting.is_empty(), "a complete timeline is folded and dropped");
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
            r.ingest(&m);
        }
        for m in timeline(Instant::now(), "warm", true) {
            r.ingest(&m);
        }
        let rec = r.finish();
        assert_eq!(rec.stats(Measure::Pickup).count, 1);
        assert_eq!(rec.calls.warmup, 1);
        assert_eq!(rec.calls.completed, 2);
    }

    #[test]
    fn an_answer_no_runner_announced_is_counted_as_unmeasured_not_dropped() {
        let mut r = Recorder::default();
        let mut msgs = timeline(Instant::now(), "c1", false);
        msgs.remove(2);
        for m in msgs {
            r.ingest(&m);
        }
        let rec = r.finish();
        assert_eq!((rec.calls.completed, rec.stats(Measure::Completion).count, rec.unmeasured), (1, 0, 1));
    }

    #[test]
    fn failures_and_breaches_are_counted() {
        let mut r = Recorder::default();
        let t = Instant::now();
        r.ingest(&ev("a", K::Requesting));
        r.ingest(&ev(
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
        r.ingest(&ev("b", K::Answering));
        r.ingest(&Msg::Notice(crate::events::Notice {
            at: Instant::now(),
            sandbox: 0,
            what: "odd file".to_owned().into(),
        }));
        let rec = r.finish();
        assert_eq!(rec.calls.timeout, 1);
        assert_eq!(rec.pairing.count(crate::events::pairing::BreachKind::UnansweredAtEnd), 1);
        assert_eq!(rec.pairing.count(crate::events::pairing::BreachKind::UnpairedResponse), 1);
        assert_eq!(rec.notices, vec!["sandbox 0: odd file".to_string()]);
    }

    /// Counts what it is fed and fails to close.
    struct Counting(Arc<AtomicU64>);

    impl Listener for Counting {
        fn message(&mut self, _: &Msg) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }

        fn close(&mut self, pairing: &PairingReport) -> Result<(), crate::events::Incomplete> {
            let why = std::io::Error::other(format!("closed with {} breaches", pairing.total()));
            Err(crate::events::Incomplete { output: "the count", why })
        }
    }

    #[test]
    fn drain_feeds_every_listener_and_keeps_their_errors() {
        let (sink, inbox) = crate::events::EventSink::channel();
        let seen = Arc::new(AtomicU64::new(0));
        let listeners: Vec<Box<dyn Listener>> =
            vec![Box::new(Counting(seen.clone())), Box::new(Counting(seen.clone()))];
        let recorder = std::thread::spawn(move || Recorder::default().drain(inbox, listeners));
        let t0 = Instant::now();
        for m in timeline(t0, "c1", false) {
            let Msg::Call(ev) = m else { unreachable!() };
            sink.emit_at(ev.at, ev.sandbox, &ev.call, ev.kind);
        }
        sink.emit(0, &Arc::from("c2"), K::Requesting);
        drop(sink);
        let rec = recorder.join().unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), 2 * 5);
        assert_eq!(rec.stats(Measure::Pickup).count, 1);
        assert_eq!(
            rec.log_error.as_deref(),
            Some("cannot write the count: closed with 1 breaches; cannot write the count: closed with 1 breaches")
        );
    }
}
