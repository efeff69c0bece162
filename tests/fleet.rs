//! The fleet in virtual time: agent turns as production runs them (a relay per turn), the
//! remote side's limits and what they do to a fleet (rejections, demotions, the fallback
//! storm), fleet-wide faults and the recovery after them. Nothing lost, nothing doubled.

use relay_bench::{run_case_virtual, CaseEnv, Scenario};

mod common;

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
    let bad = FLEET.replace("seed = 11", "seed = 11\nwarmup_gated = false");
    let e = Scenario::parse("fleet.toml", &bad).unwrap_err();
    assert_eq!(e.key, "workload.warmup_gated", "no warm-up to gate: {e}");
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
    let observed = |m: &str| r.gates.iter().find(|g| g.gate.expr.starts_with(m)).and_then(|g| g.observed);
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

const BURST: &str = r#"
name = "burst"
[workload]
sandboxes = 12
duration = "10m"
warmup = "1m"
seed = 7
[workload.agent]
turns_per_session = 1
steps_per_turn = 2
think = { min = "5s", max = "10s" }
session_gap = { mean = "5m" }
start_spread = "1s"
[limits.tight]
org_held_execs = 4
[[case]]
name = "free"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
gates = ["fleet.worst.held_execs.max >= 12", "fleet.held_execs.max < 12"]
[[case]]
name = "tight"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
limits = "tight"
gates = ["fleet.worst.turns_demoted_pct >= 0", "fleet.warmup.turns_demoted_pct >= 0"]
"#;

/// The value a case's gate on `metric` read.
fn observed(r: &relay_bench::CaseResult, metric: &str) -> Option<f64> {
    r.gates.iter().find(|g| g.gate.expr.starts_with(metric)).and_then(|g| g.observed)
}

/// Every turn of the fleet starts within a second (a deploy): the warm-up holds more execs
/// than the steady state ever does, and under a limit it is when turns are refused and
/// demoted. Its figures are kept beside the steady state's, and the capacity figures
/// (`fleet.worst.*`) read the higher of the two unless the workload says otherwise.
#[test]
fn a_burst_of_turns_peaks_in_the_warmup_and_the_capacity_is_gated_on_it() {
    let s = Scenario::parse("burst.toml", BURST).unwrap();
    let free = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    let f = free.fleet.as_ref().unwrap();
    let warm = f.ramp.as_ref().and_then(|r| r.org.as_ref()).expect("the warm-up's organisation figures");
    assert!(warm.held_execs.max >= 12, "every sandbox's turn at once: {:?}", warm.held_execs);
    assert!(f.held_execs.max < warm.held_execs.max, "steady {:?} vs warm-up {:?}", f.held_execs, warm.held_execs);
    assert!(warm.requests_per_sec.peak_10s > f.requests_per_sec.peak_10s, "the burst's requests too");
    assert!(free.pass, "the worst is the warm-up's: {:?}", free.gates);
    assert_eq!(observed(&free, "fleet.worst.held_execs.max"), Some(warm.held_execs.max as f64));
    let said = &free.gates.iter().find(|g| g.gate.expr.starts_with("fleet.worst")).unwrap().observed_text;
    assert!(said.ends_with(" in the warm-up"), "the gate says which phase: {said}");

    let tight = run_case_virtual(&s, &s.cases[1], &env()).unwrap();
    let t = tight.fleet.as_ref().unwrap();
    let ramp = t.ramp.as_ref().unwrap();
    let rejected = ramp.org.as_ref().unwrap().rejected;
    assert!(rejected >= 8, "12 windows at once against a limit of 4: {rejected} rejected");
    assert!(ramp.turns_demoted_pct.unwrap() > t.turns.demoted_pct, "{ramp:?} vs {:?}", t.turns);
    let worst = observed(&tight, "fleet.worst.turns_demoted_pct");
    assert_eq!(worst, observed(&tight, "fleet.warmup.turns_demoted_pct"));
    assert_eq!(worst, ramp.turns_demoted_pct);

    // The workload opts out: the capacity figures read the steady state; the warm-up's stay.
    let steady = BURST.replace("warmup = \"1m\"", "warmup = \"1m\"\nwarmup_gated = false");
    let s = Scenario::parse("burst.toml", &steady).unwrap();
    let r = run_case_virtual(&s, &s.cases[0], &env()).unwrap();
    assert!(!r.pass, "gated on the steady state, whose peak is under 12: {:?}", r.gates);
    let f = r.fleet.unwrap();
    assert!(f.warmup_ungated && f.ramp.unwrap().org.unwrap().held_execs.max >= 12);
}

/// A per-sandbox held-exec limit binds where a sandbox holds more than it: a turn's window
/// beside the window its previous turn abandoned (held until its own timer ends).
#[test]
fn a_per_sandbox_held_exec_limit_rejects_the_second_window() {
    let text = FLEET
        .replace("org_held_execs = 3", "sandbox_held_execs = 1")
        .replace("gates = [\"fleet.held_execs.max <= 3\"]", "gates = [\"fleet.worst.sandbox_held_execs.max <= 1\"]");
    let s = Scenario::parse("sandbox.toml", &text).unwrap();
    let r = run_case_virtual(&s, &s.cases[1], &env()).unwrap();
    assert!(r.pass, "{:?}", r.gates);
    let f = r.fleet.as_ref().unwrap();
    assert!(f.limits.contains("per sandbox: 1 held execs"), "{}", f.limits);
    assert!(f.rejected > 0 && f.turns.window_failures > 0, "the second window is refused: {:?}", f.turns);
    assert_eq!((r.calls.lost, r.calls.duplicated), (0, 0));
    let roomy = text.replace("sandbox_held_execs = 1", "sandbox_held_execs = 3");
    let s = Scenario::parse("sandbox.toml", &roomy).unwrap();
    let r = run_case_virtual(&s, &s.cases[1], &env()).unwrap();
    assert_eq!(r.fleet.unwrap().rejected, 0, "a sandbox never holds three");
}

const NEEDS: &str = r#"
name = "needs"
[workload]
sandboxes = 4
duration = "6m"
warmup = "1m"
seed = 5
[workload.agent]
session_gap = { mean = "1m" }
start_spread = "10s"
[limits.held]
org_held_execs = 2
[[case]]
name = "cost-window-exec"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
sweep = { "workload.sandboxes" = [12, 4] }
[[case]]
name = "cost-poll-only"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "poll"
writer = "poll"
[[case]]
name = "held"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
limits = "held"
"#;

/// What each fleet size needs, and the tier that covers it: a row per case with no limit,
/// smallest fleet first, each figure the one summary.json holds (the busiest minute and the
/// held-exec peak, warm-up included, with the phase each came from), the tier's number beside
/// its source; the same table again when the report is drawn from summary.json alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_needs_table_renders_from_summary_json() {
    let (summary, out, _relay) = common::run("needs.toml", NEEDS, false, false).await;
    assert_eq!(summary.results.len(), 4);
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap();
    common::check_schema(&json);

    let section = md.split("## What each fleet size needs, and the tier that covers it").nth(1).expect("the section");
    let section = section.split("\n## ").next().unwrap();
    let rows: Vec<&str> = section.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| sandboxes")).collect();
    let cases: Vec<&str> = rows.iter().map(|r| r.split(" | ").nth(1).unwrap()).collect();
    assert_eq!(cases, ["cost-window-exec@sandboxes=4", "cost-poll-only", "cost-window-exec@sandboxes=12"], "{section}");
    for (row, r) in rows.iter().zip(["cost-window-exec@sandboxes=4", "cost-poll-only", "cost-window-exec@sandboxes=12"])
    {
        let case = json["results"].as_array().unwrap().iter().find(|c| c["case"] == r).unwrap();
        let f = &case["fleet"];
        let peak = |v: &serde_json::Value| v["peak_60s"].as_f64().unwrap();
        let (warm, steady) = (peak(&f["ramp"]["org"]["requests_per_sec"]), peak(&f["requests_per_sec"]));
        let busiest = format!(
            "{:.0} ({})",
            warm.max(steady) * 60.0,
            if warm > steady {
                "warm-up"
            } else if warm < steady {
                "steady state"
            } else {
                "both"
            }
        );
        assert!(row.contains(&busiest), "{busiest}: {row}");
        let mean = format!("| {:.0} |", f["requests_per_sec"]["mean_per_sec"].as_f64().unwrap() * 60.0);
        assert!(row.contains(&mean), "{mean}: {row}");
        let held =
            f["held_execs"]["max"].as_u64().unwrap().max(f["ramp"]["org"]["held_execs"]["max"].as_u64().unwrap());
        assert!(row.contains(&format!("| {held} (")), "{held}: {row}");
        assert!(row.contains("tier 1 (10,000/min)"), "a small fleet fits tier 1: {row}");
    }
    assert!(rows[1].ends_with("| none needed: it holds no exec |"), "polling holds none: {}", rows[1]);
    assert!(rows[0].ends_with("| not documented (assumed) |"), "{}", rows[0]);
    assert!(section.contains("**tier 4**: 50,000 requests a minute; source: Daytona's published limits"), "{section}");
    assert!(section.contains("**held execs**: not documented"), "{section}");
    // The fleet section keeps the warm-up beside the steady state, and the limited case
    // shows what its warm-up refused.
    assert!(md.contains("The warm-up beside the steady state"), "{md}");
    let held = md.lines().find(|l| l.starts_with("| held | 1m / 5m")).expect("the limited case's warm-up row");
    assert!(held.contains("| 2 / 2 |"), "held at the limit in both phases: {held}");
    let refused = &json["results"][3]["fleet"]["ramp"]["org"]["rejected"];
    assert!(refused.as_u64().unwrap() > 0, "four sandboxes' first turns against a limit of 2: {held}");

    // Drawn again from summary.json alone: the same document.
    let again = tempfile::tempdir().unwrap();
    std::fs::copy(out.path().join("summary.json"), again.path().join("summary.json")).unwrap();
    // The charts' interval logs beside it, as a run directory holds them.
    for case in std::fs::read_dir(out.path().join("hdr")).unwrap().flatten() {
        let to = again.path().join("hdr").join(case.file_name());
        std::fs::create_dir_all(&to).unwrap();
        for f in std::fs::read_dir(case.path()).unwrap().flatten() {
            std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
        }
    }
    relay_bench::rerender(again.path()).unwrap();
    assert_eq!(std::fs::read_to_string(again.path().join("summary.md")).unwrap(), md);
}

/// Under a request rate too low for the fleet, reads fail and a runner sets out an error
/// answer, its request left on disk: a later turn picks it up and answers it again. That
/// second answer is a duplicate of the call (counted, with its cause), however many turns
/// later it comes, never an unpaired stranger: the pairing check lets a turn's calls go when
/// the turn ends, but not one whose request is still on disk.
#[test]
fn a_request_left_on_disk_answered_turns_later_is_a_duplicate_not_a_stranger() {
    let t = tempfile::tempdir().unwrap();
    // The decision map's probe below the boundary, run whole: a sweep's point, not a search's
    // probe (which stops at its first lost call).
    let map = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/decision-map.toml")).unwrap();
    let (search, sweep) = (
        r#"search = { path = "limits.org_rate", from = 20.5, to = 21.5, precision = "5%" }"#,
        r#"sweep = { "workload.sandboxes" = [100] }"#,
    );
    let at = map.find(search).expect("rate-100's search");
    let from = map[..at].rfind(sweep).expect("rate-100's sweep");
    let point = r#"sweep = { "workload.sandboxes" = [100], "limits.org_rate" = [20.5] }"#;
    let whole = [&map[..from], point, &map[from + sweep.len()..at], &map[at + search.len()..]].concat();
    let file = t.path().join("decision-map.toml");
    std::fs::write(&file, whole).unwrap();
    let out = std::process::Command::new(common::BIN)
        .arg("run")
        .arg(&file)
        .args(["--case", "rate-100", "--no-event-log", "--quiet", "--out"])
        .arg(t.path().join("r"))
        .output()
        .unwrap();
    assert!(out.status.code().is_some_and(|c| c <= 1), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("r/summary.json")).unwrap()).unwrap();
    let below =
        json["results"].as_array().unwrap().iter().find(|r| r["case"].as_str().unwrap().ends_with("=20.5")).unwrap();
    let by_kind = &below["pairing_violations"]["by_kind"];
    let duplicated = below["calls"]["duplicated"].as_u64().unwrap();
    assert!(duplicated > 0, "the limit below the boundary makes duplicates: {by_kind}");
    assert_eq!(by_kind["unpaired_response"], 0, "{by_kind}");
    assert_eq!(by_kind["duplicate_response"].as_u64(), Some(duplicated), "{by_kind}");
    let again = "read failed → error answer set out, request left on disk → picked up again → answered again";
    assert_eq!(below["calls"]["duplicated_by_cause"][again].as_u64(), Some(duplicated), "{below}");
}
