//! `relay-watch.test.ts` ("daytonaRelayActivitySource invariants"), ported: the remote
//! window source as production built it.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use relay_bench::{
    ActivitySource, EventInbox, EventSink, ExecOutput, Reporter, Say, Wake, WindowConfig, WindowFailure, WindowNotice,
    WindowSource,
};
use tokio::task::JoinHandle;

use super::fakes::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

struct Rig {
    src: Arc<WindowSource>,
    sandbox: Arc<FakeSandbox>,
    rx: EventInbox,
    _sink: EventSink,
}

/// Production's source with `window` and a backoff of `base` doubling to `cap`, exact.
fn rig(window: Duration, base: Duration, cap: Duration) -> Rig {
    let cfg = WindowConfig { window, backoff_min: base, backoff_max: cap, jitter: false, ..WindowConfig::default() };
    rig_with(cfg)
}

fn rig_with(cfg: WindowConfig) -> Rig {
    let sandbox = FakeSandbox::new();
    let (sink, rx) = EventSink::channel();
    let src = Arc::new(WindowSource::new(cfg, sandbox.clone(), 7, Reporter::new(sink.clone(), 0), None));
    Rig { src, sandbox, rx, _sink: sink }
}

impl Rig {
    /// Starts a wait of `ms` in the background and lets it arm.
    async fn wait(&self, ms: u64) -> JoinHandle<Wake> {
        let src = self.src.clone();
        let h = tokio::spawn(async move { src.wait(MS(ms)).await });
        tick().await;
        h
    }

    fn said(&mut self) -> Vec<Say> {
        notices(&mut self.rx)
    }
}

fn failures(said: &[Say], pred: impl Fn(&WindowFailure) -> bool) -> usize {
    said.iter()
        .filter(
            |s| matches!(s.as_strategy::<WindowNotice>(), Some(WindowNotice::WindowFailed { why, .. }) if pred(why)),
        )
        .count()
}

fn demotions(said: &[Say]) -> usize {
    said.iter().filter(|s| matches!(s.as_strategy::<WindowNotice>(), Some(WindowNotice::Demoted { .. }))).count()
}

fn rejected() -> io::Result<ExecOutput> {
    Err(io::Error::other("daemon said no"))
}

const MIN: Duration = Duration::from_secs(60);

#[tokio::test(start_paused = true)]
async fn coalesces_a_window_completing_with_no_waiter_resolves_the_next_wait_at_once() {
    let r = rig(MIN, MS(1000), MS(30_000));
    assert_eq!(r.wait(20).await.await.unwrap(), Wake::Timeout);
    assert_eq!(r.sandbox.calls(), 1);
    r.sandbox.exit(0, Some(0));
    tick().await;
    assert_eq!(r.wait(20).await.await.unwrap(), Wake::Activity);
    assert_eq!(r.sandbox.calls(), 1, "consuming the sticky wake did not arm");
    assert_eq!(r.wait(20).await.await.unwrap(), Wake::Timeout);
    assert_eq!(r.sandbox.calls(), 2, "a fresh window");
    r.src.close();
    r.sandbox.exit(1, Some(0));
}

#[tokio::test(start_paused = true)]
async fn single_flight_at_most_one_concurrent_exec_across_many_waits_and_completions() {
    let r = rig(MIN, MS(1000), MS(30_000));
    for i in 0..25 {
        let w = r.wait(5000).await;
        assert_eq!(r.sandbox.calls(), i + 1, "armed at the wait's entry");
        r.sandbox.exit(i, Some(0));
        assert_eq!(w.await.unwrap(), Wake::Activity);
        tick().await;
    }
    assert_eq!(r.wait(10).await.await.unwrap(), Wake::Timeout);
    assert_eq!(r.sandbox.calls(), 26);
    assert_eq!(r.wait(10).await.await.unwrap(), Wake::Timeout);
    assert_eq!(r.sandbox.calls(), 26, "the window is in flight: no second one");
    assert_eq!(r.sandbox.max_running.load(std::sync::atomic::Ordering::SeqCst), 1);
    r.src.close();
}

#[tokio::test(start_paused = true)]
async fn close_during_a_held_window_resolves_closed_and_the_abandoned_exec_stays_harmless() {
    let r = rig(MIN, MS(1000), MS(30_000));
    let w = r.wait(60_000).await;
    assert_eq!(r.sandbox.calls(), 1);
    r.src.close();
    assert_eq!(w.await.unwrap(), Wake::Closed);
    assert!(!r.src.is_healthy());
    assert_eq!(r.wait(10).await.await.unwrap(), Wake::Closed);
    r.sandbox.settle(0, rejected());
    tick().await;
    assert_eq!(r.wait(10).await.await.unwrap(), Wake::Closed);
}

#[tokio::test(start_paused = true)]
async fn repeated_rejection_demotes_after_exactly_3_with_one_demotion_notice() {
    let mut r = rig(MIN, MS(1), MS(2));
    for failure in 1..=3 {
        let w = r.wait(30).await;
        assert_eq!(r.sandbox.calls(), failure);
        r.sandbox.settle(failure - 1, rejected());
        assert_eq!(w.await.unwrap(), Wake::Timeout, "a rejected exec is no wake, never an error");
        assert_eq!(r.src.is_healthy(), failure < 3);
        tokio::time::sleep(MS(10)).await;
    }
    assert!(!r.src.is_healthy());
    assert_eq!(demotions(&r.said()), 1);
    assert_eq!(r.wait(10).await.await.unwrap(), Wake::Timeout);
    assert_eq!(r.sandbox.calls(), 3, "no window after demotion");
}

#[tokio::test(start_paused = true)]
async fn backoff_gates_the_rearm_a_wait_inside_the_backoff_window_does_not_arm() {
    let r = rig(MIN, MS(200), MS(400));
    let w = r.wait(20).await;
    r.sandbox.settle(0, rejected());
    assert_eq!(w.await.unwrap(), Wake::Timeout);
    assert_eq!(r.wait(20).await.await.unwrap(), Wake::Timeout);
    assert_eq!(r.sandbox.calls(), 1, "inside the 200 ms backoff");
    tokio::time::sleep(MS(300)).await;
    let w = r.wait(1000).await;
    assert_eq!(r.sandbox.calls(), 2);
    r.sandbox.exit(1, Some(0));
    assert_eq!(w.await.unwrap(), Wake::Activity);
}

async fn three_exits(r: &mut Rig, code: Option<i32>) {
    for i in 0..3 {
        let w = r.wait(5000).await;
        r.sandbox.exit(i, code);
        assert_eq!(w.await.unwrap(), Wake::Activity, "a failing exit still wakes the runner");
        tokio::time::sleep(MS(10)).await;
    }
    assert!(!r.src.is_healthy());
}

#[tokio::test(start_paused = true)]
async fn a_nonzero_exit_is_a_wake_and_a_failure_three_in_a_row_demote() {
    let mut r = rig(MIN, MS(1), MS(2));
    three_exits(&mut r, Some(1)).await;
    let said = r.said();
    assert_eq!(failures(&said, |w| *w == WindowFailure::Exit(Some(1))), 3);
    assert_eq!(demotions(&said), 1);
}

#[tokio::test(start_paused = true)]
async fn a_signal_killed_exit_is_a_wake_and_a_failure_never_a_success_reset() {
    let mut r = rig(MIN, MS(1), MS(2));
    three_exits(&mut r, None).await;
    assert_eq!(failures(&r.said(), |w| *w == WindowFailure::Exit(None)), 3);
}

#[tokio::test(start_paused = true)]
async fn a_daemon_timeout_is_a_failure_with_no_wake_a_later_success_resets_the_count() {
    let r = rig(MIN, MS(1), MS(2));
    let timed_out = || Ok(ExecOutput::timed_out());
    for _ in 0..2 {
        let w = r.wait(30).await;
        r.sandbox.settle(r.sandbox.calls() - 1, timed_out());
        assert_eq!(w.await.unwrap(), Wake::Timeout);
        tokio::time::sleep(MS(10)).await;
    }
    assert!(r.src.is_healthy());
    let w = r.wait(5000).await;
    r.sandbox.exit(r.sandbox.calls() - 1, Some(0));
    assert_eq!(w.await.unwrap(), Wake::Activity);
    tick().await;
    for _ in 0..2 {
        let w = r.wait(30).await;
        r.sandbox.settle(r.sandbox.calls() - 1, timed_out());
        assert_eq!(w.await.unwrap(), Wake::Timeout);
        tokio::time::sleep(MS(10)).await;
    }
    assert!(r.src.is_healthy(), "the success reset the count: two failures, not four");
}

#[tokio::test(start_paused = true)]
async fn note_miss_feeds_the_same_demotion_counter() {
    let mut r = rig(MIN, MS(1000), MS(30_000));
    assert!(r.src.note_miss() && r.src.note_miss());
    assert!(r.src.is_healthy());
    assert!(r.src.note_miss());
    assert!(!r.src.is_healthy());
    assert_eq!(demotions(&r.said()), 1);
    assert!(!r.src.note_miss(), "a demoted source counts no more misses");
    assert_eq!(demotions(&r.said()), 0, "no second demotion notice");
}

#[tokio::test(start_paused = true)]
async fn a_zero_exit_from_the_missed_generation_does_not_reset_the_demotion_counter() {
    let r = rig(MIN, MS(1), MS(2));
    for generation in 0..3 {
        let w = r.wait(5000).await;
        assert_eq!(r.sandbox.calls(), generation + 1);
        r.src.note_miss();
        r.sandbox.exit(generation, Some(0));
        assert_eq!(w.await.unwrap(), Wake::Activity);
        tokio::time::sleep(MS(10)).await;
    }
    assert!(!r.src.is_healthy());
}

#[tokio::test(start_paused = true)]
async fn the_outer_bound_counts_a_never_settling_exec_rearms_in_the_same_wait_and_demotes_after_three() {
    // Production's test: window 40 ms + grace 20 ms + margin 20 ms. Windows are at least 5 s
    // here, so every span is scaled: window 5 s, grace 2.5 s, margin 2.5 s, the wait 60 s.
    let cfg = WindowConfig {
        window: Duration::from_secs(5),
        grace: MS(2500),
        margin: MS(2500),
        backoff_min: MS(1),
        backoff_max: MS(2),
        jitter: false,
        ..WindowConfig::default()
    };
    let mut r = rig_with(cfg);
    let w = r.wait(60_000).await;
    assert_eq!(r.sandbox.calls(), 1);
    assert_eq!(w.await.unwrap(), Wake::Timeout);
    assert_eq!(r.sandbox.calls(), 3, "re-armed twice inside the one wait");
    assert!(!r.src.is_healthy());
    let said = r.said();
    assert_eq!(failures(&said, |w| *w == WindowFailure::OuterBound), 3);
    assert_eq!(demotions(&said), 1);
    // Late settles of abandoned generations change nothing.
    r.sandbox.exit(0, Some(0));
    r.sandbox.settle(1, rejected());
    r.sandbox.exit(2, Some(1));
    tick().await;
    assert!(!r.src.is_healthy());
    assert_eq!(r.wait(10).await.await.unwrap(), Wake::Timeout, "no sticky wake");
    assert_eq!(r.sandbox.calls(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_wait_that_starts_inside_a_backoff_gap_arms_when_the_gap_ends_within_that_wait() {
    let r = rig(MIN, MS(100), MS(100));
    let w = r.wait(20).await;
    r.sandbox.settle(0, rejected());
    assert_eq!(w.await.unwrap(), Wake::Timeout);
    let w = r.wait(2000).await;
    assert_eq!(r.sandbox.calls(), 1);
    tokio::time::sleep(MS(300)).await;
    assert_eq!(r.sandbox.calls(), 2, "the deferred arm fired inside the wait");
    r.sandbox.exit(1, Some(0));
    assert_eq!(w.await.unwrap(), Wake::Activity);
}

#[tokio::test(start_paused = true)]
async fn a_failure_landing_mid_wait_rearms_after_the_backoff_inside_that_same_wait() {
    let r = rig(MIN, MS(50), MS(50));
    let w = r.wait(2000).await;
    assert_eq!(r.sandbox.calls(), 1);
    r.sandbox.settle(0, rejected());
    tick().await;
    assert_eq!(r.sandbox.calls(), 1, "no instant re-arm");
    tokio::time::sleep(MS(200)).await;
    assert_eq!(r.sandbox.calls(), 2);
    r.sandbox.exit(1, Some(0));
    assert_eq!(w.await.unwrap(), Wake::Activity);
}

#[tokio::test(start_paused = true)]
async fn the_daemon_timeout_carries_the_grace_over_the_jittered_window() {
    let r = rig_with(WindowConfig { window: Duration::from_secs(10), ..WindowConfig::default() });
    assert!(r.src.suspends_polling());
    assert_eq!(r.wait(10).await.await.unwrap(), Wake::Timeout);
    let (window, timeout) = r.sandbox.request(0);
    assert!(window >= MS(8000) && window <= MS(10_000), "{window:?}");
    assert_eq!(timeout, window + MS(5000));
}
