use super::*;

#[test]
fn a_lost_gate_says_how_many_lost_calls_it_allows() {
    let allowed = |e: &str| Gate::parse(e).unwrap().lost_allowed();
    assert_eq!(allowed("lost == 0"), Some(0));
    assert_eq!(allowed("lost <= 5"), Some(5));
    assert_eq!(allowed("lost < 3"), Some(2));
    assert_eq!(allowed("lost < 2.5"), Some(2));
    assert_eq!(allowed("lost <= 0.5"), Some(0));
    assert_eq!(allowed("lost < 0"), Some(0), "fails anyway: the first lost call decides nothing new");
    for e in ["lost >= 1", "lost != 0", "duplicated == 0", "completed >= 10", "pickup.p50 < 150ms"] {
        assert_eq!(allowed(e), None, "{e}");
    }
}

#[test]
fn parses_the_issue_examples() {
    let g = Gate::parse("pickup.p50 < 10ms").unwrap();
    assert_eq!(g.metric, Metric::Latency(Measure::Pickup, "p50"));
    assert_eq!(g.op, Op::Lt);
    assert_eq!(g.threshold, 10_000.0);
    assert_eq!(Gate::parse("completion.p99 < 2s").unwrap().threshold, 2e6);
    let g = Gate::parse("lost == 0").unwrap();
    assert_eq!((g.metric, g.op, g.threshold), (Metric::Count(Counter::Lost), Op::Eq, 0.0));
    let g = Gate::parse("discovery_per_min<=5").unwrap();
    assert_eq!((g.metric, g.op, g.threshold), (Metric::Count(Counter::DiscoveryPerMin), Op::Le, 5.0));
}

#[test]
fn rejects_bad_gates_with_the_allowed_values() {
    assert!(Gate::parse("pickup.p50 10ms").unwrap_err().to_string().contains("no comparison"));
    let e = Gate::parse("latency.p50 < 1ms").unwrap_err().to_string();
    assert!(e.contains("unknown metric") && e.contains("pickup.<stat>"), "{e}");
    assert!(Gate::parse("pickup.p42 < 1ms").unwrap_err().to_string().contains("p999"));
    assert!(Gate::parse("pickup.p50 < 10").unwrap_err().to_string().contains("no unit"));
    assert!(Gate::parse("lost == none").unwrap_err().to_string().contains("not a number"));
}

#[test]
fn a_result_says_its_gate_and_old_results_still_read() {
    let g = Gate::parse("idle_phase_discovery_per_min <= 5").unwrap();
    let r = g.evaluate(Some(4.5));
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(
        (&v["metric"], &v["op"], &v["threshold"]),
        (&"idle_phase_discovery_per_min".into(), &"<=".into(), &5.0.into())
    );
    assert_eq!(serde_json::from_value::<GateResult>(v).unwrap(), r);
    assert!(matches!(r.gate.metric, Metric::Count(c) if c.is_discovery_rate()));
    let old = serde_json::json!({"expr": "pickup.p50 < 10ms", "observed": 9.0, "observed_text": "9µs", "pass": true});
    let r: GateResult = serde_json::from_value(old).unwrap();
    assert_eq!(
        (r.gate.metric, r.gate.op, r.gate.threshold),
        (Metric::Latency(Measure::Pickup, "p50"), Op::Lt, 10_000.0)
    );
}

#[test]
fn baseline_ratios_parse_and_read_as_ratios() {
    let g = Gate::parse("vs_baseline.pickup_p50 <= 1.15").unwrap();
    assert_eq!((g.metric, g.op, g.threshold), (Metric::VsBaseline(Ratio::PickupP50), Op::Le, 1.15));
    assert_eq!(g.metric.name(), "vs_baseline.pickup_p50");
    assert!(g.evaluate(Some(1.1)).observed_text.contains("1.100x"));
    assert!(Gate::parse("vs_baseline.speed < 1").unwrap_err().to_string().contains("pickup_p50"));
    assert!(Gate::parse("lost == NaN").unwrap_err().to_string().contains("finite"));
}

#[test]
fn fleet_figures_parse_by_name_and_an_unknown_one_lists_them() {
    let g = Gate::parse("fleet.held_execs.max <= 560").unwrap();
    assert_eq!(g.metric, Metric::Fleet(FleetMetric::Gauge(FleetGauge::HeldExecs, GaugeStat::Max)));
    assert_eq!(g.metric.name(), "fleet.held_execs.max");
    let g = Gate::parse("fleet.turns_demoted_pct <= 1").unwrap();
    assert_eq!((g.metric, g.threshold), (Metric::Fleet(FleetMetric::TurnsDemotedPct), 1.0));
    for m in FleetMetric::all() {
        assert_eq!(Metric::parse(&format!("fleet.{}", m.name())), Ok(Metric::Fleet(m)));
    }
    let e = Gate::parse("fleet.held_exec.max < 3").unwrap_err().to_string();
    assert!(e.contains("fleet.held_execs.max") && e.contains("fleet.recovery_secs"), "{e}");
}

#[test]
fn a_tiny_or_huge_threshold_or_value_reads_plainly() {
    let g = Gate::parse("discovery_per_min <= 1e-300").unwrap();
    assert_eq!(g.threshold, 1e-300);
    let huge = g.evaluate(Some(1e300)).observed_text;
    assert_eq!(huge, "1×10^300", "its first digits and a power of ten, not 301 digits");
    assert_eq!(g.evaluate(Some(1e-300)).observed_text, "<0.000000000001");
    assert_eq!(g.evaluate(Some(180.0)).observed_text, "180");
    let r = Gate::parse("vs_baseline.pickup_p50 <= 1.15").unwrap();
    assert_eq!(r.evaluate(Some(1.1)).observed_text, "1.100x the baseline");
    assert_eq!(r.evaluate(Some(1e-300)).observed_text, "<0.000000000001x the baseline");
}

#[test]
fn evaluation_and_missing_samples() {
    let g = Gate::parse("pickup.p50 < 10ms").unwrap();
    assert!(g.evaluate(Some(9_999.0)).pass);
    assert!(!g.evaluate(Some(10_000.0)).pass);
    let none = g.evaluate(None);
    assert!(!none.pass);
    assert!(none.observed_text.contains("not measured"));
}
