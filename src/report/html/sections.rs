//! The page's sections besides the verdict: the title, the results table, the departures
//! from production, the gates, the fleet, the environment, the run's files, and what
//! happened along the way. Each writes through [`Page`], so every string from the summary
//! is escaped.

use super::markup::{Cell, Page};
use crate::base::units::readable;
use crate::report::chart::Inline;
use crate::report::export::{any_thin, design, fleet, pair, stat, Align, THIN_NOTE};
use crate::results::summary::{CaseResult, Summary};
use crate::results::sweep::show;

use crate::record::recorder::Measure;
use Align::{Left as L, Right as R};

/// `PASS`, `FAIL` or `INTERRUPTED`, and its class.
pub(super) fn outcome(s: &Summary) -> (&'static str, &'static str) {
    if s.interrupted {
        ("INTERRUPTED", "fail")
    } else if s.pass {
        ("PASS", "pass")
    } else {
        ("FAIL", "fail")
    }
}

/// The title, the description, and where and how it ran.
pub(super) fn header(p: &mut Page, s: &Summary) {
    let (word, class) = outcome(s);
    p.raw("<header>\n<h1>relay-bench: ").text(&s.scenario).raw(" — ").el("span", class, word).raw("</h1>\n");
    if !s.description.is_empty() {
        p.el("p", "lead", &s.description).raw("\n");
    }
    let virtuals = s.results.iter().filter(|r| r.clock == "virtual").count();
    let clock = match virtuals {
        _ if s.results.is_empty() => "clock: each case's own (no case has finished yet)",
        0 => "clock: real (wall time, real files and inotify)",
        n if n == s.results.len() => "clock: virtual (simulated time over an in-memory sandbox)",
        _ => "clocks: real and virtual (cases marked virtual ran in simulated time)",
    };
    let meta = format!(
        "{} {} v{} · started {} · {} cases · {clock}",
        s.tool.name,
        s.scenario_origin,
        s.tool.version,
        s.started_at,
        s.results.len()
    );
    p.el("p", "muted", &meta).raw("\n");
    if s.environment.build == "debug" {
        p.el("p", "banner fail", "A debug build: its numbers include unoptimized harness code.");
    }
    p.raw("</header>\n");
}

/// The idle discovery rate a case's idle gate reads: over the idle phases when the workload
/// has any, else over the idle stretches; `-` when not measured.
fn idle_rate(r: &CaseResult) -> String {
    let q = &r.requests;
    let s = if q.idle_phases.minutes > 0.0 { &q.idle_phases } else { &q.idle };
    match s.rate() {
        Some(v) if !q.not_measured => readable(v, 2),
        _ => "-".into(),
    }
}

/// One row per case.
pub(super) fn results(p: &mut Page, s: &Summary) {
    p.section("results", "Results");
    let columns = [
        ("case", L),
        ("strategy", L),
        ("writer", L),
        ("departs from production", L),
        ("calls", R),
        ("lost", R),
        ("wake p50 / p99", L),
        ("pickup p50 / p99", L),
        ("completion p50 / p99", L),
        ("discovery / min", R),
        ("idle discovery / min", R),
        ("gates", L),
    ];
    let rows: Vec<Vec<Cell>> = s
        .results
        .iter()
        .map(|r| {
            let passed = r.gates.iter().filter(|g| g.pass).count();
            let gates = if r.interrupted {
                Cell::with("interrupted", "fail")
            } else if r.pass {
                Cell::with(format!("pass {passed}/{}", r.gates.len()), "pass")
            } else {
                Cell::with(format!("FAIL {passed}/{}", r.gates.len()), "fail")
            };
            let visible = !r.requests.not_measured;
            vec![
                format!("{}{}", r.case, if r.clock == "virtual" { " (virtual)" } else { "" }).into(),
                r.strategy.as_str().into(),
                r.writer.as_str().into(),
                design(r).into(),
                r.calls.completed.to_string().into(),
                r.calls.lost.to_string().into(),
                pair(r.latency(Measure::WAKE)).into(),
                pair(r.latency(Measure::PICKUP)).into(),
                pair(r.latency(Measure::COMPLETION)).into(),
                if visible { format!("{:.1}", r.requests.discovery_per_min) } else { "-".into() }.into(),
                idle_rate(r).into(),
                gates,
            ]
        })
        .collect();
    p.table(&columns, &rows);
    p.el(
        "p",
        "muted",
        "Discovery requests (lists, watch execs) per minute per relay dir: over the whole window, and idle: over \
         the workload's idle phases when it has any (the steady state a request budget is about), else over the \
         stretches with no call in flight. -: not measured.",
    );
    let shown = s.results.iter().flat_map(|r| Measure::SPEC.map(|m| r.latency(m)));
    if any_thin(shown, &["p50", "p99"]) {
        p.el("p", "muted", THIN_NOTE).raw("\n");
    }
    p.raw("</section>\n");
}

/// Each sweep: its best line, a row per point (its values, where it departs from
/// production, its figures, its gates), and its charts.
pub(super) fn sweeps(p: &mut Page, s: &Summary, charts: &[&Inline]) {
    if s.sweeps.is_empty() {
        return;
    }
    p.section("sweeps", "Sweeps");
    for w in &s.sweeps {
        let paths: Vec<&str> = w.axes.iter().map(|a| a.path.as_str()).collect();
        p.el("h3", "", &format!("{} over {}", w.case, paths.join(" × ")));
        let class = if w.best.is_some() { "pass" } else { "muted" };
        p.open("p", "").el("strong", class, &w.best_line()).close("p").raw("\n");
        let mut columns: Vec<(String, Align)> = w.axes.iter().map(|a| (a.label.clone(), L)).collect();
        columns.push(("departs from production".into(), L));
        columns.extend(w.figures.iter().map(|m| (m.name(), R)));
        columns.push(("gates".into(), L));
        let header: Vec<(&str, Align)> = columns.iter().map(|(n, a)| (n.as_str(), *a)).collect();
        let rows: Vec<Vec<Cell>> = w
            .points
            .iter()
            .map(|pt| {
                let mut row: Vec<Cell> = w.axes.iter().zip(&pt.at).map(|(a, &i)| a.values[i].as_str().into()).collect();
                let r = s.results.iter().find(|r| r.case == pt.case);
                row.push(r.map_or("-".into(), design).into());
                row.extend(
                    w.figures.iter().enumerate().map(|(k, m)| show(*m, pt.figures.get(k).copied().flatten()).into()),
                );
                let best = if w.best.as_deref() == Some(&pt.case) { " (best)" } else { "" };
                row.push(match r {
                    None => Cell::with("not run", "muted"),
                    Some(r) => {
                        let passed = r.gates.iter().filter(|g| g.pass).count();
                        let (word, class) = if r.pass { ("pass", "pass") } else { ("FAIL", "fail") };
                        Cell::with(format!("{word} {passed}/{}{best}", r.gates.len()), class)
                    }
                });
                row
            })
            .collect();
        p.table(&header, &rows);
        let stems: Vec<String> = w.figures.iter().map(|m| w.chart_stem(*m)).collect();
        for c in charts.iter().filter(|c| stems.contains(&c.stem)) {
            p.chart(c);
        }
    }
    p.el(
        "p",
        "muted",
        "One case per point, named after its values, every gate applied to each; the best point meets every gate \
         with the least (or most) of the sweep's objective.",
    );
    p.raw("</section>\n");
}

/// What each case runs, and where it departs from production's relay as built.
pub(super) fn departures(p: &mut Page, s: &Summary) {
    p.section("departures", "Departures from production");
    p.el(
        "p",
        "",
        "Every strategy's defaults are production's relay as built; each option a case sets away from them is named \
         here.",
    );
    let rows: Vec<Vec<Cell>> = s
        .results
        .iter()
        .map(|r| {
            let d = match r.departures.as_deref() {
                Some([]) => Cell::with("production as built", "pass"),
                Some(_) => Cell::from(design(r)),
                None => Cell::with(design(r), "muted"),
            };
            vec![r.case.as_str().into(), r.host_params.as_str().into(), r.strategy_params.as_str().into(), d]
        })
        .collect();
    p.table(&[("case", L), ("host", L), ("runner", L), ("departs from production", L)], &rows);
    p.raw("</section>\n");
}

/// Every gate of every case, as summary.md says them.
pub(super) fn gates(p: &mut Page, s: &Summary) {
    super::doc::write(p, &crate::report::export::gates::document(s));
}

/// The fleet, when some case's fleet says something a one-relay-per-sandbox run cannot.
pub(super) fn fleet(p: &mut Page, s: &Summary) {
    if let Some(sec) = fleet::document(s) {
        super::doc::write(p, &sec);
    }
}

/// The machine and build, and this machine's floor when measured.
pub(super) fn environment(p: &mut Page, s: &Summary) {
    p.section("environment", "Environment");
    let e = &s.environment;
    let limit = |v: Option<u64>| v.map_or("unknown".into(), |v| v.to_string());
    let facts: Vec<(&str, String)> = vec![
        ("tool", format!("{} v{}", s.tool.name, s.tool.version)),
        ("scenario", format!("{} ({})", s.scenario, s.scenario_origin)),
        ("started", s.started_at.clone()),
        ("os / arch", format!("{} / {}", e.os, e.arch)),
        ("kernel", e.kernel.clone()),
        ("cpus", e.cpus.to_string()),
        ("relay dirs", format!("{} ({})", e.relay_root, e.relay_fs)),
        (
            "inotify limits",
            format!(
                "max_user_watches {}, max_user_instances {}, max_queued_events {}",
                limit(e.inotify.max_user_watches),
                limit(e.inotify.max_user_instances),
                limit(e.inotify.max_queued_events)
            ),
        ),
        ("build", e.build.clone()),
    ];
    let rows: Vec<Vec<Cell>> = facts.into_iter().map(|(k, v)| vec![k.into(), v.into()]).collect();
    p.table(&[("", L), ("", L)], &rows);
    if let Some(c) = &s.calibration {
        p.el("h3", "", "This machine's floor");
        let pickup = c.inotify_pickup_us.as_ref().map(|p| ("rename -> event -> list + read (a pickup's floor)", p));
        let rows: Vec<Vec<Cell>> = [
            Some(("rename -> inotify event delivered", &c.inotify_rename_us)),
            pickup,
            Some(("1 ms timer overshoot", &c.timer_overshoot_1ms_us)),
            Some(("list a 16-file dir", &c.list_16_files_us)),
        ]
        .into_iter()
        .flatten()
        .map(|(name, st)| {
            let cells = [stat(st, "p50"), stat(st, "p99"), stat(st, "max")];
            let [p50, p99, max] = cells.map(Cell::from);
            vec![name.into(), st.count.to_string().into(), p50, p99, max]
        })
        .collect();
        p.table(&[("probe", L), ("samples", R), ("p50", R), ("p99", R), ("max", R)], &rows);
        let probes = [&c.inotify_rename_us, &c.timer_overshoot_1ms_us, &c.list_16_files_us];
        if any_thin(probes, &["p50", "p99"]) {
            p.el("p", "muted", THIN_NOTE).raw("\n");
        }
    }
    p.raw("</section>\n");
}

/// Links to the run directory's raw files; `extra` are the optional ones present beside it
/// (`events.ndjson`, `calls.csv`).
pub(super) fn files(p: &mut Page, extra: &[&str]) {
    p.section("files", "The run's files");
    p.raw("<ul>\n");
    let mut item = |href: &str, what: &str| {
        p.raw("<li>").link(href, href).raw(" — ").text(what).raw("</li>\n");
    };
    item("summary.json", "everything, for programs");
    item("summary.md", "the report as markdown, for CI job summaries");
    item("hdr/", "each case's HDR histograms: .hgrm percentile distributions, .hlog interval logs");
    item("charts/", "the charts as PNG and SVG");
    for f in extra {
        let what = match *f {
            "events.ndjson" => "every call's events, one JSON object a line",
            "events.bin" => "every call's events, compact (relay-bench check --ndjson prints them as lines)",
            _ => "a row per call with its whole timeline",
        };
        item(f, what);
    }
    p.raw("</ul>\n</section>\n");
}

/// Breaches, degraded wakes and notices, per case; the cases not run. Nothing when nothing
/// happened.
pub(super) fn along_the_way(p: &mut Page, s: &Summary) {
    let telling: Vec<&CaseResult> = s
        .results
        .iter()
        .filter(|r| r.pairing_violations.total > 0 || r.notices_total > 0 || !r.runner.degraded.is_empty())
        .collect();
    if telling.is_empty() && s.cases_not_run.is_empty() {
        return;
    }
    p.section("along-the-way", "What happened along the way");
    for r in telling {
        p.el("h3", "", &r.case);
        let mut items: Vec<String> = r
            .pairing_violations
            .by_kind
            .0
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| format!("pairing violation {k}: {n}"))
            .collect();
        items.extend(r.runner.degraded.iter().map(|d| format!("degraded: {d}")));
        items.extend(r.notices.iter().take(20).cloned());
        if r.notices_total as usize > r.notices.len().min(20) {
            items.push(format!("… {} notices in all (see summary.json)", r.notices_total));
        }
        p.list(&items);
    }
    if !s.cases_not_run.is_empty() {
        p.el("p", "", &format!("Not run (interrupted first): {}", s.cases_not_run.join(", ")));
    }
    p.raw("</section>\n");
}
