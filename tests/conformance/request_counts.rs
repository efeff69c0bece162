//! Exact request counts on production's defaults (virtual time, no jitter): per idle
//! window, and per call. Counting what the code does, not the plan's arithmetic.

use std::time::Duration;

use relay_bench::{CallEnd, EventSink, HandlerModel, Kind, Relay, RequestCounts, SimDir};
use tokio::time::Instant;

use super::fakes::{by_kind, instant};

const S: fn(u64) -> Duration = Duration::from_secs;

struct Rig {
    relay: Relay,
    _sink: EventSink,
}

fn rig(runner: &str) -> Rig {
    // A tool that takes 5 ms: its answer lands while the next window is up.
    let handler = HandlerModel { duration: Duration::from_millis(5), ..instant() };
    let (relay, sink) = crate::common::sim_relay(&SimDir::new("/sb/relay"), runner, handler);
    Rig { relay, _sink: sink }
}

/// (exec, list, read, stat, delete, write, rename) made between two snapshots.
fn kinds(a: &RequestCounts, b: &RequestCounts) -> [u64; 7] {
    let d = b.minus(a);
    [Kind::Exec, Kind::List, Kind::Read, Kind::Stat, Kind::Delete, Kind::Write, Kind::Rename].map(|k| by_kind(&d, k))
}

#[tokio::test(start_paused = true)]
async fn an_idle_window_costs_one_exec_and_one_list() {
    let r = rig(r#"{ strategy = "window-exec", jitter = false }"#);
    let t0 = Instant::now();
    let start = r.relay.host.counts();
    tokio::time::sleep_until(t0 + S(600) - Duration::from_millis(1)).await;
    let k = kinds(&start, &r.relay.host.counts());
    // The sweep's list and the first loop list at t = 0, the first window armed by the
    // first wait; then every 25 s an idle window exits 0, which is a wake: one list, and
    // the next wait arms the next window. 24 windows start in [0, 600 s), 23 end.
    assert_eq!(k, [24, 2 + 23, 0, 0, 0, 0, 0], "exec, list, read, stat, delete, write, rename");
    let discovery = r.relay.host.counts().discovery_total();
    assert_eq!(discovery, 24 + 25, "all of it discovery");
    let relay = r.relay;
    relay.stop(Instant::now() + S(10)).await.unwrap();
}

/// One call in the idle steady state (between two idle window ends), its requests counted
/// over the quiet span around it.
async fn one_call(runner: &str) -> [u64; 7] {
    let r = rig(runner);
    let t0 = Instant::now();
    // Windows start at 0, 25 and 50 s; the one from 50 s ends idle at 75 s unless the call
    // ends it. The call starts at 60 s and is over long before 70 s.
    tokio::time::sleep_until(t0 + S(55)).await;
    let before = r.relay.host.counts();
    tokio::time::sleep_until(t0 + S(60)).await;
    assert!(matches!(r.relay.call("c1", None, S(60)).await, CallEnd::Answered(_)));
    tokio::time::sleep_until(t0 + S(70)).await;
    let k = kinds(&before, &r.relay.host.counts());
    let relay = r.relay;
    relay.stop(Instant::now() + S(10)).await.unwrap();
    k
}

#[tokio::test(start_paused = true)]
async fn one_call_on_production_s_window_exec() {
    // Data: read, stat, delete (the pickup), write + rename (the answer): 5 requests.
    // Discovery: production's program ends on any change in the dir. The request's
    // publication ends the live window (wake, list: the pickup, then a new window); the
    // runner's own answer, 5 ms later, ends that one too (wake, list, nothing new, a new
    // window). The writer reads and deletes its answer before that window is up, so it is
    // not seen. Two windows re-armed and two lists for one call, where one would do.
    assert_eq!(one_call(r#"{ strategy = "window-exec", jitter = false }"#).await, [2, 2, 1, 1, 1, 1, 1]);
}

#[tokio::test(start_paused = true)]
async fn one_call_when_only_requests_end_a_window() {
    // `window_events = "requests"`: only the request's appearance ends a window.
    let k = one_call(r#"{ strategy = "window-exec", jitter = false, window_events = "requests" }"#).await;
    assert_eq!(k, [1, 1, 1, 1, 1, 1, 1]);
}

#[tokio::test(start_paused = true)]
async fn one_call_on_the_inline_variant_skips_the_list_and_the_read() {
    let k = one_call(r#"{ strategy = "window-exec-inline", jitter = false, window_events = "requests" }"#).await;
    assert_eq!(k, [1, 0, 0, 1, 1, 1, 1]);
}

#[tokio::test(start_paused = true)]
async fn poll_only_lists_every_300ms_and_backs_off_to_1500ms_when_idle() {
    let r = rig("poll");
    let t0 = Instant::now();
    let start = r.relay.host.counts();
    tokio::time::sleep_until(t0 + S(60) - Duration::from_millis(1)).await;
    let k = kinds(&start, &r.relay.host.counts());
    // The sweep's list, then lists at 0, 0.3, 0.6, 0.9, 1.2 (idle 1..5), 1.8 (600 ms),
    // 3.0 (1200 ms), then every 1.5 s: 4.5, 6.0, ..., 58.5 (37 more).
    assert_eq!(k[1], 1 + 5 + 2 + 37, "{k:?}");
    let relay = r.relay;
    relay.stop(Instant::now() + S(10)).await.unwrap();
}
