//! The `watch` writer's waiter: a directory watch wakes the waiting calls, a timed check
//! races it (production's response watch).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::base::notice::Say;
use crate::relay::source::Reporter;
use crate::relay::writer::{Armed, ResponseWaiter, Slots};
use crate::sandbox::dir::{EventFilter, RelayDir, WatchHandle};
use crate::strategy::WatchNotice;

/// Watch-assisted writer: `interval` stays as the safety timer a directory watch cuts short.
/// Production arms an `fs.watch` per waiting call and re-checks its answer on any event in
/// the dir (`wake_on = Any`, the default here); `Responses` wakes only the call whose answer
/// name appeared (a named option). One watch per relay dir stands in for the per-call
/// watches: the same kernel events reach the same waiting calls, without a watcher thread
/// per call. Where the two differ — a watch on a directory replaced under it — production's
/// next call arms a fresh watch; here a timed check that finds an unannounced answer re-arms
/// the one watch, so later calls are watched again as they would be in production.
pub(crate) struct WatchWaiter {
    slots: Slots,
    wake_on: EventFilter,
    dir: Arc<dyn RelayDir>,
    live: Mutex<Option<Box<dyn WatchHandle>>>,
    interval: Duration,
    reporter: Reporter,
}

impl WatchWaiter {
    pub(crate) fn new(
        dir: Arc<dyn RelayDir>,
        safety_interval: Duration,
        wake_on: EventFilter,
        reporter: Reporter,
    ) -> WatchWaiter {
        let slots = Slots::default();
        let w = WatchWaiter { slots, wake_on, dir, live: Mutex::new(None), interval: safety_interval, reporter };
        w.rearm();
        w
    }

    fn rearm(&self) -> bool {
        let (s, wake_on) = (self.slots.clone(), self.wake_on);
        let armed = self.dir.watch(Box::new(move |seen| s.raise(seen, wake_on)));
        let mut live = self.live.lock().expect("watch lock poisoned");
        if let Some(old) = live.take() {
            old.disarm();
        }
        match armed {
            Ok(w) => {
                *live = Some(w);
                true
            }
            Err(e) => {
                self.reporter.say(Say::strategy(WatchNotice::WatchUnavailable(format!("response watch: {e}"))));
                false
            }
        }
    }
}

impl ResponseWaiter for WatchWaiter {
    fn arm(&self, res_name: &str) -> Armed {
        self.slots.arm(res_name)
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    fn close(&self) {
        if let Some(w) = self.live.lock().expect("watch lock poisoned").take() {
            w.disarm();
        }
        self.slots.close();
    }
    fn park(&self, res_name: &str) {
        self.slots.park(res_name);
    }
    fn missed(&self) -> Option<bool> {
        Some(self.rearm())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::signal::Wake;
    use crate::events::EventSink;
    use crate::sandbox::dir::{publish_now, SimDir};

    /// Production's writer re-checks its answer on any change in the dir; `Responses` wakes
    /// only the call whose answer appeared.
    #[tokio::test(start_paused = true)]
    async fn the_writer_watch_wakes_on_any_change_unless_told_responses() {
        for (wake_on, woken) in [(EventFilter::Any, true), (EventFilter::Responses, false)] {
            let dir = SimDir::new("/sb/relay");
            let (sink, _rx) = EventSink::channel();
            let waiter =
                WatchWaiter::new(Arc::new(dir.clone()), Duration::from_millis(300), wake_on, Reporter::new(sink, 0));
            let armed = waiter.arm("c1.res.json");
            publish_now(&dir, "other.req.json", b"{}").unwrap();
            let wake = armed.wait(Duration::from_millis(300)).await;
            assert_eq!(wake == Wake::Activity, woken, "{wake_on:?}: {wake:?}");
            publish_now(&dir, "c1.res.json", b"{}").unwrap();
            assert_eq!(armed.wait(Duration::from_millis(300)).await, Wake::Activity, "{wake_on:?}: its answer");
        }
    }
}
