//! The one place that turns a case's named parts into live objects: hosts, runner-side
//! strategies (activity source + poll schedule) and writer-side strategies. A new strategy
//! or host is a new file plus one arm here; nothing else branches on their kind.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::host::{Host, LocalHost};
use crate::schedule::PollSchedule;
use crate::source::{ActivitySource, TimerSource, WatchSource};
use crate::units::human;
use crate::writer::{PollWaiter, ResponseWaiter, WatchWaiter};

/// Where the relay dir lives, seen from the runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSpec {
    Local,
}

impl HostSpec {
    pub const NAMES: &'static [&'static str] = &["local"];

    pub fn name(&self) -> &'static str {
        match self {
            HostSpec::Local => "local",
        }
    }

    pub fn build(&self, dir: &Path) -> Arc<dyn Host> {
        match self {
            HostSpec::Local => Arc::new(LocalHost::new(dir)),
        }
    }
}

/// How the runner discovers requests (hop 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunnerStrategy {
    /// List every `interval`; after `idle_polls` idle polls the delay doubles up to `max_interval`.
    Poll {
        interval: Duration,
        idle_polls: u32,
        max_interval: Duration,
    },
    /// A directory watch wakes the loop; a list every `safety_interval` races it.
    Watch { safety_interval: Duration },
}

impl RunnerStrategy {
    pub const NAMES: &'static [&'static str] = &["poll", "watch"];

    pub fn poll_default() -> Self {
        RunnerStrategy::Poll {
            interval: Duration::from_millis(300),
            idle_polls: 5,
            max_interval: Duration::from_millis(1500),
        }
    }

    pub fn watch_default() -> Self {
        RunnerStrategy::Watch {
            safety_interval: Duration::from_millis(300),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            RunnerStrategy::Poll { .. } => "poll",
            RunnerStrategy::Watch { .. } => "watch",
        }
    }

    /// Parameters as a person reads them.
    pub fn params(&self) -> String {
        match self {
            RunnerStrategy::Poll {
                interval,
                idle_polls,
                max_interval,
            } => {
                format!(
                    "interval {}, x2 after {idle_polls} idle up to {}",
                    human(*interval),
                    human(*max_interval)
                )
            }
            RunnerStrategy::Watch { safety_interval } => {
                format!("inotify + safety list {}", human(*safety_interval))
            }
        }
    }

    pub fn build(&self, dir: &Path) -> (Arc<dyn ActivitySource>, PollSchedule) {
        match self {
            RunnerStrategy::Poll {
                interval,
                idle_polls,
                max_interval,
            } => (
                Arc::new(TimerSource::new()),
                PollSchedule::new(*interval, *idle_polls, *max_interval),
            ),
            RunnerStrategy::Watch { safety_interval } => (
                Arc::new(WatchSource::new(dir)),
                PollSchedule::fixed(*safety_interval),
            ),
        }
    }
}

/// How the writer learns its answer arrived (hop 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriterStrategy {
    Poll { interval: Duration },
    Watch { safety_interval: Duration },
}

impl WriterStrategy {
    pub const NAMES: &'static [&'static str] = &["poll", "watch"];

    pub fn name(&self) -> &'static str {
        match self {
            WriterStrategy::Poll { .. } => "poll",
            WriterStrategy::Watch { .. } => "watch",
        }
    }

    pub fn params(&self) -> String {
        match self {
            WriterStrategy::Poll { interval } => format!("check every {}", human(*interval)),
            WriterStrategy::Watch { safety_interval } => {
                format!("inotify + safety check {}", human(*safety_interval))
            }
        }
    }

    pub fn build(&self, dir: &Path) -> Box<dyn ResponseWaiter> {
        match self {
            WriterStrategy::Poll { interval } => Box::new(PollWaiter::new(*interval)),
            WriterStrategy::Watch { safety_interval } => {
                Box::new(WatchWaiter::new(dir, *safety_interval))
            }
        }
    }
}
