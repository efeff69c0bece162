//! What a window-exec source (and a followed stream, which fails and demotes the same way)
//! says of its windows: a failure and why, a demotion, a promotion, a recovery before any
//! demotion. Each says its recovery step and whether it degrades the dir's wakes.

use std::fmt;

use crate::base::notice::{Health, Recovery, Say, StrategyNotice};

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

/// What a window (or stream) source says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowNotice {
    /// A watch window (or stream) failed.
    WindowFailed {
        /// Failures in a row, this one included.
        n: u32,
        /// How it failed.
        why: WindowFailure,
    },
    /// Demoted to classic polling after consecutive failures.
    Demoted {
        /// Failures in a row.
        n: u32,
        /// How the last one failed.
        why: WindowFailure,
        /// For the rest of the turn (`after_demotion = "poll"`), not until a retry works.
        for_the_turn: bool,
    },
    /// A demoted source's watch works again (`after_demotion = "retry"`).
    Promoted,
    /// A window succeeded after failures, before any demotion.
    Recovered,
}

impl WindowNotice {
    /// One of each, for the registry.
    pub(crate) fn samples() -> Vec<Say> {
        let why = WindowFailure::DaemonTimeout;
        [
            WindowNotice::WindowFailed { n: 1, why: why.clone() },
            WindowNotice::Demoted { n: 3, why, for_the_turn: true },
            WindowNotice::Promoted,
            WindowNotice::Recovered,
        ]
        .into_iter()
        .map(Say::strategy)
        .collect()
    }
}

impl StrategyNotice for WindowNotice {
    fn recovery(&self) -> Option<Recovery> {
        match self {
            WindowNotice::WindowFailed { .. } => None,
            WindowNotice::Demoted { .. } => Some(Recovery::Demoted),
            WindowNotice::Promoted => Some(Recovery::Promoted),
            WindowNotice::Recovered => Some(Recovery::RecoveredBeforeDemotion),
        }
    }

    fn degraded(&self) -> bool {
        matches!(self, WindowNotice::Demoted { .. })
    }

    fn health(&self) -> Option<Health> {
        match self {
            WindowNotice::WindowFailed { .. } => Some(Health::Failed),
            WindowNotice::Demoted { .. } => None,
            WindowNotice::Promoted => Some(Health::Promoted),
            WindowNotice::Recovered => Some(Health::Recovered),
        }
    }
}

impl fmt::Display for WindowNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WindowNotice::WindowFailed { n, why } => write!(f, "watch failure {n}: {why}"),
            WindowNotice::Demoted { n, why, for_the_turn } => write!(
                f,
                "demoted to polling after {n} consecutive failures ({why}){}",
                if *for_the_turn { " for the rest of the turn" } else { "" }
            ),
            WindowNotice::Promoted => f.write_str("promoted: the watch is healthy again, polling suspended"),
            WindowNotice::Recovered => f.write_str("the watch recovered before demotion"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_steps_come_from_the_type() {
        let d = Say::strategy(WindowNotice::Demoted { n: 3, why: WindowFailure::Exit(Some(1)), for_the_turn: true });
        assert_eq!(d.recovery(), Some(Recovery::Demoted));
        assert!(d.degraded());
        assert_eq!(d.to_string(), "demoted to polling after 3 consecutive failures (watch program exited with code 1) for the rest of the turn");
        let s = Say::strategy(WindowNotice::WindowFailed { n: 1, why: WindowFailure::Exit(None) }).to_string();
        assert!(!s.contains("None") && !s.contains("Some"), "no debug text: {s}");
    }
}
