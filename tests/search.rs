//! A search, end to end on the virtual clock: production's window searched, inside the
//! 30 s safety wait, for the shortest window that meets the idle budget with margin. Its
//! bracket narrows to its precision, every probe is a point of the case with its result,
//! the probes on each side of the boundary say so, and the report says where it lies.

mod common;

const SEARCH: &str = r#"
name = "search"
gates = ["lost == 0"]
rollout = ["pickup.p50 < 150ms", "idle_phase_discovery_per_min <= 5.0"]

[workload]
sandboxes = 4
arrival = "constant"
calls_per_turn = 3
seed = 7

[[workload.phase]]
duration = "60s"
turns_per_sec = 3

[[workload.phase]]
duration = "40m"
turns_per_sec = 0

[handler]
duration = "5ms"
duration_max = "20ms"

[[case]]
name = "window"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
search = { path = "runner.window", from = "FROM", to = "29.5s", precision = "0.25s" }
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_search_narrows_its_bracket_to_the_boundary() {
    for from in ["25s", "28s"] {
        // From 28 s every probe meets: the bracket is widened down toward the boundary.
        let text = SEARCH.replace("FROM", from);
        let (s, out, _relay) = common::run("search.toml", &text, false, false).await;
        let w = &s.sweeps[0];
        let search = w.search.as_ref().expect("a searched case's result");
        let line = &search.lines[0];
        assert_eq!(line.outcome, "found", "from {from}: {line:?}");
        let (miss, meet) = (line.miss.unwrap(), line.meet.unwrap());
        assert!(meet > miss && meet - miss <= 0.25 + 1e-9, "{miss}..{meet}");
        assert_eq!(line.probes, w.points.len());
        // Each side of the boundary as its probe's case measured it.
        let at = |x: f64| {
            let name = format!("window@window={}s", relay_bench_value(x));
            s.results.iter().find(|r| r.case == name).unwrap_or_else(|| panic!("{name} ran"))
        };
        assert!(at(meet).standing().meets_with_margin(), "{:?}", at(meet).rollout);
        assert!(!at(miss).standing().meets_with_margin(), "{:?}", at(miss).rollout);
        // The idle budget is what binds: 5.0 a minute at 26.7 s by arithmetic, so the
        // margin's 2 % puts the boundary near 27.2 s.
        assert!((26.5..28.0).contains(&meet), "{meet}");
        let json = serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap();
        common::check_schema(&json);
        let md = std::fs::read_to_string(out.path().join("summary.md")).unwrap();
        assert!(md.contains("## Search: window along `runner.window`"), "{md}");
        assert!(md.contains(&format!("meets every gate with margin from {} s", relay_bench_value(meet))), "{md}");
    }
}

/// A probe's value as its point names it (`27.15`, `28`).
fn relay_bench_value(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}
