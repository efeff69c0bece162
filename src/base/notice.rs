//! What the relay says while it runs: typed notices from the runner, the sources, the
//! writer and the fault schedule. Each renders as one line for the report; the ones that
//! are a recovery step say which ([`Say::recovery`]), so a fault's row is built from types,
//! never by matching text.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::units::human;

/// Why a watch window (or stream) counted as a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowFailure {
    /// The daemon refused or dropped the exec.
    Rejected(String),
    /// The exec answered with no result.
    NoResult,
    /// The daemon's timeout (window + grace) killed the program.
    DaemonTimeout,
    /// The program exited non-zero (`None`: killed by a signal).
    Exit(Option<i32>),
    /// Nothing settled within window + grace + margin: abandoned.
    OuterBound,
    /// A safety list found a request the watch did not signal.
    Missed,
    /// The program's report could not be read.
    Unreadable,
    /// A followed stream ended before its lifetime.
    StreamDropped,
}

impl fmt::Display for WindowFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowFailure::Rejected(e) => write!(f, "exec rejected: {e}"),
            WindowFailure::NoResult => f.write_str("exec resolved with no result"),
            WindowFailure::DaemonTimeout => f.write_str("daemon timeout"),
            WindowFailure::Exit(Some(c)) => write!(f, "watch program exited with code {c}"),
            WindowFailure::Exit(None) => f.write_str("watch program killed by a signal"),
            WindowFailure::OuterBound => f.write_str("window outer bound expired (exec never settled)"),
            WindowFailure::Missed => f.write_str("safety poll found a request the watch missed"),
            WindowFailure::Unreadable => f.write_str("watch program printed unreadable output"),
            WindowFailure::StreamDropped => f.write_str("the followed stream dropped"),
        }
    }
}

/// One thing said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Say {
    /// The runner's stale sweep removed files left from before the turn.
    Swept { removed: usize },
    /// The runner's stale sweep could not list the dir (3 tries).
    SweepSkipped,
    /// The runner cannot list its dir (said once per distinct error).
    ListFailed(String),
    /// ... and can again.
    DirReadable,
    /// A request could not be read; `answered`: an error answer was written for it.
    ReadFailed { name: String, error: String, answered: bool },
    /// An entry under a request's name is no relay file (a FIFO, a device, a directory, a
    /// link, a file past the size cap, a name that is not UTF-8): left alone, said once.
    Skipped { name: String, why: String },
    /// A request's bytes are not a request: answered with an error.
    Malformed { name: String, bytes: usize, error: String },
    /// A request under a name already handled this turn (a reused id): skipped by the turn's
    /// seen set, left in place, said once while it stays.
    AlreadySeen { name: String },
    /// A delete on pickup failed or exceeded its bound: retried on later passes.
    DeleteFailed { name: String, error: String },
    /// An answer could not be published: try `n` of `of`, the next in `retry_in`.
    AnswerFailed { call: String, error: String, retry_in: Duration, n: u32, of: u32 },
    /// An answer could not be published in `tries` tries: given up, the call unanswered.
    AnswerDropped { call: String, tries: u32, error: String },
    /// A list after a timed-out wait found requests the source never signalled.
    Missed { found: usize, counted: bool },
    /// A local watch could not be armed: plain polling for the turn.
    WatchUnavailable(String),
    /// A local watch failed after arming: waits end by their timer alone.
    WatchFailed,
    /// A watch was armed again on the directory now at its path.
    WatchRearmed,
    /// ... or could not be.
    RearmFailed(String),
    /// A watch window (or stream) failed; `n` in a row.
    WindowFailed { n: u32, why: WindowFailure },
    /// Demoted to classic polling after `n` consecutive failures.
    Demoted { n: u32, why: WindowFailure, for_the_turn: bool },
    /// A demoted source's watch works again (`after_demotion = "retry"`).
    Promoted,
    /// A window succeeded after failures, before any demotion.
    Recovered,
    /// The writer found its answer on a timed check, not by its watch.
    AnswerByTimer { call: String, rearmed: bool },
    /// The writer could not publish a request.
    PublishFailed { call: String, error: String },
    /// The writer read an answer that is not an answer.
    MalformedAnswer { call: String, error: String },
    /// The writer could not read its answer (retrying).
    AnswerReadFailed { call: String, error: String },
    /// The writer refused a call whose id sanitizes to one already in flight.
    IdCollision(String),
    /// A fault of the schedule struck (`on`) or ended.
    Fault { kind: &'static str, on: bool },
    /// A fault could not be applied.
    FaultNotApplied { kind: &'static str, error: String },
    /// The runner was stopped during a held window and started again.
    RunnerRestarted { took: Duration },
    /// The runner did not stop in time, or its task failed.
    RunnerStuck(String),
    /// A black-box runner said something (it started, exited, could not be watched).
    External(String),
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

impl Say {
    /// The recovery step this notice is, if any.
    pub fn recovery(&self) -> Option<Recovery> {
        Some(match self {
            Say::Demoted { .. } => Recovery::Demoted,
            Say::Promoted => Recovery::Promoted,
            Say::Recovered => Recovery::RecoveredBeforeDemotion,
            Say::WatchRearmed => Recovery::WatchRearmed,
            Say::RearmFailed(_) => Recovery::RearmFailed,
            Say::DirReadable => Recovery::DirReadable,
            Say::Missed { .. } => Recovery::FoundByTimer,
            Say::AnswerByTimer { .. } => Recovery::AnswerByTimer,
            Say::RunnerRestarted { .. } => Recovery::RunnerRestarted,
            _ => return None,
        })
    }

    /// Said by the fault schedule itself (not a detection by the relay).
    pub(crate) fn is_schedule(&self) -> bool {
        matches!(self, Say::Fault { .. } | Say::FaultNotApplied { .. })
    }

    /// A source stopped delivering wakes for good (reported under `degraded`).
    pub fn degraded(&self) -> bool {
        matches!(self, Say::Demoted { .. } | Say::WatchUnavailable(_) | Say::WatchFailed)
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
                "gave up publishing the answer for {call:?} after {tries} tries: {error}; the call is unanswered"
            ),
            Say::Missed { found, counted: true } => {
                write!(f, "a timed list found {found} request(s) the watch missed (a watch failure)")
            }
            Say::Missed { found, counted: false } => {
                write!(f, "a timed list found {found} request(s) no wake announced")
            }
            Say::WatchUnavailable(e) => write!(f, "cannot watch the relay dir: {e}; plain polling"),
            Say::WatchFailed => f.write_str("the watch failed; waits end by their timer"),
            Say::WatchRearmed => f.write_str("watch re-armed on the directory now at the path"),
            Say::RearmFailed(e) => write!(f, "could not re-arm the watch: {e}; polling"),
            Say::WindowFailed { n, why } => write!(f, "watch failure {n}: {why}"),
            Say::Demoted { n, why, for_the_turn } => write!(
                f,
                "demoted to polling after {n} consecutive failures ({why}){}",
                if *for_the_turn { " for the rest of the turn" } else { "" }
            ),
            Say::Promoted => f.write_str("promoted: the watch is healthy again, polling suspended"),
            Say::Recovered => f.write_str("the watch recovered before demotion"),
            Say::AnswerByTimer { call, rearmed } => write!(
                f,
                "answer for {call:?} found by the safety check{}",
                if *rearmed { "; response watch re-armed" } else { "" }
            ),
            Say::PublishFailed { call, error } => write!(f, "cannot publish request {call:?}: {error}"),
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
            Say::External(e) | Say::Other(e) => f.write_str(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_steps_come_from_the_type() {
        let d = Say::Demoted { n: 3, why: WindowFailure::Exit(Some(1)), for_the_turn: true };
        assert_eq!(d.recovery(), Some(Recovery::Demoted));
        assert!(d.degraded());
        assert_eq!(d.to_string(), "demoted to polling after 3 consecutive failures (watch program exited with code 1) for the rest of the turn");
        assert_eq!(Say::Fault { kind: "exec-hang", on: true }.recovery(), None);
        assert!(Say::Fault { kind: "exec-hang", on: true }.is_schedule());
        let s = Say::WindowFailed { n: 1, why: WindowFailure::Exit(None) }.to_string();
        assert!(!s.contains("None") && !s.contains("Some"), "no debug text: {s}");
    }
}
