//! The recorder: turns the event stream into per-call timelines, HDR histograms, outcome
//! counters and the pairing check.
//!
//! It runs on its own thread at the end of the event channel, so the measured tasks pay
//! only for a timestamp and a send. A call's timeline is folded into the histograms as soon
//! as it is complete and then dropped, so memory stays flat however long a case runs.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::time::Instant;

use crate::events::{EventKind, FailKind, Msg};
use crate::pairing::{PairEvent, Pairing, PairingReport};
use crate::protocol::Outcome;

/// The measures of SPEC §4, plus the pacer's lag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    Wake,
    Pickup,
    Completion,
    CompletionUncorrected,
    RelayOverhead,
    ScheduleLag,
}

impl Measure {
    pub const ALL: [Measure; 6] = [
        Measure::Wake,
        Measure::Pickup,
        Measure::Completion,
        Measure::CompletionUncorrected,
        Measure::RelayOverhead,
        Measure::ScheduleLag,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Measure::Wake => "wake",
            Measure::Pickup => "pickup",
            Measure::Completion => "completion",
            Measure::CompletionUncorrected => "completion_uncorrected",
            Measure::RelayOverhead => "relay_overhead",
            Measure::ScheduleLag => "schedule_lag",
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
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

#[derive(Debug, Default, Clone, Copy)]
struct Timeline {
    intended: Option<Instant>,
    started: Option<Instant>,
    warmup: bool,
    published: Option<Instant>,
    woke: Option<Instant>,
    picked: Option<Instant>,
    h_start: Option<Instant>,
    h_end: Option<Instant>,
    answered: Option<Instant>,
    read: Option<Instant>,
}

impl Timeline {
    fn complete(&self) -> bool {
        self.started.is_some()
            && self.read.is_some()
            && self.answered.is_some()
            && self.h_end.is_some()
            && self.h_start.is_some()
            && self.woke.is_some()
            && self.published.is_some()
    }
}

/// Call outcome counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
    hist: [Histogram<u64>; 6],
    pub calls: CallCounts,
    pub pairing: PairingReport,
    pub notices: Vec<String>,
    pub notices_total: u64,
    /// Calls whose timeline never completed although they were answered (missing runner
    /// events); they are not in the histograms.
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

/// The recorder's state. Feed it with [`Recorder::ingest`], end with [`Recorder::finish`].
pub struct Recorder {
    timelines: HashMap<(u32, Box<str>), Timeline>,
    hist: [Histogram<u64>; 6],
    calls: CallCounts,
    pairing: Pairing,
    notices: Vec<String>,
    notices_total: u64,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            timelines: HashMap::new(),
            hist: std::array::from_fn(|_| new_histogram()),
            calls: CallCounts::default(),
            pairing: Pairing::default(),
            notices: Vec::new(),
            notices_total: 0,
        }
    }
}

fn span(from: Option<Instant>, to: Option<Instant>) -> Option<Duration> {
    Some(to?.saturating_duration_since(from?))
}

impl Recorder {
    /// Drains a channel until every sender is gone.
    pub fn run(rx: Receiver<Msg>) -> Recording {
        let mut r = Recorder::default();
        for msg in rx {
            r.ingest(msg);
        }
        r.finish()
    }

    pub fn ingest(&mut self, msg: Msg) {
        let ev = match msg {
            Msg::Call(ev) => ev,
            Msg::Notice(n) => {
                self.notices_total += 1;
                if self.notices.len() < MAX_NOTICES {
                    self.notices.push(format!("sandbox {}: {}", n.sandbox, n.what));
                }
                return;
            }
        };
        match ev.kind {
            EventKind::Requesting => return self.pairing.observe(ev.sandbox, &ev.call, PairEvent::Request),
            EventKind::Answering => return self.pairing.observe(ev.sandbox, &ev.call, PairEvent::Response),
            EventKind::Failed { why } => {
                self.timelines.remove(&(ev.sandbox, ev.call));
                let c = &mut self.calls;
                match why {
                    FailKind::Timeout => c.timeout += 1,
                    FailKind::IdCollision => c.id_collision += 1,
                    FailKind::PublishError => c.publish_error += 1,
                    FailKind::Interrupted => c.interrupted += 1,
                }
                return;
            }
            _ => {}
        }
        let mut entry = match self.timelines.entry((ev.sandbox, ev.call)) {
            Entry::Occupied(o) => o,
            Entry::Vacant(v) => v.insert_entry(Timeline::default()),
        };
        let t = entry.get_mut();
        let at = Some(ev.at);
        match ev.kind {
            EventKind::Started { intended, warmup } => {
                t.started = at;
                t.intended = Some(intended);
                t.warmup = warmup;
                self.calls.started += 1;
                if warmup {
                    self.calls.warmup += 1;
                }
            }
            EventKind::Published => t.published = at,
            EventKind::Woke => t.woke = t.woke.or(at),
            EventKind::PickedUp => t.picked = at,
            EventKind::HandlerStart => t.h_start = at,
            EventKind::HandlerEnd => t.h_end = at,
            EventKind::Answered => t.answered = at,
            EventKind::AnswerRead { outcome } => {
                t.read = at;
                self.calls.completed += 1;
                match outcome {
                    Outcome::Ok => self.calls.ok += 1,
                    Outcome::Error => self.calls.error += 1,
                    Outcome::Paused => self.calls.paused += 1,
                }
            }
            EventKind::Requesting | EventKind::Answering | EventKind::Failed { .. } => unreachable!(),
        }
        if t.complete() {
            let t = entry.remove();
            self.fold(&t);
        }
    }

    fn fold(&mut self, t: &Timeline) {
        if t.warmup {
            return;
        }
        let handler = span(t.h_start, t.h_end).unwrap_or_default();
        let uncorrected = span(t.started, t.read);
        let values = [
            (Measure::Wake, span(t.published, t.woke)),
            (Measure::Pickup, span(t.published, t.h_start)),
            (Measure::Completion, span(t.intended, t.read)),
            (Measure::CompletionUncorrected, uncorrected),
            (Measure::RelayOverhead, uncorrected.map(|u| u.saturating_sub(handler))),
            (Measure::ScheduleLag, span(t.intended, t.started)),
        ];
        for (m, v) in values {
            if let Some(d) = v {
                self.hist[m as usize].saturating_record((d.as_nanos() as u64).max(1));
            }
        }
    }

    pub fn finish(self) -> Recording {
        let incomplete = self.timelines.values().filter(|t| t.read.is_some() && !t.complete()).count() as u64;
        Recording {
            hist: self.hist,
            calls: self.calls,
            pairing: self.pairing.finish(),
            notices: self.notices,
            notices_total: self.notices_total,
            incomplete,
        }
    }
}
