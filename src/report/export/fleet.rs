//! summary.md's fleet section: the agent turns and the remote side as the organisation saw
//! it, per case, and how the fleet came back from each fleet-wide fault. Written when a
//! case says something a one-relay-per-sandbox run cannot: agent turns, limits, or a
//! fleet-wide fault.

use super::us;
use crate::base::gauge::GaugeStats;
use crate::report::doc::{self, plain, Block, Span, Table};
use crate::results::fleet::FleetResult;
use crate::results::summary::{CaseResult, Summary};
use crate::scenario::fault::FaultRow;

/// Whether a case's fleet is worth a section (and a chart): agent turns (more turns than
/// sandboxes), limits in force, or a fleet-wide fault.
pub(crate) fn telling(r: &CaseResult) -> Option<&FleetResult> {
    let f = r.fleet.as_ref()?;
    let limited = f.org_measured && (f.limits != "no limits" || f.rejected + f.queued + f.cut > 0);
    let fleet_fault = r.faults.iter().any(|x| x.fleet);
    (f.turns.started > u64::from(r.sandboxes) || limited || fleet_fault).then_some(f)
}

fn gauge(g: &GaugeStats) -> String {
    format!("{} / {} / {:.2}", g.max, g.p99, g.mean)
}

/// What the section says first.
const TURNS_INTRO: &str = "Agent turns: one relay each (started at the turn's start, stopped at its end, as production does); a demoted turn polls for the rest of the turn. Gauges are max / p99 / time-weighted mean.";
/// What it says of the remote side.
const REMOTE_INTRO: &str = "The remote side, as the organisation every sandbox shares saw it (held execs: watch windows in flight; requests per second over the busiest second / ten seconds / the mean).";
/// What it says of fleet-wide faults.
const FAULTS_INTRO: &str = "Fleet-wide faults: from the fault's end until 95% of the active turns were healthy again.";

/// The section, in summary.md and report.html alike, when some case is telling: the turns,
/// the remote side and each case's limits when the organisation measured it, the fleet-wide
/// faults when there were any, the warm-up beside the steady state (or, for a run from
/// before it was kept, the warm-up's ramp).
pub(crate) fn document(s: &Summary) -> Option<doc::Section> {
    let cases: Vec<(&CaseResult, &FleetResult)> = s.results.iter().filter_map(|r| Some((r, telling(r)?))).collect();
    if cases.is_empty() {
        return None;
    }
    let mut blocks = vec![Block::Para(plain(TURNS_INTRO)), Block::Table(turns_table(&cases))];
    let measured: Vec<_> = cases.iter().filter(|(_, f)| f.org_measured).collect();
    if !measured.is_empty() {
        let rows = measured.iter().map(|(r, f)| {
            let q = &f.requests_per_sec;
            vec![
                r.case.clone(),
                gauge(&f.held_execs),
                gauge(&f.sandbox_held_execs),
                gauge(&f.in_flight),
                gauge(&f.connections),
                format!("{} / {} / {}", q.peak_1s, q.peak_10s, q.mean_per_sec),
                format!("{} / {} / {}", f.rejected, f.queued, f.cut),
                if f.queue_wait_us.count == 0 { "-".into() } else { us(f.queue_wait_us.p99) },
            ]
        });
        let t = Table::new(
            "case|held execs|per sandbox|in flight|connections|requests/s|>rejected / queued / cut|>queue wait p99",
            rows,
        );
        blocks.extend([Block::Para(plain(REMOTE_INTRO)), Block::Table(t)]);
        let items = measured
            .iter()
            .map(|(r, f)| vec![Span::Strong(r.case.clone()), Span::Text(format!(" limits: {}", f.limits))])
            .collect();
        blocks.push(Block::List(items));
    }
    let rows: Vec<_> =
        cases.iter().flat_map(|(r, _)| r.faults.iter().filter(|x| x.fleet).map(move |x| (r, x))).collect();
    if !rows.is_empty() {
        blocks.extend([Block::Para(plain(FAULTS_INTRO)), Block::Table(faults_table(rows))]);
    }
    if let Some(phases) = super::phases::blocks(s) {
        blocks.extend(phases);
    } else if let Some(t) = ramp(s) {
        // A run from before the warm-up's figures were kept beside the steady state's.
        let intro = vec![
            Span::Text(
                "The warm-up's ramp, left out of the figures above (sessions starting over it, or in a burst with "
                    .into(),
            ),
            Span::Code("start_spread".into()),
            Span::Text("):".into()),
        ];
        blocks.extend([Block::Para(intro), Block::Table(t)]);
    }
    Some(doc::Section::new("fleet", "Fleet", blocks))
}

/// A row per case of its agent turns: how many, how many demoted, the fallback polling, the
/// calls per turn, and the turns (and healthy ones) at once.
fn turns_table(cases: &[(&CaseResult, &FleetResult)]) -> Table {
    let rows = cases.iter().map(|(r, f)| {
        let tu = &f.turns;
        vec![
            r.case.clone(),
            tu.started.to_string(),
            format!("{} ({}%)", tu.demoted, tu.demoted_pct),
            format!("{:.0} s", tu.fallback_secs),
            format!("{} ({})", tu.calls_per_turn_mean, tu.calls_per_turn_max),
            gauge(&tu.active),
            gauge(&tu.healthy),
        ]
    });
    Table::new("case|>turns|>demoted|>fallback polling|>calls per turn (max)|turns at once|healthy at once", rows)
}

/// A row per fleet-wide fault: when it struck, how long the fleet took back to 95 % healthy
/// turns, the worst it got, the turns it demoted and the busiest ten seconds after it.
fn faults_table(rows: Vec<(&&CaseResult, &FaultRow)>) -> Table {
    let rows = rows.into_iter().filter_map(|(r, x)| {
        let fr = x.fleet_recovery.as_ref()?;
        Some(vec![
            r.case.clone(),
            format!("`{}`", x.kind),
            format!("{:.1} s / {:.1} s", x.at_secs, x.until_secs),
            fr.secs_to_95pct_healthy.map_or("not by the end".into(), |v| format!("{v:.1} s")),
            format!("{}%", fr.worst_healthy_pct),
            fr.turns_demoted.to_string(),
            fr.peak_requests_per_sec_10s.to_string(),
        ])
    });
    Table::new(
        "case|fault|struck / ended|>back to 95% healthy|>worst healthy|>turns demoted|>busiest 10 s after (req/s)",
        rows,
    )
}

/// The warm-up's ramp per case, which the tables above leave out.
fn ramp(s: &Summary) -> Option<Table> {
    let ramps: Vec<(&str, &crate::results::fleet::Ramp)> =
        s.results.iter().filter_map(|r| Some((r.case.as_str(), r.fleet.as_ref()?.ramp.as_ref()?))).collect();
    if ramps.is_empty() {
        return None;
    }
    let columns =
        "case|>warm-up|>turns started|>of them demoted|>window failures|>held execs max|>requests/s, busiest step";
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let rows = ramps.into_iter().map(|(case, r)| {
        vec![
            case.to_owned(),
            crate::base::units::human(crate::base::units::secs(r.secs)),
            r.turns_started.to_string(),
            r.turns_demoted.to_string(),
            r.window_failures.to_string(),
            or_dash(r.held_execs_max.map(|v| v.to_string())),
            or_dash(r.requests_per_sec_max.map(|v| crate::base::units::readable(v, 1))),
        ]
    });
    Some(Table::new(columns, rows))
}
