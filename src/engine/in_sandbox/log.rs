//! What the in-sandbox writer brings back, and how it joins this machine's events.
//!
//! The sandbox writer writes one JSON line per message of its side (a request about to be
//! published, the writer's half of a call's timeline, a notice), stamped with the sandbox's
//! `CLOCK_MONOTONIC` in nanoseconds, then an `end` line. Here the lines become events on
//! this machine's clock through a [`ClockFit`] estimated from round trips, and are merged
//! with the runner's events so that the pairing check sees what it would have seen live:
//! each request before its answer ([`merge`]).

use std::collections::VecDeque;
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::base::notice::Say;
use crate::base::units::Mono;
use crate::events::{CallOutcome, Event, EventKind, Msg, Notice, WriterSide};
use crate::sandbox::host::ClockReading;

/// One line of the sandbox writer's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ev", rename_all = "snake_case")]
pub(crate) enum Line {
    Requesting {
        t: u64,
        call: String,
    },
    Writer {
        t: u64,
        call: String,
        intended: u64,
        started: u64,
        warmup: bool,
        published: Option<u64>,
        read: Option<u64>,
        outcome: String,
    },
    Notice {
        t: u64,
        text: String,
        degraded: bool,
    },
    /// The writer finished: how many calls its pacer fired, and whether it was stopped.
    End {
        fired: u64,
        stopped: bool,
    },
    /// The writer could not run (its reason).
    Fatal {
        msg: String,
    },
}

impl Line {
    /// The line for `msg` of the writer's side, its times read on `mono`.
    pub(crate) fn of(msg: &Msg, mono: &Mono) -> Option<Line> {
        Some(match msg {
            Msg::Call(Event { at, call, kind: EventKind::Requesting, .. }) => {
                Line::Requesting { t: mono.ns_of(*at), call: call.to_string() }
            }
            Msg::Call(Event { at, call, kind: EventKind::Writer(w), .. }) => Line::Writer {
                t: mono.ns_of(*at),
                call: call.to_string(),
                intended: mono.ns_of(w.intended),
                started: mono.ns_of(w.started),
                warmup: w.warmup,
                published: w.published.map(|t| mono.ns_of(t)),
                read: w.read.map(|t| mono.ns_of(t)),
                outcome: w.outcome.name().to_owned(),
            },
            Msg::Notice(n) => {
                Line::Notice { t: mono.ns_of(n.at), text: n.what.to_string(), degraded: n.what.degraded() }
            }
            // The runner's side never runs in the sandbox writer, nor do its turns.
            Msg::Call(_) | Msg::Turn(_) => return None,
        })
    }
}

/// The sandbox's clock against this machine's: `sandbox = local + offset`, the offset
/// moving linearly between the best reading before the case and the best after it (drift).
/// A reading's error is at most half its round trip, whatever the asymmetry of the path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ClockFit {
    /// Local time (ns) of the first fix, and the offset there.
    at: f64,
    offset: f64,
    /// Offset change per local nanosecond (0 with a single fix).
    slope: f64,
    /// Half the round trip of the worse of the fixes used, ns.
    pub uncertainty_ns: u64,
    pub readings: usize,
}

impl ClockFit {
    /// The fit from readings taken `before` the case and (if any) `after` it; `None` with no
    /// reading before.
    pub(crate) fn of(before: &[ClockReading], after: &[ClockReading]) -> Option<ClockFit> {
        let best = |rs: &[ClockReading]| rs.iter().min_by_key(|r| r.back_ns.saturating_sub(r.sent_ns)).copied();
        let fix = |r: ClockReading| {
            let mid = (r.sent_ns as f64 + r.back_ns as f64) / 2.0;
            (mid, r.sandbox_ns as f64 - mid, r.back_ns.saturating_sub(r.sent_ns) / 2)
        };
        let (at, offset, u1) = fix(best(before)?);
        let (slope, u2) = match best(after).map(fix) {
            Some((m2, o2, u2)) if m2 > at => ((o2 - offset) / (m2 - at), u2),
            _ => (0.0, 0),
        };
        Some(ClockFit { at, offset, slope, uncertainty_ns: u1.max(u2), readings: before.len() + after.len() })
    }

    /// The offset (sandbox − local), ns, at the first fix.
    pub(crate) fn offset_ns(&self) -> f64 {
        self.offset
    }

    /// Parts per million the sandbox's clock gains on this one.
    pub(crate) fn drift_ppm(&self) -> f64 {
        self.slope * 1e6
    }

    /// The sandbox's reading at local time `local_ns`.
    pub(crate) fn to_sandbox(self, local_ns: u64) -> u64 {
        let l = local_ns as f64;
        (l + self.offset + self.slope * (l - self.at)).max(0.0) as u64
    }

    /// Local time of the sandbox's reading `sandbox_ns`.
    pub(crate) fn to_local(self, sandbox_ns: u64) -> u64 {
        // sandbox = l + offset + slope (l - at)  =>  l = (sandbox - offset + slope at) / (1 + slope)
        let s = sandbox_ns as f64;
        ((s - self.offset + self.slope * self.at) / (1.0 + self.slope)).max(0.0) as u64
    }
}

/// A sandbox writer's log read back.
#[derive(Debug, Default)]
pub(crate) struct WriterLog {
    pub msgs: Vec<Msg>,
    /// From its `end` line: calls fired, and whether it was stopped. `None`: no end line.
    pub end: Option<(u64, bool)>,
    pub fatal: Option<String>,
    /// Lines that could not be read (counted, said).
    pub bad_lines: u64,
    /// What its notices said of a degraded response watch.
    pub degraded: Option<String>,
}

/// Reads the log of `sandbox`'s writer, mapping its times through `fit` onto `mono`.
pub(crate) fn read_log(text: &str, sandbox: u32, fit: &ClockFit, mono: &Mono) -> WriterLog {
    let at = |ns: u64| -> Instant { mono.instant_of(fit.to_local(ns)) };
    let call_event = |t, call: String, kind| Msg::Call(Event { at: at(t), sandbox, call: Arc::from(call), kind });
    let mut log = WriterLog::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(parsed) = serde_json::from_str::<Line>(line) else {
            log.bad_lines += 1;
            continue;
        };
        match parsed {
            Line::Requesting { t, call } => log.msgs.push(call_event(t, call, EventKind::Requesting)),
            Line::Writer { t, call, intended, started, warmup, published, read, outcome } => {
                let Some(outcome) = CallOutcome::from_name(&outcome) else {
                    log.bad_lines += 1;
                    continue;
                };
                let w = WriterSide {
                    intended: at(intended),
                    started: at(started),
                    warmup,
                    published: published.map(at),
                    read: read.map(at),
                    outcome,
                };
                log.msgs.push(call_event(t, call, EventKind::Writer(w)));
            }
            Line::Notice { t, text, degraded } => {
                if degraded && log.degraded.is_none() {
                    log.degraded = Some(format!("sandbox writer: {text}"));
                }
                let what = Say::Other(format!("sandbox writer: {text}"));
                log.msgs.push(Msg::Notice(Notice { at: at(t), sandbox, what }));
            }
            Line::End { fired, stopped } => log.end = Some((fired, stopped)),
            Line::Fatal { msg } => log.fatal = Some(msg),
        }
    }
    log
}

fn at_of(m: &Msg) -> Instant {
    match m {
        Msg::Call(e) => e.at,
        Msg::Notice(n) => n.at,
        Msg::Turn(m) => m.at,
    }
}

/// One order for the runner's messages (as this machine's channel carried them) and the
/// sandbox writers' (each in its own order): by time, except that a request always comes
/// before the runner's answer (or park) to it. Each stream keeps its own order; a
/// request stamped after its answer (clock error larger than the pickup) is pulled
/// forward, with what its writer logged before it.
pub(crate) fn merge(runner: Vec<Msg>, writers: Vec<Vec<Msg>>) -> Vec<Msg> {
    let mut streams: Vec<VecDeque<Msg>> = std::iter::once(runner).chain(writers).map(VecDeque::from).collect();
    // Where each writer stream announces each request: (sandbox, call) -> (stream, position
    // counted from the stream's start), and how many each stream has handed out.
    let mut requests: HashMap<(u32, Arc<str>), (usize, usize)> = HashMap::new();
    for (s, stream) in streams.iter().enumerate().skip(1) {
        for (i, m) in stream.iter().enumerate() {
            if let Msg::Call(Event { sandbox, call, kind: EventKind::Requesting, .. }) = m {
                requests.entry((*sandbox, call.clone())).or_insert((s, i));
            }
        }
    }
    let mut taken = vec![0usize; streams.len()];
    let mut out = Vec::with_capacity(streams.iter().map(VecDeque::len).sum());
    let head = |streams: &[VecDeque<Msg>]| {
        (0..streams.len()).filter(|&s| !streams[s].is_empty()).min_by_key(|&s| at_of(&streams[s][0]))
    };
    while let Some(s) = head(&streams) {
        if s == 0 {
            if let Some(Msg::Call(Event {
                sandbox,
                call,
                kind: EventKind::Answering | EventKind::AnsweringUnread | EventKind::Parked,
                ..
            })) = streams[0].front()
            {
                if let Some(&(w, pos)) = requests.get(&(*sandbox, call.clone())) {
                    while taken[w] <= pos {
                        out.push(streams[w].pop_front().expect("positions are within the stream"));
                        taken[w] += 1;
                    }
                }
            }
        }
        out.push(streams[s].pop_front().expect("not empty"));
        taken[s] += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::Outcome;
    use crate::events::RunnerSide;

    /// A reading of a sandbox clock `offset` ns ahead, stamped `skew` ns after the request
    /// left, the answer back `rtt` ns after it left.
    fn reading(sent: u64, rtt: u64, skew: u64, offset: i64) -> ClockReading {
        ClockReading { sent_ns: sent, back_ns: sent + rtt, sandbox_ns: (sent + skew) as i64 as u64 + offset as u64 }
    }

    #[test]
    fn the_fit_uses_the_best_round_trip_and_its_error_is_within_half_of_it() {
        let offset = 5_000_000_000i64;
        // The stamp falls anywhere inside the round trip; the best (shortest) one is used.
        let before = [reading(1_000, 9_000, 8_000, offset), reading(20_000, 2_000, 1_900, offset)];
        let fit = ClockFit::of(&before, &[]).unwrap();
        assert_eq!(fit.uncertainty_ns, 1_000);
        assert!((fit.offset_ns() - offset as f64).abs() <= 1_000.0, "{}", fit.offset_ns());
        assert_eq!(fit.drift_ppm(), 0.0);
        let local = 1_000_000u64;
        assert!(fit.to_local(fit.to_sandbox(local)).abs_diff(local) <= 1, "the two maps invert each other");
    }

    #[test]
    fn drift_between_the_readings_before_and_after_is_followed() {
        // The sandbox gains 100 ppm: 1 ms over the 10 s between the fixes.
        let before = [reading(0, 1_000, 500, 7_000)];
        let after = [reading(10_000_000_000, 1_000, 500, 7_000 + 1_000_000)];
        let fit = ClockFit::of(&before, &after).unwrap();
        assert!((fit.drift_ppm() - 100.0).abs() < 0.01, "{}", fit.drift_ppm());
        let mid_local = 5_000_000_500u64;
        let expect = mid_local + 7_000 + 500_000;
        assert!(fit.to_sandbox(mid_local).abs_diff(expect) <= 2, "{} vs {expect}", fit.to_sandbox(mid_local));
        assert!(fit.to_local(expect).abs_diff(mid_local) <= 2);
        assert!(ClockFit::of(&[], &after).is_none(), "no fix before the case: no fit");
    }

    fn call(call: &str, at: Instant, kind: EventKind) -> Msg {
        Msg::Call(Event { at, sandbox: 0, call: Arc::from(call), kind })
    }

    fn kinds(msgs: &[Msg]) -> Vec<String> {
        msgs.iter()
            .map(|m| match m {
                Msg::Call(e) => format!("{}:{}", e.call, format!("{:?}", e.kind).split('(').next().unwrap()),
                Msg::Notice(_) => "notice".into(),
                Msg::Turn(_) => "turn".into(),
            })
            .collect()
    }

    #[test]
    fn merge_keeps_time_order_and_puts_every_request_before_its_answer() {
        let t = Instant::now();
        let ms = |n: u64| t + std::time::Duration::from_millis(n);
        let r = RunnerSide {
            woke: ms(4),
            picked: ms(4),
            handler_start: ms(4),
            handler_end: ms(5),
            answered: Some(ms(5)),
            observed: false,
            handler_known: true,
        };
        // b's request is stamped after the runner's answer to it (clock error): it is pulled
        // forward with what its writer logged before it (a's half), and nothing is reordered
        // within a stream.
        let runner = vec![
            call("a", ms(2), EventKind::Answering),
            call("b", ms(5), EventKind::Answering),
            call("b", ms(6), EventKind::Runner(r)),
        ];
        let writer = vec![
            call("a", ms(1), EventKind::Requesting),
            call("a", ms(7), EventKind::Writer(half(ms(0)))),
            call("b", ms(8), EventKind::Requesting),
        ];
        let merged = merge(runner, vec![writer]);
        assert_eq!(
            kinds(&merged),
            ["a:Requesting", "a:Answering", "a:Writer", "b:Requesting", "b:Answering", "b:Runner"],
        );
        let mut pairing = crate::events::pairing::Pairing::with_capacity(2);
        for m in &merged {
            if let Msg::Call(e) = m {
                let ev = match e.kind {
                    EventKind::Requesting => crate::events::pairing::PairEvent::Request,
                    EventKind::Answering => crate::events::pairing::PairEvent::Response,
                    _ => continue,
                };
                pairing.observe(crate::events::pairing::call_key(0, &e.call), 0, &e.call, ev);
            }
        }
        assert_eq!(pairing.finish().total(), 0, "no breach in the merged order");
    }

    fn half(intended: Instant) -> WriterSide {
        WriterSide {
            intended,
            started: intended,
            warmup: false,
            published: Some(intended),
            read: None,
            outcome: CallOutcome::Answered(Outcome::Ok),
        }
    }

    #[test]
    fn a_log_line_reads_back_to_the_same_event_on_this_clock() {
        let mono = Mono::now();
        let t = Instant::now();
        let w = WriterSide { read: Some(t + std::time::Duration::from_millis(3)), ..half(t) };
        let msgs = [
            call("c1", t, EventKind::Requesting),
            call("c1", t + std::time::Duration::from_millis(4), EventKind::Writer(w.clone())),
            Msg::Notice(Notice { at: t, sandbox: 0, what: Say::strategy(crate::strategy::WatchNotice::WatchFailed) }),
        ];
        let text: String =
            msgs.iter().map(|m| serde_json::to_string(&Line::of(m, &mono).unwrap()).unwrap() + "\n").collect();
        let text = text + &serde_json::to_string(&Line::End { fired: 1, stopped: false }).unwrap() + "\nnot json\n";
        // The sandbox's clock 2 s ahead, exactly: the times come back as they were.
        let fit = ClockFit::of(&[reading(0, 0, 0, 2_000_000_000)], &[]).unwrap();
        let shifted: String = text
            .lines()
            .map(|l| match serde_json::from_str::<Line>(l) {
                Ok(Line::Requesting { t, call }) => {
                    serde_json::to_string(&Line::Requesting { t: t + 2_000_000_000, call }).unwrap()
                }
                Ok(Line::Writer { t, call, intended, started, warmup, published, read, outcome }) => {
                    let s = |x: u64| x + 2_000_000_000;
                    serde_json::to_string(&Line::Writer {
                        t: s(t),
                        call,
                        intended: s(intended),
                        started: s(started),
                        warmup,
                        published: published.map(s),
                        read: read.map(s),
                        outcome,
                    })
                    .unwrap()
                }
                Ok(Line::Notice { t, text, degraded }) => {
                    serde_json::to_string(&Line::Notice { t: t + 2_000_000_000, text, degraded }).unwrap()
                }
                _ => l.to_owned(),
            })
            .map(|l| l + "\n")
            .collect();
        let log = read_log(&shifted, 0, &fit, &mono);
        assert_eq!((log.end, log.bad_lines, log.fatal.as_deref()), (Some((1, false)), 1, None));
        let close = |a: Instant, b: Instant| a.max(b) - a.min(b) <= std::time::Duration::from_micros(1);
        let Msg::Call(Event { kind: EventKind::Writer(back), .. }) = &log.msgs[1] else { panic!("{:?}", log.msgs) };
        assert!(close(back.intended, w.intended) && close(back.read.unwrap(), w.read.unwrap()), "{back:?} vs {w:?}");
        assert_eq!(back.outcome, w.outcome);
        assert!(log.degraded.as_deref().is_some_and(|d| d.starts_with("sandbox writer: ")), "{:?}", log.degraded);
        for name in ["ok", "error", "paused", "timeout", "id_collision", "publish_error", "environment", "interrupted"]
        {
            assert_eq!(CallOutcome::from_name(name).map(|o| o.name()), Some(name));
        }
    }
}
