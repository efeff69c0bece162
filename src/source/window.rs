//! The bounded-window exec strategy (SPEC §3), for remote hosts.
//!
//! One background task per relay dir holds at most one exec at a time (single flight): it
//! runs the in-sandbox watch program for a window (25 s by default, clamped to [5, 120] s,
//! jittered 0.8–1.0x per window) under an outer bound of window + grace. The exec's
//! completion is the wake. While the watch is healthy the runner's list polling is
//! suspended and only a slow safety list runs (every 30 s). After 3 consecutive failures —
//! an exec error, a non-zero exit, the outer bound expiring, unreadable output, or a safety
//! list finding a request the watch missed — the dir is demoted to the runner's poll
//! schedule, and the watch is retried with backoff (1 s doubling to 30 s, jittered) until
//! an exec succeeds again.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;

use super::{ActivitySource, ErrorOnce, Reporter, Signal, SourceHealth, Wake};
use crate::events::EventSink;
use crate::host::{Host, Purpose};
use crate::rng::Rng;
use crate::sandbox_watch::{parse_output, Finish, WatchReport};
use crate::BoxFut;

pub const WINDOW_MIN: Duration = Duration::from_secs(5);
pub const WINDOW_MAX: Duration = Duration::from_secs(120);

/// Every constant of the strategy, settable per case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowConfig {
    pub window: Duration,
    pub grace: Duration,
    /// The watch program's own re-list period inside the sandbox.
    pub relist: Duration,
    /// The runner's safety list period while the watch is healthy.
    pub safety: Duration,
    pub max_failures: u32,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// The watch program prints the requests it found (the `-inline` variant).
    pub inline: bool,
    /// Scale each window and backoff by a factor drawn from [0.8, 1.0] (off: all exact).
    pub jitter: bool,
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            window: Duration::from_secs(25),
            grace: Duration::from_secs(5),
            relist: Duration::from_secs(2),
            safety: Duration::from_secs(30),
            max_failures: 3,
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            inline: false,
            jitter: true,
        }
    }
}

/// The window actually used: clamped to [5 s, 120 s].
pub fn clamp_window(w: Duration) -> Duration {
    w.clamp(WINDOW_MIN, WINDOW_MAX)
}

/// A duration scaled by a factor drawn uniformly from [0.8, 1.0].
pub fn jitter(d: Duration, rng: &mut Rng) -> Duration {
    d.mul_f64(0.8 + 0.2 * rng.unit())
}

/// The `n`-th retry's backoff before jitter: `min` doubling up to `max`.
pub fn backoff(n: u32, min: Duration, max: Duration) -> Duration {
    min.saturating_mul(1u32 << n.min(20)).min(max)
}

/// One held exec of the watch program. The real one goes through the host; tests script it.
pub trait WatchExec: Send + Sync {
    fn run(&self, window: Duration) -> BoxFut<'_, Result<WatchReport, String>>;
}

/// Runs `relay-bench sandbox-watch DIR WINDOW_MS RELIST_MS [--inline]` through the host.
pub struct ProgramExec {
    pub host: Arc<dyn Host>,
    pub program: PathBuf,
    pub dir: PathBuf,
    pub relist: Duration,
    pub inline: bool,
}

impl ProgramExec {
    /// The argv: the directory is one element of it, never part of a shell string.
    pub fn argv(&self, window: Duration) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![self.program.clone().into(), "sandbox-watch".into()];
        if self.inline {
            argv.push("--inline".into());
        }
        // `--` ends the options: a directory starting with `-` is still a directory.
        argv.extend(["--".into(), self.dir.clone().into()]);
        argv.extend([window.as_millis().to_string().into(), self.relist.as_millis().to_string().into()]);
        argv
    }
}

impl WatchExec for ProgramExec {
    fn run(&self, window: Duration) -> BoxFut<'_, Result<WatchReport, String>> {
        Box::pin(async move {
            let argv = self.argv(window);
            let out = self.host.exec(&argv, Purpose::Discovery).await.map_err(|e| format!("watch exec failed: {e}"))?;
            if out.code != Some(0) {
                let err = String::from_utf8_lossy(&out.stderr);
                return Err(format!("watch program exited with {:?}: {}", out.code, err.trim()));
            }
            parse_output(&out.stdout).ok_or_else(|| "watch program printed unreadable output".to_owned())
        })
    }
}

/// Health bookkeeping shared by a watch loop and its source: consecutive failures,
/// demotion at the limit, promotion on success. The follow strategy uses it too.
#[derive(Default)]
pub(super) struct Shared {
    pub(super) healthy: AtomicBool,
    pub(super) failures: AtomicU32,
    pub(super) closed: AtomicBool,
    pub(super) inline: Mutex<Vec<(String, Vec<u8>)>>,
    pub(super) errors: ErrorOnce,
    pub(super) execs: AtomicU64,
    pub(super) demotions: AtomicU64,
    pub(super) max_failures: u32,
    pub(super) reporter: Reporter,
}

impl Shared {
    /// Counts one failure; demotes at the limit. Returns true if this failure demoted.
    pub(super) fn fail(&self, why: String) -> bool {
        self.errors.record(why.clone());
        let n = self.failures.fetch_add(1, Ordering::AcqRel) + 1;
        self.reporter.say(|| format!("watch failure {n}: {why}"));
        if n >= self.max_failures && self.healthy.swap(false, Ordering::AcqRel) {
            self.demotions.fetch_add(1, Ordering::Relaxed);
            self.errors.degrade(format!("demoted to polling after {n} consecutive failures (last: {why})"));
            self.reporter.say(|| format!("demoted to polling after {n} consecutive failures"));
            return true;
        }
        false
    }

    pub(super) fn succeed(&self) {
        let had_failed = self.failures.swap(0, Ordering::AcqRel) > 0;
        if !self.healthy.swap(true, Ordering::AcqRel) {
            self.reporter.say(|| "promoted: the watch is healthy again, polling suspended".into());
        } else if had_failed {
            self.reporter.say(|| "the watch recovered before demotion".into());
        }
    }
}

/// A watch kept alive by a background loop (window execs or a followed stream), with its
/// health bookkeeping: the activity source of the window-exec and follow strategies.
pub struct SupervisedSource {
    pub(super) signal: Arc<Signal>,
    pub(super) shared: Arc<Shared>,
    pub(super) task: JoinHandle<()>,
    pub(super) safety: Duration,
}

/// Counters of the window loop, for tests and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowStats {
    pub execs: u64,
    pub demotions: u64,
    pub healthy: bool,
    pub consecutive_failures: u32,
}

impl SupervisedSource {
    /// Starts the window-exec loop (inside a tokio runtime).
    pub fn window(cfg: WindowConfig, exec: Arc<dyn WatchExec>, seed: u64) -> SupervisedSource {
        let signal = Arc::new(Signal::new());
        let shared = Arc::new(Shared { max_failures: cfg.max_failures.max(1), ..Shared::default() });
        shared.healthy.store(true, Ordering::Release);
        let task = tokio::spawn(window_loop(cfg.clone(), exec, signal.clone(), shared.clone(), Rng::new(seed)));
        SupervisedSource { signal, shared, task, safety: cfg.safety }
    }

    pub fn stats(&self) -> WindowStats {
        WindowStats {
            execs: self.shared.execs.load(Ordering::Relaxed),
            demotions: self.shared.demotions.load(Ordering::Relaxed),
            healthy: self.shared.healthy.load(Ordering::Acquire),
            consecutive_failures: self.shared.failures.load(Ordering::Acquire),
        }
    }
}

async fn window_loop(
    cfg: WindowConfig,
    exec: Arc<dyn WatchExec>,
    signal: Arc<Signal>,
    shared: Arc<Shared>,
    mut rng: Rng,
) {
    let mut retry = 0u32;
    while !shared.closed.load(Ordering::Acquire) {
        let window = if cfg.jitter { jitter(clamp_window(cfg.window), &mut rng) } else { clamp_window(cfg.window) };
        shared.execs.fetch_add(1, Ordering::Relaxed);
        let outcome = match tokio::time::timeout(window + cfg.grace, exec.run(window)).await {
            Ok(r) => r,
            // Dropping the exec future abandons it (the child is killed).
            Err(_) => {
                let bound = crate::units::human(window + cfg.grace);
                Err(format!("watch exec did not settle within window + grace ({bound}); abandoned"))
            }
        };
        match outcome {
            Ok(report) => {
                shared.succeed();
                retry = 0;
                if report.finish != Finish::Idle {
                    let carried = report.inline.into_iter().map(|r| (r.name, r.body.into_bytes()));
                    shared.inline.lock().expect("inline poisoned").extend(carried);
                    signal.raise();
                }
            }
            Err(why) => {
                shared.fail(why);
                // Wake the runner so a failure never leaves it waiting on a suspended poll.
                signal.raise();
            }
        }
        if !shared.healthy.load(Ordering::Acquire) {
            let pause = backoff(retry, cfg.backoff_min, cfg.backoff_max);
            let pause = if cfg.jitter { jitter(pause, &mut rng) } else { pause };
            retry = retry.saturating_add(1);
            tokio::time::sleep(pause).await;
        }
    }
}

impl ActivitySource for SupervisedSource {
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake> {
        Box::pin(self.signal.wait(timeout))
    }

    fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.task.abort();
        self.signal.close();
    }

    fn health(&self) -> SourceHealth {
        self.shared.errors.health()
    }

    fn take_inline(&self) -> Vec<(String, Vec<u8>)> {
        std::mem::take(&mut *self.shared.inline.lock().expect("inline poisoned"))
    }

    fn suspended_polling(&self) -> Option<Duration> {
        self.shared.healthy.load(Ordering::Acquire).then_some(self.safety)
    }

    fn missed(&self, suspended: bool) -> bool {
        // Only a healthy watch can miss, and only on its safety wait: a demoted dir polls by
        // design, and a poll wait begun before a promotion may beat the new watch's wake.
        if suspended && self.shared.healthy.load(Ordering::Acquire) {
            self.shared.fail("the safety list found a request the watch did not signal".into());
            return true;
        }
        false
    }

    fn report_to(&self, sink: EventSink, sandbox: u32) {
        self.shared.reporter.set(sink, sandbox);
    }
}

impl Drop for SupervisedSource {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use tokio::time::Instant;

    /// A scripted exec: each run takes the next (delay, result); when the script is empty it
    /// never settles. It records when each run started and how many ran at once.
    #[derive(Default)]
    struct Script {
        steps: Mutex<VecDeque<(Duration, Result<Finish, String>)>>,
        starts: Mutex<Vec<Instant>>,
        windows: Mutex<Vec<Duration>>,
        running: AtomicU32,
        max_running: AtomicU32,
    }

    impl Script {
        fn new(steps: Vec<(u64, Result<Finish, &str>)>) -> Arc<Script> {
            let s = Script::default();
            *s.steps.lock().unwrap() =
                steps.into_iter().map(|(ms, r)| (Duration::from_millis(ms), r.map_err(str::to_owned))).collect();
            Arc::new(s)
        }
    }

    impl WatchExec for Script {
        fn run(&self, window: Duration) -> BoxFut<'_, Result<WatchReport, String>> {
            Box::pin(async move {
                self.starts.lock().unwrap().push(Instant::now());
                self.windows.lock().unwrap().push(window);
                let n = self.running.fetch_add(1, Ordering::SeqCst) + 1;
                self.max_running.fetch_max(n, Ordering::SeqCst);
                let step = self.steps.lock().unwrap().pop_front();
                let r = match step {
                    Some((d, r)) => {
                        tokio::time::sleep(d).await;
                        r.map(|finish| WatchReport { finish, inline: Vec::new() })
                    }
                    None => std::future::pending().await,
                };
                self.running.fetch_sub(1, Ordering::SeqCst);
                r
            })
        }
    }

    fn cfg() -> WindowConfig {
        WindowConfig::default()
    }

    #[test]
    fn window_clamping_and_jitter_bounds() {
        let s = Duration::from_secs;
        assert_eq!(clamp_window(s(1)), s(5));
        assert_eq!(clamp_window(s(25)), s(25));
        assert_eq!(clamp_window(s(600)), s(120));
        let mut rng = Rng::new(9);
        let (mut lo, mut hi) = (f64::MAX, 0.0f64);
        for _ in 0..10_000 {
            let j = jitter(s(25), &mut rng).as_secs_f64();
            assert!((20.0..=25.0).contains(&j), "{j}");
            lo = lo.min(j);
            hi = hi.max(j);
        }
        assert!(lo < 20.1 && hi > 24.9, "the whole [0.8, 1.0] range is used: {lo}..{hi}");
    }

    #[test]
    fn backoff_sequence() {
        let s = Duration::from_secs;
        let seq: Vec<u64> = (0..8).map(|n| backoff(n, s(1), s(30)).as_secs()).collect();
        assert_eq!(seq, vec![1, 2, 4, 8, 16, 30, 30, 30]);
    }

    #[tokio::test(start_paused = true)]
    async fn single_flight_under_concurrent_waiters() {
        let script = Script::new((0..20).map(|_| (100, Ok(Finish::Event))).collect());
        let src = Arc::new(SupervisedSource::window(cfg(), script.clone(), 1));
        let mut waiters = Vec::new();
        for _ in 0..16 {
            let s = src.clone();
            waiters.push(tokio::spawn(async move {
                loop {
                    if s.wait(Duration::from_secs(60)).await == Wake::Closed {
                        break;
                    }
                }
            }));
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(script.max_running.load(Ordering::SeqCst), 1, "never two execs at once");
        src.close();
        for w in waiters {
            let _ = w.await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn windows_are_jittered_and_polling_suspended_while_healthy() {
        let script = Script::new((0..50).map(|_| (1, Ok(Finish::Idle))).collect());
        let src = SupervisedSource::window(cfg(), script.clone(), 7);
        assert_eq!(src.suspended_polling(), Some(Duration::from_secs(30)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        for w in script.windows.lock().unwrap().iter() {
            assert!(*w >= Duration::from_secs(20) && *w <= Duration::from_secs(25), "{w:?}");
        }
        src.close();
    }

    #[tokio::test(start_paused = true)]
    async fn demotion_after_exactly_three_failures_then_backoff() {
        let script = Script::new(vec![
            (0, Err("boom 1")),
            (0, Err("boom 2")),
            (0, Err("boom 3")),
            (0, Err("still down")),
            (0, Err("still down")),
            (0, Err("still down")),
            (0, Ok(Finish::Idle)),
        ]);
        let t0 = Instant::now();
        let src = SupervisedSource::window(cfg(), script.clone(), 3);
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(1)).await;
        let st = src.stats();
        assert!(!st.healthy);
        assert_eq!(st.demotions, 1);
        assert_eq!(src.suspended_polling(), None, "demoted: the runner polls");
        assert!(src.health().degraded.unwrap().contains("3 consecutive failures"));
        // Let the retries run: backoff 1, 2, 4, 8 s (each jittered to 0.8-1.0x).
        tokio::time::sleep(Duration::from_secs(30)).await;
        let starts: Vec<f64> = script.starts.lock().unwrap().iter().map(|t| (*t - t0).as_secs_f64()).collect();
        assert_eq!(starts.len(), 8, "{starts:?}");
        assert!(starts[..3].iter().all(|s| *s < 0.01), "three failures in a row, no pause: {starts:?}");
        let gaps: Vec<f64> = starts.windows(2).skip(2).map(|w| w[1] - w[0]).collect();
        for (gap, nominal) in gaps.iter().zip([1.0, 2.0, 4.0, 8.0]) {
            assert!(
                *gap >= 0.8 * nominal - 1e-6 && *gap <= nominal + 1e-6,
                "gap {gap} for backoff {nominal}: {gaps:?}"
            );
        }
        // The seventh exec succeeded: promoted again.
        let st = src.stats();
        assert!(st.healthy);
        assert_eq!(st.consecutive_failures, 0);
        assert_eq!(src.suspended_polling(), Some(Duration::from_secs(30)));
        src.close();
    }

    #[tokio::test(start_paused = true)]
    async fn a_missed_request_counts_as_a_failure() {
        let script = Script::new(vec![(3_600_000, Ok(Finish::Idle))]);
        let src = SupervisedSource::window(cfg(), script, 1);
        assert!(src.missed(true));
        assert!(src.missed(true));
        assert!(src.stats().healthy);
        assert!(src.missed(true));
        assert!(!src.stats().healthy, "the third miss demotes");
        assert!(!src.missed(true), "a demoted dir does not count misses");
        src.shared.succeed();
        assert!(!src.missed(false), "a poll wait begun while demoted is no miss of the watch");
        src.close();
    }

    #[tokio::test(start_paused = true)]
    async fn a_never_settling_exec_is_bounded() {
        // An empty script never settles: every exec must be abandoned at window + grace.
        let script = Script::new(vec![]);
        let t0 = Instant::now();
        let src = SupervisedSource::window(cfg(), script.clone(), 5);
        assert_eq!(src.wait(Duration::from_secs(3600)).await, Wake::Activity, "a failure wakes the runner");
        let waited = t0.elapsed();
        assert!(waited >= Duration::from_secs(25) && waited <= Duration::from_secs(30), "{waited:?}");
        assert_eq!(src.stats().consecutive_failures, 1);
        assert!(src.health().errors >= 1);
        src.close();
        assert_eq!(src.wait(Duration::from_secs(1)).await, Wake::Closed);
    }
}
