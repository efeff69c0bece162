//! The instant-wake storm of a request the daemon cannot read (`read-fails`), on the virtual
//! clock: it storms, it ends when the file goes (the writer's delete after the `{ok:false}`
//! answer, or the next turn's sweep), and under an organisation's request-rate limit it costs
//! the other sandboxes. Every figure asserted is a count of the run; the bounds are ratios.

use relay_bench::{run_case_virtual, CaseEnv, CaseResult, Scenario};

fn env() -> CaseEnv {
    CaseEnv::quiet()
}

fn run(s: &Scenario, name: &str) -> CaseResult {
    let case = s.cases.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no case {name}"));
    run_case_virtual(s, case, &env()).unwrap()
}

#[test]
fn a_request_left_unreadable_storms_until_the_file_is_gone() {
    let s = Scenario::load("storm").unwrap();
    // Its {ok:false} answer written: the writer reads it and deletes both files.
    let r = run(&s, "answered");
    assert!(r.pass, "{:?}", r.gates.iter().filter(|g| !g.pass).collect::<Vec<_>>());
    let st = r.faults[0].storm.as_ref().expect("a storm row");
    assert_eq!((st.requests, st.reads_failed, st.answers_failed), (1, 1, 0), "{st:?}");
    let (from, until) = (st.from_secs.expect("a read failed"), st.until_secs.expect("the writer deleted it"));
    assert!(from >= 61.0 && until > from && until - from < 1.0, "within the answer's round trips: {st:?}");
    assert!(st.execs_per_sec >= 10.0 * st.before_execs_per_sec, "windows re-armed at network speed: {st:?}");
    assert!(r.calls.error >= 1 && r.calls.lost == 0, "the struck call is answered with the error: {:?}", r.calls);

    // Its answer cannot be written either: the writer gives up at its deadline and leaves the
    // file (production's writer deletes only after an answer), so it storms to the end.
    let r = run(&s, "unanswered");
    let st = r.faults[0].storm.as_ref().expect("a storm row");
    assert!(st.answers_failed >= 1, "{st:?}");
    assert_eq!(st.until_secs, None, "still on disk at the end: {st:?}");
    assert!(st.stormed_secs > 60.0, "past the writer's 60 s deadline: {st:?}");
    assert!(st.per_sec >= 10.0 * st.before_per_sec, "requests: {st:?}");
    assert!(st.execs_per_sec >= 20.0 * st.before_execs_per_sec, "windows: {st:?}");
    let (requests, windows) = st.ratios();
    assert!(requests.unwrap() >= 10.0 && windows.unwrap() >= 20.0, "{st:?}");
    assert_eq!(r.calls.lost, 1, "the struck call timed out, nothing else: {:?}", r.calls);
    assert_eq!(r.leftover_files, 1, "its request left on disk");
    // Unlimited, the other sandboxes lose nothing to it.
    assert_eq!((st.others_rejected, st.others_demoted, st.others_failed), (0, 0, 0), "{st:?}");
}

#[test]
fn under_an_organisation_rate_limit_the_storm_costs_the_other_sandboxes() {
    let s = Scenario::load("storm").unwrap();
    let quiet = run(&s, "rate-limit");
    let stormy = run(&s, "rate-limit-unanswered");
    let (q, f) = (quiet.fleet.as_ref().unwrap(), stormy.fleet.as_ref().unwrap());
    assert!(f.rejected >= 5 * q.rejected.max(1), "the organisation rejected {} against {}", f.rejected, q.rejected);
    let st = stormy.faults[0].storm.as_ref().expect("a storm row");
    assert!(st.rejected > 0 && st.others_rejected > 0, "{st:?}");
    assert!(
        st.others_rejected_per_sec >= 3.0 * st.others_rejected_per_sec_before,
        "the others' rejections per second rise: {st:?}"
    );
    assert!(
        f.turns.window_failures > 2 * q.turns.window_failures,
        "{} against {}",
        f.turns.window_failures,
        q.turns.window_failures
    );
    // The limit throttles the storm itself: fewer windows than unlimited, still many more than before.
    assert!(st.execs_per_sec >= 5.0 * st.before_execs_per_sec, "{st:?}");
    // Production tries an answer once: the limit the storm fills rejects the other sandboxes'
    // answers, and their calls are lost (the limit alone loses a few).
    assert_eq!(stormy.calls.duplicated, 0, "{:?}", stormy.calls);
    assert!(
        stormy.calls.lost > 10 * quiet.calls.lost.max(1),
        "{} lost against {}",
        stormy.calls.lost,
        quiet.calls.lost
    );
    // Answered, the storm is over before it costs anyone anything.
    let r = run(&s, "rate-limit-answered");
    let st = r.faults[0].storm.as_ref().unwrap();
    assert!(st.until_secs.is_some() && st.others_rejected == 0, "{st:?}");
}

const TURNS: &str = r#"
name = "storm-turns"
[workload]
sandboxes = 2
duration = "4m"
seed = 11
[workload.agent]
turns_per_session = 3
steps_per_turn = 4
calls_per_step = 1
think = "3s"
user_think = "20s"
session_gap = "30s"
start_spread = "16s"
[handler]
duration = "5ms"
duration_max = "20ms"
[[case]]
name = "unanswered"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "read-fails"
at = "40s"
duration = "40s"
answer = "fails"
"#;

#[test]
fn with_agent_turns_the_storm_ends_with_its_turn_and_the_next_sweep_deletes_the_file() {
    let s = Scenario::parse("storm-turns.toml", TURNS).unwrap();
    let r = run(&s, "unanswered");
    let st = r.faults[0].storm.as_ref().expect("a storm row");
    assert!(st.requests >= 1, "the fault struck a request: {st:?}");
    let until = st.until_secs.expect("a later turn's sweep deleted it");
    // No relay lives between turns: the file waits, nothing storms, until the next turn.
    assert!(st.stormed_secs + 1.0 < st.lasted_secs, "{st:?}");
    assert!(st.stormed_secs > 60.0, "its turn waited out the writer's deadline: {st:?}");
    assert!(until > st.from_secs.unwrap() + 60.0, "{st:?}");
    assert!(st.execs_per_sec >= 10.0 * st.before_execs_per_sec, "{st:?}");
    assert_eq!(r.calls.duplicated, 0, "the sweep deleted it: no later turn ran it");
}
