//! The faults of SPEC §6 this machine can produce for real, on the real clock: a relay dir
//! deleted and recreated under a live inotify watch, the watch program missing, a watch
//! exec that hangs (a real child killed at its outer bound), one that fails at once; and a
//! request the emulated daemon cannot read, whose storm of instant windows runs real child
//! processes of the watch program over real files. Real
//! files, real watches, real child processes; assertions are on counts and recovery steps,
//! with bounds far above what the strategies need.

mod common;

const SCENARIO: &str = r#"
name = "real-faults"
gates = ["lost == 0", "duplicated == 0", "pairing_violations == 0", "leftover_files == 0", "faults_failed == 0"]
[workload]
sandboxes = 1
turns_per_sec = 1
calls_per_turn = 2
duration = "10s"
[handler]
duration = "1ms"
[[case]]
name = "dir-replaced"
runner = { strategy = "watch", rearm_on_miss = true }
writer = "watch"
[[case.fault]]
kind = "dir-replaced"
at = "3500ms"
[[case]]
name = "dir-replaced-production"
runner = "watch"
writer = "watch"
[[case.fault]]
kind = "dir-replaced"
at = "3500ms"
[[case]]
name = "watch-program-missing"
runner = { strategy = "window-exec", window = "5s", grace = "1s", relist = "1s", safety_wait = "2s", backoff_min = "200ms", backoff_max = "1s" }
writer = "watch"
[[case.fault]]
kind = "watch-program-missing"
at = "3500ms"
duration = "2s"
[[case]]
name = "exec-hang"
runner = { strategy = "window-exec", window = "5s", grace = "1s", relist = "1s", safety_wait = "2s" }
writer = "watch"
[[case.fault]]
kind = "exec-hang"
at = "3500ms"
duration = "1s"
[[case]]
name = "exec-fail"
runner = { strategy = "window-exec", window = "5s", grace = "1s", relist = "1s", safety_wait = "2s", backoff_min = "200ms", backoff_max = "1s" }
writer = "watch"
[[case.fault]]
kind = "exec-fail"
at = "3500ms"
duration = "1s"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_this_machine_can_produce_are_survived_for_real() {
    let (summary, _out, _relay) = common::run("real-faults.toml", SCENARIO, false, false).await;
    let find = |name: &str| summary.results.iter().find(|r| r.case == name).unwrap();
    for r in &summary.results {
        assert_eq!(r.clock, relay_bench::Clock::Real);
        let failed: Vec<_> = r.gates.iter().filter(|g| !g.pass).collect();
        assert!(r.pass, "{}: {failed:?} {:?} {:?}", r.case, r.faults, r.notices);
        assert_eq!(r.faults.len(), 1);
        assert!(r.faults[0].calls > 0, "{}: the fault touched calls", r.case);
    }
    // How each was detected and recovered from, as the report says it.
    let replaced = &find("dir-replaced").faults[0];
    assert!(replaced.recovery.contains("re-armed"), "{replaced:?}");
    // Production's watch is never re-armed: the poll delay racing it carries discovery.
    let production = &find("dir-replaced-production").faults[0];
    // Whether a list fell into the microseconds between the delete and the re-create (then
    // "relay dir readable again" is a step) is the machine's timing, not the design's.
    assert!(!production.recovery.contains("re-armed"), "{production:?}");
    assert!(production.ok && production.failed == 0, "{production:?}");
    let missing = &find("watch-program-missing").faults[0];
    assert!(missing.detected.contains("watch failure"), "{missing:?}");
    assert!(missing.recovery.contains("demoted to polling"), "{missing:?}");
    let hang = &find("exec-hang").faults[0];
    // A hung window wakes nobody: the first to notice is the safety wait's list finding a
    // request (a miss charged to the hung window), or the daemon's timeout (window + grace).
    let noticed = ["missed", "daemon timeout", "outer bound"];
    assert!(noticed.iter().any(|n| hang.detected.contains(n)), "{hang:?}");
    let fail = &find("exec-fail").faults[0];
    assert!(fail.detected.contains("exited with"), "{fail:?}");
    // No watch program child outlives its case (the hung one is `sleep 86400`). A child killed
    // at the case's end is reaped by the runtime when it next sees SIGCHLD: on a loaded
    // machine that can take a moment, so it gets a generous while.
    let t0 = std::time::Instant::now();
    while !common::live_children().is_empty() && t0.elapsed() < std::time::Duration::from_secs(20) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let left = common::live_children();
    assert!(left.is_empty(), "children not reaped: {left:?}");
}

const STORM: &str = r#"
name = "real-storm"
gates = ["duplicated == 0", "pairing_violations == 0"]
[workload]
sandboxes = 1
calls_per_turn = 1
tool_timeout = "1s"
[[workload.phase]]          # a quiet relay: its window held, nothing else
duration = "3s"
turns_per_sec = 0
[[workload.phase]]          # one call, at 3 s
duration = "1s"
turns_per_sec = 1
[handler]
duration = "1ms"
[[case]]
name = "answered"
host = "remote"
profile = "proxy"
clock = "real"
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "read-fails"
at = "2500ms"
duration = "1s"
[[case]]
name = "unanswered"
host = "remote"
profile = "proxy"
clock = "real"
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "read-fails"
at = "2500ms"
duration = "1s"
answer = "fails"
"#;

/// The storm on the real clock: the emulated remote daemon over a real directory, each window
/// a real child process. Ratios only: the machine may be loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_daemon_cannot_read_storms_for_real() {
    let (summary, _out, _relay) = common::run("real-storm.toml", STORM, false, false).await;
    let find = |name: &str| summary.results.iter().find(|r| r.case == name).unwrap();
    let answered = find("answered");
    assert_eq!(answered.clock, relay_bench::Clock::Real);
    let st = answered.faults[0].storm.as_ref().expect("a storm row");
    assert_eq!(st.requests, 1, "{st:?}");
    let (from, until) = (st.from_secs.unwrap(), st.until_secs.expect("the writer deleted it"));
    assert!(until >= from && until - from < 5.0, "{st:?}");
    assert!(answered.calls.error >= 1 && answered.calls.lost == 0, "{:?}", answered.calls);
    // Unanswered (the writer's deadline is the tool's 1 s + 10 s), it storms to the end.
    let unanswered = find("unanswered");
    let st = unanswered.faults[0].storm.as_ref().expect("a storm row");
    assert_eq!(st.until_secs, None, "{st:?}");
    assert!(st.stormed_secs > 5.0, "{st:?}");
    assert!(st.execs_per_sec >= 5.0 * st.before_execs_per_sec, "windows at least 5x the quiet rate: {st:?}");
    assert!(st.per_sec >= 3.0 * st.before_per_sec, "{st:?}");
    assert_eq!(unanswered.calls.lost, 1, "{:?}", unanswered.calls);
    let t0 = std::time::Instant::now();
    while !common::live_children().is_empty() && t0.elapsed() < std::time::Duration::from_secs(20) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(common::live_children().is_empty(), "children not reaped: {:?}", common::live_children());
}
