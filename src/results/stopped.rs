//! A search's probe stopped before its end: where, and why no later call could make it pass.

use serde::{Deserialize, Serialize};

/// Where a search's probe stopped: at the first call lost past what its gates allow, when
/// no later call could make it pass (k6's `abortOnFail`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoppedEarly {
    /// When, from the schedule's start (simulated seconds on the virtual clock).
    pub at_secs: f64,
    /// The schedule's length (warm-up included).
    pub of_secs: f64,
    /// The lost calls its gates allow: the next one decided it.
    pub lost_allowed: u64,
}

impl StoppedEarly {
    /// `stopped at 23m 59s of 1h: a lost call past the 0 its gates allow`, as the reports
    /// say it.
    pub(crate) fn text(&self) -> String {
        let d = |s: f64| crate::base::units::wall(std::time::Duration::from_secs_f64(s.max(0.0)));
        format!(
            "stopped at {} of {}: a lost call past the {} its gates allow",
            d(self.at_secs),
            d(self.of_secs),
            self.lost_allowed
        )
    }
}
