//! Why a call was lost, answered twice, or run after its writer gave up: each such call's
//! story told as a short chain of what happened to it, counted by chain.
//!
//! The recorder keeps facts only of calls that left the happy path — a read that failed, an
//! answer that could not be published, a writer that gave up — so a fleet's millions of
//! sound calls cost nothing here. A lost call (its writer timed out, or could not publish)
//! is told when the case ends, since the runner's half of its story may come after the
//! writer's; a duplicate is told when the second answer arrives.

use std::collections::BTreeMap;

use foldhash::HashMap;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::events::pairing::{BreachKind, CallKey};
use crate::events::{FailKind, RunnerSide};

/// Lost: the request was never visible to a runner.
pub(super) const NOT_PUBLISHED: &str = "request not published (publish error) → no runner saw it";
/// Lost: the runner's read failed; its error answer never reached the writer.
pub(super) const READ_FAILED_LOST: &str =
    "read failed → error answer set out, never read by the writer (not published) → writer timed out";
/// Lost: the tool ran, its answer could not be published.
pub(super) const ANSWER_UNPUBLISHED: &str = "picked up → tool ran → answer not published → writer timed out";
/// Lost: the answer came, after the writer had given up.
pub(super) const ANSWERED_LATE: &str = "picked up → tool ran → answered after the writer's deadline → writer timed out";
/// Lost: the answer was out in time, the writer never read it.
pub(super) const ANSWER_UNREAD: &str =
    "picked up → answered before the deadline → writer did not read it → writer timed out";
/// Lost: picked up only after the writer's deadline.
pub(super) const PICKED_LATE: &str = "not picked up before the writer's deadline → writer timed out (picked up later)";
/// Lost: no runner picked it up while the case ran.
pub(super) const NEVER_PICKED: &str = "never picked up → writer timed out";
/// Duplicated: a failed read left the request on disk, and a later pickup ran it.
pub(super) const READ_FAILED_AGAIN: &str =
    "read failed → error answer set out, request left on disk → picked up again → answered again";
/// Duplicated: the writer gave up; the request left on disk was run later.
pub(super) const GAVE_UP_AGAIN: &str = "writer timed out, request left on disk → picked up again → answered again";
/// Duplicated: answered twice with no failure seen.
pub(super) const ANSWERED_TWICE: &str = "answered twice (picked up twice, no failure seen)";
/// Duplicated: the writer published one request twice.
pub(super) const REQUESTED_TWICE: &str = "request published twice while the first was open";

/// What is known of one call off the happy path.
#[derive(Debug, Default, Clone, Copy)]
struct Facts {
    read_failed: bool,
    answer_unpublished: bool,
    /// When its writer gave up, and why.
    gave_up: Option<(Instant, FailKind)>,
    /// The runner's pickup and answer, when its half came (the first).
    picked: Option<Instant>,
    answered: Option<Option<Instant>>,
    /// Where to name it.
    sandbox: u32,
}

/// The chains and their counts, as summary.json keeps them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CauseReport {
    /// Lost calls by chain: the counts sum to `calls.lost`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lost_by_cause: BTreeMap<String, u64>,
    /// Duplicated answers and requests by chain: the counts sum to `calls.duplicated`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub duplicated_by_cause: BTreeMap<String, u64>,
    /// Calls whose tool started after their writer had given up: work nobody waited for.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ran_after_writer_gave_up: u64,
    /// One call of each chain (and of a late run, under `ran after the writer gave up`):
    /// `sandbox N call ID`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", rename = "cause_examples")]
    pub examples: BTreeMap<String, String>,
}

/// A count left out of summary.json while it is zero (`skip_serializing_if`).
pub(crate) fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

/// The example key of a late run.
pub(crate) const RAN_LATE: &str = "ran after the writer gave up";

/// The recorder's part that tells these stories.
#[derive(Debug, Default)]
pub(crate) struct Causes {
    facts: HashMap<CallKey, (Facts, String)>,
    report: CauseReport,
}

impl Causes {
    fn entry(&mut self, key: CallKey, sandbox: u32, call: &str) -> &mut Facts {
        let (f, _) = self.facts.entry(key).or_insert_with(|| (Facts { sandbox, ..Facts::default() }, call.to_owned()));
        f
    }

    fn example(&mut self, chain: &str, sandbox: u32, call: &str) {
        self.report.examples.entry(chain.to_owned()).or_insert_with(|| format!("sandbox {sandbox} call {call}"));
    }

    /// The runner could not read the request (it sets out an error answer by file id).
    pub(crate) fn read_failed(&mut self, key: CallKey, sandbox: u32, call: &str) {
        self.entry(key, sandbox, call).read_failed = true;
    }

    /// The writer gave up on the call (a timeout, a request it could not publish).
    pub(crate) fn gave_up(&mut self, key: CallKey, sandbox: u32, call: &str, at: Instant, why: FailKind) {
        self.entry(key, sandbox, call).gave_up = Some((at, why));
    }

    /// The runner's half of a call: the tool ran. Returns nothing; counts a late run.
    pub(crate) fn ran(&mut self, key: CallKey, sandbox: u32, call: &str, r: &RunnerSide) {
        let late = match self.facts.get_mut(&key) {
            Some((f, _)) => {
                if f.picked.is_none() {
                    f.picked = Some(r.picked);
                    f.answered = Some(r.answered);
                }
                f.answer_unpublished |= r.answered.is_none();
                f.gave_up.is_some_and(|(at, why)| why == FailKind::Timeout && r.handler_start >= at)
            }
            None if r.answered.is_none() => {
                let f = self.entry(key, sandbox, call);
                f.answer_unpublished = true;
                f.picked = Some(r.picked);
                f.answered = Some(None);
                false
            }
            None => false,
        };
        if late {
            self.report.ran_after_writer_gave_up += 1;
            self.example(RAN_LATE, sandbox, call);
        }
    }

    /// A breach the pairing check found: a duplicate is told now.
    pub(crate) fn breach(&mut self, key: CallKey, sandbox: u32, call: &str, kind: BreachKind) {
        let chain = match kind {
            BreachKind::DuplicateRequest => REQUESTED_TWICE,
            BreachKind::DuplicateResponse => match self.facts.get(&key).map(|(f, _)| *f) {
                Some(f) if f.read_failed => READ_FAILED_AGAIN,
                Some(f) if f.gave_up.is_some() => GAVE_UP_AGAIN,
                _ => ANSWERED_TWICE,
            },
            _ => return,
        };
        *self.report.duplicated_by_cause.entry(chain.to_owned()).or_default() += 1;
        self.example(chain, sandbox, call);
    }

    /// The lost calls told, and the report.
    pub(crate) fn finish(mut self) -> CauseReport {
        let mut lost: Vec<(&'static str, u32, String)> = Vec::new();
        for (f, call) in self.facts.values() {
            let Some((at, why)) = f.gave_up else { continue };
            let chain = match why {
                FailKind::PublishError => NOT_PUBLISHED,
                FailKind::Timeout if f.read_failed && f.picked.is_none() => READ_FAILED_LOST,
                FailKind::Timeout => match (f.picked, f.answered) {
                    (None, _) => NEVER_PICKED,
                    (Some(p), _) if p >= at => PICKED_LATE,
                    (Some(_), Some(None)) => ANSWER_UNPUBLISHED,
                    (Some(_), Some(Some(a))) if a >= at => ANSWERED_LATE,
                    (Some(_), _) => ANSWER_UNREAD,
                },
                _ => continue,
            };
            lost.push((chain, f.sandbox, call.clone()));
        }
        // The first example of each chain by (sandbox, call), whatever the map's order.
        lost.sort_by(|a, b| (a.1, &a.2).cmp(&(b.1, &b.2)));
        for (chain, sandbox, call) in lost {
            *self.report.lost_by_cause.entry(chain.to_owned()).or_default() += 1;
            self.example(chain, sandbox, &call);
        }
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runner(t0: Instant, picked: u64, answered: Option<u64>) -> RunnerSide {
        let at = |s: u64| t0 + Duration::from_secs(s);
        RunnerSide {
            woke: at(picked),
            picked: at(picked),
            handler_start: at(picked),
            handler_end: at(picked),
            answered: answered.map(at),
            observed: false,
            handler_known: true,
        }
    }

    #[test]
    fn each_lost_call_is_told_by_what_happened_to_it() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut c = Causes::default();
        // 1: the read failed, the error answer never came; 2: answered after the deadline
        // (and so run after it too); 3: never picked up; 4: not published; 5: answer unpublished.
        c.read_failed(1, 0, "a");
        c.gave_up(1, 0, "a", at(60), FailKind::Timeout);
        c.gave_up(2, 0, "b", at(60), FailKind::Timeout);
        c.ran(2, 0, "b", &runner(t0, 70, Some(71)));
        c.gave_up(3, 1, "c", at(60), FailKind::Timeout);
        c.gave_up(4, 1, "d", at(1), FailKind::PublishError);
        c.ran(5, 2, "e", &runner(t0, 5, None));
        c.gave_up(5, 2, "e", at(60), FailKind::Timeout);
        // A sound call leaves no trace.
        c.ran(6, 2, "f", &runner(t0, 1, Some(2)));
        // 2 is answered a second time (a later relay): a duplicate of a call given up on.
        c.breach(2, 0, "b", BreachKind::DuplicateResponse);
        c.breach(7, 3, "g", BreachKind::DuplicateResponse);
        let r = c.finish();
        let lost: Vec<(&str, u64)> = r.lost_by_cause.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(lost.iter().map(|x| x.1).sum::<u64>(), 5, "{lost:?}");
        for chain in [READ_FAILED_LOST, PICKED_LATE, NEVER_PICKED, NOT_PUBLISHED, ANSWER_UNPUBLISHED] {
            assert_eq!(r.lost_by_cause.get(chain), Some(&1), "{chain}: {lost:?}");
        }
        assert_eq!(r.duplicated_by_cause.get(GAVE_UP_AGAIN), Some(&1));
        assert_eq!(r.duplicated_by_cause.get(ANSWERED_TWICE), Some(&1));
        assert_eq!(r.ran_after_writer_gave_up, 1);
        assert_eq!(r.examples.get(RAN_LATE).map(String::as_str), Some("sandbox 0 call b"));
        assert_eq!(r.examples.get(NEVER_PICKED).map(String::as_str), Some("sandbox 1 call c"));
        assert!(!c_has_sound_calls(), "sound calls are not kept");
    }

    fn c_has_sound_calls() -> bool {
        let mut c = Causes::default();
        c.ran(1, 0, "x", &runner(Instant::now(), 1, Some(2)));
        !c.facts.is_empty()
    }
}
