//! The remote side's limits in front of the real sandbox-agent daemon (0.4.2): relay-bench's
//! delay proxy admits each of the runner's requests through the case's organisation, as the
//! emulated daemon does, answers a refusal 429, queues, and cuts a silent held window.
//! Skipped, and said so, when the binary is not installed (a failure instead under
//! RELAY_BENCH_REQUIRE_DAEMON=1).

use std::sync::Arc;
use std::time::Duration;

use relay_bench::{
    sandbox_agent_request_kind, AgentHost, AgentProcess, Caps, DelayProxy, Gate, Host, LatencyProfile, Limits, Org,
    Scenario,
};

mod common;

use common::daemon_or_skip;

/// One test at a time: each starts daemons; the last checks that none is left.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn notices_say(r: &relay_bench::CaseResult, what: &str) -> bool {
    r.notices.iter().any(|n| n.contains(what))
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_held_execs_reject_every_window_429_and_the_turn_polls_losing_nothing() {
    if daemon_or_skip("no_held_execs_reject_every_window_429").is_none() {
        return;
    }
    let _one = SERIAL.lock().await;
    // The in-sandbox case uploads, starts and times its writers through the daemon with
    // execs of its own: only the runner's requests cross the proxy, or it could not start.
    // A rejected window is a failure with no wake: the loop waits out its safety wait (30 s
    // in production, 2 s here) before its first list, then polls.
    let text = r#"
name = "no-held-execs"
[workload]
sandboxes = 2
turns_per_sec = 4
duration = "5s"
[limits.none]
org_held_execs = 0
[[case]]
name = "window-exec"
host = "sandbox-agent"
profile = "lan"
limits = { org_held_execs = 0 }
runner = { strategy = "window-exec", window = "5s", safety_wait = "2s" }
writer = "watch"
gates = ["fleet.rejected > 0"]
[[case]]
name = "window-exec-in-sandbox"
host = "sandbox-agent"
profile = "lan"
in_sandbox = true
limits = "none"
runner = { strategy = "window-exec", window = "5s", safety_wait = "2s" }
writer = "watch"
"#;
    let (summary, _out, _relay) = common::run("no-held-execs.toml", text, false, false).await;
    for r in &summary.results {
        assert!(r.host.starts_with("sandbox-agent 0.4.2"), "{}", r.host);
        assert_eq!((r.calls.lost, r.calls.duplicated), (0, 0), "{}: {:?}", r.case, r.notices);
        assert!(r.calls.completed > 0 && r.calls.completed == r.calls.started, "{}: {:?}", r.case, r.calls);
        let f = r.fleet.as_ref().unwrap();
        assert!(f.org_measured, "{}: the proxy's requests passed through the organisation", r.case);
        // Some windows were refused before the schedule began (counted from its start on).
        assert!(f.rejected >= 1 && f.turns.demoted > 0 && f.held_execs.max == 0, "{}: {f:?}", r.case);
        assert!(notices_say(r, "exec rejected: sandbox-agent 429 Too Many Requests"), "{}: {:?}", r.case, r.notices);
        assert!(notices_say(r, "held-exec limit") && notices_say(r, "demoted to polling"), "{:?}", r.notices);
        // Demoted, the turn lists: every list crossed the proxy and was let through.
        assert!(r.requests.by_kind.0[0].1 > 0, "{:?}", r.requests.by_kind);
    }
    let gated = &summary.results[0];
    assert!(gated.gates.iter().all(|g| g.pass), "{:?}", gated.gates);
    let turns = &gated.fleet.as_ref().unwrap().turns;
    assert!(turns.demoted == 2 && turns.fallback_secs > 0.0, "three rejected windows demote each turn: {turns:?}");
    assert!(common::live_children().is_empty(), "daemons reaped: {:?}", common::live_children());
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_holds_requests_behind_the_held_window_and_loses_nothing() {
    if daemon_or_skip("a_queue_holds_requests_behind_the_held_window").is_none() {
        return;
    }
    let _one = SERIAL.lock().await;
    // One request at a time per sandbox: while a window is held, the answer's upload and
    // every other request wait for it to end (it ends at the next request, or its window).
    let text = r#"
name = "queue"
[workload]
sandboxes = 1
turns_per_sec = 3
duration = "4s"
[[case]]
name = "one-at-a-time"
host = "sandbox-agent"
profile = "lan"
limits = { sandbox_requests = 1, on_limit = "queue", queue_wait = "20s" }
runner = { strategy = "window-exec", window = "5s", safety_wait = "2s" }
writer = "watch"
"#;
    let (summary, _out, _relay) = common::run("queue.toml", text, false, false).await;
    let r = &summary.results[0];
    assert_eq!((r.calls.lost, r.calls.duplicated), (0, 0), "{:?}", r.notices);
    assert!(r.calls.completed > 0 && r.calls.completed == r.calls.started, "{:?}", r.calls);
    let f = r.fleet.as_ref().unwrap();
    assert!(f.queued > 0 && f.rejected == 0, "{f:?}");
    assert!(f.queue_wait_us.count > 0 && f.queue_wait_us.max > 0.0, "{:?}", f.queue_wait_us);
    assert!(f.sandbox_in_flight.max <= 1, "one at a time: {:?}", f.sandbox_in_flight);
    assert!(f.held_execs.max == 1, "{:?}", f.held_execs);
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_timeout_cuts_the_held_windows_each_a_failed_exec() {
    if daemon_or_skip("an_idle_timeout_cuts_the_held_windows").is_none() {
        return;
    }
    let _one = SERIAL.lock().await;
    // Calls every 2 s: a 5 s window that waits longer than 600 ms is cut by the proxy.
    let text = r#"
name = "cut"
[workload]
sandboxes = 1
turns_per_sec = 0.5
duration = "6s"
[[case]]
name = "cut"
host = "sandbox-agent"
profile = "lan"
limits = { idle_timeout = "600ms" }
runner = { strategy = "window-exec", window = "5s", safety_wait = "2s" }
writer = "watch"
gates = ["fleet.cut > 0"]
"#;
    let (summary, _out, _relay) = common::run("cut.toml", text, false, false).await;
    let r = &summary.results[0];
    assert_eq!((r.calls.lost, r.calls.duplicated), (0, 0), "{:?}", r.notices);
    assert!(r.calls.completed > 0 && r.calls.completed == r.calls.started, "{:?}", r.calls);
    let f = r.fleet.as_ref().unwrap();
    assert!(f.cut > 0 && f.rejected == 0, "{f:?}");
    assert!(r.gates.iter().all(|g| g.pass), "{:?}", r.gates);
    // A cut is a reset the runner sees as a failed exec: no wake.
    assert!(notices_say(r, "watch failure 1: exec rejected") && notices_say(r, "request failed"), "{:?}", r.notices);
}

#[cfg_attr(not(has_sandbox_agent), ignore = "needs the sandbox-agent daemon: run scripts/install-sandbox-agent.sh")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_organisation_counts_each_request_as_the_host_does() {
    let Some(bin) = daemon_or_skip("the_organisation_counts_each_request_as_the_host_does") else { return };
    let _one = SERIAL.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let process = Arc::new(AgentProcess::start(&bin).unwrap());
    // No held execs: every exec is refused (and counted), lists go through.
    let limits = Limits { org: Caps { held_execs: Some(0), ..Caps::default() }, ..Limits::default() };
    let org = Arc::new(Org::new(limits, 1));
    org.count_real_connections();
    let gate = Gate { org: org.clone(), sandbox: 0, classify: sandbox_agent_request_kind };
    let profile = LatencyProfile::shipped("lan").unwrap();
    let proxy = Arc::new(DelayProxy::start_gated(process.addr(), profile, 3, Some(gate)).unwrap());
    let host = AgentHost::new(process.base.clone(), dir.path().to_path_buf(), Arc::default(), Some(process.clone()))
        .through(proxy.clone());
    host.publish("a.req.json", br#"{"x":1}"#).await.unwrap();
    assert_eq!(host.list().await.unwrap(), ["a.req.json"]);
    assert_eq!(host.read("a.req.json").await.unwrap(), br#"{"x":1}"#);
    assert_eq!(host.stat("a.req.json").await.unwrap(), 7);
    host.delete("a.req.json").await.unwrap();
    host.delete("a.req.json").await.unwrap();
    let refused = host.exec(&["sh".into(), "-c".into(), "true".into()], Duration::from_secs(5)).await.unwrap_err();
    assert!(refused.to_string().contains("429"), "{refused}");
    assert!(host.list().await.unwrap().is_empty(), "the connection lives on after a 429");
    let by_host = host.counts().by_kind();
    assert_eq!(org.counts_by_kind(), by_host, "the organisation counts what the host counts");
    let c = |k: usize| by_host.0[k].1;
    assert_eq!([c(0), c(1), c(2), c(3), c(4), c(5), c(6)], [2, 1, 1, 1, 2, 1, 1]);
    let stats = org.finish(tokio::time::Instant::now());
    assert_eq!((stats.rejected, stats.held_execs.max), (1, 0));
    assert!(stats.connections.max >= 1, "the proxy's real connections: {:?}", stats.connections);
    drop((host, proxy, process));
    assert!(common::live_children().is_empty(), "daemon reaped: {:?}", common::live_children());
}

#[test]
fn limits_on_a_real_daemon_need_the_proxy_on_the_path() {
    let case = |extra: &str| {
        format!(
            "name = \"x\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"d\"\nhost = \"sandbox-agent\"\n\
             runner = \"window-exec\"\nwriter = \"watch\"\n{extra}"
        )
    };
    let e = Scenario::parse("x.toml", &case("limits = { org_held_execs = 1 }\n")).unwrap_err();
    assert_eq!(e.key, "case[0].limits", "{e}");
    assert!(e.msg.contains("profile") && e.msg.contains("delay proxy"), "{e}");
    let s = Scenario::parse("x.toml", &case("profile = \"lan\"\nlimits = { org_held_execs = 1 }\n")).unwrap();
    let host = &s.cases[0].host;
    assert!(host.admits() && host.limits().org.held_execs == Some(1));
    assert!(host.params().contains("limits enforced by the proxy: organisation: 1 held execs"), "{}", host.params());
    let s = Scenario::parse("x.toml", &case("profile = \"lan\"\n")).unwrap();
    assert!(!s.cases[0].host.admits(), "no limits: the proxy only delays");
    // An org-limit fault acts on the organisation: it needs the requests to pass through it.
    let fault = "[[case.fault]]\nkind = \"org-limit\"\nat = \"500ms\"\nheld_execs = 0\n";
    let e = Scenario::parse("x.toml", &case(&format!("profile = \"lan\"\n{fault}"))).unwrap_err();
    assert!(e.msg.contains("with a profile and limits"), "{e}");
    Scenario::parse("x.toml", &case(&format!("profile = \"lan\"\nlimits = {{}}\n{fault}"))).unwrap();
}
