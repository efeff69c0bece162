//! The fleet in virtual time: agent turns as production runs them (a relay per turn), the
//! remote side's limits and what they do to a fleet (rejections, demotions, the fallback
//! storm), fleet-wide faults and the recovery after them. Nothing lost, nothing doubled.

use relay_bench::{run_case_virtual, CaseEnv, Scenario};

fn env() -> CaseEnv {
    CaseEnv::quiet()
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

/// The idle budget is the cost of a live relay with no call in flight: under agent turns
/// its figure is over the minutes a relay was alive, not over the dir-minutes between
/// turns when no relay exists; with one relay for the whole case the two agree.
#[test]
fn the_idle_budget_is_over_live_relays_and_the_dir_figure_says_it_is_over_dirs() {
    let text = FLEET.replacen(
        "writer = \"watch\"\n",
        "writer = \"watch\"\ngates = [\"idle_discovery_per_min >= 0\", \"idle_dir_discovery_per_min >= 0\"]\n",
        1,
    );
    let s = Scenario::parse("fleet.toml", &text).unwrap();
    let r = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    let q = &r.requests;
    let live = q.idle_relay.as_ref().expect("measured under agent turns");
    let dir_minutes = r.window_secs * f64::from(r.sandboxes) / 60.0;
    assert!(live.minutes > 0.0 && live.minutes + q.busy.minutes < dir_minutes * 0.9, "turns leave gaps: {live:?}");
    assert!(q.idle.minutes > live.minutes, "the dir figure counts the gaps too: {:?} vs {live:?}", q.idle);
    // The same idle requests over fewer minutes.
    let same = |a: f64, am: f64, b: f64, bm: f64| ((a * am) - (b * bm)).abs() <= 0.01 * am.max(bm) + 1.0;
    assert!(
        same(live.discovery_per_min, live.minutes, q.idle.discovery_per_min, q.idle.minutes),
        "{live:?} {:?}",
        q.idle
    );
    assert!(live.discovery_per_min > q.idle.discovery_per_min * 1.5, "{live:?} vs {:?}", q.idle);
    let observed = |m: &str| r.gates.iter().find(|g| g.expr.starts_with(m)).and_then(|g| g.observed);
    assert_eq!(
        observed("idle_discovery_per_min"),
        Some(live.discovery_per_min),
        "the budget's gate reads the live relay"
    );
    assert_eq!(observed("idle_dir_discovery_per_min"), Some(q.idle.discovery_per_min));

    // One relay for the whole case: live relay and dir are the same minutes.
    let one = FLEET.split("[workload.agent]").next().unwrap().to_owned()
        + "turns_per_sec = 0.05\n[[case]]\nname = \"one\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\nrunner = \"window-exec\"\nwriter = \"watch\"\n";
    let s = Scenario::parse("one.toml", &one).unwrap();
    let r = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    let (live, dir) = (r.requests.idle_relay.clone().unwrap(), &r.requests.idle);
    assert!((live.minutes - dir.minutes).abs() < 0.01, "{live:?} vs {dir:?}");
    assert_eq!(live.discovery_per_min, dir.discovery_per_min);
}

/// A turn ends as production ends it: the model's final step (the answer after the last
/// tool result) runs with the relay live, and the relay stops when the prompt resolves. With
/// every think 5 s and two steps a turn, a relay lives three thinks a turn, not two.
#[test]
fn a_turn_keeps_its_relay_through_the_models_final_step() {
    let text = r#"
name = "final-step"
[workload]
sandboxes = 4
duration = "30m"
seed = 5
[workload.agent]
think = "5s"
steps_per_turn = 2
calls_per_step = 1
turns_per_session = 1
user_think = "10s"
session_gap = "60s"
[handler]
duration = "1ms"
[[case]]
name = "w"
host = "remote"
profile = "lan"
clock = "virtual"
runner = "window-exec"
writer = "watch"
"#;
    let s = Scenario::parse("final.toml", text).unwrap();
    let r = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    let f = r.fleet.as_ref().unwrap();
    let live = r.requests.idle_relay.as_ref().unwrap();
    let alive_secs = (live.minutes + r.requests.busy.minutes) * 60.0;
    let per_turn = alive_secs / f.turns.ended as f64;
    assert!(f.turns.ended >= 40, "{:?}", f.turns);
    // Three thinks of 5 s, plus the stale sweep and the calls' few milliseconds; a turn cut by
    // the schedule's end counts short.
    assert!((14.0..16.0).contains(&per_turn), "a relay lives {per_turn:.2} s a turn");
}

/// Under an organisation request-rate limit calls are lost; each is told by what happened to
/// it, the chains summing to the lost and duplicated counts, with one example call each, and
/// a tool run after its writer gave up is counted apart.
#[test]
fn every_lost_or_doubled_call_is_told_by_its_cause_under_a_rate_limit() {
    let text = r#"
name = "rate"
[workload]
sandboxes = 40
duration = "20m"
seed = 3
[workload.agent]
think = { min = "2s", max = "6s" }
steps_per_turn = 4
user_think = { mean = "20s" }
session_gap = "60s"
[limits.rate]
org_rate = 3.0
org_burst = 20
[[case]]
name = "window-exec"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
limits = "rate"
"#;
    let s = Scenario::parse("rate.toml", text).unwrap();
    let r = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    let c = &r.calls;
    assert!(c.lost > 100, "the rate binds: {c:?}");
    let sum = |m: &std::collections::BTreeMap<String, u64>| m.values().sum::<u64>();
    assert_eq!(sum(&c.causes.lost_by_cause), c.lost, "{:?}", c.causes);
    assert_eq!(sum(&c.causes.duplicated_by_cause), c.duplicated, "{:?}", c.causes);
    // A read the limit rejected: production answers {ok:false}, and that answer, rejected in
    // turn, never reaches the writer.
    let read_failed = c.causes.lost_by_cause.keys().find(|k| k.starts_with("read failed")).expect("a failed read");
    for chain in c.causes.lost_by_cause.keys().chain(c.causes.duplicated_by_cause.keys()) {
        let example = &c.causes.examples[chain];
        assert!(example.starts_with("sandbox ") && example.contains(" call s"), "{chain}: {example}");
    }
    assert!(c.causes.lost_by_cause[read_failed] > c.lost / 2, "{:?}", c.causes);
}

/// The warm-up's ramp is reported apart: sessions starting together (a burst, with
/// `start_spread`) are a load of their own, and a ramp turn demoted after the warm-up counts
/// in the ramp, never in the measured turns (whose demoted share stays a share).
#[test]
fn the_ramp_is_reported_apart_and_demotions_stay_a_share_of_the_measured_turns() {
    let text = FLEET
        .replace("duration = \"8m\"", "duration = \"8m\"\nwarmup = \"2m\"")
        .replace("session_gap = \"30s\"", "session_gap = \"30s\"\nstart_spread = \"20s\"");
    let s = Scenario::parse("ramp.toml", &text).unwrap();
    for case in &s.cases {
        let r = run_case_virtual(&s, case, &env()).unwrap();
        let f = r.fleet.as_ref().unwrap();
        let ramp = f.ramp.as_ref().expect("a warm-up, so a ramp");
        assert_eq!(ramp.secs, 120.0);
        assert!(ramp.turns_started >= 12, "a burst: every sandbox starts within 20 s: {ramp:?}");
        assert!(ramp.held_execs_max.is_some_and(|h| h >= 1), "{ramp:?}");
        assert!(f.turns.demoted <= f.turns.started, "{:?}", f.turns);
        assert!(f.turns.demoted_pct <= 100.0);
    }
    let plain = Scenario::parse("fleet.toml", FLEET).unwrap();
    let r = run_case_virtual(&plain, &plain.cases[0], &env()).unwrap();
    assert_eq!(r.fleet.unwrap().ramp, None, "no warm-up, no ramp apart");
}

/// A turn promoted back and demoted again (`after_demotion = "retry"`) is one demoted turn:
/// the demoted share is a share of turns, never past 100 %.
#[test]
fn a_turn_demoted_twice_is_one_demoted_turn() {
    let text = FLEET.replace(
        "limits = \"tight\"",
        "limits = \"tight\"\nrunner = { strategy = \"window-exec\", after_demotion = \"retry\" }",
    );
    let text = text.replacen("runner = \"window-exec\"\nwriter = \"watch\"\nlimits", "writer = \"watch\"\nlimits", 1);
    let s = Scenario::parse("retry.toml", &text).unwrap();
    let r = run_case_virtual(&s, &s.cases[1], &env()).unwrap();
    let t = &r.fleet.as_ref().unwrap().turns;
    assert!(t.demoted > 0 && t.demoted <= t.started, "{t:?}");
}
