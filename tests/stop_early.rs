//! A search's probe stops at its first lost call past what its `lost` gates allow: no later
//! call could make it pass. The stop falls at the same simulated instant on every run, the
//! probe says where it stopped, its other gates place no boundary (they judged only the part
//! that ran: a point not judged), and a case that is not a probe runs to its end at the same
//! value.

mod common;

const HEAD: &str = r#"
name = "stop-early"
gates = ["lost == 0"]
rollout = ["pickup.p50 < 5s"]

[workload]
sandboxes = 4
arrival = "constant"
calls_per_turn = 1
seed = 11

[[workload.phase]]
duration = "8m"
turns_per_sec = 2

[handler]
duration = "5ms"

[limits.low]
org_rate = 1.0
org_burst = 5
"#;

/// Four sandboxes polling under a request rate they starve at: searched over the rate, and
/// run whole at it.
fn scenario() -> String {
    let case = |name: &str, extra: &str| {
        format!(
            "\n[[case]]\nname = \"{name}\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\n\
             runner = \"poll\"\nwriter = \"poll\"\nlimits = \"low\"\n{extra}\n"
        )
    };
    let search = r#"search = { path = "limits.org_rate", from = 1, to = 200, precision = "50%" }"#;
    [HEAD, &case("probe", search), &case("whole", "")].concat()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_probe_stops_at_its_first_lost_call_and_a_case_runs_whole() {
    let (s, out, _relay) = common::run("stop-early.toml", &scenario(), false, false).await;
    let probe = |x: &str| {
        let name = format!("probe@org_rate={x}");
        s.results.iter().find(|r| r.case == name).unwrap_or_else(|| panic!("{name} ran"))
    };
    let low = probe("1");
    let stop = low.stopped_early.as_ref().expect("the starved probe stops at its first lost call");
    assert_eq!(stop.lost_allowed, 0);
    assert!(stop.at_secs > 0.0 && stop.at_secs < stop.of_secs, "{stop:?}");
    assert!(low.calls.lost >= 1 && !low.interrupted, "{:?}", low.calls);
    assert!(!low.standing().meets_every_gate());
    let high = probe("200");
    assert!(high.stopped_early.is_none() && high.calls.lost == 0, "{:?}", high.calls);
    // Not a probe: the same limit, run to its end.
    let whole = s.results.iter().find(|r| r.case == "whole").unwrap();
    assert!(whole.stopped_early.is_none());
    assert!(whole.calls.lost > low.calls.lost, "{} vs {}", whole.calls.lost, low.calls.lost);
    assert!(whole.window_secs > stop.at_secs);
    // The probes' pickup gate judged only the part that ran: each stopped probe is a point
    // of its boundary not judged, the others judged.
    let verdict = s.verdict.as_ref().unwrap();
    let b = verdict.boundaries.iter().find(|b| b.gate == "pickup.p50 < 5s").expect("the pickup gate's boundary");
    let stopped: Vec<String> = s.results.iter().filter(|r| r.stopped_early.is_some()).map(|r| r.case.clone()).collect();
    for p in &b.points {
        assert_eq!(p.not_judged, stopped.contains(&p.case), "{p:?}");
    }
    assert!(b.points.iter().any(|p| !p.not_judged), "{:?}", b.points);
    let json = serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap();
    common::check_schema(&json);
    let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
    assert!(md.contains("stopped at "), "{md}");

    // The same run again: the probe stops at the same simulated instant.
    let (again, _out, _relay) = common::run("stop-early.toml", &scenario(), false, false).await;
    let low2 = again.results.iter().find(|r| r.case == "probe@org_rate=1").unwrap();
    assert_eq!(low2.stopped_early, low.stopped_early);
    assert_eq!(low2.calls, low.calls);
}

/// A search's first probes run beside the scenario's cases, its later rounds after them:
/// which worker takes what moves no result, a stopped probe's included, nor the event log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_searches_probes_beside_the_cases_move_nothing_under_jobs() {
    let s = relay_bench::Scenario::parse("stop-early.toml", &scenario()).unwrap();
    let mut seen = Vec::new();
    for jobs in [1, 3] {
        let (out, relay) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let opts = relay_bench::RunOptions { jobs, ..common::options(out.path(), relay.path(), false, false) };
        let interrupt = std::sync::Arc::new(relay_bench::Signal::new());
        let summary = relay_bench::run_scenario(&s, &opts, "2026-01-01T00:00:00Z", interrupt).await.unwrap();
        assert!(summary.results.iter().any(|r| r.stopped_early.is_some()));
        let mut json = serde_json::to_value(&summary).unwrap();
        json.as_object_mut().unwrap().remove("environment");
        for r in json["results"].as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("wall_secs");
        }
        let log = std::fs::read(out.path().join("events.ndjson")).unwrap();
        seen.push((jobs, json, log));
    }
    assert!(seen[1].1 == seen[0].1, "--jobs 3 moved a result");
    assert!(seen[1].2 == seen[0].2, "--jobs 3 changed the event log");
}
