//! `relay-loop.test.ts`, ported: the runner loop as production built it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use relay_bench::{
    publish_now, ActivitySource, HandlerModel, LoopOptions, PauseAnswer, RelayDir, Response, Say, SimDir, WindowConfig,
    WindowSource,
};
use tokio::sync::Semaphore;

use super::fakes::*;

const MS: fn(u64) -> Duration = Duration::from_millis;
const BOUND: Duration = Duration::from_secs(3);

fn answered(dir: &SimDir, id: &str) -> bool {
    dir.read(&format!("{id}.res.json")).is_ok()
}

fn rig(source: Option<Arc<FakeSource>>) -> (SimDir, Arc<FakeHost>, Option<Arc<FakeSource>>) {
    let dir = SimDir::new(DIR);
    (dir.clone(), Arc::new(FakeHost::new(&dir)), source)
}

fn start(
    host: &Arc<FakeHost>,
    source: &Option<Arc<FakeSource>>,
    opts: LoopOptions,
) -> (relay_bench::Started, relay_bench::EventSink, relay_bench::EventInbox) {
    let src = source.clone().map(|s| s as Arc<dyn ActivitySource>);
    start_runner(host.clone(), src, opts, instant())
}

/// A loop over a fake source that suspends polling (a healthy watch), parked in its first wait.
struct Waiting {
    dir: SimDir,
    host: Arc<FakeHost>,
    fake: Arc<FakeSource>,
    r: relay_bench::Started,
    _sink: relay_bench::EventSink,
    _rx: relay_bench::EventInbox,
}

async fn waiting() -> Waiting {
    let (dir, host, src) = rig(Some(FakeSource::new(true)));
    let fake = src.clone().unwrap();
    let (r, _sink, _rx) = start(&host, &src, LoopOptions::default());
    until("the first wait", BOUND, || fake.waits() == 1).await;
    Waiting { dir, host, fake, r, _sink, _rx }
}

#[tokio::test(start_paused = true)]
async fn suspended_mode_requests_are_handled_on_wake_and_every_wait_is_the_30s_safety_poll() {
    let Waiting { dir, host: _, fake, r, _sink, _rx } = waiting().await;
    put_request(&dir, "call-1");
    fake.wake();
    until("the answer", MS(250), || answered(&dir, "call-1")).await;
    until("the second wait", BOUND, || fake.waits() == 2).await;
    assert!(fake.timeouts.lock().unwrap().iter().all(|t| *t == Duration::from_secs(30)));
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn non_suspending_local_mode_waits_use_the_poll_cadence_not_the_safety_poll() {
    let (dir, host, src) = rig(Some(FakeSource::new(false)));
    let fake = src.clone().unwrap();
    let (r, _sink, _rx) = start(&host, &src, LoopOptions::default());
    until("the first wait", BOUND, || fake.waits() == 1).await;
    assert_eq!(fake.timeouts.lock().unwrap()[0], MS(300), "one idle list: the 300 ms poll delay");
    put_request(&dir, "call-1");
    fake.wake();
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_demoted_source_reverts_the_loop_to_the_classic_sleep_wait_never_called_again() {
    let Waiting { dir, host: _, fake, r, _sink, _rx } = waiting().await;
    fake.demote();
    fake.expire();
    let at_demotion = fake.waits();
    put_request(&dir, "call-1");
    until("the answer, by polling", BOUND, || answered(&dir, "call-1")).await;
    tokio::time::sleep(MS(400)).await;
    assert_eq!(fake.waits(), at_demotion, "no wait() after demotion");
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn stop_during_a_held_wait_returns_promptly_close_resolves_the_wait() {
    let (_dir, host, src) = rig(Some(FakeSource::new(true)));
    let fake = src.clone().unwrap();
    let (r, _sink, _rx) = start(&host, &src, LoopOptions::default());
    until("the first wait", BOUND, || fake.waits() == 1).await;
    let t0 = tokio::time::Instant::now();
    r.control.stop();
    r.task.await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_safety_poll_discovery_timeout_then_a_request_found_counts_as_a_watch_miss() {
    let Waiting { dir, host: _, fake, r, _sink, _rx } = waiting().await;
    put_request(&dir, "call-1");
    fake.expire();
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    assert_eq!(fake.misses.load(Ordering::SeqCst), 1);
    until("the second wait", BOUND, || fake.waits() == 2).await;
    put_request(&dir, "call-2");
    fake.wake();
    until("the answer", BOUND, || answered(&dir, "call-2")).await;
    assert_eq!(fake.misses.load(Ordering::SeqCst), 1, "found after a wake: no miss");
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn the_seen_set_dedups_across_wake_and_poll_pickups_of_the_same_file() {
    let Waiting { dir, host, fake, r, _sink, _rx } = waiting().await;
    put_request(&dir, "call-1");
    fake.wake();
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    until("wait 2", BOUND, || fake.waits() == 2).await;
    fake.wake();
    until("wait 3", BOUND, || fake.waits() == 3).await;
    fake.expire();
    until("wait 4", BOUND, || fake.waits() == 4).await;
    assert_eq!(host.count("read", "call-1.req.json"), 1);
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn delete_on_pickup_a_slow_execution_does_not_rearm_storm_the_window_exec() {
    let dir = SimDir::new(DIR);
    let mut h = FakeHost::new(&dir);
    h.publish_delay = MS(150);
    let host = Arc::new(h);
    let exec = Arc::new(EndsOnRequest { dir: dir.clone(), execs: Default::default() });
    let cfg = WindowConfig { window: Duration::from_secs(60), ..WindowConfig::default() };
    let src: Arc<dyn ActivitySource> = Arc::new(WindowSource::new(cfg, exec.clone(), 1, Default::default(), None));
    let (r, _sink, _rx) = start_runner(host.clone(), Some(src), LoopOptions::default(), instant());
    assert!(r.control.ready(BOUND).await, "put after the sweep");
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    assert!(exec.execs.load(Ordering::SeqCst) <= 3, "{} execs", exec.execs.load(Ordering::SeqCst));
    let removed: Vec<_> = host.ops.lock().unwrap().iter().filter(|(o, _)| *o == "remove").cloned().collect();
    assert_eq!(removed, vec![("remove", "call-1.req.json".to_owned())]);
    assert!(dir.read("call-1.req.json").is_err());
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_closed_wait_outcome_while_the_loop_is_active_still_runs_a_list_pass() {
    let Waiting { dir, host: _, fake, r, _sink, _rx } = waiting().await;
    put_request(&dir, "call-1");
    fake.close();
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn no_activity_source_the_classic_loop_still_serves_requests() {
    let (dir, host, _) = rig(None);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    r.control.stop();
}

fn seed(dir: &SimDir, names: &[&str]) {
    for n in names {
        dir.write(n, br#"{"ok":true,"text":"stale"}"#).unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn the_sweep_removes_request_response_and_temp_names_never_other_names() {
    let (dir, host, _) = rig(None);
    seed(
        &dir,
        &[
            "stale-1.req.json",
            "stale-1.res.json",
            "stale-2.req.json.tmp.abc123",
            "stale-2.res.json.tmp.def456",
            "pi-usage.json",
            "keep.json.tmp.1",
        ],
    );
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    let mut left = dir.list().unwrap();
    left.sort();
    assert_eq!(left, vec!["keep.json.tmp.1".to_owned(), "pi-usage.json".to_owned()]);
    assert_eq!(host.count("read", "stale-1.req.json"), 0, "a stale request is never executed");
    put_request(&dir, "fresh-1");
    until("the answer", BOUND, || answered(&dir, "fresh-1")).await;
    assert!(dir.read("stale-1.res.json").is_err());
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_transiently_failing_list_is_retried_the_residue_is_swept_on_the_retry() {
    let (dir, host, _) = rig(None);
    host.list_fails.store(1, Ordering::SeqCst);
    seed(&dir, &["stale-1.req.json"]);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    assert_eq!(host.count("remove", "stale-1.req.json"), 1);
    assert!(host.lists.load(Ordering::SeqCst) >= 2);
    assert_eq!(host.count("read", "stale-1.req.json"), 0);
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn all_list_attempts_failing_skip_the_sweep_once_and_the_loop_still_serves() {
    let (dir, host, _) = rig(None);
    host.list_fails.store(3, Ordering::SeqCst);
    let (r, _sink, mut rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    // Exactly 3 sweep attempts, 150 ms apart; the loop's first list follows at once.
    assert_eq!(host.lists.load(Ordering::SeqCst), 3 + 1);
    put_request(&dir, "fresh-1");
    until("the answer", BOUND, || answered(&dir, "fresh-1")).await;
    let said = notices(&mut rx);
    assert_eq!(said.iter().filter(|n| **n == Say::SweepSkipped).count(), 1, "{said:?}");
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn the_stale_notice_fires_once_with_the_count() {
    let (dir, host, _) = rig(None);
    seed(&dir, &["stale-1.req.json", "stale-2.req.json"]);
    let (r, _sink, mut rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "fresh-1");
    until("the answer", BOUND, || answered(&dir, "fresh-1")).await;
    let swept: Vec<String> =
        notices(&mut rx).into_iter().filter(|n| matches!(n, Say::Swept { .. })).map(|n| n.to_string()).collect();
    assert_eq!(swept, vec!["cleared 2 stale relay file(s) predating the turn".to_owned()]);
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn the_loop_does_not_rewait_so_no_window_can_arm_until_the_pickup_remove_settled() {
    let dir = SimDir::new(DIR);
    let gate = Arc::new(Semaphore::new(0));
    let mut h = FakeHost::new(&dir);
    h.remove_gate = Some(gate.clone());
    let host = Arc::new(h);
    let fake = FakeSource::new(true);
    let (r, _sink, _rx) =
        start_runner(host.clone(), Some(fake.clone() as Arc<dyn ActivitySource>), LoopOptions::default(), instant());
    until("the first wait", BOUND, || fake.waits() == 1).await;
    put_request(&dir, "call-1");
    fake.wake();
    until("the read", BOUND, || host.count("read", "call-1.req.json") == 1).await;
    tokio::time::sleep(MS(50)).await;
    assert_eq!(fake.waits(), 1, "no wait while the pickup's remove is in flight");
    gate.add_permits(1000);
    until("the second wait", BOUND, || fake.waits() == 2).await;
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_failed_delete_on_pickup_is_retried_on_later_list_passes_until_gone_from_the_listing() {
    let (dir, host, _) = rig(None);
    host.remove_fails.store(1, Ordering::SeqCst);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    until("the request gone", BOUND, || dir.read("call-1.req.json").is_err()).await;
    assert!(host.count("remove", "call-1.req.json") >= 2);
    assert_eq!(host.count("read", "call-1.req.json"), 1, "a retry never re-executes");
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_failed_list_between_retries_forgets_no_failed_delete() {
    let (dir, host, _) = rig(None);
    host.remove_fails.store(1, Ordering::SeqCst);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the failed delete", BOUND, || host.count("remove", "call-1.req.json") == 1).await;
    host.list_fails.store(1, Ordering::SeqCst);
    until("the failed list", BOUND, || host.list_fails.load(Ordering::SeqCst) == 0).await;
    until("the request gone", BOUND, || dir.read("call-1.req.json").is_err()).await;
    assert_eq!(host.count("remove", "call-1.req.json"), 2, "retried once, after the list recovered");
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn one_pickup_stats_before_it_removes() {
    let (dir, host, _) = rig(None);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    assert_eq!(host.ops_on("call-1.req.json"), vec!["read", "stat", "remove"]);
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn without_pickup_telemetry_no_stat_at_all() {
    let (dir, host, _) = rig(None);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions { stat: false, ..LoopOptions::default() });
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    assert_eq!(host.ops_on("call-1.req.json"), vec!["read", "remove"]);
    // ...and the answer is a temp write renamed onto the final name (production's order).
    assert_eq!(host.ops_on("call-1.res.json"), vec!["write", "rename"]);
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_failing_stat_never_fails_the_execution() {
    let dir = SimDir::new(DIR);
    let mut h = FakeHost::new(&dir);
    h.stat_fails = true;
    let host = Arc::new(h);
    let (r, _sink, _rx) = start_runner(host, None, LoopOptions::default(), instant());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    r.control.stop();
}

fn pausing() -> HandlerModel {
    HandlerModel { pause_ratio: 1.0, ..instant() }
}

#[tokio::test(start_paused = true)]
async fn a_parked_client_tool_writes_paused_on_the_shim_path_and_nothing_on_the_pi_path() {
    // The non-Pi shim path (`pause_answer = "paused"`) writes { ok: true, paused: true }.
    let dir = SimDir::new(DIR);
    let host = Arc::new(FakeHost::new(&dir));
    let opts = LoopOptions { pause_answer: PauseAnswer::Paused, ..LoopOptions::default() };
    let (r, _sink, _rx) = start_runner(host, None, opts, pausing());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    assert_eq!(Response::decode(&dir.read("call-1.res.json").unwrap()).unwrap(), Response::Paused);
    r.control.stop();
    // Production's default (the Pi path) writes no answer file.
    let dir = SimDir::new(DIR);
    let host = Arc::new(FakeHost::new(&dir));
    let (r, _sink, _rx) = start_runner(host.clone(), None, LoopOptions::default(), pausing());
    assert!(r.control.ready(BOUND).await);
    put_request(&dir, "call-1");
    until("the pickup", BOUND, || host.count("remove", "call-1.req.json") == 1).await;
    tokio::time::sleep(MS(350)).await;
    assert!(!answered(&dir, "call-1"));
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_request_without_a_usable_call_id_runs_under_its_file_id() {
    let (dir, host, _) = rig(None);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    publish_now(&dir, "anon.req.json", br#"{"toolName":"t","toolCallId":42}"#).unwrap();
    until("the answer", BOUND, || answered(&dir, "anon")).await;
    assert!(matches!(Response::decode(&dir.read("anon.res.json").unwrap()).unwrap(), Response::Ok(_)));
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn a_failed_read_is_answered_with_the_error_never_retried_and_the_file_left() {
    let (dir, host, _) = rig(None);
    let (r, _sink, _rx) = start(&host, &None, LoopOptions::default());
    assert!(r.control.ready(BOUND).await);
    host.read_fails.store(1, Ordering::SeqCst);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    match Response::decode(&dir.read("call-1.res.json").unwrap()).unwrap() {
        Response::Error(e) => assert!(e.contains("EACCES"), "{e}"),
        other => panic!("{other:?}"),
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(host.ops_on("call-1.req.json"), vec!["read"], "no stat, no remove, no second read");
    assert!(dir.read("call-1.req.json").is_ok(), "left on disk");
    r.control.stop();
}

#[tokio::test(start_paused = true)]
async fn an_unread_request_is_not_read_again_even_when_the_seen_set_forgets_deleted_names() {
    let (dir, host, _) = rig(None);
    let opts = LoopOptions { seen: relay_bench::SeenScope::InFlight, ..LoopOptions::default() };
    let (r, _sink, _rx) = start(&host, &None, opts);
    assert!(r.control.ready(BOUND).await);
    host.read_fails.store(1, Ordering::SeqCst);
    put_request(&dir, "call-1");
    until("the answer", BOUND, || answered(&dir, "call-1")).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(host.count("read", "call-1.req.json"), 1, "answered once, not on every list");
    r.control.stop();
}
