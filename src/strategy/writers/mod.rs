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

crate::base::named! {
/// A writer strategy, as a scenario names it, in the order `list` shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterKind {
    /// Production with its response watch switched off: a check every 300 ms.
    Poll,
    /// Production's default: a watch on the relay dir, a safety check racing it.
    Watch,
}
names ["poll", "watch"]
}

/// Every writer strategy, in the order `list` shows them.
pub const WRITERS: &[WriterKind] = &WriterKind::ALL;

/// The writer strategy named `name`, with every default.
pub(crate) fn writer_by_name(name: &str) -> Option<WriterSpec> {
    WriterKind::from_name(name)?.parse(None).ok()
}

const INTERVAL: Duration = Duration::from_millis(300);

/// A parsed writer strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterSpec {
    kind: WriterKind,
    interval: Duration,
    /// What wakes a waiting call (the watch writer only).
    wake_on: EventFilter,
    cleanup: Cleanup,
}

/// The writer `call` waits with unless told otherwise: production's, a watch on the dir.
pub(crate) const WRITER_DEFAULT: &str = WriterKind::Watch.name();

impl WriterKind {
    /// One line for `list`.
    pub fn about(self) -> &'static str {
        match self {
            WriterKind::Watch => "any change in the relay dir wakes the waiting calls; a check every 300 ms races it",
            WriterKind::Poll => "check for the answer every 300 ms",
        }
    }

    /// Reads the strategy's table (`None`: the name alone, every default).
    pub(crate) fn parse(self, table: Option<&mut Fields<'_>>) -> Result<WriterSpec, ScenarioError> {
        let watch = self == WriterKind::Watch;
        let mut spec =
            WriterSpec { kind: self, interval: INTERVAL, wake_on: EventFilter::Any, cleanup: Cleanup::OnAnswer };
        if let Some(t) = table {
            let key = if watch { "safety_interval" } else { "interval" };
            spec.interval = t.duration(key)?.unwrap_or(spec.interval);
            positive(t, key, spec.interval)?;
            if watch && t.choice("wake_on", &["any", "responses"])? == Some("responses") {
                spec.wake_on = EventFilter::Responses;
            }
            if t.choice("cleanup", &["answer", "always"])? == Some("always") {
                spec.cleanup = Cleanup::Always;
            }
        }
        Ok(spec)
    }

    /// One of each notice of its own it says (see [`super::RunnerKind::notices`]).
    pub fn notices(self) -> Vec<Say> {
        match self {
            WriterKind::Watch => vec![Say::strategy(WatchNotice::WatchUnavailable("response watch: ENOSPC".into()))],
            WriterKind::Poll => Vec::new(),
        }
    }
}

impl WriterSpec {
    pub fn name(&self) -> &'static str {
        self.kind.name()
    }

    /// Its settings as a person reads them.
    pub fn params(&self) -> String {
        match self.kind {
            WriterKind::Watch => {
                format!("inotify ({} events) + safety check {}", self.wake_on.name(), human(self.interval))
            }
            WriterKind::Poll => format!("check every {}", human(self.interval)),
        }
    }

    /// The options this writer sets away from production's relay as built.
    pub fn departures(&self) -> Vec<crate::strategy::Departure> {
        use crate::strategy::Departure;
        let mut d = Vec::new();
        if self.kind == WriterKind::Poll {
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

    pub fn cleanup(&self) -> Cleanup {
        self.cleanup
    }

    /// The response waiter of one relay dir's writer.
    pub fn build(&self, dir: &Arc<dyn RelayDir>, reporter: Reporter) -> Box<dyn ResponseWaiter> {
        match self.kind {
            WriterKind::Watch => Box::new(WatchWaiter::new(dir.clone(), self.interval, self.wake_on, reporter)),
            WriterKind::Poll => Box::new(PollWaiter::new(self.interval)),
        }
    }
}
