//! `poll`: today's baseline. No activity source: the loop lists, then sleeps the poll
//! delay (300 ms, growing after 5 idle lists to 1500 ms; a list that finds work resets it).
//! Tighter polling (a rejected alternative) is the same strategy with `interval = "50ms"`.

use super::{loop_departures, loop_params, parse_loop, Parts};
use crate::base::fields::{Fields, ScenarioError};
use crate::relay::runner::{LoopOptions, Started};

pub(crate) const NAME: &str = "poll";
pub(super) const ABOUT: &str = "list every 300 ms, backing off to 1500 ms when idle (today's relay)";

/// A parsed `poll`: production's loop alone, with no activity source.
#[derive(Debug)]
pub struct PollSpec {
    opts: LoopOptions,
}

pub(super) fn parse(table: Option<&mut Fields<'_>>) -> Result<PollSpec, ScenarioError> {
    Ok(PollSpec { opts: parse_loop(table)? })
}

impl PollSpec {
    pub(super) fn params(&self) -> String {
        loop_params(&self.opts)
    }

    pub(super) fn departures(&self) -> Vec<super::Departure> {
        loop_departures(&self.opts)
    }

    pub(super) fn start(&self, parts: &Parts<'_>) -> Started {
        parts.runner(None, None, &self.opts).start()
    }
}
