//! `poll`: today's baseline. No activity source: the loop lists, then sleeps the poll
//! delay (300 ms, growing after 5 idle lists to 1500 ms; a list that finds work resets it).
//! Tighter polling (a rejected alternative) is the same strategy with `interval = "50ms"`.

use std::sync::Arc;

use super::{loop_departures, loop_params, parse_loop, Parts, RunnerKind, RunnerSpec};
use crate::base::fields::{Fields, ScenarioError};
use crate::relay::runner::{LoopOptions, Started};

const NAME: &str = "poll";

pub(crate) struct Poll;
pub(crate) const POLL: Poll = Poll;

#[derive(Debug)]
struct PollSpec {
    name: &'static str,
    opts: LoopOptions,
}

/// A strategy of production's loop alone, with no activity source: `poll`, or another
/// pace of it named `name`.
pub(super) fn loop_alone(name: &'static str, opts: LoopOptions) -> Arc<dyn RunnerSpec> {
    Arc::new(PollSpec { name, opts })
}

impl RunnerKind for Poll {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "list every 300 ms, backing off to 1500 ms when idle (today's relay)"
    }

    fn parse(&self, table: Option<&mut Fields<'_>>) -> Result<Arc<dyn RunnerSpec>, ScenarioError> {
        Ok(loop_alone(NAME, parse_loop(table)?))
    }
}

impl RunnerSpec for PollSpec {
    fn name(&self) -> &'static str {
        self.name
    }

    fn params(&self) -> String {
        loop_params(&self.opts)
    }

    fn departures(&self) -> Vec<super::Departure> {
        loop_departures(&self.opts)
    }

    fn start(&self, parts: &Parts<'_>) -> Started {
        parts.runner(None, None, &self.opts).start()
    }
}
