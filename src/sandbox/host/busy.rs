//! Whether a relay dir has calls in flight, and for how long it has had: the split between
//! busy and idle stretches that request rates are reported by (SPEC §5: ~200 lists/min per
//! active turn, ~40/min idle, for today's polling). It also keeps how long a relay (a
//! runner) was alive on the dir: between agent turns no relay exists, so an idle budget,
//! which is the cost of a live relay with no call in flight, is over the alive time alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::base::clock;

#[derive(Debug, Default)]
struct State {
    in_flight: u64,
    since: Option<Instant>,
    busy: Duration,
    /// Since when a relay has been alive on the dir, and for how long relays were before.
    alive_since: Option<Instant>,
    alive: Duration,
}

/// A gauge of calls in flight in one relay dir, shared by its writer and its host.
#[derive(Debug, Default)]
pub struct Busy {
    state: Mutex<State>,
    flag: AtomicBool,
}

impl Busy {
    /// A call started.
    pub(crate) fn begin(&self) {
        let mut s = self.state.lock().expect("busy gauge poisoned");
        s.in_flight += 1;
        if s.in_flight == 1 {
            s.since = Some(clock::now());
            self.flag.store(true, Ordering::Release);
        }
    }

    /// A call ended.
    pub fn end(&self) {
        let mut s = self.state.lock().expect("busy gauge poisoned");
        s.in_flight = s.in_flight.saturating_sub(1);
        if s.in_flight == 0 {
            if let Some(t) = s.since.take() {
                s.busy += clock::since(t);
            }
            self.flag.store(false, Ordering::Release);
        }
    }

    #[inline]
    pub(crate) fn is_busy(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// A relay (a turn's runner) started on the dir.
    pub(crate) fn relay_up(&self) {
        self.state.lock().expect("busy gauge poisoned").alive_since.get_or_insert_with(clock::now);
    }

    /// The dir's relay stopped.
    pub(crate) fn relay_down(&self) {
        let mut s = self.state.lock().expect("busy gauge poisoned");
        if let Some(t) = s.alive_since.take() {
            s.alive += clock::since(t);
        }
    }

    /// Time a relay was alive on the dir so far, the current stretch included.
    pub(crate) fn alive_time(&self) -> Duration {
        let s = self.state.lock().expect("busy gauge poisoned");
        s.alive + s.alive_since.map_or(Duration::ZERO, clock::since)
    }

    /// Time spent with calls in flight so far, the current stretch included.
    pub(crate) fn busy_time(&self) -> Duration {
        let s = self.state.lock().expect("busy gauge poisoned");
        s.busy + s.since.map_or(Duration::ZERO, clock::since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn busy_time_counts_overlapping_calls_once() {
        let b = Busy::default();
        b.begin();
        tokio::time::advance(Duration::from_secs(1)).await;
        b.begin();
        tokio::time::advance(Duration::from_secs(1)).await;
        b.end();
        assert!(b.is_busy());
        b.end();
        assert!(!b.is_busy());
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(b.busy_time(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn alive_time_counts_only_the_stretches_a_relay_lived() {
        let b = Busy::default();
        tokio::time::advance(Duration::from_secs(10)).await;
        b.relay_up();
        b.relay_up();
        tokio::time::advance(Duration::from_secs(3)).await;
        b.relay_down();
        tokio::time::advance(Duration::from_secs(50)).await;
        b.relay_down();
        assert_eq!(b.alive_time(), Duration::from_secs(3), "no relay between turns");
        b.relay_up();
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(b.alive_time(), Duration::from_secs(5), "the live stretch counts");
    }
}
