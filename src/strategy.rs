//! The one place that turns a case's named parts into live objects: hosts, runner-side
//! strategies (activity source + poll schedule) and writer-side strategies. A new strategy
//! or host is a new file plus one arm here; nothing else branches on their kind.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::dir::RelayDir;
use crate::events::EventSink;
use crate::external::ExternalSpec;
use crate::handler::HandlerModel;
use crate::host::{Busy, Daemon, Host, LatencyProfile, LocalHost, RemoteHost};
use crate::runner::{Runner, RunnerReport};
use crate::schedule::PollSchedule;
use crate::source::{
    clamp_window, ActivitySource, FollowConfig, ProgramExec, SupervisedSource, TimerSource, WatchSource, WindowConfig,
};
use crate::units::human;
use crate::writer::{PollWaiter, ResponseWaiter, WatchWaiter};

/// Where the relay dir lives, seen from the runner.
#[derive(Debug, Clone, PartialEq)]
pub enum HostSpec {
    Local,
    /// A sandbox behind an emulated daemon with this latency profile.
    Remote(LatencyProfile),
}

impl HostSpec {
    pub const NAMES: &'static [&'static str] = &["local", "remote"];

    pub fn name(&self) -> &'static str {
        match self {
            HostSpec::Local => "local",
            HostSpec::Remote(_) => "remote",
        }
    }

    /// What the host models, as a person reads it.
    pub fn params(&self) -> String {
        match self {
            HostSpec::Local => "local directory, no injected latency".into(),
            HostSpec::Remote(p) => format!("{}; latency injected in user space (tokio timers, no netem)", p.describe()),
        }
    }

    /// The host of one relay dir; `busy` is the dir's in-flight gauge, `seed` drives the
    /// latency draws.
    pub fn build(&self, dir: &Arc<dyn RelayDir>, busy: Arc<Busy>, seed: u64) -> Arc<dyn Host> {
        match self {
            HostSpec::Local => Arc::new(LocalHost::over(dir.clone(), busy)),
            HostSpec::Remote(profile) => {
                Arc::new(RemoteHost::over(dir.clone(), Arc::new(Daemon::new(profile.clone(), seed, busy))))
            }
        }
    }
}

/// What a runner strategy is built from.
pub struct Parts<'a> {
    pub dir: &'a Arc<dyn RelayDir>,
    pub host: &'a Arc<dyn Host>,
    /// The relay-bench binary, run in the sandbox as the watch program.
    pub watch_program: &'a Path,
    pub seed: u64,
}

/// How the runner discovers requests (hop 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunnerStrategy {
    /// List every `interval`; after `idle_polls` idle polls the delay doubles up to `max_interval`.
    Poll { interval: Duration, idle_polls: u32, max_interval: Duration },
    /// A directory watch wakes the loop; a list every `safety_interval` races it.
    Watch { safety_interval: Duration },
    /// Bounded-window execs of the in-sandbox watch program; `demoted` is the poll schedule
    /// the dir falls back to after repeated failures.
    WindowExec { window: WindowConfig, demoted: PollSchedule },
    /// One long-lived exec streaming a line per event, reopened when it drops.
    Follow { follow: FollowConfig, demoted: PollSchedule },
    /// Someone else's runner: a program serving the relay dir, measured from outside.
    External(ExternalSpec),
}

impl RunnerStrategy {
    pub const NAMES: &'static [&'static str] = &["poll", "watch", "window-exec", "window-exec-inline", "follow"];

    pub fn poll_default() -> Self {
        RunnerStrategy::Poll {
            interval: Duration::from_millis(300),
            idle_polls: 5,
            max_interval: Duration::from_millis(1500),
        }
    }

    pub fn watch_default() -> Self {
        RunnerStrategy::Watch { safety_interval: Duration::from_millis(300) }
    }

    pub fn window_default(inline: bool) -> Self {
        RunnerStrategy::WindowExec {
            window: WindowConfig { inline, ..WindowConfig::default() },
            demoted: PollSchedule::new(Duration::from_millis(300), 5, Duration::from_millis(1500)),
        }
    }

    pub fn follow_default() -> Self {
        RunnerStrategy::Follow {
            follow: FollowConfig::default(),
            demoted: PollSchedule::new(Duration::from_millis(300), 5, Duration::from_millis(1500)),
        }
    }

    /// A strategy by name (one of [`RunnerStrategy::NAMES`]) with its default settings.
    pub fn by_name(name: &str) -> Option<Self> {
        Some(match name {
            "poll" => Self::poll_default(),
            "watch" => Self::watch_default(),
            "window-exec" => Self::window_default(false),
            "window-exec-inline" => Self::window_default(true),
            "follow" => Self::follow_default(),
            _ => return None,
        })
    }

    pub fn name(&self) -> &'static str {
        match self {
            RunnerStrategy::Follow { .. } => "follow",
            RunnerStrategy::External(_) => "external",
            RunnerStrategy::Poll { .. } => "poll",
            RunnerStrategy::Watch { .. } => "watch",
            RunnerStrategy::WindowExec { window, .. } if window.inline => "window-exec-inline",
            RunnerStrategy::WindowExec { .. } => "window-exec",
        }
    }

    /// Parameters as a person reads them.
    pub fn params(&self) -> String {
        match self {
            RunnerStrategy::Poll { interval, idle_polls, max_interval } => {
                format!("interval {}, x2 after {idle_polls} idle up to {}", human(*interval), human(*max_interval))
            }
            RunnerStrategy::Watch { safety_interval } => {
                format!("inotify + safety list {}", human(*safety_interval))
            }
            RunnerStrategy::WindowExec { window: w, demoted } => format!(
                "window {}{} + grace {}, relist {}, safety list {}, demote after {} failures, backoff {}-{}, then poll {}",
                human(clamp_window(w.window)),
                if w.jitter { " (x0.8-1.0)" } else { " (no jitter)" },
                human(w.grace),
                human(w.relist),
                human(w.safety),
                w.max_failures,
                human(w.backoff_min),
                human(w.backoff_max),
                human(demoted.interval)
            ),
            RunnerStrategy::External(x) => format!(
                "command {:?}{}",
                x.command,
                x.handler.map_or_else(|| ", handler time not stated".into(), |h| format!(", handler {}", human(h)))
            ),
            RunnerStrategy::Follow { follow: f, demoted } => format!(
                "streamed watch reopened every {}, relist {}, safety list {}, demote after {} failures, backoff {}-{}, then poll {}",
                human(f.lifetime),
                human(f.relist),
                human(f.safety),
                f.max_failures,
                human(f.backoff_min),
                human(f.backoff_max),
                human(demoted.interval)
            ),
        }
    }

    /// Whether the runner's requests go through a counted host (not a black box's).
    pub fn requests_visible(&self) -> bool {
        !matches!(self, RunnerStrategy::External(_))
    }

    /// What cannot be measured with this runner, and why (empty for the suite's own).
    pub fn unavailable(&self) -> Vec<String> {
        match self {
            RunnerStrategy::External(x) => {
                let mut v = vec![
                    "wake: happens inside the external runner, not visible from outside".to_owned(),
                    "request counts: the external runner's own list/read/delete calls are not seen".to_owned(),
                ];
                if x.handler.is_none() {
                    v.push("relay_overhead: the external runner's handler time is not known (state it with `handler` in the runner table)".to_owned());
                }
                v
            }
            _ => Vec::new(),
        }
    }

    /// Starts the runner of one relay dir: its activity source (closing it stops the
    /// runner) and the task that ends with its report.
    pub fn start(
        &self,
        parts: &Parts<'_>,
        sandbox: u32,
        handler: Arc<HandlerModel>,
        sink: &EventSink,
        stderr_to: &Path,
    ) -> (Arc<dyn ActivitySource>, JoinHandle<RunnerReport>) {
        if let RunnerStrategy::External(x) = self {
            return crate::external::start(x, sandbox, parts.dir.path(), stderr_to, sink.clone());
        }
        let (source, schedule) = self.build(parts);
        source.report_to(sink.clone(), sandbox);
        let runner = Runner {
            sandbox,
            host: parts.host.clone(),
            source: source.clone(),
            schedule,
            handler,
            events: sink.clone(),
        };
        (source, tokio::spawn(runner.run()))
    }

    /// The activity source and poll schedule of one of the suite's own runners.
    pub fn build(&self, parts: &Parts<'_>) -> (Arc<dyn ActivitySource>, PollSchedule) {
        match self {
            RunnerStrategy::External(_) => {
                (Arc::new(TimerSource::new()), PollSchedule::fixed(Duration::from_secs(3600)))
            }
            RunnerStrategy::Poll { interval, idle_polls, max_interval } => {
                (Arc::new(TimerSource::new()), PollSchedule::new(*interval, *idle_polls, *max_interval))
            }
            RunnerStrategy::Watch { safety_interval } => {
                (Arc::new(WatchSource::new(parts.dir.clone())), PollSchedule::fixed(*safety_interval))
            }
            RunnerStrategy::WindowExec { window, demoted } => {
                let exec = ProgramExec {
                    host: parts.host.clone(),
                    program: parts.watch_program.to_path_buf(),
                    dir: parts.dir.path().to_path_buf(),
                    relist: window.relist,
                    inline: window.inline,
                };
                (Arc::new(SupervisedSource::window(window.clone(), Arc::new(exec), parts.seed)), *demoted)
            }
            RunnerStrategy::Follow { follow, demoted } => {
                let src = SupervisedSource::follow(
                    follow.clone(),
                    parts.host.clone(),
                    parts.watch_program.to_path_buf(),
                    parts.dir.path().to_path_buf(),
                    parts.seed,
                );
                (Arc::new(src), *demoted)
            }
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

    pub fn build(&self, dir: &Arc<dyn RelayDir>) -> Box<dyn ResponseWaiter> {
        match self {
            WriterStrategy::Poll { interval } => Box::new(PollWaiter::new(*interval)),
            WriterStrategy::Watch { safety_interval } => Box::new(WatchWaiter::new(dir.clone(), *safety_interval)),
        }
    }
}
