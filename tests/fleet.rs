//! The fleet in virtual time: agent turns as production runs them (a relay per turn), the
//! remote side's limits and what they do to a fleet (rejections, demotions, the fallback
//! storm), fleet-wide faults and the recovery after them. Nothing lost, nothing doubled.

use std::sync::Arc;

use relay_bench::base::signal::Signal;
use relay_bench::engine::{run_case_virtual, CaseEnv};
use relay_bench::scenario::Scenario;

fn env() -> CaseEnv {
    CaseEnv {
        relay_root: std::env::temp_dir(),
        watch_program: "relay-bench".into(),
        interrupt: Arc::new(Signal::new()),
        progress: None,
        progress_every: std::time::Duration::from_secs(1),
        event_log: None,
        event_log_max: u64::MAX,
        calls_csv: None,
    }
}

const FLEET: &str = r#"
name = "fleet"
[workload]
sandboxes = 12
duration = "8m"
seed = 11
[workload.agent]
think = { min = "5s", max = "10s" }
steps_per_turn = 6
user_think = { mean = "20s" }
session_gap = "30s"
[limits.tight]
org_held_execs = 3
[[case]]
name = "free"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
[[case]]
name = "tight"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
limits = "tight"
gates = ["fleet.held_execs.max <= 3"]
"#;

#[test]
fn agent_turns_start_and_stop_their_relay_and_a_held_exec_limit_demotes_turns() {
    let s = Scenario::parse("fleet.toml", FLEET).unwrap();
    let free = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    let tight = run_case_virtual(&s, &s.cases[1], &env()).unwrap();
    for r in [&free, &tight] {
        assert!(r.pass, "{}: {:?}", r.case, r.gates.iter().filter(|g| !g.pass).collect::<Vec<_>>());
        assert_eq!((r.calls.lost, r.calls.duplicated, r.pairing_violations.total), (0, 0, 0), "{}", r.case);
        let f = r.fleet.as_ref().unwrap();
        assert!(f.turns.started > 12, "{}: several turns per sandbox: {:?}", r.case, f.turns);
        assert_eq!(f.turns.started, f.turns.ended, "every turn stopped its relay");
        assert_eq!(f.turns.calls, r.calls.started, "{}: every call belongs to a turn", r.case);
        // Between turns nothing is held but the last window, abandoned as production does.
        assert!(f.sandbox_held_execs.max <= 2 && f.sandbox_held_execs.mean < 1.0, "{:?}", f.sandbox_held_execs);
        assert!(f.org_measured && f.requests_per_sec.peak_1s > 0.0);
    }
    let (ff, tf) = (free.fleet.unwrap(), tight.fleet.unwrap());
    assert_eq!((ff.turns.demoted, ff.rejected), (0, 0), "no limit, no demotion");
    assert!(ff.held_execs.max > 3, "unlimited, the fleet holds more than the tight limit: {:?}", ff.held_execs);
    assert!(tf.held_execs.max <= 3, "the limit holds: {:?}", tf.held_execs);
    assert!(tf.rejected > 0 && tf.turns.demoted > 0, "rejections demote turns: {:?}", tf.turns);
    assert!(tf.turns.fallback_secs > 0.0);
    // Demoted turns poll: more discovery requests per minute than the healthy fleet.
    assert!(
        tight.requests.discovery_per_min > free.requests.discovery_per_min,
        "{} vs {}",
        tight.requests.discovery_per_min,
        free.requests.discovery_per_min
    );
    // A demotion lasts its turn: later turns start healthy and demote again.
    assert!(tf.turns.demoted > 12, "more demotions than sandboxes: {}", tf.turns.demoted);
}

#[test]
fn a_fleet_wide_proxy_blip_is_survived_and_the_fleet_recovers() {
    let text = FLEET.replace(
        "gates = [\"fleet.held_execs.max <= 3\"]",
        "[[case.fault]]\nkind = \"proxy-disconnect\"\nsandbox = \"all\"\nat = \"4m\"",
    );
    let text = text.replace("limits = \"tight\"\n", "");
    let s = Scenario::parse("blip.toml", &text).unwrap();
    let r = run_case_virtual(&s, &s.cases[1], &env()).unwrap();
    assert!(r.pass, "{:?}", r.gates.iter().filter(|g| !g.pass).collect::<Vec<_>>());
    assert_eq!((r.calls.lost, r.calls.duplicated), (0, 0));
    let row = &r.faults[0];
    assert!(row.fleet, "{row:?}");
    let rec = row.fleet_recovery.as_ref().expect("a fleet-wide fault's recovery");
    let secs = rec.secs_to_95pct_healthy.expect("the fleet recovered");
    assert!(secs < 60.0, "one failed window, then a healthy one: {secs} s");
    assert!(rec.worst_healthy_pct < 100.0, "the blip was felt: {rec:?}");
    assert_eq!(rec.turns_demoted, 0, "one failure does not demote");
}

#[test]
fn the_agent_model_refuses_what_does_not_apply_to_it() {
    let bad = FLEET.replace("seed = 11", "seed = 11\nturns_per_sec = 2");
    let e = Scenario::parse("fleet.toml", &bad).unwrap_err();
    assert_eq!(e.key, "workload.turns_per_sec", "{e}");
    assert!(e.msg.contains("[workload.agent]"), "{e}");
    let bad = FLEET.replace("org_held_execs = 3", "org_held_execs = 3\norg_burst = 4");
    let e = Scenario::parse("fleet.toml", &bad).unwrap_err();
    assert_eq!(e.key, "limits.tight.org_burst", "{e}");
    let bad = FLEET.replace("limits = \"tight\"", "limits = \"loose\"");
    let e = Scenario::parse("fleet.toml", &bad).unwrap_err();
    assert!(e.msg.contains("[limits.loose]") && e.msg.contains("tight"), "{e}");
    let local = FLEET.replace("host = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\nrunner = \"window-exec\"\nwriter = \"watch\"\nlimits", "host = \"local\"\nclock = \"virtual\"\nrunner = \"window-exec\"\nwriter = \"watch\"\nlimits");
    let e = Scenario::parse("fleet.toml", &local).unwrap_err();
    assert_eq!(e.key, "case[1].limits", "{e}");
    let org = FLEET.replace(
        "limits = \"tight\"",
        "[[case.fault]]\nkind = \"org-limit\"\nat = \"1m\"\nsandbox = 1\nheld_execs = 1",
    );
    let e = Scenario::parse("fleet.toml", &org).unwrap_err();
    assert!(e.msg.contains("every sandbox at once"), "{e}");
}
