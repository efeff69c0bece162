//! What the relay says while it runs: typed notices from the runner, the writer and the
//! fault schedule, and the notices a strategy brings of its own ([`StrategyNotice`], defined
//! in the strategy's module: this layer names none of them). Each renders as one line for
//! the report; the ones that are a recovery step say which ([`Say::recovery`]), so a fault's
//! row is built from types, never by matching text.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::units::human;

/// One thing said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Say {
    /// The runner's stale sweep removed files left from before the turn.
    Swept {
        /// How many.
        removed: usize,
    },
    /// The runner's stale sweep could not list the dir (3 tries).
    SweepSkipped,
    /// The runner cannot list its dir (said once per distinct error).
    ListFailed(String),
    /// ... and can again.
    DirReadable,
    /// A request could not be read.
    ReadFailed {
        /// The request's file name.
        name: String,
        /// The read's error.
        error: String,
        /// An error answer was written for it.
        answered: bool,
    },
    /// An entry under a request's name is no relay file (a FIFO, a device, a directory, a
    /// link, a file past the size cap, a name that is not UTF-8): left alone, said once.
    Skipped {
        /// The entry's name.
        name: String,
        /// What it is instead.
        why: String,
    },
    /// A request's bytes are not a request: answered with an error.
    Malformed {
        /// The request's file name.
        name: String,
        /// Its size.
        bytes: usize,
        /// Why it is not a request.
        error: String,
    },
    /// A request under a name already handled this turn (a reused id): skipped by the turn's
    /// seen set, left in place, said once while it stays.
    AlreadySeen {
        /// The request's file name.
        name: String,
    },
    /// A delete on pickup failed or exceeded its bound: retried on later passes.
    DeleteFailed {
        /// The request's file name.
        name: String,
        /// The delete's error.
        error: String,
    },
    /// An answer could not be published, and is tried again.
    AnswerFailed {
        /// The call's id.
        call: String,
        /// The publication's error.
        error: String,
        /// When the next try is.
        retry_in: Duration,
        /// This try's number.
        n: u32,
        /// Of how many.
        of: u32,
    },
    /// An answer could not be published in `tries` tries: given up, the call unanswered.
    AnswerDropped {
        /// The call's id.
        call: String,
        /// Tries made.
        tries: u32,
        /// The last try's error.
        error: String,
    },
    /// A list after a timed-out wait found requests the source never signalled.
    Missed {
        /// Requests found.
        found: usize,
        /// The source counted it as a failure of its watch.
        counted: bool,
    },
    /// The writer found its answer on a timed check, not by its watch.
    AnswerByTimer {
        /// The call's id.
        call: String,
        /// The writer's watch was armed again.
        rearmed: bool,
    },
    /// The writer could not publish a request.
    PublishFailed {
        /// The call's id.
        call: String,
        /// The publication's error.
        error: String,
    },
    /// This machine failed a write of the relay: a full disk, a quota, a read-only or failing
    /// filesystem. Not the relay's failure: the run's exit code says so.
    Environment {
        /// The write that failed.
        what: String,
        /// The class of the failure (a full disk, a quota, ...).
        why: &'static str,
        /// The write's error.
        error: String,
        /// What follows (a retry), appended as said.
        then: String,
    },
    /// The writer read an answer that is not an answer.
    MalformedAnswer {
        /// The call's id.
        call: String,
        /// Why it is not an answer.
        error: String,
    },
    /// The writer could not read its answer (retrying).
    AnswerReadFailed {
        /// The call's id.
        call: String,
        /// The read's error.
        error: String,
    },
    /// The writer refused a call whose id sanitizes to one already in flight.
    IdCollision(String),
    /// A fault of the schedule struck or ended.
    Fault {
        /// The fault's name.
        kind: &'static str,
        /// It struck (`false`: it ended).
        on: bool,
    },
    /// A fault could not be applied.
    FaultNotApplied {
        /// The fault's name.
        kind: &'static str,
        /// Why not.
        error: String,
    },
    /// The runner was stopped during a held window and started again.
    RunnerRestarted {
        /// How long the restart took.
        took: Duration,
    },
    /// The runner did not stop in time, or its task failed.
    RunnerStuck(String),
    /// A strategy's own notice (a watch lost, a window failed, a demotion, ...).
    Strategy(Arc<dyn StrategyNotice>),
    /// Anything else.
    Other(String),
}

/// A step on the way back from a fault, as a fault's report row lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    Demoted,
    Promoted,
    RecoveredBeforeDemotion,
    WatchRearmed,
    RearmFailed,
    DirReadable,
    FoundByTimer,
    AnswerByTimer,
    RunnerRestarted,
}

impl Recovery {
    pub fn text(self) -> &'static str {
        match self {
            Recovery::Demoted => "demoted to polling",
            Recovery::Promoted => "promoted back to the watch",
            Recovery::RecoveredBeforeDemotion => "the next watch exec succeeded (no demotion)",
            Recovery::WatchRearmed => "watch re-armed",
            Recovery::RearmFailed => "re-arm failed: polling",
            Recovery::DirReadable => "relay dir readable again",
            Recovery::FoundByTimer => "found by the poll / safety list",
            Recovery::AnswerByTimer => "answer found by the writer's timed check",
            Recovery::RunnerRestarted => "runner restarted",
        }
    }
}

/// A notice a strategy brings of its own: the strategy's module defines the type (its
/// variants, its line) and says here which recovery step it is, whether it degrades the
/// relay dir's wakes, and what it tells of its source's health. Consumers (a fault's row,
/// the fleet's count of healthy turns, the console, the event log) read it through these
/// methods alone, never by its variants.
pub trait StrategyNotice: NoticeAny + fmt::Debug + fmt::Display + Send + Sync {
    /// The step on the way back from a fault this notice is, if any.
    fn recovery(&self) -> Option<Recovery> {
        None
    }
    /// The source stopped delivering wakes for good (reported under `degraded`).
    fn degraded(&self) -> bool {
        false
    }
    /// What it says of its source's health, if anything.
    fn health(&self) -> Option<Health> {
        None
    }
}

/// What a strategy's notice says of its source's health (a fleet counts its turns by it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    /// An attempt to watch failed: counted, and the turn is unhealthy until it recovers.
    Failed,
    /// Watching again after failures, before any demotion.
    Recovered,
    /// Watching again after a demotion: the fallback polling ends.
    Promoted,
}

/// What every [`StrategyNotice`] is as a value, by a blanket impl: compared, looked at as
/// its own type, named. (Only a notice has it: an `Arc` holding one is no notice, so a
/// method called through the `Arc` reaches the notice's own.)
pub trait NoticeAny: Any {
    fn as_any(&self) -> &dyn Any;
    /// Equal to `other`: the same type, an equal value.
    fn same(&self, other: &dyn Any) -> bool;
    /// The path of its type (the registry test checks no strategy's notice lives in this layer).
    fn type_name(&self) -> &'static str;
}

impl<T: StrategyNotice + PartialEq> NoticeAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<T>() == Some(self)
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
}

impl PartialEq for dyn StrategyNotice {
    fn eq(&self, other: &dyn StrategyNotice) -> bool {
        self.same(other.as_any())
    }
}

impl Eq for dyn StrategyNotice {}

impl Say {
    /// A strategy's own notice.
    pub(crate) fn strategy(notice: impl StrategyNotice) -> Say {
        Say::Strategy(Arc::new(notice))
    }

    /// The strategy's notice of type `T` this is, if it is one (for the strategy itself and
    /// its tests).
    pub fn as_strategy<T: StrategyNotice>(&self) -> Option<&T> {
        match self {
            Say::Strategy(n) => n.as_any().downcast_ref(),
            _ => None,
        }
    }

    /// The recovery step this notice is, if any.
    pub fn recovery(&self) -> Option<Recovery> {
        Some(match self {
            Say::Strategy(n) => return n.recovery(),
            Say::DirReadable => Recovery::DirReadable,
            Say::Missed { .. } => Recovery::FoundByTimer,
            Say::AnswerByTimer { .. } => Recovery::AnswerByTimer,
            Say::RunnerRestarted { .. } => Recovery::RunnerRestarted,
            _ => return None,
        })
    }

    /// This machine's failure, not the relay's.
    pub fn is_environment(&self) -> bool {
        matches!(self, Say::Environment { .. })
    }

    /// Said by the fault schedule itself (not a detection by the relay).
    pub(crate) fn is_schedule(&self) -> bool {
        matches!(self, Say::Fault { .. } | Say::FaultNotApplied { .. })
    }

    /// A source stopped delivering wakes for good (reported under `degraded`).
    pub fn degraded(&self) -> bool {
        matches!(self, Say::Strategy(n) if n.degraded())
    }

    /// What it says of a source's health, if anything.
    pub(crate) fn health(&self) -> Option<Health> {
        match self {
            Say::Strategy(n) => n.health(),
            _ => None,
        }
    }
}

impl From<String> for Say {
    fn from(s: String) -> Say {
        Say::Other(s)
    }
}

impl fmt::Display for Say {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Say::Swept { removed } => write!(f, "cleared {removed} stale relay file(s) predating the turn"),
            Say::SweepSkipped => f.write_str("stale sweep skipped: relay dir unlistable after 3 attempts"),
            Say::ListFailed(e) => write!(f, "cannot list relay dir: {e}; still polling"),
            Say::DirReadable => f.write_str("relay dir readable again"),
            Say::ReadFailed { name, error, answered: true } => {
                write!(f, "cannot read {name:?}: {error}; answered with an error")
            }
            Say::ReadFailed { name, error, answered: false } => write!(f, "cannot read {name:?}: {error}; will retry"),
            Say::Skipped { name, why } => write!(f, "skipped {name:?}: {why}; left in place, not answered"),
            Say::Malformed { name, bytes, error } => {
                write!(f, "malformed request {name:?} ({bytes} bytes): {error}; answered with an error")
            }
            Say::AlreadySeen { name } => write!(
                f,
                "skipped {name:?}: a request of that name was already handled this turn (a reused id is never run \
                 twice in one turn); left in place, not answered until a new turn"
            ),
            Say::DeleteFailed { name, error } => write!(f, "delete of {name:?} failed: {error}; retrying next pass"),
            Say::AnswerFailed { call, error, retry_in, n, of } => {
                write!(
                    f,
                    "cannot publish answer for {call:?}: {error}; retrying in {} (try {n} of {of})",
                    human(*retry_in)
                )
            }
            Say::AnswerDropped { call, tries, error } => write!(
                f,
                "gave up publishing the answer for {call:?} after {tries} {}: {error}; the call is unanswered",
                if *tries == 1 { "try" } else { "tries" }
            ),
            Say::Missed { found, counted: true } => {
                write!(f, "a timed list found {found} request(s) the watch missed (a watch failure)")
            }
            Say::Missed { found, counted: false } => {
                write!(f, "a timed list found {found} request(s) no wake announced")
            }
            Say::AnswerByTimer { call, rearmed } => write!(
                f,
                "answer for {call:?} found by the safety check{}",
                if *rearmed { "; response watch re-armed" } else { "" }
            ),
            Say::PublishFailed { call, error } => write!(f, "cannot publish request {call:?}: {error}"),
            Say::Environment { what, why, error, then } => {
                write!(f, "this machine failed the run, not the relay: {what}: {why} ({error}){then}")
            }
            Say::MalformedAnswer { call, error } => {
                write!(f, "malformed answer for {call:?}: {error}; treated as an error")
            }
            Say::AnswerReadFailed { call, error } => write!(f, "cannot read answer for {call:?}: {error}; retrying"),
            Say::IdCollision(e) => f.write_str(e),
            Say::Fault { kind, on } => write!(f, "fault schedule: {kind} {}", if *on { "strikes" } else { "ends" }),
            Say::FaultNotApplied { kind, error } => write!(f, "fault schedule: {kind} could not be applied: {error}"),
            Say::RunnerRestarted { took } => {
                write!(f, "runner stopped in {} with a window held, started again", human(*took))
            }
            Say::RunnerStuck(e) => f.write_str(e),
            Say::Strategy(n) => fmt::Display::fmt(n, f),
            Say::Other(e) => f.write_str(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A strategy's notice, as a strategy's module defines one.
    #[derive(Debug, PartialEq)]
    enum Lost {
        Gone,
        Back(u32),
    }

    impl fmt::Display for Lost {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                Lost::Gone => f.write_str("gone"),
                Lost::Back(n) => write!(f, "back after {n}"),
            }
        }
    }

    impl StrategyNotice for Lost {
        fn recovery(&self) -> Option<Recovery> {
            matches!(self, Lost::Back(_)).then_some(Recovery::Promoted)
        }
        fn degraded(&self) -> bool {
            matches!(self, Lost::Gone)
        }
    }

    #[test]
    fn recovery_steps_come_from_the_type() {
        let d = Say::strategy(Lost::Gone);
        assert_eq!(d.recovery(), None);
        assert!(d.degraded());
        assert_eq!(d.to_string(), "gone");
        let b = Say::strategy(Lost::Back(2));
        assert_eq!(b.recovery(), Some(Recovery::Promoted));
        assert!(!b.degraded());
        assert_eq!(b.as_strategy::<Lost>(), Some(&Lost::Back(2)));
        assert_eq!(b, Say::strategy(Lost::Back(2)));
        assert_ne!(b, Say::strategy(Lost::Back(3)));
        assert_ne!(b, d);
        assert_eq!(Say::Missed { found: 1, counted: true }.recovery(), Some(Recovery::FoundByTimer));
        assert_eq!(Say::Fault { kind: "exec-hang", on: true }.recovery(), None);
        assert!(Say::Fault { kind: "exec-hang", on: true }.is_schedule());
        assert!(!Say::Other("x".into()).degraded());
    }
}
