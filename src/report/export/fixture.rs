//! A realistic [`Summary`] for the exporters' tests: the archived rollout-gate run with
//! what a run of today adds.

use crate::record::recorder::{LatencyStats, Measure};
use crate::results::summary::{CaseResult, Summary};
use crate::scenario::gate::Gate;

/// The archived rollout-gate run with what a run of today adds: departures, declared
/// rollout gates that production misses, an option set that meets them, a black-box runner
/// (nothing of its requests or wake measured, a long start-up), a fault, a notice.
pub(crate) fn realistic() -> Summary {
    with_rollout(true)
}

/// [`realistic`] as a run from before verdicts were stored records it: the same gates are
/// the cases' own, and no verdict is stored.
pub(crate) fn inferred() -> Summary {
    with_rollout(false)
}

fn with_rollout(declared: bool) -> Summary {
    let mut s = archived();
    let scenario_wide = ["lost == 0", "duplicated == 0", "pairing_violations == 0", "leftover_files == 0"];
    let judge = |r: &mut CaseResult, own: &[&str]| {
        let parse = |g: &&str| Gate::parse(g).unwrap();
        if declared {
            let gates: Vec<Gate> = scenario_wide.iter().map(parse).collect();
            r.judge(&gates, &own.iter().map(parse).collect::<Vec<_>>());
        } else {
            let gates: Vec<Gate> = scenario_wide.iter().chain(own).map(parse).collect();
            r.judge(&gates, &[]);
        }
    };
    let rollout = ["pickup.p50 < 150ms", "idle_phase_discovery_per_min <= 5.0"];
    for r in s.results.iter_mut() {
        r.departures = Some(match r.case.as_str() {
            "poll-only" => vec!["writer = poll (response watch off)".into()],
            "poll-50ms" => vec!["interval = 50.0ms".into(), "max_interval = 50.0ms".into()],
            "window-exec" => vec![],
            "window-exec-inline" => vec!["inline = true".into()],
            _ => vec!["strategy = follow (a design production rejected)".into()],
        });
    }
    let i = s.results.iter().position(|r| r.case == "window-exec").unwrap();
    let mut quiet = s.results[i].clone();
    let prod = &mut s.results[i];
    prod.requests.idle_phases.discovery_per_min = 5.333;
    prod.runner.startup_ms = 41.7;
    prod.notices.push(crate::strategy::window::WindowFailure::Exit(Some(127)).to_string());
    prod.notices_total += 1;
    prod.faults.push(crate::scenario::fault::FaultRow {
        kind: "exec-fail".into(),
        sandbox: 2,
        at_secs: 60.0,
        until_secs: 70.0,
        detected: "watch failure | exec rejected".into(),
        recovery: "demoted to polling".into(),
        calls: 3,
        failed: 3,
        ..Default::default()
    });
    judge(prod, &rollout);
    quiet.case = "window-exec-quiet-idle".into();
    quiet.departures = Some(vec!["idle_wake = false".into()]);
    quiet.requests.idle_phases.discovery_per_min = 4.63;
    judge(&mut quiet, &rollout);
    let mut black_box = s.results[0].clone();
    black_box.case = "python-poll".into();
    black_box.strategy = "external".into();
    black_box.departures = Some(vec!["runner = external program (not the suite's model of production)".into()]);
    black_box.requests = crate::results::summary::Requests { not_measured: true, ..Default::default() };
    *black_box.measures.get_mut(Measure::Wake) = LatencyStats::default();
    black_box.unavailable = vec!["wake: the runner is a black box".into()];
    black_box.runner.startup_ms = 1020.0;
    judge(&mut black_box, &rollout[1..]);
    for r in s.results.iter_mut().filter(|r| r.case == "window-exec-inline") {
        judge(r, &rollout);
    }
    s.results.insert(i + 1, quiet);
    s.results.push(black_box);
    s.recompute_pass();
    if !declared {
        s.verdict = None;
    }
    s
}

/// The archived run itself, as `summary.json` holds it (no departures recorded).
pub(crate) fn archived() -> Summary {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/archived-run");
    Summary::read(&dir).unwrap()
}
