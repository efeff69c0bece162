//! The poll-only source: nothing ever raises it, so every wait is its timer.

use std::time::Duration;

use super::{ActivitySource, Signal, SourceHealth, Wake};
use crate::BoxFut;

/// A source with no events: `wait` sleeps its timeout (or returns `Closed`).
#[derive(Debug, Default)]
pub struct TimerSource {
    signal: Signal,
}

impl TimerSource {
    pub fn new() -> Self {
        Self::default()
    }
}

impl ActivitySource for TimerSource {
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake> {
        Box::pin(self.signal.wait(timeout))
    }

    fn close(&self) {
        self.signal.close();
    }

    fn health(&self) -> SourceHealth {
        SourceHealth::default()
    }
}
