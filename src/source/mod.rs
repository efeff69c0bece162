//! Activity sources: what wakes a waiting side of the relay (SPEC §3).
//!
//! Every discovery strategy is an [`ActivitySource`]: `wait(timeout)` resolves as
//! [`Wake::Activity`], [`Wake::Timeout`] or [`Wake::Closed`], and `close()` ends it. The
//! contract's invariants are carried by one primitive, [`Signal`]:
//!
//! 1. single flight: a source holds at most one watch (locally) or exec (remotely);
//! 2. events coalesce into one sticky pending wake;
//! 3. a timer win leaves no listener or timer behind (checked by [`Signal::listeners`]);
//! 4. an event between a scan and the next `wait()` stays observable (the sticky flag);
//! 5. `close()` resolves every waiter as `Closed` and stops re-arming;
//! 6. errors are reported once, degrade to a timeout, and never crash or hang the caller.
//!
//! Per-wait cancellation is `close()`: each waiting side owns its source.

mod follow;
mod timer;
mod watch;
mod window;

pub use follow::FollowConfig;
pub use timer::TimerSource;
pub use watch::{DirWatch, Rearmable, Seen, WatchFilter, WatchSource};
pub use window::{
    backoff, clamp_window, jitter, ProgramExec, SupervisedSource, WatchExec, WindowConfig, WindowStats, WINDOW_MAX,
    WINDOW_MIN,
};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::events::EventSink;
use crate::BoxFut;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Something happened: scan now.
    Activity,
    /// The safety timer won: scan anyway.
    Timeout,
    /// The source was closed: stop.
    Closed,
}

/// How a source is doing, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceHealth {
    /// Set once the source stopped delivering events and fell back to its timer alone.
    pub degraded: Option<String>,
    /// Errors seen (each distinct one reported once).
    pub errors: u64,
}

/// One waiting side's wake-up contract.
pub trait ActivitySource: Send + Sync {
    /// Waits for activity, at most `timeout`.
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake>;
    /// Resolves every waiter as `Closed`; later waits return `Closed` at once.
    fn close(&self);
    /// How the source is doing.
    fn health(&self) -> SourceHealth;

    /// Requests the source already carried to the runner, as (name, bytes): the runner
    /// skips its list and read for them. Most sources carry none.
    fn take_inline(&self) -> Vec<(String, Vec<u8>)> {
        Vec::new()
    }

    /// While the source is healthy it may suspend the runner's polling: the runner then
    /// waits this long (a slow safety list) instead of its poll schedule.
    fn suspended_polling(&self) -> Option<Duration> {
        None
    }

    /// A timer-driven scan found work the source never signalled; `suspended` says whether
    /// that wait was the slow safety wait of a suspended poll (see
    /// [`ActivitySource::suspended_polling`]). Returns whether the source counts it as its
    /// own failure (a pure timer does not).
    fn missed(&self, _suspended: bool) -> bool {
        false
    }

    /// Where the source reports its transitions (see [`Reporter`]).
    fn report_to(&self, _sink: EventSink, _sandbox: u32) {}
}

/// A sticky, coalescing, closable wake signal.
///
/// `raise()` from any thread (a watcher's callback, an exec's completion) sets one pending
/// flag; any number of raises before the next `wait()` coalesce into a single `Activity`.
#[derive(Debug, Default)]
pub struct Signal {
    pending: AtomicBool,
    closed: AtomicBool,
    notify: Notify,
    listeners: AtomicUsize,
}

struct ListenerGuard<'a>(&'a AtomicUsize);
impl Drop for ListenerGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Signal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks activity and wakes the current waiters.
    pub fn raise(&self) {
        self.pending.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Waiters currently parked on this signal. After any number of timed-out waits this is
    /// back to zero: a timer win leaves nothing behind.
    pub fn listeners(&self) -> usize {
        self.listeners.load(Ordering::Acquire)
    }

    /// Waits for a raise (consuming it), a close, or the timeout.
    pub async fn wait(&self, timeout: Duration) -> Wake {
        let deadline = Instant::now() + timeout;
        self.listeners.fetch_add(1, Ordering::AcqRel);
        let _guard = ListenerGuard(&self.listeners);
        loop {
            // Register before checking, so a raise or close between the check and the
            // await is not lost (notify_waiters only wakes registered futures).
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.closed.load(Ordering::Acquire) {
                return Wake::Closed;
            }
            if self.pending.swap(false, Ordering::AcqRel) {
                return Wake::Activity;
            }
            tokio::select! {
                biased;
                _ = &mut notified => continue,
                _ = tokio::time::sleep_until(deadline) => {
                    // A raise that raced the timer still counts as activity.
                    if self.pending.swap(false, Ordering::AcqRel) {
                        return Wake::Activity;
                    }
                    return if self.closed.load(Ordering::Acquire) { Wake::Closed } else { Wake::Timeout };
                }
            }
        }
    }
}

/// Where a source says what happened to it (failures, demotion, promotion, re-arms), with
/// a timestamp, so a fault report can tell how a fault was detected and recovered from.
/// Set once after building; a source without one stays quiet.
#[derive(Debug, Default)]
pub struct Reporter(OnceLock<(EventSink, u32)>);

impl Reporter {
    pub fn set(&self, sink: EventSink, sandbox: u32) {
        let _ = self.0.set((sink, sandbox));
    }

    pub fn say(&self, what: impl FnOnce() -> String) {
        if let Some((sink, sandbox)) = self.0.get() {
            sink.notice(*sandbox, what());
        }
    }
}

/// Remembers errors and reports each distinct message once.
#[derive(Debug, Default)]
pub struct ErrorOnce {
    inner: Mutex<(SourceHealth, Vec<String>)>,
}

impl ErrorOnce {
    /// Records an error; returns true the first time this message is seen.
    pub fn record(&self, msg: String) -> bool {
        let mut g = self.inner.lock().expect("error log poisoned");
        g.0.errors += 1;
        if g.1.contains(&msg) {
            return false;
        }
        g.1.push(msg);
        true
    }

    pub fn degrade(&self, why: String) {
        let mut g = self.inner.lock().expect("error log poisoned");
        if g.0.degraded.is_none() {
            g.0.degraded = Some(why);
        }
    }

    pub fn health(&self) -> SourceHealth {
        self.inner.lock().expect("error log poisoned").0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn raises_coalesce_into_one_sticky_wake() {
        let s = Signal::new();
        s.raise();
        s.raise();
        s.raise();
        assert_eq!(s.wait(Duration::from_secs(1)).await, Wake::Activity);
        assert_eq!(s.wait(Duration::from_secs(1)).await, Wake::Timeout, "three raises are one wake");
    }

    #[tokio::test(start_paused = true)]
    async fn event_between_scan_and_wait_stays_observable() {
        let s = Signal::new();
        // The scan happened; the event lands before the next wait() is called.
        s.raise();
        let t0 = Instant::now();
        assert_eq!(s.wait(Duration::from_secs(30)).await, Wake::Activity);
        assert_eq!(Instant::now(), t0, "resolved without waiting");
    }

    #[tokio::test(start_paused = true)]
    async fn ten_thousand_timer_wins_leave_nothing_behind() {
        let s = Signal::new();
        for _ in 0..10_000 {
            assert_eq!(s.wait(Duration::from_millis(1)).await, Wake::Timeout);
            assert_eq!(s.listeners(), 0);
        }
        // And the signal still works afterwards.
        s.raise();
        assert_eq!(s.wait(Duration::from_secs(1)).await, Wake::Activity);
    }

    #[tokio::test(start_paused = true)]
    async fn close_resolves_every_waiter() {
        let s = Arc::new(Signal::new());
        let mut waiters = Vec::new();
        for _ in 0..8 {
            let s = s.clone();
            waiters.push(tokio::spawn(async move { s.wait(Duration::from_secs(3600)).await }));
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        s.close();
        for w in waiters {
            assert_eq!(w.await.unwrap(), Wake::Closed);
        }
        assert_eq!(s.wait(Duration::from_secs(1)).await, Wake::Closed, "a wait after close returns at once");
        assert_eq!(s.listeners(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn raise_wakes_a_parked_waiter() {
        let s = Arc::new(Signal::new());
        let w = {
            let s = s.clone();
            tokio::spawn(async move { s.wait(Duration::from_secs(3600)).await })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        s.raise();
        assert_eq!(w.await.unwrap(), Wake::Activity);
    }

    #[test]
    fn errors_are_reported_once() {
        let e = ErrorOnce::default();
        assert!(e.record("boom".into()));
        assert!(!e.record("boom".into()));
        assert!(e.record("other".into()));
        e.degrade("watch died".into());
        e.degrade("second reason ignored".into());
        let h = e.health();
        assert_eq!(h.errors, 3);
        assert_eq!(h.degraded.as_deref(), Some("watch died"));
    }
}
