//! The pairing invariant of SPEC §7: within one run every request is answered exactly once.
//!
//! [`Pairing`] is the state machine; the recorder feeds it live and [`check_pairing`] runs
//! it as a pure function over a recorded stream for replay. Breaches are classified,
//! counted and listed; none is fatal and none is dropped.

use std::collections::hash_map::Entry;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::{Deserialize, Serialize};

use crate::base::protocol::CallId;

/// One side of the pairing: a request published or a response published; or the writer
/// giving up on its call because the run was interrupted (the call is cut off: closed, no
/// breach, and the one answer a runner may still publish for it is no breach either).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PairEvent {
    Request,
    Response,
    /// A response the runner could name only by the request's file id (an error answer to a
    /// request it could not read): it answers the open request whose id sanitizes to it, and
    /// is no event at all when no writer of the run requested that file.
    ResponseByFile,
    CutOff,
}

crate::base::named! {
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
names ["unpaired_response", "duplicate_response", "duplicate_request", "reused_id", "unanswered_at_end"]
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breach {
    pub kind: BreachKind,
    pub sandbox: u32,
    pub call: String,
}

/// A call's key in the recorder's and the pairing check's maps: a 128-bit fingerprint of
/// (sandbox, call id), two 64-bit foldhash halves under fixed, distinct seeds. Copy, 16
/// bytes, cheap to hash, and holds no reference to the id (two distinct calls share a key
/// with probability about 2^-128).
pub(crate) type CallKey = u128;

pub(crate) fn call_key(sandbox: u32, call: &str) -> CallKey {
    let half = |seed: u64| foldhash::quality::FixedState::with_seed(seed).hash_one((sandbox, call));
    (u128::from(half(0x243f_6a88_85a3_08d3)) << 64) | u128::from(half(0x1319_8a2e_0370_7344))
}

/// The pairing state machine. Open calls keep their id (to name them if they end
/// unanswered); answered calls are remembered by key alone, 16 bytes each.
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    open: HashMap<CallKey, (u32, CallId)>,
    answered: HashSet<CallKey>,
    /// Calls cut off by an interrupt, their answer still allowed.
    cut: HashSet<CallKey>,
    cut_off: u64,
    counts: [u64; 5],
    breaches: Vec<Breach>,
    /// Scoped by agent turns (SPEC §7: an id is unique within one agent run): the keys each
    /// sandbox's turns answered (indexed by sandbox), forgotten a turn after the turn that
    /// answered them ended, so memory stays flat over a fleet's day. `None`: the whole case
    /// is one scope.
    turns: Option<Vec<TurnKeys>>,
    /// Answered calls whose request was left on disk ([`Pairing::keep`]): in scope until the
    /// case ends.
    kept: HashSet<CallKey>,
}

/// The calls a sandbox's turns answered: the turn under way's, and the last ended one's. A
/// request left on disk is picked up again by the next turn's first list, and its second
/// answer is a duplicate, not a stranger: a turn's keys are kept through the next turn.
#[derive(Debug, Default)]
struct TurnKeys {
    current: Vec<CallKey>,
    previous: Vec<CallKey>,
}

/// At most this many breaches are listed; all of them are counted.
pub(crate) const MAX_LISTED: usize = 1000;

impl Pairing {
    /// A state machine sized for about `calls` calls.
    pub(crate) fn with_capacity(calls: usize) -> Pairing {
        Pairing { answered: HashSet::with_capacity(calls), open: HashMap::with_capacity(64), ..Pairing::default() }
    }

    /// Scopes the answered calls by agent turns: [`Pairing::turn_ended`] forgets a turn's.
    pub(crate) fn scoped_by_turns(mut self) -> Pairing {
        self.turns = Some(Vec::new());
        self
    }

    /// A sandbox's agent turn ended: its answered calls leave the scope (a later request
    /// under one of their ids starts a new run's call, not a reused id), and are still told
    /// apart from strangers until the next turn ends (a second answer to one is a duplicate).
    pub(crate) fn turn_ended(&mut self, sandbox: u32) {
        let Pairing { turns, answered, kept, .. } = self;
        if let Some(keys) = turns.as_mut().and_then(|t| t.get_mut(sandbox as usize)) {
            // (Kept keys are failures, few: most turns' ends look nothing up.)
            for k in keys.previous.drain(..).filter(|k| kept.is_empty() || !kept.contains(k)) {
                answered.remove(&k);
            }
            std::mem::swap(&mut keys.current, &mut keys.previous);
        }
    }

    /// An answered call's request was left on disk (its read failed, an error answer set
    /// out): a later turn may pick it up and answer it again, so its key is kept until the
    /// case ends, whichever turn answers it (such calls are the failures: few).
    pub(crate) fn keep(&mut self, key: CallKey) {
        if self.turns.is_some() {
            self.kept.insert(key);
        }
    }

    /// Whether an answered `key` that a new request names was answered in `sandbox`'s turn
    /// under way (a reused id; answered in an ended turn, it is a new run's call, which now
    /// owns the key: it leaves the ended turn's keys).
    fn in_this_turn(&mut self, sandbox: u32, key: CallKey) -> bool {
        let Some(turns) = self.turns.as_mut() else { return true };
        self.kept.remove(&key);
        let Some(keys) = turns.get_mut(sandbox as usize) else { return false };
        if let Some(i) = keys.previous.iter().position(|k| *k == key) {
            keys.previous.swap_remove(i);
        }
        keys.current.contains(&key)
    }

    /// Applies one event of the call `call` whose key is `key` (see [`call_key`]).
    pub(crate) fn observe(&mut self, key: CallKey, sandbox: u32, call: &CallId, ev: PairEvent) -> Option<BreachKind> {
        if ev == PairEvent::ResponseByFile {
            // A file no writer of the run requested (a stray, a hostile file): no pairing event.
            let (key, call) = self.resolve_file(sandbox, call)?;
            return self.observe(key, sandbox, &call, PairEvent::Response);
        }
        let breach = match ev {
            PairEvent::Request => match self.open.entry(key) {
                Entry::Occupied(_) => Some(BreachKind::DuplicateRequest),
                Entry::Vacant(v) => {
                    v.insert((sandbox, call.clone()));
                    let reused = self.answered.remove(&key) && self.in_this_turn(sandbox, key);
                    reused.then_some(BreachKind::ReusedId)
                }
            },
            PairEvent::Response => {
                if self.open.remove(&key).is_some() || self.cut.remove(&key) {
                    self.answered.insert(key);
                    if let Some(t) = self.turns.as_mut() {
                        let i = sandbox as usize;
                        if t.len() <= i {
                            t.resize_with(i + 1, TurnKeys::default);
                        }
                        t[i].current.push(key);
                    }
                    None
                } else if self.answered.contains(&key) {
                    Some(BreachKind::DuplicateResponse)
                } else {
                    Some(BreachKind::UnpairedResponse)
                }
            }
            PairEvent::ResponseByFile => unreachable!("resolved above"),
            PairEvent::CutOff => {
                if self.open.remove(&key).is_some() {
                    self.cut.insert(key);
                    self.cut_off += 1;
                }
                None
            }
        };
        if let Some(kind) = breach {
            self.push(kind, sandbox, call);
        }
        breach
    }

    /// The open request of `sandbox` whose call id sanitizes to `file_id` (a rare look-up:
    /// the open requests are the calls in flight), with its key.
    pub(crate) fn resolve_file(&self, sandbox: u32, file_id: &str) -> Option<(CallKey, CallId)> {
        self.open
            .iter()
            .find(|(_, (s, c))| *s == sandbox && crate::base::protocol::sanitize_id(c) == file_id)
            .map(|(k, (_, c))| (*k, c.clone()))
    }

    fn push(&mut self, kind: BreachKind, sandbox: u32, call: &str) {
        self.counts[kind as usize] += 1;
        if self.breaches.len() < MAX_LISTED {
            self.breaches.push(Breach { kind, sandbox, call: call.to_owned() });
        }
    }

    /// Ends the run: every open request is closed as abandoned.
    pub(crate) fn finish(mut self) -> PairingReport {
        let mut open: Vec<(u32, CallId)> = self.open.drain().map(|(_, v)| v).collect();
        open.sort();
        for (sandbox, call) in open {
            self.push(BreachKind::UnansweredAtEnd, sandbox, &call);
        }
        PairingReport { counts: self.counts, breaches: self.breaches, cut_off: self.cut_off }
    }
}

/// The outcome of a pairing check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairingReport {
    counts: [u64; 5],
    pub breaches: Vec<Breach>,
    /// Requests closed because an interrupt cut their call off (not breaches).
    pub cut_off: u64,
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
pub(crate) fn check_pairing<'a>(events: impl IntoIterator<Item = (u32, &'a str, PairEvent)>) -> PairingReport {
    let mut p = Pairing::default();
    for (sandbox, call, ev) in events {
        p.observe(call_key(sandbox, call), sandbox, &Arc::from(call), ev);
    }
    p.finish()
}

#[cfg(test)]
mod tests {
    use super::PairEvent::{Request as Q, Response as R};
    use super::*;

    /// Scoped by turns: an id answered in a turn is a reused id within it, and a new call's
    /// once the sandbox's turn has ended (the answered keys are let go: flat memory).
    #[test]
    fn a_turn_scoped_check_forgets_a_turn_at_its_end() {
        let mut p = Pairing::default().scoped_by_turns();
        let id = |s: &str| CallId::from(s);
        let see = |p: &mut Pairing, sb: u32, c: &str, ev| p.observe(call_key(sb, c), sb, &id(c), ev);
        assert_eq!(see(&mut p, 0, "t1-c1", Q), None);
        assert_eq!(see(&mut p, 0, "t1-c1", R), None);
        assert_eq!(see(&mut p, 1, "t1-c1", Q), None);
        assert_eq!(see(&mut p, 1, "t1-c1", R), None);
        assert_eq!(see(&mut p, 0, "t1-c1", Q), Some(BreachKind::ReusedId), "within the turn");
        assert_eq!(see(&mut p, 0, "t1-c1", R), None);
        p.turn_ended(0);
        assert_eq!(see(&mut p, 0, "t1-c1", Q), None, "a new turn's call");
        assert_eq!(see(&mut p, 0, "t1-c1", R), None);
        p.turn_ended(0);
        p.turn_ended(0);
        assert_eq!(p.answered.len(), 1, "two turns on, sandbox 0's keys are let go; sandbox 1's turn is under way");
        assert_eq!(p.finish().total(), 1);
    }

    /// A request left on disk is picked up again by the next turn: its second answer is a
    /// duplicate (not an unpaired stranger), until that next turn ends too.
    #[test]
    fn an_answer_repeated_in_the_next_turn_is_a_duplicate() {
        let mut p = Pairing::default().scoped_by_turns();
        let id = |s: &str| CallId::from(s);
        let see = |p: &mut Pairing, c: &str, ev| p.observe(call_key(0, c), 0, &id(c), ev);
        assert_eq!(see(&mut p, "a", Q), None);
        assert_eq!(see(&mut p, "a", R), None);
        p.turn_ended(0);
        assert_eq!(see(&mut p, "a", R), Some(BreachKind::DuplicateResponse), "the next turn answers it again");
        p.turn_ended(0);
        assert_eq!(see(&mut p, "a", R), Some(BreachKind::UnpairedResponse), "two turns on: a stranger");
        assert!(p.answered.is_empty(), "nothing kept past the next turn");
        // A call whose request was left on disk (its read failed) is known whenever it is
        // answered again, and a new turn's call under its id is no reuse.
        assert_eq!(see(&mut p, "b", Q), None);
        assert_eq!(see(&mut p, "b", R), None);
        p.keep(call_key(0, "b"));
        for _ in 0..5 {
            p.turn_ended(0);
        }
        assert_eq!(see(&mut p, "b", R), Some(BreachKind::DuplicateResponse), "five turns on");
        assert_eq!(see(&mut p, "b", Q), None, "a new run's call");
        assert_eq!(see(&mut p, "b", Q), Some(BreachKind::DuplicateRequest));
    }

    #[test]
    fn balanced_stream_has_no_breach() {
        let r = check_pairing([(0, "a", Q), (0, "b", Q), (0, "b", R), (0, "a", R), (1, "a", Q), (1, "a", R)]);
        assert_eq!(r.total(), 0);
    }

    #[test]
    fn every_breach_kind_is_classified() {
        let r = check_pairing([
            (0, "x", R), // unpaired response
            (0, "a", Q),
            (0, "a", R),
            (0, "a", R), // duplicate response
            (0, "b", Q),
            (0, "b", Q), // duplicate request
            (0, "b", R),
            (0, "a", Q), // reused id (a was answered)
            (0, "a", R),
            (0, "c", Q), // never answered
        ]);
        for k in BreachKind::ALL {
            assert_eq!(r.count(k), 1, "{k:?}");
        }
        assert_eq!(r.total(), 5);
        assert_eq!(
            r.breaches.last().unwrap(),
            &Breach { kind: BreachKind::UnansweredAtEnd, sandbox: 0, call: "c".into() }
        );
    }

    #[test]
    fn a_call_cut_off_by_an_interrupt_is_closed_and_its_late_answer_allowed() {
        use super::PairEvent::CutOff as C;
        let r = check_pairing([(0, "a", Q), (0, "a", C), (0, "b", Q), (0, "b", C), (0, "b", R), (0, "c", C)]);
        assert_eq!((r.total(), r.cut_off), (0, 2), "{:?}", r.breaches);
        let r = check_pairing([(0, "a", Q), (0, "a", C), (0, "a", R), (0, "a", R)]);
        assert_eq!(r.count(BreachKind::DuplicateResponse), 1, "one late answer, not two");
    }

    #[test]
    fn an_error_answer_known_by_its_file_id_answers_the_request_it_sanitizes_from() {
        use super::PairEvent::ResponseByFile as F;
        let r = check_pairing([(0, "a b", Q), (0, "a_b", F), (1, "c", Q), (1, "c", F)]);
        assert_eq!(r.total(), 0, "{:?}", r.breaches);
        let r = check_pairing([(0, "x", F)]);
        assert_eq!(r.total(), 0, "an answer to a file no writer requested is no pairing event");
    }

    #[test]
    fn distinct_calls_get_distinct_keys() {
        let keys: HashSet<CallKey> = (0..10_000u32).map(|i| call_key(i % 7, &format!("t{i}-c{}", i % 3))).collect();
        assert_eq!(keys.len(), 10_000);
        assert_eq!(call_key(3, "t10-c1"), call_key(3, "t10-c1"));
        assert_ne!(call_key(3, "t10-c1"), call_key(4, "t10-c1"));
    }

    #[test]
    fn low_bits_spread_for_ids_that_differ_late() {
        let buckets: HashSet<u128> = (0..4096).map(|i| call_key(0, &format!("t{i:07}-c0")) & 0xfff).collect();
        assert!(buckets.len() > 2000, "only {} of 4096 buckets used", buckets.len());
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
