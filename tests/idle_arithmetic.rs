//! Known answers for the idle figure: production's window-exec, left idle for an hour on the
//! virtual clock behind the `proxy` profile, costs what the arithmetic of its cycle says
//! (`relay_bench::idle_cost`: an exec and a list per jittered window, plus a safety list for
//! each safety wait a window outlasts) within 2 %, at every window the rollout gate's sweeps
//! visit; and a window past the 30 s safety wait shows its safety lists in the counts.

use std::time::Duration;

use relay_bench::{idle_cost, run_case_virtual, CaseEnv, Scenario, WindowConfig};

/// Eight sandboxes, a minute of turns, then an hour with none: the idle phase is the
/// steady state (about 66 to 720 windows a dir).
const SCENARIO: &str = r#"
name = "idle-arithmetic"
gates = ["lost == 0"]

[workload]
sandboxes = 8
arrival = "constant"
calls_per_turn = 3
seed = 7

[[workload.phase]]
duration = "60s"
turns_per_sec = 6

[[workload.phase]]
duration = "60m"
turns_per_sec = 0

[handler]
duration = "5ms"
duration_max = "20ms"

[[case]]
name = "window-exec"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
sweep = { "runner.window" = ["5s", "10s", "25s", "28s", "35s", "40s", "60s"] }

[[case]]
name = "quiet-idle"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = { strategy = "window-exec", idle_wake = false }
writer = "watch"
"#;

fn env() -> CaseEnv {
    CaseEnv::quiet()
}

#[test]
fn the_steady_idle_figure_is_the_arithmetic_within_2_percent() {
    let s = Scenario::parse("idle-arithmetic.toml", SCENARIO).unwrap();
    let mut checked = Vec::new();
    for case in &s.cases {
        let r = run_case_virtual(&s, case, &env()).unwrap();
        assert!(r.pass, "{}: {:?}", r.case, r.gates);
        let window = match r.case.split_once("@window=") {
            Some((_, w)) => w.trim_end_matches('s').parse::<u64>().unwrap(),
            None => 25,
        };
        let cfg = WindowConfig {
            window: Duration::from_secs(window),
            idle_wake: r.case != "quiet-idle",
            ..WindowConfig::default()
        };
        // The daemon's mean round trip, as this case paid it: two mean legs.
        let leg = r.injected_leg_us.as_ref().expect("a remote case measures its legs").mean;
        let rtt = Duration::from_secs_f64(2.0 * leg / 1e6);
        let expected = idle_cost(&cfg, Duration::from_secs(30), rtt).unwrap();
        let measured = r.requests.idle_phases.discovery_per_min;
        let off = (measured - expected.discovery_per_min()) / expected.discovery_per_min();
        checked.push(format!(
            "{}: {measured:.3} against {:.3} ({:+.2} %)",
            r.case,
            expected.discovery_per_min(),
            off * 100.0
        ));
        assert!(off.abs() < 0.02, "{}", checked.join("\n"));
        // A window whose jittered span passes the safety wait (with the exec's round trip)
        // makes safety lists while it is held; one that ends first makes none.
        let past = expected.safety_lists_per_min > 0.0;
        assert_eq!(r.runner.safety_lists > 0, past || r.case == "quiet-idle", "{}: {:?}", r.case, r.runner);
    }
    eprintln!("{}", checked.join("\n"));
    assert_eq!(checked.len(), 8, "{checked:?}");
}
