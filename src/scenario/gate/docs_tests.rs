//! The docs' lists of gate metrics held to the metrics themselves.

use super::*;

/// The docs' lists of figures are the figure table's: every measure, statistic, gated
/// counter and baseline ratio named in docs/scenarios.md's gate grammar, every fleet figure
/// in docs/fleet.md (a gauge as `fleet.<gauge>.*`, a phased figure as
/// `fleet.<phase>.<figure>`), every figure no gate reads in docs/measures.md's table.
#[test]
fn the_docs_name_every_figure() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |page: &str| std::fs::read_to_string(root.join("docs").join(page)).unwrap();
    let scenarios = read("scenarios.md");
    let grammar = &scenarios[scenarios.find("## Gates").unwrap()..scenarios.find("## Rollout gates").unwrap()];
    let fleet = read("fleet.md");
    let measures = read("measures.md");
    let reported = &measures[measures.find("### Every figure a case reports").unwrap()..];
    let mut missing = Vec::new();
    let mut expect = |page: &str, text: &str, name: String| {
        if !text.contains(&format!("`{name}`")) && !text.contains(&format!("`{name} ")) {
            missing.push(format!("{page}: {name}"));
        }
    };
    for m in Measure::all() {
        expect("scenarios.md", grammar, m.name().to_owned());
    }
    for s in LatencyStats::STATS {
        expect("scenarios.md", grammar, s.to_owned());
    }
    for c in Counter::ALL.iter().filter(|c| **c != Counter::Probe) {
        let (page, text) = if c.row().gate { ("scenarios.md", grammar) } else { ("measures.md", reported) };
        expect(page, text, c.name().to_owned());
    }
    for m in Metric::table() {
        match m {
            Metric::Latency(_, "count") => expect("measures.md", reported, "<measure>.count".into()),
            Metric::InjectedLeg(_) => expect("measures.md", reported, "injected_leg.<stat>".into()),
            Metric::Fleet(FleetMetric::QueueWait(_)) => {
                expect("measures.md", reported, "fleet.queue_wait.<stat>".into())
            }
            _ => assert!(m.gateable() || matches!(m, Metric::Count(_)), "{}: a figure no list names", m.name()),
        }
    }
    for r in Ratio::ALL {
        expect("scenarios.md", grammar, format!("{VS_BASELINE}.{}", r.name()));
    }
    for f in FleetMetric::all() {
        let name = match f {
            FleetMetric::Gauge(g, _) => format!("{FLEET}.{}.*", g.name()),
            FleetMetric::Phased(p, _) => format!("{FLEET}.{}.<figure>", p.name()),
            _ => format!("{FLEET}.{}", f.name()),
        };
        let whole = format!("{FLEET}.{}", f.name());
        if !fleet.contains(&format!("`{whole}`")) {
            expect("fleet.md", &fleet, name);
        }
    }
    missing.dedup();
    assert!(missing.is_empty(), "figures the docs do not name:\n{}", missing.join("\n"));
}
