//! Virtual time: the real strategy code on a paused tokio clock over the in-memory sandbox.
//! Every figure here is exact, because no wall clock is involved.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use relay_bench::{
    run_case_virtual, CaseEnv, EventSink, FaultKind, HandlerModel, Relay, RelayDir, Scenario, SimDir, SimFault, Step,
};
use tokio::time::Instant;

mod common;

const S: fn(u64) -> Duration = Duration::from_secs;

/// Gaps between consecutive exec starts, in whole milliseconds.
fn gaps(times: &[Instant]) -> Vec<u128> {
    times.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect()
}

#[tokio::test(start_paused = true)]
async fn without_jitter_an_idle_dir_reissues_exactly_60_per_window_a_minute() {
    // Production: an idle window's exit is a wake, the runner lists and its next wait arms
    // the next window at once.
    let r = rig(SimDir::new("/sb/relay"), r#"{ strategy = "window-exec", jitter = false }"#);
    tokio::time::sleep(S(600) - Duration::from_millis(1)).await;
    let execs = r.sim.exec_times();
    assert_eq!(execs.len(), 24, "600 s / 25 s windows = 2.4 per minute");
    assert!(gaps(&execs).iter().all(|g| *g == 25_000), "{:?}", gaps(&execs));
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn demotion_after_exactly_three_failures_then_backoff_doubles_to_30s() {
    // The suite's earlier model, kept as options: failures before the demotion retried at
    // once, every failure a wake, and a demoted dir retrying windows until one holds.
    let sim = SimDir::new("/sb/relay");
    sim.set_fault(SimFault::ExecFail, true);
    let r = rig(
        sim,
        r#"{ strategy = "window-exec", jitter = false, backoff_before_demotion = false, after_demotion = "retry", failure_wake = "every" }"#,
    );
    tokio::time::sleep(S(200)).await;
    let g = gaps(&r.sim.exec_times());
    assert_eq!(&g[..2], &[0, 0], "failures while healthy are retried at once");
    assert_eq!(&g[2..9], &[1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000], "backoff 1, 2, 4 ... 30 s");
    // The watch works again: the next retry (within 30 s) promotes the dir once its
    // window (25 s) ends well.
    r.sim.set_fault(SimFault::ExecFail, false);
    let before = r.sim.exec_times().len();
    tokio::time::sleep(S(56)).await;
    assert!(r.sim.exec_times().len() > before, "retried after the fault ended");
    assert!(r.sim.relay_files().unwrap().is_empty());
    r.stop().await;
}

struct Rig {
    sim: SimDir,
    relay: Relay,
    _sink: EventSink,
}

impl Rig {
    async fn stop(self) {
        let relay = self.relay;
        relay.stop(Instant::now() + S(10)).await.unwrap();
    }
}

/// A relay over `sim` with the runner strategy `runner` (its scenario form), a watching
/// writer, and a handler that takes no time.
fn rig(sim: SimDir, runner: &str) -> Rig {
    let handler = HandlerModel { duration: Duration::ZERO, duration_max: Duration::ZERO, ..Default::default() };
    let (relay, sink) = common::sim_relay(&sim, runner, handler);
    Rig { sim, relay, _sink: sink }
}

#[tokio::test(start_paused = true)]
async fn the_safety_list_runs_every_30s_while_the_watch_is_healthy() {
    // With `idle_wake = false` an idle window is no wake: the runner lists only on its
    // 30 s safety wait (the plan's arithmetic; production lists after every window).
    let r = rig(
        SimDir::new("/sb/relay"),
        r#"{ strategy = "window-exec", jitter = false, idle_wake = false, sweep = false }"#,
    );
    tokio::time::sleep(S(600) + Duration::from_millis(1)).await;
    let by = r.relay.host.counts().by_kind();
    let get = |k: &str| by.0.iter().find(|(n, _)| *n == k).unwrap().1;
    assert_eq!(get("list"), 21, "one list at start, then one every 30 s for 10 minutes");
    assert_eq!(get("exec"), 25, "windows of exactly 25 s");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_request_published_at_each_boundary_of_the_watch_program_is_picked_up() {
    for step in [Step::BeforeArm, Step::ArmedBeforeList, Step::ListedBeforeWait] {
        let sim = SimDir::new("/sb/relay");
        // The first time the program reaches `step`, a writer publishes a request.
        let (s, seen) = (sim.clone(), Arc::new(AtomicBool::new(false)));
        let seen2 = seen.clone();
        sim.on_step(move |at| {
            if at == step && !seen2.swap(true, Ordering::SeqCst) {
                let body = br#"{"toolName":"t","toolCallId":"b","args":{}}"#;
                relay_bench::publish_now(&s, "b.req.json", body).unwrap();
            }
        });
        let t0 = Instant::now();
        let r = rig(sim, r#"{ strategy = "window-exec", jitter = false }"#);
        while r.sim.read("b.res.json").is_err() {
            // The safety list is 30 s away: only the watch program can explain a fast pickup.
            assert!(t0.elapsed() < S(5), "{step:?}: not picked up within 5 s");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(seen.load(Ordering::SeqCst));
        assert!(r.sim.read("b.req.json").is_err(), "{step:?}: deleted on pickup");
        assert!(r.sim.exec_times().len() < 10, "{step:?}: no spinning execs");
        r.stop().await;
    }
}

fn env() -> CaseEnv {
    CaseEnv::quiet()
}

const SMALL: &str = r#"
name = "small"
[workload]
sandboxes = 3
calls_per_turn = 2
arrival = "poisson"
seed = 9
[[workload.phase]]
duration = "2m"
turns_per_sec = 2
[[workload.phase]]
duration = "3m"
turns_per_sec = 0
[handler]
duration = "2ms"
duration_max = "30ms"
error_ratio = 0.1
[[case]]
name = "window"
host = "remote"
profile = "far"
clock = "virtual"
runner = "window-exec"
writer = "watch"
"#;

#[test]
fn two_runs_with_one_seed_agree_to_the_byte() {
    let s = Scenario::parse("small.toml", SMALL).unwrap();
    let run = || serde_json::to_string(&run_case_virtual(&s, &s.cases[0], &env()).unwrap()).unwrap();
    let (a, b) = (run(), run());
    assert!(a.contains(r#""clock":"virtual""#));
    assert!(a.contains(r#""lost":0"#), "{a}");
    assert_eq!(a, b);
    let other = Scenario::parse("small.toml", &SMALL.replace("seed = 9", "seed = 10")).unwrap();
    let c = serde_json::to_string(&run_case_virtual(&other, &other.cases[0], &env()).unwrap()).unwrap();
    assert_ne!(a, c, "another seed, another run");
}

/// Progress is told every 10 simulated seconds with a wall-time ETA, and listening to it
/// changes nothing the run measures.
#[test]
fn progress_is_told_in_simulated_time_and_changes_no_result() {
    let s = Scenario::parse("small.toml", SMALL).unwrap();
    let quiet = serde_json::to_string(&run_case_virtual(&s, &s.cases[0], &env()).unwrap()).unwrap();
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let heard = lines.clone();
    let mut told = env();
    told.progress = Some(std::sync::Arc::new(move |l: &str| heard.lock().unwrap().push(l.to_owned())));
    let loud = serde_json::to_string(&run_case_virtual(&s, &s.cases[0], &told).unwrap()).unwrap();
    assert_eq!(quiet, loud, "a run told its progress measures what a quiet one does");
    let lines = lines.lock().unwrap();
    // 5 simulated minutes: a line every 10 s.
    assert!((25..=31).contains(&lines.len()), "{} lines: {lines:?}", lines.len());
    let last = lines.last().unwrap();
    assert!(last.contains(" / 300.00s simulated (ETA "), "{last}");
    assert!(last.contains("calls answered, pickup p50 "), "{last}");
}

#[test]
fn every_fault_of_spec_6_strikes_and_is_survived() {
    let s = Scenario::load("faults").unwrap();
    let mut kinds = Vec::new();
    for case in &s.cases {
        let r = run_case_virtual(&s, case, &env()).unwrap();
        assert!(r.pass, "{}: {:?}", case.name, r.gates.iter().filter(|g| !g.pass).collect::<Vec<_>>());
        assert_eq!(r.faults.len(), 1, "{}", case.name);
        let f = &r.faults[0];
        assert!(f.ok && f.calls > 0 && f.failed == 0, "{}: {f:?}", case.name);
        assert_eq!(r.calls.lost, 0);
        kinds.push(f.kind.clone());
    }
    // A blackhole darkens a real TCP path (the real daemon's delay proxy): it is struck in
    // tests/sandbox_agent.rs, not in simulated time.
    for k in FaultKind::ALL.into_iter().filter(|k| *k != FaultKind::ProxyBlackhole) {
        assert!(kinds.iter().any(|n| n == k.name()), "no case strikes {}", k.name());
    }
}

#[test]
fn a_fault_the_clock_cannot_produce_is_a_scenario_error() {
    let text = SMALL.replace("clock = \"virtual\"", "clock = \"real\"")
        + "[[case.fault]]\nkind = \"queue-overflow\"\nat = \"10s\"\n";
    let e = Scenario::parse("small.toml", &text).unwrap_err().to_string();
    assert!(e.contains("small.toml") && e.contains("fault") && e.contains("virtual"), "{e}");
    let e = Scenario::parse("small.toml", &(SMALL.to_owned() + "[[case.fault]]\nkind = \"gremlins\"\nat = \"1s\"\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("daemon-restart"), "names the allowed kinds: {e}");
}

#[test]
fn a_case_longer_than_a_day_is_not_mistaken_for_an_interrupt() {
    let text = r#"
name = "long"
[workload]
sandboxes = 1
[[workload.phase]]
duration = "25h"
turns_per_sec = 0
[[case]]
name = "idle"
host = "remote"
profile = "lan"
clock = "virtual"
runner = { strategy = "window-exec", idle_wake = false }  # the plan's arithmetic: 4.4-5.0
writer = "watch"
"#;
    let s = Scenario::parse("long.toml", text).unwrap();
    let r = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    assert!(!r.interrupted, "a day-long wait timing out is not a Ctrl-C");
    assert!(r.window_secs >= 25.0 * 3600.0);
    assert!((4.4..=5.0).contains(&r.requests.idle_phases.discovery_per_min), "{:?}", r.requests.idle_phases);
}

#[test]
fn a_handler_that_outlives_the_stop_bound_ends_the_case_in_virtual_time() {
    // The handler takes 120 s, past the writer's 60 s deadline and the 30 s stop bound: the
    // runner is aborted with its handlers, as on the real clock, and the case ends.
    let text = r#"
name = "slow-handler"
[workload]
duration = "5s"
turns_per_sec = 1
[handler]
duration = "120s"
[[case]]
name = "poll"
clock = "virtual"
runner = "poll"
writer = "poll"
"#;
    let s = Scenario::parse("slow.toml", text).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run_case_virtual(&s, &s.cases[0], &env()).map(|r| (r.runner.stuck, r.calls.timeout)));
    });
    // Generous: the whole case is a few milliseconds of work.
    let (stuck, timeouts) = rx.recv_timeout(std::time::Duration::from_secs(120)).expect("the case ended").unwrap();
    assert_eq!((stuck, timeouts), (1, 5), "the runner was aborted at the stop bound; the writer gave up at 60 s");
}

#[tokio::test(start_paused = true)]
async fn an_answer_is_held_through_a_full_disk_and_dropped_by_a_read_only_dir() {
    // The dir turns full (the machine's failure: held) or read-only (the relay's: tried once,
    // as production does) after the pickup, for 3 s: the request is gone already, so an
    // answer not held is lost and the call times out.
    for fault in [SimFault::DiskFull, SimFault::ReadOnly] {
        let sim = SimDir::new("/sb/relay");
        let handler = HandlerModel { duration: S(1), duration_max: S(1), ..Default::default() };
        let (relay, _sink) = common::sim_relay(&sim, "poll", handler);
        assert!(relay.ready(S(10)).await);
        let call = relay.call("c-1", None, S(30));
        let strike = async {
            let picked = || sim.list().unwrap().iter().all(|n| !n.ends_with(".req.json"));
            while !(sim.list().unwrap().contains(&"c-1.req.json".to_owned())) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            while !picked() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            sim.set_fault(fault, true);
            tokio::time::sleep(S(3)).await;
            sim.set_fault(fault, false);
        };
        let t0 = Instant::now();
        let (end, ()) = tokio::join!(call, strike);
        if fault == SimFault::ReadOnly {
            assert!(matches!(end, relay_bench::CallEnd::Failed(_)), "{fault:?}: dropped, not held: {end:?}");
            relay.stop(Instant::now() + S(10)).await.unwrap();
            continue;
        }
        assert!(matches!(end, relay_bench::CallEnd::Answered(_)), "{fault:?}: {end:?}");
        assert!(t0.elapsed() < S(10), "{fault:?}: answered soon after the dir healed: {:?}", t0.elapsed());
        relay.stop(Instant::now() + S(10)).await.unwrap();
        assert!(sim.relay_files().unwrap().is_empty(), "{fault:?}: {:?}", sim.relay_files());
    }
}

#[tokio::test(start_paused = true)]
async fn a_reused_id_in_one_turn_is_skipped_and_said_once_while_it_stays() {
    use relay_bench::Msg;
    use relay_bench::Reporter;
    use relay_bench::Say;
    use relay_bench::{LoopOptions, Runner};
    let sim = SimDir::new("/sb/relay");
    let dir: Arc<dyn RelayDir> = Arc::new(sim.clone());
    let (sink, mut rx) = EventSink::channel();
    let runner = Runner {
        sandbox: 0,
        host: Arc::new(relay_bench::LocalHost::over(dir, Arc::default())),
        source: None,
        inbox: None,
        opts: LoopOptions::default(),
        handler: Arc::new(HandlerModel {
            duration: Duration::ZERO,
            duration_max: Duration::ZERO,
            ..Default::default()
        }),
        events: sink.clone(),
        reporter: Reporter::new(sink.clone(), 0),
        on_park: None,
    };
    let started = runner.start();
    assert!(started.control.ready(S(10)).await);
    let publish = || {
        let body = br#"{"toolName":"t","toolCallId":"x","args":{}}"#;
        relay_bench::publish_now(&sim, "x.req.json", body).unwrap();
    };
    let mut said = 0;
    let mut count = || {
        rx.take(|m| {
            said += usize::from(
                matches!(m, Msg::Notice(n) if matches!(&n.what, Say::AlreadySeen { name } if name == "x.req.json")),
            )
        });
        said
    };
    publish();
    tokio::time::sleep(S(2)).await;
    sim.remove("x.res.json").unwrap();
    publish();
    tokio::time::sleep(S(20)).await;
    assert_eq!(count(), 1, "said once, not on every list");
    assert!(sim.read("x.req.json").is_ok() && sim.read("x.res.json").is_err(), "left in place, never run twice");
    sim.remove("x.req.json").unwrap();
    tokio::time::sleep(S(5)).await;
    publish();
    tokio::time::sleep(S(5)).await;
    assert_eq!(count(), 2, "gone and back: said again");
    started.control.stop();
    started.task.await.unwrap();
}
