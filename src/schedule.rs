//! The poll schedule: how long the runner waits between scans when nothing wakes it.
//!
//! Poll-only uses it as its only clock (300 ms, doubling after 5 idle polls up to
//! 1500 ms, reset by any new request); watch-assisted uses a fixed interval as the racing
//! safety timer.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollSchedule {
    pub interval: Duration,
    /// Idle polls at `interval` before the delay starts doubling; `u32::MAX` never grows.
    pub idle_polls: u32,
    pub max_interval: Duration,
    idle: u32,
    delay: Duration,
}

impl PollSchedule {
    pub fn new(interval: Duration, idle_polls: u32, max_interval: Duration) -> Self {
        PollSchedule { interval, idle_polls, max_interval: max_interval.max(interval), idle: 0, delay: interval }
    }

    /// A fixed interval that never grows.
    pub fn fixed(interval: Duration) -> Self {
        Self::new(interval, u32::MAX, interval)
    }

    /// Records the result of a scan and returns the delay before the next one.
    pub fn next(&mut self, found_work: bool) -> Duration {
        if found_work {
            self.idle = 0;
            self.delay = self.interval;
        } else {
            self.idle = self.idle.saturating_add(1);
            if self.idle > self.idle_polls {
                self.delay = (self.delay * 2).min(self.max_interval);
            }
        }
        self.delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_growth_and_reset() {
        let ms = Duration::from_millis;
        let mut s = PollSchedule::new(ms(300), 5, ms(1500));
        let seq: Vec<_> = (0..9).map(|_| s.next(false).as_millis()).collect();
        assert_eq!(seq, vec![300, 300, 300, 300, 300, 600, 1200, 1500, 1500]);
        assert_eq!(s.next(true), ms(300));
        assert_eq!(s.next(false), ms(300));
    }

    #[test]
    fn fixed_never_grows() {
        let mut s = PollSchedule::fixed(Duration::from_millis(300));
        for _ in 0..1000 {
            assert_eq!(s.next(false), Duration::from_millis(300));
        }
    }
}
