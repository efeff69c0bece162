//! The scenario parser's tests: every error names the file, the key and what is allowed.

use super::*;
use std::time::Duration;

const GOOD: &str = r#"
name = "t"
gates = ["lost == 0"]
[workload]
sandboxes = 2
duration = "2s"
turns_per_sec = 5
calls_per_turn = 3
[[case]]
name = "p"
runner = { strategy = "poll", interval = "50ms" }
writer = "watch"
gates = ["pickup.p50 < 10ms"]
"#;

fn err(text: &str) -> ScenarioError {
    Scenario::parse("s.toml", text).unwrap_err()
}

#[test]
fn shipped_scenarios_parse() {
    for (name, text) in SHIPPED {
        let s = Scenario::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.cases.is_empty());
    }
}

#[test]
fn a_good_scenario() {
    let s = Scenario::parse("s.toml", GOOD).unwrap();
    assert_eq!(s.workload.calls_per_turn, 3);
    let c = &s.cases[0];
    assert_eq!(c.runner.name(), "poll");
    assert_eq!(c.runner.departures(), vec!["interval = 50.0ms".to_owned()]);
    assert!(c.runner.params().starts_with("poll 50.0ms"), "{}", c.runner.params());
    assert_eq!(c.writer.name(), "watch");
    let exprs: Vec<&str> = c.gates.iter().map(|g| g.expr.as_str()).collect();
    assert_eq!(
        exprs,
        [
            "lost == 0",
            "duplicated == 0",
            "pairing_violations == 0",
            "leftover_files == 0",
            "completed > 0",
            "pickup.p50 < 10ms"
        ],
        "scenario gates, the invariants not already gated, then the case's own"
    );
}

#[test]
fn a_case_that_expects_breaches_has_no_invariants() {
    let text = GOOD.replace("[[case]]\n", "[[case]]\nexpect_breaches = true\n");
    let s = Scenario::parse("s.toml", &text).unwrap();
    let exprs: Vec<&str> = s.cases[0].gates.iter().map(|g| g.expr.as_str()).collect();
    assert_eq!(exprs, ["lost == 0", "pickup.p50 < 10ms"], "only what the scenario says");
}

#[test]
fn unknown_key_names_file_key_and_allowed() {
    let e = err(&GOOD.replace("sandboxes = 2", "sandboxes = 2\nsandbox_count = 3"));
    assert_eq!(e.file, "s.toml");
    assert_eq!(e.key, "workload.sandbox_count");
    assert!(e.msg.contains("allowed here:") && e.msg.contains("sandboxes"), "{e}");
}

#[test]
fn bad_duration_is_named() {
    let e = err(&GOOD.replace("\"2s\"", "\"2 fortnights\""));
    assert_eq!(e.key, "workload.duration");
    assert!(e.msg.contains("unknown unit"), "{e}");
    let e = err(&GOOD.replace("\"2s\"", "2"));
    assert!(e.msg.contains("expected a duration string"), "{e}");
}

#[test]
fn unknown_strategy_lists_the_allowed_ones() {
    let e = err(&GOOD.replace("writer = \"watch\"", "writer = \"carrier-pigeon\""));
    assert_eq!(e.key, "case[0].writer");
    assert!(e.msg.contains("poll, watch"), "{e}");
    let e = err(&GOOD.replace("strategy = \"poll\"", "strategy = \"telepathy\""));
    assert_eq!(e.key, "case[0].runner.strategy");
}

#[test]
fn a_setting_that_does_not_apply_is_refused() {
    let e = err(&GOOD.replace("writer = \"watch\"", "writer = { strategy = \"watch\", interval = \"10ms\" }"));
    assert_eq!(e.key, "case[0].writer.interval");
    assert!(e.msg.contains("safety_interval"), "{e}");
}

#[test]
fn gate_on_unknown_metric() {
    let e = err(&GOOD.replace("pickup.p50 < 10ms", "speed.p50 < 10ms"));
    assert_eq!(e.key, "case[0].gates");
    assert!(e.msg.contains("unknown metric") && e.msg.contains("discovery_per_min"), "{e}");
}

#[test]
fn syntax_errors_and_missing_parts() {
    assert_eq!(err("name = ").key, "(syntax)");
    assert_eq!(err("name = \"x\"").key, "workload");
    let e = err(&GOOD.replace("[[case]]\nname = \"p\"", "[[case]]\nname = \"p q\""));
    assert_eq!(e.key, "case[0].name");
    let no_cases = GOOD.split("[[case]]").next().unwrap();
    assert_eq!(err(no_cases).key, "case");
}

#[test]
fn a_fault_that_happens_once_takes_no_duration() {
    let burst = "[[case.fault]]\nkind = \"burst\"\nat = \"1s\"\ncalls = 4\n";
    let ok = format!("{GOOD}{burst}");
    assert_eq!(Scenario::parse("s.toml", &ok).unwrap().cases[0].faults.len(), 1);
    let e = err(&format!("{ok}duration = \"1s\"\n"));
    assert!(e.key.ends_with("duration") && e.msg.contains("happens once"), "{e}");
    assert_eq!(crate::scenario::fault::actions(&Scenario::parse("s.toml", &ok).unwrap().cases[0].faults).len(), 1);
}

#[test]
fn two_identical_faults_in_one_case_are_refused() {
    let fault = "[[case.fault]]\nkind = \"burst\"\nat = \"1s\"\ncalls = 4\n";
    let e = err(&format!("{GOOD}{fault}{fault}"));
    assert_eq!(e.key, "case[0].fault", "{e}");
    assert!(e.msg.starts_with("two identical faults (burst at 1.00s on sandbox 0)"), "{e}");
    let later = fault.replace("calls = 4", "calls = 5");
    assert_eq!(Scenario::parse("s.toml", &format!("{GOOD}{fault}{later}")).unwrap().cases[0].faults.len(), 2);
}

#[test]
fn a_runner_that_reads_the_dir_itself_needs_a_local_host_and_a_black_box_the_real_clock() {
    let remote_watch = GOOD.replace(
        "runner = { strategy = \"poll\", interval = \"50ms\" }",
        "host = \"remote\"\nprofile = \"lan\"\nrunner = \"watch\"",
    );
    let e = err(&remote_watch);
    assert!(e.key.ends_with("runner") && e.msg.contains("host = \"local\""), "{e}");
    let virtual_black_box = GOOD.replace(
        "runner = { strategy = \"poll\", interval = \"50ms\" }",
        "clock = \"virtual\"\nrunner = { command = [\"true\"] }",
    );
    let e = err(&virtual_black_box);
    assert!(e.key.ends_with("runner") && e.msg.contains("clock = \"real\""), "{e}");
}

#[test]
fn a_schedule_too_large_to_build_is_refused_before_anything_is_allocated() {
    let huge = GOOD
        .replace("turns_per_sec = 5", "turns_per_sec = 100000")
        .replace("calls_per_turn = 3", "calls_per_turn = 1000");
    let e = err(&huge);
    assert_eq!((e.file.as_str(), e.key.as_str()), ("s.toml", "workload"));
    assert!(e.msg.contains("200000000 calls") && e.msg.contains("at most 10000000 calls per case"), "{e}");
    assert!(e.msg.contains("calls_per_turn 1000") && e.msg.contains("200000 turns"), "{e}");
    // Phases add up; an idle phase adds nothing.
    let phased = r#"
name = "t"
[workload]
calls_per_turn = 1000
[[workload.phase]]
duration = "1h"
turns_per_sec = 3
[[workload.phase]]
duration = "1h"
[[case]]
name = "p"
runner = "poll"
writer = "poll"
"#;
    let e = err(phased);
    assert!(e.msg.contains("10800000 calls (10800 turns over 7200.00s"), "{e}");
    let at_cap = GOOD
        .replace("turns_per_sec = 5", "turns_per_sec = 100000")
        .replace("calls_per_turn = 3", "calls_per_turn = 50");
    assert_eq!(
        Scenario::parse("s.toml", &at_cap).unwrap().workload.planned_calls(),
        crate::scenario::pacer::MAX_CALLS_PER_CASE
    );
    // A burst's calls count too.
    let burst = format!("{at_cap}[[case.fault]]\nkind = \"burst\"\nat = \"1s\"\ncalls = 2\n");
    let e = err(&burst);
    assert_eq!(e.key, "case[0].fault", "{e}");
    assert!(e.msg.contains("2 burst calls make 10000002"), "{e}");
}

#[test]
fn a_follow_runner_needs_a_host_that_can_follow_a_process() {
    let text = GOOD
        .replace("[[case]]\n", "[[case]]\nhost = \"sandbox-agent\"\n")
        .replace("runner = { strategy = \"poll\", interval = \"50ms\" }", "runner = \"follow\"");
    let e = err(&text);
    assert_eq!(e.key, "case[0].runner", "{e}");
    assert!(e.msg.contains("follow follows a process's output, which the sandbox-agent host cannot"), "{e}");
}

#[test]
fn a_scenario_holds_at_most_a_thousand_cases() {
    let case = |i: usize| format!("[[case]]\nname = \"c{i}\"\nrunner = \"poll\"\nwriter = \"poll\"\n");
    let head = GOOD.split("[[case]]").next().unwrap();
    let many = |n: usize| head.to_owned() + &(0..n).map(case).collect::<String>();
    assert_eq!(Scenario::parse("s.toml", &many(MAX_CASES)).unwrap().cases.len(), MAX_CASES);
    let e = err(&many(MAX_CASES + 1));
    assert_eq!(e.key, "case");
    assert!(e.msg.contains("1001 cases; allowed: at most 1000 per scenario"), "{e}");
}

#[test]
fn scenario_and_case_names_stay_one_plain_file_name() {
    let named = |n: &str| GOOD.replace("[[case]]\nname = \"p\"", &format!("[[case]]\nname = {}", toml::Value::from(n)));
    for bad in [".", "..", "../x", "a/b", "a\\b", "", "-rf", ".hidden", "a\nb", "tab\t", "\u{7f}", "é"] {
        let e = err(&named(bad));
        assert_eq!(e.key, "case[0].name", "{bad:?}");
        assert!(e.msg.contains("is not allowed; allowed: letters A-Z a-z, digits 0-9, - _ ."), "{e}");
    }
    assert!(err(&named(&"x".repeat(MAX_NAME + 1))).msg.contains("at most 100 characters"));
    let e = err(&GOOD.replace("name = \"t\"", "name = \"../../t\""));
    assert_eq!(e.key, "name", "the scenario's name becomes its report directory's: {e}");
    for good in ["p", "poll-50ms", "v1.2", "_x", "A_b-c.d", &"x".repeat(MAX_NAME)] {
        assert_eq!(Scenario::parse("s.toml", &named(good)).unwrap().cases[0].name, good);
    }
}

#[test]
fn missing_file_says_what_to_give() {
    let e = Scenario::load("/nonexistent/x.toml").unwrap_err();
    assert!(e.msg.contains("default"), "{e}");
}

#[test]
fn the_in_sandbox_side_takes_only_what_it_can_produce() {
    let agent = |extra: &str| GOOD.replace("[[case]]\n", &format!("[[case]]\nhost = \"sandbox-agent\"\n{extra}"));
    let s = Scenario::parse("s.toml", &agent("in_sandbox = true\n")).unwrap();
    assert_eq!(s.cases[0].host.in_sandbox(), Some("/tmp"));
    assert!(s.source.contains("in_sandbox = true"), "the text goes up to the sandbox as it was read");
    let s = Scenario::parse("s.toml", &agent("in_sandbox = true\nsandbox_root = \"/work/x\"\n")).unwrap();
    assert_eq!(s.cases[0].host.in_sandbox(), Some("/work/x"));
    assert_eq!(Scenario::parse("s.toml", &agent("")).unwrap().cases[0].host.in_sandbox(), None);

    let e = err(&agent("sandbox_root = \"/x\"\n"));
    assert_eq!((e.key.as_str(), e.msg.as_str()), ("case[0].sandbox_root", "is read only with in_sandbox = true"));
    let e = err(&agent("in_sandbox = true\nsandbox_root = \"tmp\"\n"));
    assert!(e.msg.contains("must be an absolute path in the sandbox"), "{e}");
    let fault = |kind: &str| format!("[[case.fault]]\nkind = \"{kind}\"\nat = \"1s\"\n");
    let e = err(&(agent("in_sandbox = true\nprofile = \"proxy\"\n") + &fault("dir-replaced")));
    assert_eq!(e.key, "case[0].fault", "{e}");
    assert!(e.msg.contains("only proxy-disconnect, proxy-blackhole and stop-during-window"), "{e}");
    Scenario::parse("s.toml", &(agent("in_sandbox = true\nprofile = \"proxy\"\n") + &fault("proxy-disconnect")))
        .unwrap();
    // A pause is told to the writer out of band: not to one in the sandbox.
    let paused = agent("in_sandbox = true\n").replace("[[case]]", "[handler]\npause_ratio = 0.1\n[[case]]");
    let e = err(&paused);
    assert_eq!(e.key, "case[0].in_sandbox", "{e}");
}

#[test]
fn a_daemon_relay_bench_did_not_start_is_not_restarted_or_paused_by_it() {
    let text = GOOD.replace("[[case]]\n", "[[case]]\nhost = \"sandbox-agent\"\nurl = \"http://127.0.0.1:9\"\n");
    for kind in ["daemon-restart", "sandbox-pause"] {
        let e = err(&format!("{text}[[case.fault]]\nkind = \"{kind}\"\nat = \"1s\"\n"));
        assert_eq!(e.key, "case[0].fault", "{e}");
        assert!(e.msg.contains("is not restarted or paused by it"), "{e}");
    }
}

#[test]
fn a_blackhole_needs_the_delay_proxy_of_a_real_daemon() {
    let with = |host: &str| {
        GOOD.replace("[[case]]\n", &format!("[[case]]\n{host}"))
            + "[[case.fault]]\nkind = \"proxy-blackhole\"\nat = \"1s\"\nduration = \"500ms\"\n"
    };
    let e = err(&with(""));
    assert!(e.msg.contains("proxy-blackhole needs host = \"sandbox-agent\""), "{e}");
    let e = err(&with("host = \"remote\"\nprofile = \"proxy\"\n"));
    assert!(e.msg.contains("the emulated daemon has no wire"), "{e}");
    let e = err(&with("host = \"sandbox-agent\"\n"));
    assert!(e.msg.contains("give the case a latency profile"), "{e}");
    let s = Scenario::parse("s.toml", &with("host = \"sandbox-agent\"\nprofile = \"proxy\"\n")).unwrap();
    assert_eq!(s.cases[0].faults[0].duration, Duration::from_millis(500));
}

#[test]
fn a_read_fails_fault_needs_the_emulated_daemon_and_strikes_one_sandbox() {
    let with = |host: &str, extra: &str| {
        GOOD.replace("[[case]]\n", &format!("[[case]]\n{host}"))
            + &format!("[[case.fault]]\nkind = \"read-fails\"\nat = \"1s\"\n{extra}")
    };
    let remote = "host = \"remote\"\nprofile = \"proxy\"\n";
    let s = Scenario::parse("s.toml", &with(remote, "answer = \"fails\"\n")).unwrap();
    let f = &s.cases[0].faults[0];
    assert!(f.answer_fails && f.duration == Duration::from_secs(1), "{f:?}");
    assert!(!Scenario::parse("s.toml", &with(remote, "")).unwrap().cases[0].faults[0].answer_fails);
    for host in ["", "host = \"sandbox-agent\"\n"] {
        let e = err(&with(host, ""));
        assert_eq!(e.key, "case[0].fault", "{e}");
        assert!(e.msg.contains("read-fails fails the emulated daemon's file reads: use host = \"remote\""), "{e}");
    }
    let e = err(&with(remote, "sandbox = \"all\"\n"));
    assert!(e.key.ends_with("sandbox") && e.msg.contains("strikes one sandbox"), "{e}");
    let e = err(&(GOOD.replace("[[case]]\n", &format!("[[case]]\n{remote}"))
        + "[[case.fault]]\nkind = \"exec-fail\"\nat = \"1s\"\nanswer = \"fails\"\n"));
    assert!(e.key.ends_with("answer") && e.msg.contains("only to kind = \"read-fails\""), "{e}");
}

#[test]
fn rollout_gates_are_declared_for_every_case_or_per_case_and_kept_apart_from_gates() {
    let text = GOOD
        .replace("gates = [\"lost == 0\"]\n", "gates = [\"lost == 0\"]\nrollout = [\"pickup.p50 < 150ms\"]\n")
        .replace(
            "gates = [\"pickup.p50 < 10ms\"]",
            "rollout = [\"idle_phase_discovery_per_min <= 5\", \"pickup.p50 < 150.0ms\"]",
        );
    let s = Scenario::parse("s.toml", &text).unwrap();
    let c = &s.cases[0];
    let exprs: Vec<&str> = c.rollout.iter().map(|g| g.expr.as_str()).collect();
    assert_eq!(
        exprs,
        ["pickup.p50 < 150ms", "idle_phase_discovery_per_min <= 5"],
        "the scenario's, then the case's own; one of a test"
    );
    assert!(c.gates.iter().all(|g| !g.expr.contains("idle_phase")), "rollout gates are not the case's gates");
    let e = err(&text.replace("pickup.p50 < 150ms\"]\n[workload]", "speed < 1\"]\n[workload]"));
    assert_eq!(e.key, "rollout");
    let e = err(&GOOD.replace("gates = [\"pickup.p50 < 10ms\"]", "rollout = [\"vs_baseline.pickup_p50 <= 1.1\"]"));
    assert_eq!(e.key, "case[0].rollout");
    assert!(e.msg.contains("needs a baseline case"), "{e}");
}

#[test]
fn the_shipped_rollout_scenarios_declare_their_rollout_gates_and_the_others_none() {
    for (name, text) in SHIPPED {
        let s = Scenario::parse(name, text).unwrap();
        let declared = s.cases.iter().chain(s.probes.iter().map(|(_, p)| p)).any(|c| !c.rollout.is_empty());
        assert_eq!(
            declared,
            ["rollout-gate", "fleet-capacity", "decision-map", "window-sweep"].contains(name),
            "{name}"
        );
    }
    let s = Scenario::load("rollout-gate").unwrap();
    for c in &s.cases {
        // The agent-turn points measure a cost beside the verdict (`rollout = false`).
        let judged = if c.name.starts_with("window-exec-turns@") { 0 } else { 2 };
        assert_eq!(c.rollout.len(), judged, "{}", c.name);
    }
}

fn with(clock: Option<Clock>, length: Option<Length>, seed: Option<u64>, sandboxes: Option<u32>) -> Overrides {
    Overrides { clock, length, seed, sandboxes, ..Default::default() }
}

#[test]
fn overrides_apply_where_the_file_is_read_and_are_recorded() {
    let ov = with(Some(Clock::Virtual), Some(Length::To(Duration::from_secs(360))), Some(9), Some(2));
    let s = Scenario::load_with("request-budget", &ov).unwrap();
    assert!(s.cases.iter().all(|c| c.clock == Clock::Virtual));
    let wl = &s.workload;
    assert_eq!(wl.duration(), Duration::from_secs(360));
    let phases: Vec<Duration> = wl.phases.iter().map(|p| p.duration).collect();
    let (busy, idle) = (Duration::from_secs(30), Duration::from_secs(150));
    assert_eq!(phases, [busy, idle, busy, idle], "each phase scaled alike");
    assert_eq!((wl.seed, wl.sandboxes, s.handler.seed), (9, 2, 9));
    let a = s.overrides.as_ref().unwrap();
    assert_eq!(a.given, ["--clock virtual", "--duration 6m", "--seed 9", "--sandboxes 2"]);
    assert_eq!((a.scale, a.schedule_secs), (Some(0.1), Some(3600.0)));
    let warm = Scenario::load_with("rollout-gate", &with(None, Some(Length::Scale(0.5)), None, None)).unwrap();
    assert_eq!(warm.workload.warmup, Duration::from_secs(1), "a warm-up scaled with its schedule");
    // A fault strikes at the same share of a scaled schedule.
    let s = Scenario::load_with("faults", &with(None, Some(Length::Scale(0.5)), None, None)).unwrap();
    let plain = Scenario::load("faults").unwrap();
    assert_eq!(s.cases[0].faults[0].at * 2, plain.cases[0].faults[0].at);
    assert!(Scenario::load("rollout-gate").unwrap().overrides.is_none());
}

#[test]
fn an_override_that_cannot_apply_is_refused_naming_the_flag_the_case_and_why() {
    let e = Scenario::load_with("real-daemon", &with(Some(Clock::Virtual), None, None, None)).unwrap_err();
    assert_eq!(e.key, "--clock virtual");
    assert!(e.msg.starts_with("cannot apply to case \"daemon-poll\""), "{e}");
    assert!(e.msg.ends_with("the sandbox-agent host runs on the real clock only"), "{e}");
    let e = Scenario::load_with("faults", &with(Some(Clock::Real), None, None, None)).unwrap_err();
    assert_eq!(e.key, "--clock real");
    assert!(e.msg.contains("can only be produced in the in-memory sandbox (the virtual clock)"), "{e}");
    let e = Scenario::load_with("request-budget", &with(None, None, None, Some(0))).unwrap_err();
    assert!(e.key == "--sandboxes 0" && e.msg.contains("allowed: 1 to"), "{e}");
    let e = Scenario::load_with("request-budget", &with(None, Some(Length::Scale(1e9)), None, None)).unwrap_err();
    assert!(e.msg.contains("at most 1000"), "{e}");
    // The file's own errors stay the file's.
    let e = Scenario::parse_with(
        "s.toml",
        &GOOD.replace("sandboxes = 2", "sandboxes = 0"),
        &with(None, None, Some(1), None),
    )
    .unwrap_err();
    assert_eq!(e.key, "workload.sandboxes");
}

#[test]
fn a_typo_gets_a_did_you_mean_and_another_word_none() {
    // A key, a value, a strategy, a gate metric, a scenario name.
    let e = err(&GOOD.replace("sandboxes = 2", "sandboxs = 2"));
    assert!(e.msg.starts_with("unknown key (did you mean \"sandboxes\"?); allowed here:"), "{e}");
    let e = err(&GOOD.replace("sandboxes = 2", "sandboxes = 2\narrival = \"posson\""));
    assert!(e.msg.starts_with("unknown value \"posson\" (did you mean \"poisson\"?); allowed:"), "{e}");
    let e = err(&GOOD.replace("writer = \"watch\"", "writer = \"wacth\""));
    assert!(e.msg.starts_with("unknown strategy \"wacth\" (did you mean \"watch\"?); allowed:"), "{e}");
    let e = err(&GOOD.replace("pickup.p50 < 10ms", "pikcup.p50 < 10ms"));
    assert!(e.msg.contains("unknown metric \"pikcup.p50\" (did you mean \"pickup.p50\"?); allowed:"), "{e}");
    let e = err(&GOOD.replace("pickup.p50 < 10ms", "vs_baseline.pickup_p5O < 1.1"));
    assert!(e.msg.contains("did you mean \"vs_baseline.pickup_p50\"?"), "{e}");
    let e = err(&GOOD.replace("pickup.p50 < 10ms", "speed.p50 < 10ms"));
    assert!(!e.msg.contains("did you mean"), "{e}");
    let e = Scenario::load("rolout-gate").unwrap_err();
    assert!(e.msg.contains(" (did you mean \"rollout-gate\"?); give a path"), "{e}");
    let e = Scenario::load("no-such-thing").unwrap_err();
    assert!(!e.msg.contains("did you mean"), "{e}");
}

#[test]
fn the_sandbox_agent_binary_a_command_line_names_is_the_scenarios_own() {
    let text = "name = \"x\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"d\"\nhost = \"sandbox-agent\"\n\
                runner = \"poll\"\nwriter = \"poll\"\n[[case]]\nname = \"own\"\nhost = \"sandbox-agent\"\n\
                binary = \"/bin/cat\"\nrunner = \"poll\"\nwriter = \"poll\"\n";
    let with = |bin: &str| {
        let over = Overrides { sandbox_agent: Some(bin.into()), ..Overrides::default() };
        Scenario::parse_with("x.toml", text, &over).unwrap()
    };
    // Two scenarios of one process, each with the binary it was given; a case's own wins.
    let (a, b) = (with("/bin/sh"), with("/bin/ls"));
    assert!(a.cases[0].host.params().contains("(/bin/sh)"), "{}", a.cases[0].host.params());
    assert!(b.cases[0].host.params().contains("(/bin/ls)"), "{}", b.cases[0].host.params());
    assert!(a.cases[1].host.params().contains("(/bin/cat)"), "{}", a.cases[1].host.params());
}

/// A case may run a workload of its own (`[case.workload]`, whole): its sweep's points run it
/// too, and a workload path of the sweep sets it; the other cases run the scenario's.
#[test]
fn a_case_runs_its_own_workload_and_its_points_too() {
    let text = r#"
name = "own"
[workload]
sandboxes = 2
calls_per_turn = 1
[[workload.phase]]
duration = "10s"
turns_per_sec = 1
[[case]]
name = "plain"
host = "local"
runner = "poll"
writer = "poll"
[[case]]
name = "turns"
host = "local"
runner = "poll"
writer = "poll"
sweep = { "workload.sandboxes" = [3, 4] }
[case.workload]
sandboxes = 5
duration = "2m"
[case.workload.agent]
"#;
    let s = Scenario::parse("own.toml", text).unwrap();
    let by = |n: &str| s.cases.iter().find(|c| c.name == n).unwrap();
    assert_eq!(by("plain").workload.sandboxes, 2);
    assert!(by("plain").workload.agent.is_none());
    assert_eq!(by("turns@sandboxes=3").workload.sandboxes, 3);
    assert_eq!(by("turns@sandboxes=4").workload.sandboxes, 4);
    assert!(by("turns@sandboxes=4").workload.agent.is_some(), "the case's own workload, with the point's value");
    let bad = text.replace("sandboxes = 5", "sandboxes = \"five\"");
    let e = Scenario::parse("own.toml", &bad).unwrap_err();
    assert!(e.key.starts_with("case[1].workload"), "{e}");
}

#[test]
fn the_largest_payload_fits_a_real_runners_cap_in_a_request_and_an_answer() {
    use crate::scenario::workload::MAX_PAYLOAD_BYTES;
    let cap = crate::sandbox::dir::RealDir::DEFAULT_MAX_BYTES as usize;
    let max = MAX_PAYLOAD_BYTES as usize;
    let filler = crate::relay::handler::filler(max);
    // The longest id the suite makes: its largest sandbox, turn, call in a turn and retry.
    let id = format!("s{}-t{}-k{}-c{}", crate::scenario::workload::MAX_SANDBOXES, u64::MAX, u32::MAX, u32::MAX);
    let args = format!("{{\"payload\":\"{filler}\"}}");
    let request = crate::base::protocol::Request::new("bench", &id, Some(&args)).unwrap().encode();
    assert!(request.len() <= cap, "a request of {} bytes past the {cap}-byte cap", request.len());
    let answer = crate::base::protocol::Response::Ok(filler).encode();
    assert!(answer.len() <= cap, "an answer of {} bytes past the cap", answer.len());
    let at = |n: usize| GOOD.replace("[workload]", &format!("[workload]\npayload_bytes = {n}"));
    assert!(Scenario::parse("s.toml", &at(max)).is_ok());
    let e = err(&at(max + 1));
    assert!(e.key == "workload.payload_bytes" && e.msg.contains(&format!("allowed: 0 to {max}")), "{e}");
    let e = err(&at(16 << 20));
    assert!(e.msg.contains("out of range"), "the cap itself leaves no room for the envelope: {e}");
}
