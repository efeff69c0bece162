//! A sticky, coalescing, closable wake signal: the primitive under every activity source,
//! the writer's response waits, the watch program and the run's interrupt.
//!
//! `raise()` from any thread (a watcher's callback, an exec's completion) sets one pending
//! flag; any number of raises before the next `wait()` coalesce into a single
//! [`Wake::Activity`]; a raise between two waits stays observable; `close()` resolves every
//! waiter as [`Wake::Closed`]; a timer win leaves no listener behind.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::clock;

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
    /// A signal with nothing pending, open.
    pub fn new() -> Self {
        Self::default()
    }

    /// Marks activity and wakes the current waiters.
    pub(crate) fn raise(&self) {
        self.pending.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Closes the signal for good and wakes every waiter.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Waiters currently parked on this signal. After any number of timed-out waits this is
    /// back to zero: a timer win leaves nothing behind.
    #[cfg(test)]
    pub(crate) fn listeners(&self) -> usize {
        self.listeners.load(Ordering::Acquire)
    }

    /// Resolves once the signal is closed: for a stop signal, which is only ever closed (a
    /// raise meanwhile is consumed, as by [`Signal::wait`]).
    pub async fn closed(&self) {
        while self.wait(Duration::from_secs(86_400)).await != Wake::Closed {}
    }

    /// Waits for a raise (consuming it), a close, or the timeout.
    pub async fn wait(&self, timeout: Duration) -> Wake {
        let deadline = clock::now() + timeout;
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
        let t0 = clock::now();
        assert_eq!(s.wait(Duration::from_secs(30)).await, Wake::Activity);
        assert_eq!(clock::now(), t0, "resolved without waiting");
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
        clock::sleep(Duration::from_millis(1)).await;
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
        clock::sleep(Duration::from_millis(5)).await;
        s.raise();
        assert_eq!(w.await.unwrap(), Wake::Activity);
    }
}
