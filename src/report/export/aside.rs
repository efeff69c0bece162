//! The report's parts aside from the figures: why calls were lost or doubled, the faults,
//! a real daemon's requests, this machine's floor, and what happened along the way (breaches,
//! degraded wakes, notices, the cases an interrupt left unrun).

use super::{any_thin, stat, us, THIN_NOTE};
use crate::report::doc::{inline, mark, plain, Block, Line, Section, Table};
use crate::results::summary::{CaseResult, Summary};

/// This machine's floor, when measured.
pub(super) fn calibration(s: &Summary) -> Section {
    let Some(c) = &s.calibration else {
        return Section::new("calibration", "Calibration", vec![Block::Para(plain("Not measured in this run."))]);
    };
    let pickup = c.inotify_pickup_us.as_ref().map(|p| ("rename -> event -> list + read (a pickup's floor)", p));
    let probes = [
        Some(("rename -> inotify event delivered", &c.inotify_rename_us)),
        pickup,
        Some(("1 ms timer overshoot", &c.timer_overshoot_1ms_us)),
        Some(("list a 16-file dir", &c.list_16_files_us)),
    ];
    let rows = probes.iter().flatten().map(|(name, st)| match st.count {
        0 => [*name, "0", "-", "-", "-"].map(str::to_owned).to_vec(),
        _ => vec![(*name).to_owned(), st.count.to_string(), stat(st, "p50"), stat(st, "p99"), us(st.max)],
    });
    let mut blocks = vec![Block::Table(Table::new("probe|>samples|>p50|>p99|>max", rows))];
    if any_thin(probes.iter().flatten().map(|(_, st)| *st), &["p50", "p99"]) {
        blocks.push(Block::Para(plain(THIN_NOTE)));
    }
    if c.inotify_missed > 0 {
        blocks.push(Block::Para(plain(format!("{} rename event(s) never arrived within 1 s.", c.inotify_missed))));
    }
    Section::new("calibration", "Calibration: this machine's floor", blocks)
}

/// Breaches, degraded wakes and notices, per case; the cases not run. Nothing when nothing
/// happened.
pub(super) fn along_the_way(s: &Summary) -> Option<Section> {
    let mut blocks = Vec::new();
    for r in &s.results {
        if r.pairing_violations.total == 0 && r.notices_total == 0 && r.runner.degraded.is_empty() {
            continue;
        }
        blocks.extend([Block::Heading(r.case.clone()), Block::Outline(happened(r))]);
    }
    if !s.cases_not_run.is_empty() {
        blocks.push(Block::Para(plain(format!("Not run (interrupted first): {}", s.cases_not_run.join(", ")))));
    }
    (!blocks.is_empty()).then(|| Section::new("along-the-way", "What happened along the way", blocks))
}

/// What happened to one case: its breaches by kind (the last kind with up to 20 of them
/// listed under it), its degraded wakes, its first 20 notices.
fn happened(r: &CaseResult) -> Vec<(Line, Vec<Line>)> {
    let mut items: Vec<(Line, Vec<Line>)> = r
        .pairing_violations
        .by_kind
        .0
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| (inline(format!("pairing violation `{k}`: {n}")), Vec::new()))
        .collect();
    if let Some((_, sub)) = items.last_mut() {
        sub.extend(
            r.pairing_violations
                .listed
                .iter()
                .take(20)
                .map(|b| inline(format!("`{}` sandbox {} call `{}`", b.kind.name(), b.sandbox, b.call))),
        );
    }
    items.extend(r.runner.degraded.iter().map(|d| (inline(format!("degraded: {d}")), Vec::new())));
    items.extend(r.notices.iter().take(20).map(|n| (inline(n.clone()), Vec::new())));
    if r.notices_total as usize > r.notices.len().min(20) {
        items.push((inline(format!("… {} notices in all (see summary.json)", r.notices_total)), Vec::new()));
    }
    items
}

/// `### Why calls were lost or doubled`: per case, each chain of what happened with its
/// count and one call it happened to; the tools run after their writer gave up. Nothing
/// when every call was answered once.
pub(super) fn causes(s: &Summary) -> Vec<Block> {
    let told = |r: &&CaseResult| {
        let c = &r.calls.causes;
        !c.lost_by_cause.is_empty() || !c.duplicated_by_cause.is_empty() || c.ran_after_writer_gave_up > 0
    };
    if !s.results.iter().any(|r| told(&r)) {
        return Vec::new();
    }
    let mut rows = Vec::new();
    for r in s.results.iter().filter(told) {
        let c = &r.calls.causes;
        let example = |chain: &str| c.examples.get(chain).cloned().unwrap_or_default();
        for (what, by) in [("lost", &c.lost_by_cause), ("duplicated", &c.duplicated_by_cause)] {
            for (chain, n) in by {
                rows.push(vec![r.case.clone(), what.into(), chain.clone(), n.to_string(), example(chain)]);
            }
        }
        if c.ran_after_writer_gave_up > 0 {
            let late = crate::record::recorder::RAN_LATE;
            rows.push(vec![
                r.case.clone(),
                "late run".into(),
                "the tool started after its writer had timed out (work nobody waited for)".into(),
                c.ran_after_writer_gave_up.to_string(),
                example(late),
            ]);
        }
    }
    vec![
        Block::Heading("Why calls were lost or doubled".into()),
        Block::Para(plain(
            "Each lost or doubled call told by what happened to it, in order; the counts of a case sum to its lost \
             and duplicated columns above.",
        )),
        Block::Table(Table::new("case|outcome|what happened|>calls|for example", rows)),
    ]
}

/// For the cases on a real daemon: every request it saw, the runner's over the whole case
/// and relay-bench's own, so its log reconciles with the report.
pub(super) fn daemon_log(s: &Summary) -> Vec<Block> {
    let named = |k: &crate::sandbox::host::ByKind| -> String {
        let v: Vec<String> = k.0.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    };
    let rows: Vec<Vec<String>> = s
        .results
        .iter()
        .filter(|r| !r.requests.bench_requests.is_empty())
        .map(|r| vec![r.case.clone(), named(&r.requests.whole_case_by_kind), named(&r.requests.bench_requests)])
        .collect();
    if rows.is_empty() {
        return Vec::new();
    }
    vec![
        Block::Para(plain(
            "Every request a case's daemons saw: the runners' over the whole case (the window's above, plus the stale \
             sweep before it and what the runners did while they stopped), and relay-bench's own (its checks before \
             the run and its in-sandbox side: in no rate; docs/measures.md names each one's route).",
        )),
        Block::Table(Table::new("case|runners' requests, whole case|relay-bench's own", rows)),
    ]
}

/// One row per fault of the schedule.
pub(super) fn faults(s: &Summary) -> Option<Section> {
    if s.results.iter().all(|r| r.faults.is_empty()) {
        return None;
    }
    let intro = format!(
        "Calls touched: calls whose life overlapped the fault or the {} after it.",
        crate::base::units::human(crate::scenario::fault::AFTERMATH)
    );
    let rows = s.results.iter().flat_map(|r| {
        r.faults.iter().map(|f| {
            let after = f.detected_after_ms.map_or(String::new(), |ms| format!(" ({})", us(ms * 1000.0)));
            let stop = f.stop_ms.map_or(String::new(), |ms| format!("; stop() took {}", us(ms * 1000.0)));
            vec![
                r.case.clone(),
                format!("`{}`", f.kind),
                f.sandbox.to_string(),
                format!("{:.1} s / {:.1} s", f.at_secs, f.until_secs),
                format!("{}{after}", f.detected),
                format!("{}{stop}", f.recovery),
                format!("{}: {} / {}", f.calls, f.answered, f.failed),
                f.worst_pickup_ms.map_or("-".into(), |ms| us(ms * 1000.0)),
                mark(f.ok).to_owned(),
            ]
        })
    });
    let table = Table::new("case|fault|>sandbox|struck / ended|detected (after)|recovery|calls touched: answered / failed|>worst pickup|ok", rows);
    let mut blocks = vec![Block::Para(plain(intro)), Block::Table(table)];
    blocks.extend(super::storm::blocks(s));
    Some(Section::new("faults", "Faults", blocks))
}
