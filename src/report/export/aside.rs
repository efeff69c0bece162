//! summary.md's sections aside from the figures: why calls were lost or doubled, the faults,
//! a real daemon's requests, this machine's floor, and what happened along the way (breaches, degraded wakes, notices, the
//! cases an interrupt left unrun).

use std::fmt::Write;

use super::{any_thin, stat, us, THIN_NOTE};
use crate::report::doc::{Align, MdTable};
use crate::results::summary::Summary;

use Align::{Left as L, Right as R};

/// This machine's floor, when measured.
pub(super) fn calibration(o: &mut String, s: &Summary) {
    if let Some(c) = &s.calibration {
        let _ = writeln!(o, "\n## Calibration: this machine's floor\n");
        let mut t = MdTable::new(o, &[("probe", L), ("samples", R), ("p50", R), ("p99", R), ("max", R)]);
        let pickup = c.inotify_pickup_us.as_ref().map(|p| ("rename -> event -> list + read (a pickup's floor)", p));
        let probes = [
            Some(("rename -> inotify event delivered", &c.inotify_rename_us)),
            pickup,
            Some(("1 ms timer overshoot", &c.timer_overshoot_1ms_us)),
            Some(("list a 16-file dir", &c.list_16_files_us)),
        ];
        for (name, st) in probes.iter().flatten().copied() {
            if st.count == 0 {
                t.row(&[name, "0", "-", "-", "-"]);
            } else {
                t.row(&[name.to_owned(), st.count.to_string(), stat(st, "p50"), stat(st, "p99"), us(st.max)]);
            }
        }
        if any_thin(probes.iter().flatten().map(|(_, st)| *st), &["p50", "p99"]) {
            let _ = writeln!(o, "\n{THIN_NOTE}");
        }
        if c.inotify_missed > 0 {
            let _ = writeln!(o, "\n{} rename event(s) never arrived within 1 s.", c.inotify_missed);
        }
    } else {
        let _ = writeln!(o, "\n## Calibration\n\nNot measured in this run.");
    }
}

/// Breaches, degraded wakes and notices, per case; the cases not run.
pub(super) fn along_the_way(o: &mut String, s: &Summary) {
    let mut said = false;
    for r in &s.results {
        if r.pairing_violations.total == 0 && r.notices_total == 0 && r.runner.degraded.is_empty() {
            continue;
        }
        if !said {
            let _ = writeln!(o, "\n## What happened along the way\n");
            said = true;
        }
        let _ = writeln!(o, "### {}\n", r.case);
        for (k, n) in r.pairing_violations.by_kind.0.iter().filter(|(_, n)| *n > 0) {
            let _ = writeln!(o, "- pairing violation `{k}`: {n}");
        }
        for b in r.pairing_violations.listed.iter().take(20) {
            let _ = writeln!(o, "  - `{}` sandbox {} call `{}`", b.kind.name(), b.sandbox, b.call);
        }
        for d in &r.runner.degraded {
            let _ = writeln!(o, "- degraded: {d}");
        }
        for n in r.notices.iter().take(20) {
            let _ = writeln!(o, "- {n}");
        }
        if r.notices_total as usize > r.notices.len().min(20) {
            let _ = writeln!(o, "- … {} notices in all (see summary.json)", r.notices_total);
        }
    }
    if !s.cases_not_run.is_empty() {
        let _ = writeln!(o, "\nNot run (interrupted first): {}", s.cases_not_run.join(", "));
    }
}

/// `### Why calls were lost or doubled`: per case, each chain of what happened with its
/// count and one call it happened to; the tools run after their writer gave up. Nothing
/// when every call was answered once.
pub(super) fn causes(o: &mut String, s: &Summary) {
    let told = |r: &&crate::results::summary::CaseResult| {
        let c = &r.calls.causes;
        !c.lost_by_cause.is_empty() || !c.duplicated_by_cause.is_empty() || c.ran_after_writer_gave_up > 0
    };
    if !s.results.iter().any(|r| told(&r)) {
        return;
    }
    let _ = writeln!(
        o,
        "\n### Why calls were lost or doubled\n\nEach lost or doubled call told by what happened to it, \
in order; the counts of a case sum to its lost and duplicated columns above.\n"
    );
    let mut t = MdTable::new(o, &[("case", L), ("outcome", L), ("what happened", L), ("calls", R), ("for example", L)]);
    for r in s.results.iter().filter(told) {
        let c = &r.calls.causes;
        let example = |chain: &str| c.examples.get(chain).cloned().unwrap_or_default();
        for (what, by) in [("lost", &c.lost_by_cause), ("duplicated", &c.duplicated_by_cause)] {
            for (chain, n) in by {
                t.row(&[r.case.clone(), what.into(), chain.clone(), n.to_string(), example(chain)]);
            }
        }
        if c.ran_after_writer_gave_up > 0 {
            let late = crate::record::recorder::RAN_LATE;
            t.row(&[
                r.case.clone(),
                "late run".into(),
                "the tool started after its writer had timed out (work nobody waited for)".into(),
                c.ran_after_writer_gave_up.to_string(),
                example(late),
            ]);
        }
    }
}

/// For the cases on a real daemon: every request it saw, the runner's over the whole case
/// and relay-bench's own, so its log reconciles with the report.
pub(super) fn daemon_log(o: &mut String, s: &Summary) {
    let named = |k: &crate::sandbox::host::ByKind| -> String {
        let v: Vec<String> = k.0.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    };
    let real: Vec<_> = s.results.iter().filter(|r| !r.requests.bench_requests.is_empty()).collect();
    if real.is_empty() {
        return;
    }
    let _ = writeln!(o, "
Every request a case's daemons saw: the runners' over the whole case (the window's above, plus the stale sweep before it and what the runners did while they stopped), and relay-bench's own (its checks before the run and its in-sandbox side: in no rate; docs/measures.md names each one's route).
");
    let mut t = MdTable::new(o, &[("case", L), ("runners' requests, whole case", L), ("relay-bench's own", L)]);
    for r in real {
        let q = &r.requests;
        t.row(&[r.case.clone(), named(&q.whole_case_by_kind), named(&q.bench_requests)]);
    }
}

/// One row per fault of the schedule.
pub(super) fn faults(o: &mut String, s: &Summary) {
    if s.results.iter().any(|r| !r.faults.is_empty()) {
        let _ = writeln!(o, "\n## Faults\n");
        let _ = writeln!(
            o,
            "Calls touched: calls whose life overlapped the fault or the {} after it.\n",
            crate::base::units::human(crate::scenario::fault::AFTERMATH)
        );
        let mut t = MdTable::new(
            o,
            &[
                ("case", L),
                ("fault", L),
                ("sandbox", R),
                ("struck / ended", L),
                ("detected (after)", L),
                ("recovery", L),
                ("calls touched: answered / failed", L),
                ("worst pickup", R),
                ("ok", L),
            ],
        );
        for r in &s.results {
            for f in &r.faults {
                let after = f.detected_after_ms.map_or(String::new(), |ms| format!(" ({})", us(ms * 1000.0)));
                let stop = f.stop_ms.map_or(String::new(), |ms| format!("; stop() took {}", us(ms * 1000.0)));
                t.row(&[
                    r.case.clone(),
                    format!("`{}`", f.kind),
                    f.sandbox.to_string(),
                    format!("{:.1} s / {:.1} s", f.at_secs, f.until_secs),
                    format!("{}{after}", f.detected),
                    format!("{}{stop}", f.recovery),
                    format!("{}: {} / {}", f.calls, f.answered, f.failed),
                    f.worst_pickup_ms.map_or("-".into(), |ms| us(ms * 1000.0)),
                    (if f.ok { "✅" } else { "❌" }).to_owned(),
                ]);
            }
        }
    }
}
