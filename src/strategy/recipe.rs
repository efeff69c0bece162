//! The throwaway runner strategy the strategy recipe is tried with (in [`super::RUNNERS`] in
//! test builds only; `src/app/recipes.rs` runs it): `steady-poll`, production's loop listing
//! every 25 ms and never backing off.

use std::sync::Arc;
use std::time::Duration;

use super::{parse_loop, RunnerKind, RunnerSpec};
use crate::base::fields::{Fields, ScenarioError};
use crate::relay::options::PollDelay;

pub(crate) struct SteadyPoll;

impl RunnerKind for SteadyPoll {
    fn name(&self) -> &'static str {
        "steady-poll"
    }

    fn about(&self) -> &'static str {
        "list every 25 ms, never backing off (the registry's own test)"
    }

    fn parse(&self, table: Option<&mut Fields<'_>>) -> Result<Arc<dyn RunnerSpec>, ScenarioError> {
        let mut opts = parse_loop(table)?;
        let every = Duration::from_millis(25);
        opts.poll = PollDelay { interval: every, grow_after: u32::MAX, max: every };
        Ok(super::poll::loop_alone("steady-poll", opts))
    }
}
