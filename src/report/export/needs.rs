//! What each fleet size needs of the provider, and which documented tier covers it: a row
//! per case that ran with no limit and no fault (its needs are the fleet's own, not what a
//! limit left of them), from summary.json alone — requests a minute (the steady state's
//! mean, and the busiest minute, warm-up included), held execs at their peak (warm-up
//! included), and the smallest documented tier whose request rate covers the busiest minute,
//! each number of the provider's printed with its source.

use crate::base::units::{readable, thousands};
use crate::report::doc::{self, Block, Section, Span, Table};
use crate::results::fleet::{FleetResult, FromPhase};
use crate::results::summary::{CaseResult, Summary};
use crate::results::tiers::{covering, Cover, HELD_EXECS_SOURCE, HOW_COUNTED, TIERS};
use crate::scenario::gate::{FleetGauge, FleetMetric, GaugeStat};

/// What the section says first.
pub(crate) const INTRO: &str = "What each fleet size needs of the sandbox provider, measured with no limit and no fault: requests a minute (the steady state's mean, and the busiest minute of the warm-up or the steady state, whichever is higher), execs held at once at the peak (the warm-up included: a deploy starts every turn together), and the smallest documented organisation tier whose request rate covers the busiest minute. The provider documents no held-exec limit.";

/// A case whose needs the table shows: it ran to its end with no limit and no fault, its
/// requests through the organisation, and its busiest minute counted (a run from before it
/// was has no such row).
fn unbound(r: &CaseResult) -> Option<&FleetResult> {
    let f = r.fleet.as_ref()?;
    let free = f.org_measured && f.limits == "no limits" && r.faults.is_empty() && !r.interrupted;
    (free && f.worst(FleetMetric::PeakRequestsPerSec60s).is_some()).then_some(f)
}

/// The section, when some case measured a fleet's needs.
pub(crate) fn document(s: &Summary) -> Option<Section> {
    let mut cases: Vec<(&CaseResult, &FleetResult)> = s.results.iter().filter_map(|r| Some((r, unbound(r)?))).collect();
    if cases.is_empty() {
        return None;
    }
    cases.sort_by_key(|(r, _)| r.sandboxes);
    let blocks = vec![
        Block::Para(doc::plain(INTRO)),
        Block::Table(Table::new(">sandboxes|case|runner|>requests/min, mean|>requests/min, busiest minute|>held execs, peak|>per sandbox, peak|request-rate tier that covers it|held-exec limit", cases.iter().map(|(r, f)| row(r, f)))),
        Block::Para(doc::plain("Where each number of the provider's comes from:")),
        Block::List(sources()),
    ];
    Some(Section::new("needs", "What each fleet size needs, and the tier that covers it", blocks))
}

/// A case's row.
fn row(r: &CaseResult, f: &FleetResult) -> Vec<String> {
    let mean = f.metric(FleetMetric::MeanRequestsPerSec, None).map(|v| v * 60.0);
    let busiest = f.worst(FleetMetric::PeakRequestsPerSec60s).map(|(v, from)| (v * 60.0, from));
    let held = f.worst(FleetMetric::Gauge(FleetGauge::HeldExecs, GaugeStat::Max));
    let per_sandbox = f.worst(FleetMetric::Gauge(FleetGauge::SandboxHeldExecs, GaugeStat::Max));
    let tier = match busiest.map(|(v, _)| (covering(v), v)) {
        Some((Cover::Tier(t), v)) => {
            let rate = t.requests_per_min.map_or(0.0, f64::from);
            format!("{} ({}/min): {}% of it", t.name, thousands(rate), readable(v / rate * 100.0, 0))
        }
        Some((Cover::Above(t), _)) => format!(
            "**none documented**: above {}'s {}/min, the highest published",
            t.name,
            thousands(t.requests_per_min.map_or(0.0, f64::from))
        ),
        None => "-".into(),
    };
    let held_limit = match held {
        Some((0.0, _)) => "none needed: it holds no exec".to_owned(),
        Some(_) => "not documented (assumed)".to_owned(),
        None => "-".into(),
    };
    // A figure and the phase it came from: `2405 (warm-up)`.
    let phased = |x: Option<(f64, FromPhase)>| {
        x.map_or_else(|| "-".into(), |(v, from)| format!("{} ({})", thousands(v), from.name()))
    };
    vec![
        r.sandboxes.to_string(),
        r.case.clone(),
        r.strategy.clone(),
        mean.map_or_else(|| "-".into(), thousands),
        phased(busiest),
        phased(held),
        phased(per_sandbox),
        tier,
        held_limit,
    ]
}

/// Each documented number with its source, then what is not documented.
fn sources() -> Vec<Vec<Span>> {
    let mut items: Vec<Vec<Span>> = TIERS
        .iter()
        .map(|t| {
            let what = t
                .requests_per_min
                .map_or_else(|| t.note.to_owned(), |n| format!("{} requests a minute", thousands(f64::from(n))));
            vec![Span::Strong(t.name.to_owned()), Span::Text(format!(": {what}; source: {}", t.source))]
        })
        .collect();
    items.push(vec![Span::Strong("held execs".into()), Span::Text(format!(": {HELD_EXECS_SOURCE}"))]);
    items.push(vec![Span::Strong("a tier covers a need".into()), Span::Text(format!(": {HOW_COUNTED}"))]);
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fleet::{Ramp, RampOrg};

    /// A fleet with no limit: its steady state, and a warm-up busier than it.
    fn fleet(sandboxes: u32, mean: f64, peak_60s: f64, warm_peak_60s: f64, held: (u64, u64)) -> CaseResult {
        let mut f = FleetResult { org_measured: true, limits: "no limits".into(), ..FleetResult::default() };
        f.requests_per_sec.mean_per_sec = mean;
        f.requests_per_sec.peak_60s = Some(peak_60s);
        f.held_execs.max = held.1;
        f.sandbox_held_execs.max = 2;
        let mut org = RampOrg::default();
        org.requests_per_sec.peak_60s = Some(warm_peak_60s);
        org.held_execs.max = held.0;
        org.sandbox_held_execs.max = 2;
        f.ramp = Some(Ramp { secs: 1800.0, turns_demoted_pct: Some(0.0), org: Some(org), ..Ramp::default() });
        let case = format!("cost@sandboxes={sandboxes}");
        CaseResult { case, sandboxes, strategy: "window-exec".into(), fleet: Some(f), ..CaseResult::default() }
    }

    #[test]
    fn a_row_per_unlimited_fleet_its_needs_their_phase_and_the_tier_or_none() {
        let mut s = crate::report::export::fixture::archived();
        let mut limited = fleet(1000, 100.0, 100.0, 100.0, (10, 10));
        limited.fleet.as_mut().unwrap().limits = "organisation: 100 held execs".into();
        s.results = vec![
            fleet(10_000, 1665.6, 1700.0, 1800.0, (2405, 1866)),
            fleet(1000, 169.0, 200.0, 190.0, (241, 218)),
            limited,
        ];
        let sec = document(&s).expect("unlimited fleets measured");
        let mut o = String::new();
        crate::report::doc::markdown(&mut o, &sec);
        assert!(o.contains("## What each fleet size needs, and the tier that covers it"), "{o}");
        let rows: Vec<&str> = o.lines().filter(|l| l.starts_with("| 1")).collect();
        assert_eq!(rows.len(), 2, "a limited case needs what its limit left it: no row: {o}");
        assert!(rows[0].starts_with("| 1000 |"), "smallest fleet first: {o}");
        assert!(
            rows[0].contains(
                "| 10,140 | 12,000 (steady state) | 241 (warm-up) | 2 (both) | tier 2 (20,000/min): 60% of it |"
            ),
            "{}",
            rows[0]
        );
        assert!(
            rows[1].contains("| 99,936 | 108,000 (warm-up) | 2,405 (warm-up) |")
                && rows[1].contains("**none documented**: above tier 4's 50,000/min, the highest published"),
            "{}",
            rows[1]
        );
        assert!(rows[0].ends_with("| not documented (assumed) |"), "{}", rows[0]);
        for t in ["tier 1**: 10,000 requests a minute; source: Daytona", "**Enterprise**: custom: no published number"]
        {
            assert!(o.contains(t), "{t}: {o}");
        }
        assert!(o.contains("**held execs**: not documented"), "{o}");
    }

    #[test]
    fn a_run_from_before_the_busiest_minute_was_counted_has_no_section() {
        let mut s = crate::report::export::fixture::archived();
        let mut old = fleet(1000, 169.0, 200.0, 190.0, (241, 218));
        let f = old.fleet.as_mut().unwrap();
        f.requests_per_sec.peak_60s = None;
        f.ramp = None;
        s.results = vec![old];
        assert!(document(&s).is_none());
    }
}
