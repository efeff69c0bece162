//! The fleet section's warm-up beside its steady state: per case, each figure the warm-up
//! has too, written `warm-up / steady state`, with the one the capacity gates read
//! (`fleet.worst.*`: the higher of the two, unless the workload says `warmup_gated = false`)
//! in bold. The warm-up is when a fleet's turns start together, as after every deploy.

use crate::base::units::{readable, wall};
use crate::report::doc::{self, Block, Span, Table};
use crate::results::fleet::{FleetResult, FromPhase};
use crate::results::summary::{CaseResult, Summary};
use crate::scenario::gate::{FleetGauge, FleetMetric, GaugeStat};

/// What the table says first.
pub(crate) const INTRO: &str = "The warm-up beside the steady state: the fleet's figures above are the steady state's (after the warm-up); here each figure the warm-up has too is written warm-up / steady state. The capacity gates (`fleet.worst.*`) read the higher of the two: it is in **bold**, and neither is when they are equal. Turns demoted in the warm-up are those it started, demoted then or after.";

/// The blocks of the table, when some case kept its warm-up's figures beside its steady
/// state's; `None` for a run from before they were kept (its ramp table stands instead).
pub(crate) fn blocks(s: &Summary) -> Option<Vec<Block>> {
    let cases: Vec<(&CaseResult, &FleetResult)> = s
        .results
        .iter()
        .filter_map(|r| {
            let f = r.fleet.as_ref()?;
            f.ramp.as_ref().filter(|p| p.turns_demoted_pct.is_some()).map(|_| (r, f))
        })
        .collect();
    if cases.is_empty() {
        return None;
    }
    let mut out = vec![Block::Para(doc::inline(INTRO)), Block::Table(Table::new("case|>span|>turns started|>turns demoted|>window failures|>held execs max|>per sandbox max|>rejected|>requests/s, busiest 10 s|>requests/s, busiest 60 s|>requests/s, mean", cases.iter().map(|(r, f)| row(r, f))))];
    let ungated: Vec<Vec<Span>> = cases
        .iter()
        .filter(|(_, f)| f.warmup_ungated)
        .map(|(r, _)| {
            vec![
                Span::Strong(r.case.clone()),
                Span::Text(": gated on its steady state alone (its workload says ".into()),
                Span::Code("warmup_gated = false".into()),
                Span::Text(")".into()),
            ]
        })
        .collect();
    if !ungated.is_empty() {
        out.push(Block::List(ungated));
    }
    Some(out)
}

/// A case's row: its figures, each `warm-up / steady state`.
fn row(r: &CaseResult, f: &FleetResult) -> Vec<String> {
    let ramp = f.ramp.as_ref().expect("a case with a warm-up");
    let steady_secs = (r.window_secs - ramp.secs).max(0.0);
    let span = |secs: f64| wall(std::time::Duration::from_secs_f64(secs));
    let count = |v: f64| readable(v, 0);
    let rate = |v: f64| readable(v, 1);
    let demoted = {
        let (w, s) = (f.warmup(FleetMetric::TurnsDemoted), f.metric(FleetMetric::TurnsDemoted, None));
        let (wp, sp) = (f.warmup(FleetMetric::TurnsDemotedPct), f.metric(FleetMetric::TurnsDemotedPct, None));
        let with_pct = |n: Option<f64>, p: Option<f64>| match (n, p) {
            (Some(n), Some(p)) => format!("{} ({}%)", count(n), readable(p, 2)),
            (Some(n), None) => count(n),
            _ => "-".into(),
        };
        bold_higher(f, FleetMetric::TurnsDemotedPct, with_pct(w, wp), with_pct(s, sp))
    };
    vec![
        r.case.clone(),
        format!("{} / {}", span(ramp.secs), span(steady_secs)),
        format!("{} / {}", ramp.turns_started, f.turns.started),
        demoted,
        phased(f, FleetMetric::WindowFailures, count),
        phased(f, FleetMetric::Gauge(FleetGauge::HeldExecs, GaugeStat::Max), count),
        phased(f, FleetMetric::Gauge(FleetGauge::SandboxHeldExecs, GaugeStat::Max), count),
        phased(f, FleetMetric::Rejected, count),
        phased(f, FleetMetric::PeakRequestsPerSec10s, rate),
        phased(f, FleetMetric::PeakRequestsPerSec60s, rate),
        phased(f, FleetMetric::MeanRequestsPerSec, rate),
    ]
}

/// `warm-up / steady state` of one figure, the higher in bold.
fn phased(f: &FleetResult, figure: FleetMetric, show: impl Fn(f64) -> String) -> String {
    let show = |v: Option<f64>| v.map_or_else(|| "-".into(), &show);
    bold_higher(f, figure, show(f.warmup(figure)), show(f.metric(figure, None)))
}

/// The two cells joined, the one `fleet.worst.*` reads for `figure` in bold.
fn bold_higher(f: &FleetResult, figure: FleetMetric, warm: String, steady: String) -> String {
    match f.worst(figure).map(|(_, from)| from) {
        Some(FromPhase::Warmup) => format!("**{warm}** / {steady}"),
        Some(FromPhase::Steady) if f.warmup(figure).is_some() => format!("{warm} / **{steady}**"),
        _ => format!("{warm} / {steady}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::fleet::{Ramp, RampOrg};

    fn case(name: &str, ungated: bool) -> CaseResult {
        let mut f = FleetResult { org_measured: true, warmup_ungated: ungated, ..FleetResult::default() };
        (f.turns.started, f.turns.demoted, f.turns.demoted_pct) = (6392, 13, 0.2);
        (f.held_execs.max, f.sandbox_held_execs.max) = (200, 2);
        let mut org = RampOrg::default();
        (org.held_execs.max, org.sandbox_held_execs.max) = (240, 2);
        f.ramp = Some(Ramp {
            secs: 1800.0,
            turns_started: 5450,
            turns_demoted: 74,
            turns_demoted_pct: Some(1.36),
            org: Some(org),
            ..Ramp::default()
        });
        CaseResult { case: name.into(), window_secs: 3600.0, fleet: Some(f), ..CaseResult::default() }
    }

    #[test]
    fn each_figure_warmup_then_steady_the_gated_one_in_bold() {
        let mut s = crate::report::export::fixture::archived();
        s.results = vec![case("burst", false), case("steady-only", true)];
        let mut o = String::new();
        crate::report::doc::blocks(&mut o, &blocks(&s).expect("warm-up figures kept"));
        let row = o.lines().find(|l| l.starts_with("| burst |")).expect("a row");
        assert!(row.contains("| 30m / 30m | 5450 / 6392 | **74 (1.36%)** / 13 (0.2%) |"), "{row}");
        assert!(row.contains("| **240** / 200 | 2 / 2 |"), "equal: neither in bold: {row}");
        let row = o.lines().find(|l| l.starts_with("| steady-only |")).expect("a row");
        assert!(row.contains("| 74 (1.36%) / **13 (0.2%)** |") && row.contains("| 240 / **200** |"), "{row}");
        assert!(o.contains("**steady-only**: gated on its steady state alone"), "{o}");
        // A run from before the warm-up's figures were kept: no table (its ramp table stands).
        s.results[0].fleet.as_mut().unwrap().ramp.as_mut().unwrap().turns_demoted_pct = None;
        s.results.truncate(1);
        assert!(blocks(&s).is_none());
    }
}
