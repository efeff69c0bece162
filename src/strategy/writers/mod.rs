//! Writer strategies (hop 1): how the in-sandbox writer learns its answer arrived.
//!
//! `watch` (production's default): any change in the relay dir wakes the waiting calls to
//! check their answers, a check every 300 ms races it (`wake_on = "responses"`: only the
//! call whose answer appeared). `poll` (production with its response watch switched off): a check every
//! 300 ms. Both clean up as production does (`cleanup = "answer"`: a timed-out request
//! stays for the next turn's sweep); `cleanup = "always"` removes it at the timeout too.

mod poll;
mod watch;

use poll::PollWaiter;
use watch::WatchWaiter;

use std::sync::Arc;
use std::time::Duration;

use super::{positive, WatchNotice};
use crate::base::fields::{Fields, ScenarioError};
use crate::base::notice::Say;
use crate::base::units::human;
use crate::relay::source::Reporter;
use crate::relay::writer::{Cleanup, ResponseWaiter};
use crate::sandbox::dir::{EventFilter, RelayDir};

/// A kind of writer strategy, as a scenario names it.
pub trait WriterKind: Sync {
    fn name(&self) -> &'static str;
    fn about(&self) -> &'static str;
    fn parse(&self, table: Option<&mut Fields<'_>>) -> Result<Arc<dyn WriterSpec>, ScenarioError>;
    /// One of each notice of its own it says (see [`super::RunnerKind::notices`]).
    fn notices(&self) -> Vec<Say> {
        Vec::new()
    }
}

/// A parsed writer strategy.
pub trait WriterSpec: std::fmt::Debug + Send + Sync {
    fn name(&self) -> &'static str;
    fn params(&self) -> String;
    fn departures(&self) -> Vec<crate::strategy::Departure>;
    fn cleanup(&self) -> Cleanup;
    /// The response waiter of one relay dir's writer.
    fn build(&self, dir: &Arc<dyn RelayDir>, reporter: Reporter) -> Box<dyn ResponseWaiter>;
}

/// Every writer strategy: a new one is a file or a struct here plus one line.
pub const WRITERS: &[&dyn WriterKind] = &[&POLL, &WATCH];

/// The writer strategy named `name`.
pub(crate) fn writer_kind(name: &str) -> Option<&'static dyn WriterKind> {
    WRITERS.iter().copied().find(|k| k.name() == name)
}

/// Names of every writer strategy.
pub(crate) fn writer_names() -> Vec<&'static str> {
    WRITERS.iter().map(|k| k.name()).collect()
}

/// The writer strategy named `name`, with every default.
pub(crate) fn writer_by_name(name: &str) -> Option<Arc<dyn WriterSpec>> {
    writer_kind(name)?.parse(None).ok()
}

const INTERVAL: Duration = Duration::from_millis(300);

#[derive(Debug)]
struct Spec {
    watch: bool,
    interval: Duration,
    /// What wakes a waiting call (the watch writer only).
    wake_on: EventFilter,
    cleanup: Cleanup,
}

pub(super) struct Kind {
    watch: bool,
}

pub(crate) const WATCH: Kind = Kind { watch: true };
pub(crate) const POLL: Kind = Kind { watch: false };

/// The writer `call` waits with unless told otherwise: production's, a watch on the dir.
pub(crate) const WRITER_DEFAULT: &str = WATCH.name_of();

impl Kind {
    const fn name_of(&self) -> &'static str {
        if self.watch {
            "watch"
        } else {
            "poll"
        }
    }
}

impl WriterKind for Kind {
    fn name(&self) -> &'static str {
        self.name_of()
    }

    fn about(&self) -> &'static str {
        if self.watch {
            "any change in the relay dir wakes the waiting calls; a check every 300 ms races it"
        } else {
            "check for the answer every 300 ms"
        }
    }

    fn parse(&self, table: Option<&mut Fields<'_>>) -> Result<Arc<dyn WriterSpec>, ScenarioError> {
        let mut spec =
            Spec { watch: self.watch, interval: INTERVAL, wake_on: EventFilter::Any, cleanup: Cleanup::OnAnswer };
        if let Some(t) = table {
            let key = if self.watch { "safety_interval" } else { "interval" };
            spec.interval = t.duration(key)?.unwrap_or(spec.interval);
            positive(t, key, spec.interval)?;
            if self.watch && t.choice("wake_on", &["any", "responses"])? == Some("responses") {
                spec.wake_on = EventFilter::Responses;
            }
            if t.choice("cleanup", &["answer", "always"])? == Some("always") {
                spec.cleanup = Cleanup::Always;
            }
        }
        Ok(Arc::new(spec))
    }

    fn notices(&self) -> Vec<Say> {
        if self.watch {
            vec![Say::strategy(WatchNotice::WatchUnavailable("response watch: ENOSPC".into()))]
        } else {
            Vec::new()
        }
    }
}

impl WriterSpec for Spec {
    fn name(&self) -> &'static str {
        Kind { watch: self.watch }.name_of()
    }

    fn params(&self) -> String {
        if self.watch {
            format!("inotify ({} events) + safety check {}", self.wake_on.name(), human(self.interval))
        } else {
            format!("check every {}", human(self.interval))
        }
    }

    fn departures(&self) -> Vec<crate::strategy::Departure> {
        use crate::strategy::Departure;
        let mut d = Vec::new();
        if !self.watch {
            d.push(Departure::setting("writer = poll (response watch off)".into(), "RESPONSE_WATCH_ENABLED", false));
        }
        if self.wake_on != EventFilter::Any {
            d.push(Departure::code(format!("writer wake_on = {}", self.wake_on.name())));
        }
        if self.interval != INTERVAL {
            let text = format!("writer interval = {}", human(self.interval));
            d.push(Departure::setting(text, "POLLING", self.interval.as_millis()));
        }
        if self.cleanup != Cleanup::OnAnswer {
            d.push(Departure::code("writer cleanup = always"));
        }
        d
    }

    fn cleanup(&self) -> Cleanup {
        self.cleanup
    }

    fn build(&self, dir: &Arc<dyn RelayDir>, reporter: Reporter) -> Box<dyn ResponseWaiter> {
        if self.watch {
            Box::new(WatchWaiter::new(dir.clone(), self.interval, self.wake_on, reporter))
        } else {
            Box::new(PollWaiter::new(self.interval))
        }
    }
}
