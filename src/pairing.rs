//! The pairing invariant of SPEC §7: within one run every request is answered exactly once.
//!
//! [`Pairing`] is the state machine; the recorder feeds it live and [`check_pairing`] runs
//! it as a pure function over a recorded stream for replay. Breaches are classified,
//! counted and listed; none is fatal and none is dropped.

use std::collections::HashMap;

use serde::Serialize;

/// One side of the pairing: a request published or a response published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairEvent {
    Request,
    Response,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BreachKind {
    /// A response for a call with no open request.
    UnpairedResponse,
    /// A second response for one request.
    DuplicateResponse,
    /// A second request while the first is still open.
    DuplicateRequest,
    /// A request reusing the id of a call already answered in this run.
    ReusedId,
    /// A request still unanswered when the run ended: closed as abandoned.
    UnansweredAtEnd,
}

impl BreachKind {
    pub const ALL: [BreachKind; 5] = [
        BreachKind::UnpairedResponse,
        BreachKind::DuplicateResponse,
        BreachKind::DuplicateRequest,
        BreachKind::ReusedId,
        BreachKind::UnansweredAtEnd,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BreachKind::UnpairedResponse => "unpaired_response",
            BreachKind::DuplicateResponse => "duplicate_response",
            BreachKind::DuplicateRequest => "duplicate_request",
            BreachKind::ReusedId => "reused_id",
            BreachKind::UnansweredAtEnd => "unanswered_at_end",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Breach {
    pub kind: BreachKind,
    pub sandbox: u32,
    pub call: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Open,
    Answered,
}

/// The pairing state machine over (sandbox, call id) keys.
#[derive(Debug, Default)]
pub struct Pairing {
    state: HashMap<(u32, Box<str>), State>,
    counts: [u64; 5],
    breaches: Vec<Breach>,
}

/// At most this many breaches are listed; all of them are counted.
pub const MAX_LISTED: usize = 1000;

impl Pairing {
    pub fn observe(&mut self, sandbox: u32, call: &str, ev: PairEvent) {
        let key = (sandbox, Box::<str>::from(call));
        let breach = match (ev, self.state.get(&key).copied()) {
            (PairEvent::Request, None) => {
                self.state.insert(key, State::Open);
                None
            }
            (PairEvent::Request, Some(State::Open)) => Some(BreachKind::DuplicateRequest),
            (PairEvent::Request, Some(State::Answered)) => {
                self.state.insert(key, State::Open);
                Some(BreachKind::ReusedId)
            }
            (PairEvent::Response, Some(State::Open)) => {
                self.state.insert(key, State::Answered);
                None
            }
            (PairEvent::Response, Some(State::Answered)) => Some(BreachKind::DuplicateResponse),
            (PairEvent::Response, None) => Some(BreachKind::UnpairedResponse),
        };
        if let Some(kind) = breach {
            self.push(kind, sandbox, call);
        }
    }

    fn push(&mut self, kind: BreachKind, sandbox: u32, call: &str) {
        self.counts[kind as usize] += 1;
        if self.breaches.len() < MAX_LISTED {
            self.breaches.push(Breach { kind, sandbox, call: call.to_owned() });
        }
    }

    /// Ends the run: every open request is closed as abandoned.
    pub fn finish(mut self) -> PairingReport {
        let mut open: Vec<(u32, Box<str>)> =
            self.state.iter().filter(|(_, s)| **s == State::Open).map(|(k, _)| k.clone()).collect();
        open.sort();
        for (sandbox, call) in open {
            self.push(BreachKind::UnansweredAtEnd, sandbox, &call);
        }
        PairingReport { counts: self.counts, breaches: self.breaches }
    }
}

/// The outcome of a pairing check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingReport {
    counts: [u64; 5],
    pub breaches: Vec<Breach>,
}

impl PairingReport {
    pub fn count(&self, kind: BreachKind) -> u64 {
        self.counts[kind as usize]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Replays the pairing rules over a recorded stream of (sandbox, call id, event).
pub fn check_pairing<'a>(events: impl IntoIterator<Item = (u32, &'a str, PairEvent)>) -> PairingReport {
    let mut p = Pairing::default();
    for (sandbox, call, ev) in events {
        p.observe(sandbox, call, ev);
    }
    p.finish()
}

#[cfg(test)]
mod tests {
    use super::PairEvent::{Request as Q, Response as R};
    use super::*;

    #[test]
    fn balanced_stream_has_no_breach() {
        let r = check_pairing([(0, "a", Q), (0, "b", Q), (0, "b", R), (0, "a", R), (1, "a", Q), (1, "a", R)]);
        assert_eq!(r.total(), 0);
    }

    #[test]
    fn every_breach_kind_is_classified() {
        let r = check_pairing([
            (0, "x", R),             // unpaired response
            (0, "a", Q),
            (0, "a", R),
            (0, "a", R),             // duplicate response
            (0, "b", Q),
            (0, "b", Q),             // duplicate request
            (0, "b", R),
            (0, "a", Q),             // reused id (a was answered)
            (0, "a", R),
            (0, "c", Q),             // never answered
        ]);
        for k in BreachKind::ALL {
            assert_eq!(r.count(k), 1, "{k:?}");
        }
        assert_eq!(r.total(), 5);
        assert_eq!(r.breaches.last().unwrap(), &Breach { kind: BreachKind::UnansweredAtEnd, sandbox: 0, call: "c".into() });
    }

    #[test]
    fn n_calls_in_n_answers_out() {
        let ids: Vec<String> = (0..3).map(|i| format!("turn1-{i}")).collect();
        let mut evs: Vec<(u32, &str, PairEvent)> = ids.iter().map(|i| (0, i.as_str(), Q)).collect();
        evs.extend(ids.iter().rev().take(2).map(|i| (0, i.as_str(), R)));
        let r = check_pairing(evs.clone());
        assert_eq!(r.count(BreachKind::UnansweredAtEnd), 1, "one of three parallel calls unanswered");
        evs.push((0, ids[0].as_str(), R));
        assert_eq!(check_pairing(evs).total(), 0);
    }
}
