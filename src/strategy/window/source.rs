//! The bounded-window source, as production's remote source behaves (SPEC §8).
//!
//! Windows are armed from `wait()` only: at its entry, by a deferred-arm timer while it is
//! parked inside a backoff gap, or right after a failure that lands while it is parked.
//! At most one window is live (single flight, by generation). An armed window runs the
//! watch program with the daemon's timeout at window + grace; the runner abandons it at
//! window + grace + margin (the outer bound). How a window ends:
//!
//! | end | failure | wake |
//! |---|---|---|
//! | exit 0 (a request found, an event, or the window expired idle) | no: resets the count, unless a miss was charged to it | yes |
//! | non-zero exit, or killed by a signal | yes | yes |
//! | rejected exec, daemon timeout, outer bound | yes | no |
//!
//! Failure `n` puts the next arm at least `1 s · 2^(n−1)` (cap 30 s, jittered 0.8–1.0) away;
//! the 3rd consecutive failure demotes the source for the rest of the turn. A miss the
//! runner notes is a failure charged to the window live at the time. A wake with no waiter
//! parked is sticky: the next wait returns at once, without arming. `close()` resolves a
//! held wait as `Closed` and abandons the live exec (its result is ignored).

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::notice::{WindowFailure, WindowNotice};
use super::{AfterDemotion, FailureWake, OnClose, WindowConfig};
use crate::base::clock;
use crate::base::notice::Say;
use crate::base::rng::Rng;
use crate::base::BoxFut;
use crate::relay::source::{backoff, jitter, ActivitySource, Inbox, Reporter, Wake};
use crate::sandbox::dir::program::{parse_report, Finish};
use crate::sandbox::dir::ExecOutput;

/// One held exec of the watch program. The real one goes through the host; tests script it.
pub trait WindowExec: Send + Sync {
    /// Runs one window of `window`; the daemon kills the program after `timeout`.
    fn run(&self, window: Duration, timeout: Duration) -> BoxFut<'static, io::Result<ExecOutput>>;
}

/// Counters of the source, for tests and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowStats {
    pub execs: u64,
    pub demotions: u64,
    pub healthy: bool,
    pub consecutive_failures: u32,
}

#[derive(Default)]
struct State {
    closed: bool,
    demoted: bool,
    sticky: bool,
    failures: u32,
    next_arm_at: Option<Instant>,
    arm_gen: u64,
    /// The live window's generation; 0: none.
    live_gen: u64,
    /// The generation a miss was charged to.
    missed_gen: u64,
    waiter: Option<oneshot::Sender<Wake>>,
    /// The deferred arm of a parked wait (cleared when the wait settles).
    deferred: Option<JoinHandle<()>>,
    /// A demoted source's next retry (`after_demotion = "retry"`), not tied to a wait.
    retry: Option<JoinHandle<()>>,
    /// Exec tasks not known to be over (the live one, abandoned ones).
    execs: Vec<JoinHandle<()>>,
}

struct Inner {
    cfg: WindowConfig,
    exec: Arc<dyn WindowExec>,
    rng: Mutex<Rng>,
    state: Mutex<State>,
    reporter: Reporter,
    inbox: Option<Inbox>,
    execs: AtomicU64,
    demotions: AtomicU64,
}

/// The window-exec activity source.
pub struct WindowSource(Arc<Inner>);

impl WindowSource {
    /// A source over `exec` (nothing runs until the first wait). `inbox` receives the
    /// requests an inline program carries.
    pub fn new(
        cfg: WindowConfig,
        exec: Arc<dyn WindowExec>,
        seed: u64,
        reporter: Reporter,
        inbox: Option<Inbox>,
    ) -> WindowSource {
        WindowSource(Arc::new(Inner {
            cfg,
            exec,
            rng: Mutex::new(Rng::new(seed)),
            state: Mutex::new(State::default()),
            reporter,
            inbox,
            execs: AtomicU64::new(0),
            demotions: AtomicU64::new(0),
        }))
    }

    /// What the source has done so far.
    pub fn stats(&self) -> WindowStats {
        let s = self.0.lock();
        WindowStats {
            execs: self.0.execs.load(Ordering::Relaxed),
            demotions: self.0.demotions.load(Ordering::Relaxed),
            healthy: !s.demoted && !s.closed,
            consecutive_failures: s.failures,
        }
    }
}

impl Drop for WindowSource {
    /// The end of the case: whatever was abandoned is stopped now (a real program killed).
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.closed = true;
        let timers = [s.deferred.take(), s.retry.take()];
        for h in s.execs.drain(..).chain(timers.into_iter().flatten()) {
            h.abort();
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("window state poisoned")
    }

    fn jitter(&self, d: Duration) -> Duration {
        if self.cfg.jitter {
            jitter(d, &mut self.rng.lock().expect("rng poisoned"))
        } else {
            d
        }
    }

    /// The single gate: arms a window now, or once the backoff gap is over.
    fn try_arm(self: &Arc<Self>, s: &mut State, retrying: bool) {
        if s.closed || s.live_gen != 0 || (s.demoted && !retrying) {
            return;
        }
        let now = clock::now();
        let slot = |s: &mut State| if retrying { s.retry.take() } else { s.deferred.take() };
        if let Some(d) = slot(s) {
            d.abort();
        }
        match s.next_arm_at {
            Some(at) if at > now => {
                let me = self.clone();
                let timer = tokio::spawn(async move {
                    tokio::time::sleep_until(at).await;
                    let mut s = me.lock();
                    if retrying {
                        s.retry = None;
                    } else {
                        s.deferred = None;
                    }
                    me.try_arm(&mut s, retrying);
                });
                if retrying {
                    s.retry = Some(timer);
                } else {
                    s.deferred = Some(timer);
                }
            }
            _ => self.arm_window(s),
        }
    }

    fn arm_window(self: &Arc<Self>, s: &mut State) {
        s.arm_gen += 1;
        let gen = s.arm_gen;
        s.live_gen = gen;
        self.execs.fetch_add(1, Ordering::Relaxed);
        let window = self.jitter(self.cfg.clamped_window());
        let mut run = self.exec.run(window, window + self.cfg.grace);
        let me = self.clone();
        let bound = window + self.cfg.grace + self.cfg.margin;
        s.execs.retain(|h| !h.is_finished());
        // One task per window: the exec raced by its outer bound. An exec abandoned at the
        // bound runs on (as production's does on the daemon), its result ignored.
        s.execs.push(tokio::spawn(async move {
            tokio::select! {
                biased;
                out = &mut run => return me.complete(gen, out),
                () = clock::sleep(bound) => me.outer_bound(gen),
            }
            let _ = run.await;
        }));
    }

    fn complete(self: &Arc<Self>, gen: u64, out: io::Result<ExecOutput>) {
        let mut s = self.lock();
        if gen != s.live_gen {
            return; // a dead generation (abandoned at its outer bound): nothing changes
        }
        s.live_gen = 0;
        let had_miss = s.missed_gen == gen;
        if had_miss {
            s.missed_gen = 0;
        }
        if s.closed {
            return;
        }
        let out = match out {
            Err(e) => return self.fail(&mut s, WindowFailure::Rejected(e.to_string())),
            Ok(o) if o.timed_out => return self.fail(&mut s, WindowFailure::DaemonTimeout),
            Ok(o) => o,
        };
        if out.code != Some(0) {
            self.fail(&mut s, WindowFailure::Exit(out.code));
            if self.cfg.failure_wake == FailureWake::NonZeroExit {
                self.wake(&mut s);
            }
            return;
        }
        // A clean exit: the program only prints when asked (an idle report, inline).
        let idle = if self.cfg.reports() {
            match parse_report(&out.stdout) {
                Some(r) => {
                    if let Some(inbox) = &self.inbox {
                        inbox.put(r.inline.into_iter().map(|q| (q.name, q.body.into_bytes())));
                    }
                    r.finish == Finish::Idle
                }
                None => return self.fail(&mut s, WindowFailure::Unreadable),
            }
        } else {
            false
        };
        if !had_miss {
            let had_failed = std::mem::take(&mut s.failures) > 0;
            if !s.demoted && had_failed {
                self.reporter.say(Say::strategy(WindowNotice::Recovered));
            } else if s.demoted && self.cfg.after_demotion == AfterDemotion::Retry {
                s.demoted = false;
                self.reporter.say(Say::strategy(WindowNotice::Promoted));
            }
        }
        if idle && !self.cfg.idle_wake {
            // An idle window is no wake: the next one starts inside the same wait.
            if s.waiter.is_some() {
                self.try_arm(&mut s, false);
            }
            return;
        }
        self.wake(&mut s);
    }

    fn outer_bound(self: &Arc<Self>, gen: u64) {
        let mut s = self.lock();
        if s.closed || s.live_gen != gen {
            return;
        }
        s.live_gen = 0;
        if s.missed_gen == gen {
            s.missed_gen = 0;
        }
        self.fail(&mut s, WindowFailure::OuterBound);
    }

    /// The single failure account: backoff before the next arm, demotion at the limit.
    fn fail(self: &Arc<Self>, s: &mut State, why: WindowFailure) {
        s.failures += 1;
        let n = s.failures;
        self.reporter.say(Say::strategy(WindowNotice::WindowFailed { n, why: why.clone() }));
        // Production backs off from the first failure; the option starts with the demotion.
        let k = if self.cfg.backoff_before_demotion { n } else { (n + 1).saturating_sub(self.cfg.max_failures) };
        s.next_arm_at =
            (k > 0).then(|| clock::now() + self.jitter(backoff(k, self.cfg.backoff_min, self.cfg.backoff_max)));
        if !s.demoted && n >= self.cfg.max_failures {
            s.demoted = true;
            self.demotions.fetch_add(1, Ordering::Relaxed);
            let for_the_turn = self.cfg.after_demotion == AfterDemotion::Poll;
            self.reporter.say(Say::strategy(WindowNotice::Demoted { n, why: why.clone(), for_the_turn }));
        }
        let wakes = self.cfg.failure_wake == FailureWake::Every;
        if s.demoted {
            if self.cfg.after_demotion == AfterDemotion::Retry {
                self.try_arm(s, true);
            }
            if wakes {
                self.wake(s);
            }
            return;
        }
        if wakes {
            self.wake(s);
        } else if s.waiter.is_some() && !s.closed {
            self.try_arm(s, false);
        }
    }

    fn wake(&self, s: &mut State) {
        if s.closed {
            return;
        }
        match s.waiter.take() {
            Some(w) => {
                let _ = w.send(Wake::Activity);
            }
            None => s.sticky = true,
        }
    }
}

impl ActivitySource for WindowSource {
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake> {
        Box::pin(async move {
            let inner = &self.0;
            let rx = {
                let mut s = inner.lock();
                if s.closed {
                    return Wake::Closed;
                }
                if std::mem::take(&mut s.sticky) {
                    return Wake::Activity;
                }
                let (tx, rx) = oneshot::channel();
                s.waiter = Some(tx);
                inner.try_arm(&mut s, false);
                rx
            };
            tokio::pin!(rx);
            let woke = tokio::select! {
                biased;
                w = &mut rx => Some(w.unwrap_or(Wake::Closed)),
                _ = clock::sleep(timeout) => None,
            };
            let mut s = inner.lock();
            // Settling clears the deferred arm and the waiter.
            if let Some(d) = s.deferred.take() {
                d.abort();
            }
            match woke {
                Some(w) => w,
                // The timer won, unless a wake or close took the waiter meanwhile.
                None => match s.waiter.take() {
                    Some(_) => Wake::Timeout,
                    None => rx.try_recv().unwrap_or(Wake::Timeout),
                },
            }
        })
    }

    fn close(&self) {
        let mut s = self.0.lock();
        if s.closed {
            return;
        }
        s.closed = true;
        for h in [s.deferred.take(), s.retry.take()].into_iter().flatten() {
            h.abort();
        }
        if self.0.cfg.on_close == OnClose::Abort {
            s.execs.drain(..).for_each(|h| h.abort());
        }
        if let Some(w) = s.waiter.take() {
            let _ = w.send(Wake::Closed);
        }
    }

    fn suspends_polling(&self) -> bool {
        true
    }

    fn is_healthy(&self) -> bool {
        let s = self.0.lock();
        !s.demoted && !s.closed
    }

    fn finished(&self) -> bool {
        let s = self.0.lock();
        let timers = [&s.deferred, &s.retry];
        s.closed
            && s.execs.iter().all(JoinHandle::is_finished)
            && timers.iter().all(|t| t.as_ref().is_none_or(JoinHandle::is_finished))
    }

    fn note_miss(&self) -> bool {
        let mut s = self.0.lock();
        if s.closed || s.demoted {
            return false;
        }
        if s.live_gen != 0 {
            s.missed_gen = s.live_gen;
        }
        self.0.fail(&mut s, WindowFailure::Missed);
        true
    }
}
