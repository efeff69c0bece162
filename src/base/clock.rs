//! The clock a case's tasks read: tokio's, on either clock, with one difference on the
//! virtual clock. There the paused runtime moves time only while it parks (its driver
//! advances to the next timer when every task is idle), so every reading between two parks
//! is the same instant. A virtual case's thread holds that instant once read and lets it go
//! at each park ([`paused_runtime`]): a call reads the clock about two hundred times, and
//! tokio's reading (a thread-local runtime context, a lock) cost about a tenth of a virtual
//! fleet's CPU. The readings are the same; only their cost changes.
//!
//! [`sleep`] and [`timeout`] are tokio's, their deadline taken from [`now`] (tokio's own read
//! the clock again).

use std::cell::Cell;
use std::future::IntoFuture;
use std::time::Duration;

use tokio::time::{Instant, Sleep, Timeout};

/// What this thread knows of the clock.
#[derive(Clone, Copy)]
enum Held {
    /// Not a virtual case's runtime thread: every reading is tokio's.
    Off,
    /// A virtual case's thread after a park: the next reading is tokio's, then held.
    Stale,
    /// The instant every reading gives until the runtime parks again.
    At(Instant),
}

thread_local! {
    static HELD: Cell<Held> = const { Cell::new(Held::Off) };
}

/// The clock's instant now (tokio's `Instant::now()`).
pub(crate) fn now() -> Instant {
    HELD.with(|h| match h.get() {
        Held::Off => Instant::now(),
        Held::At(t) => t,
        Held::Stale => {
            let t = Instant::now();
            h.set(Held::At(t));
            t
        }
    })
}

/// The time since `t` (tokio's `t.elapsed()`, read from [`now`]).
pub(crate) fn since(t: Instant) -> Duration {
    now().saturating_duration_since(t)
}

/// `tokio::time::sleep`, its deadline read from [`now`].
pub(crate) fn sleep(d: Duration) -> Sleep {
    tokio::time::sleep_until(now() + d)
}

/// `tokio::time::timeout`, its deadline read from [`now`].
pub(crate) fn timeout<F: IntoFuture>(d: Duration, f: F) -> Timeout<F::IntoFuture> {
    tokio::time::timeout_at(now() + d, f)
}

/// The park hook: a held instant is let go (a thread not holding is left alone).
fn let_go() {
    HELD.with(|h| {
        if !matches!(h.get(), Held::Off) {
            h.set(Held::Stale);
        }
    });
}

/// The paused current-thread runtime of a virtual case, letting the held instant go as it
/// parks (its clock moves only inside a park, and no task runs there). [`Holding`] turns the holding on for
/// the thread that drives it.
pub(crate) fn paused_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).on_thread_park(let_go).build()
}

/// Holds readings on this thread while it lives (inside a [`paused_runtime`]'s `block_on`);
/// dropped, every reading is tokio's again (the thread may drive another runtime next, whose
/// clock starts elsewhere).
pub(crate) struct Holding(());

impl Holding {
    pub(crate) fn start() -> Holding {
        HELD.with(|h| h.set(Held::Stale));
        Holding(())
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        HELD.with(|h| h.set(Held::Off));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside a paused runtime the held instant follows every advance of the clock: a
    /// reading after a sleep is the sleep's deadline, as tokio's own reading is.
    #[test]
    fn a_held_reading_is_tokios_reading() {
        let rt = paused_runtime().unwrap();
        rt.block_on(async {
            let _hold = Holding::start();
            let t0 = now();
            assert_eq!(t0, Instant::now());
            for ms in [1u64, 7, 250, 3_600_000] {
                let before = now();
                sleep(Duration::from_millis(ms)).await;
                assert_eq!(now(), Instant::now());
                assert_eq!(now() - before, Duration::from_millis(ms));
            }
            let spawned = tokio::spawn(async {
                tokio::time::sleep(Duration::from_secs(5)).await;
                now() == Instant::now()
            });
            assert!(spawned.await.unwrap());
            assert!(timeout(Duration::from_secs(1), std::future::pending::<()>()).await.is_err());
            assert_eq!(now(), Instant::now());
        });
        assert!(matches!(HELD.with(Cell::get), Held::Off), "the hold ends with its future");
    }

    /// Off a held thread (and after a hold ends) every reading is tokio's.
    #[test]
    fn a_reading_off_a_held_thread_is_tokios() {
        {
            let _hold = Holding::start();
        }
        assert!(matches!(HELD.with(Cell::get), Held::Off));
        let a = now();
        std::thread::sleep(Duration::from_millis(2));
        assert!(now() > a, "the real clock moves between readings");
    }
}
