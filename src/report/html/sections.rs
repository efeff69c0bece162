//! The page's own sections, beside the report it shares with summary.md: the machine and
//! build, and the run's files. Each writes through [`Page`], so every string from the summary
//! is escaped.

use super::markup::{Cell, Page};
use crate::report::doc::Align;
use crate::results::summary::Summary;

use Align::Left as L;

/// The machine and build (this machine's floor is the report's calibration section).
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
    let rows: Vec<Vec<Cell>> = facts.into_iter().map(|(k, v)| vec![Cell::with(k, ""), Cell::with(v, "")]).collect();
    p.table(&[("", L), ("", L)], &rows);
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
