//! `summary.md`: a report a person reads, fit for a CI job summary.

use std::fmt::Write;

use super::{any_thin, design, pair_of, spread, stat, stat_of, us, THIN_NOTE};
use crate::record::recorder::Measure;
use crate::report::doc::{Align, MdTable};
use crate::report::output::{Input, Moment, Output, Staged, WriteError};
use crate::results::summary::{CaseResult, Stretch, Summary};

pub(crate) struct Markdown;

/// Start-up shorter than this is not worth a line: a local stale sweep.
const STARTUP_SHOWN_MS: f64 = 1.0;

use Align::{Left as L, Right as R};

fn latency_row(t: &mut MdTable<'_>, r: &CaseResult, label: &str, measure: Measure) {
    let (case, s) = (r.case.as_str(), r.latency(measure));
    if s.count == 0 {
        t.row(&[case, label, "0", "-", "-", "-", "-", "-"]);
        return;
    }
    let m = measure.name();
    t.row(&[
        case.to_owned(),
        label.to_owned(),
        s.count.to_string(),
        stat_of(r, m, s, "p50"),
        stat_of(r, m, s, "p90"),
        stat_of(r, m, s, "p99"),
        stat_of(r, m, s, "p999"),
        format!("{}{}", us(s.max), spread(r, &format!("{m}.max"), us)),
    ]);
}

/// A stretch's discovery rate and its length, or `-` when none of it happened or the
/// runner's requests could not be seen.
/// With repeats, its spread follows the rate (`figure`: the rate's name across repeats).
/// A stretch shorter than a second (summed over the relay dirs) gets no rate: a few
/// requests over it would read as tens of thousands a minute.
pub(super) fn stretch(r: &CaseResult, figure: &str, s: &Stretch, visible: bool) -> String {
    let secs = s.minutes * 60.0;
    match s.rate() {
        Some(_) if visible && secs < 1.0 => format!("- (only {secs:.2} s)"),
        // Under 0.05 min the minutes would read 0.0: the seconds instead.
        Some(rate) if visible && s.minutes < 0.05 => format!("{rate:.1}{} ({secs:.1} s)", spread(r, figure, one)),
        Some(rate) if visible => format!("{rate:.1}{} ({:.1} min)", spread(r, figure, one), s.minutes),
        _ => "-".into(),
    }
}

/// A request rate, or `-` when the runner's requests could not be seen; with repeats, its
/// spread after it.
fn rate(r: &CaseResult, figure: &str, v: f64, visible: bool) -> String {
    if visible {
        format!("{v:.1}{}", spread(r, figure, one))
    } else {
        "-".into()
    }
}

/// A rate to one decimal.
fn one(v: f64) -> String {
    format!("{v:.1}")
}

impl Output<Input<'_>> for Markdown {
    fn name(&self) -> &'static str {
        "summary.md"
    }

    fn path(&self) -> &'static str {
        "summary.md"
    }

    fn written_at(&self, _: Moment) -> bool {
        true
    }

    fn write(&self, input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
        out.put("summary.md", &self.render(input.summary()))
    }
}

impl Markdown {
    pub(crate) fn render(&self, s: &Summary) -> Vec<u8> {
        let mut o = String::new();
        header(&mut o, s);
        results(&mut o, s);
        super::sweep::render(&mut o, s);
        if s.verdict.is_none() {
            // A run from before rollout gates were declared: its verdict, inferred.
            super::verdict::render(&mut o, s);
        }
        baseline(&mut o, s);
        crate::report::doc::markdown(&mut o, &super::gates::document(s));
        latency(&mut o, s);
        calls_and_requests(&mut o, s);
        super::aside::causes(&mut o, s);
        super::aside::faults(&mut o, s);
        if let Some(sec) = super::fleet::document(s) {
            crate::report::doc::markdown(&mut o, &sec);
        }
        charts(&mut o, s);
        cases(&mut o, s);
        super::aside::calibration(&mut o, s);
        super::aside::along_the_way(&mut o, s);
        o.into_bytes()
    }
}

/// The title with the run's verdict, the description, and where and how it ran.
fn header(o: &mut String, s: &Summary) {
    let verdict = if s.interrupted {
        "INTERRUPTED"
    } else if s.pass {
        "PASS"
    } else {
        "FAIL"
    };
    let _ = writeln!(o, "# relay-bench: {} — {verdict}\n", s.scenario);
    if let Some(v) = &s.verdict {
        super::rollout::markdown(o, v, s);
    }
    if !s.description.is_empty() {
        let _ = writeln!(o, "{}\n", s.description);
    }
    let e = &s.environment;
    let virtuals = s.results.iter().filter(|r| r.clock == "virtual").count();
    let clock = match virtuals {
        // Before a case has finished there is no result to tell a clock by.
        _ if s.results.is_empty() => "clock: each case's own (no case has finished yet)",
        0 => "clock: real (wall time, real files and inotify)",
        n if n == s.results.len() => "clock: virtual (simulated time over an in-memory sandbox: timings come from the model, not from this machine's speed)",
        _ => "clocks: real and virtual (cases marked *virtual* ran in simulated time over an in-memory sandbox)",
    };
    let _ = writeln!(
        o,
        "{} {} v{} · started {} · {} · kernel {} · {} cpus · relay dirs on {} ({}) · {} build · {clock}\n",
        s.tool.name,
        s.scenario_origin,
        s.tool.version,
        s.started_at,
        e.arch,
        e.kernel,
        e.cpus,
        e.relay_fs,
        e.relay_root,
        e.build
    );
    if let Some(ov) = &s.overrides {
        let _ = writeln!(o, "Run with overrides of the scenario file: {}.\n", ov.describe());
    }
    if let Some(note) = super::repeats_note(s) {
        let _ = writeln!(o, "{note}\n");
    }
    if e.build == "debug" {
        let _ = writeln!(o, "> **Warning:** a debug build; its numbers include unoptimized harness code.\n");
    }
}

/// One row per case.
fn results(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "## Results\n");
    let mut t = MdTable::new(
        o,
        &[
            ("case", L),
            ("strategy", L),
            ("writer", L),
            ("departs from production", L),
            ("calls", R),
            ("lost", R),
            ("wake p50 / p99", L),
            ("pickup p50 / p99", L),
            ("completion p50 / p99", L),
            ("discovery/min/dir", R),
            ("gates", L),
        ],
    );
    for r in &s.results {
        let passed = r.gates.iter().filter(|g| g.pass).count();
        let mark = if r.interrupted {
            "interrupted".to_owned()
        } else if r.pass {
            format!("✅ {passed}/{}", r.gates.len())
        } else {
            format!("❌ {passed}/{}", r.gates.len())
        } + &r.rollout_met().map_or(String::new(), |(met, of)| {
            format!(" · rollout {} {met}/{of}", if met == of { "✅" } else { "❌" })
        });
        t.row(&[
            format!("{}{}", r.case, if r.clock == "virtual" { " *virtual*" } else { "" }),
            r.strategy.clone(),
            r.writer.clone(),
            design(r),
            r.calls.completed.to_string(),
            r.calls.lost.to_string(),
            pair_of(r, "wake", r.latency(Measure::WAKE)),
            pair_of(r, "pickup", r.latency(Measure::PICKUP)),
            pair_of(r, "completion", r.latency(Measure::COMPLETION)),
            rate(r, "discovery_per_min", r.requests.discovery_per_min, !r.requests.not_measured),
            mark,
        ]);
    }
    if any_thin(s.results.iter().flat_map(|r| Measure::SPEC.map(|m| r.latency(m))), &["p50", "p99"]) {
        let _ = writeln!(o, "\n{THIN_NOTE}");
    }
}

/// Each case against its baseline case: the scenario's, named in the heading, unless some
/// case has one of its own (a remote case set beside remote-poll): then each line names it.
fn baseline(o: &mut String, s: &Summary) {
    if let Some(b) = &s.baseline {
        let compared: Vec<(&str, &crate::results::summary::Comparison)> =
            s.results.iter().filter_map(|r| Some((r.case.as_str(), r.vs_baseline.as_ref()?))).collect();
        if compared.iter().all(|(_, c)| &c.baseline == b) {
            let _ = writeln!(o, "\n## Against the baseline ({b})\n");
            for (case, c) in compared {
                let _ = writeln!(o, "- **{case}**: {}", c.text);
            }
        } else {
            let _ = writeln!(o, "\n## Against the baselines\n");
            for (case, c) in compared {
                let _ = writeln!(o, "- **{case}** against {}: {}", c.baseline, c.text);
            }
        }
    }
}

/// The latency distributions of every case.
fn latency(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "\n## Latency distributions\n");
    let _ = writeln!(o, "Completion is timed from each call's intended start (open loop); `completion (uncorrected)` from its actual start; relay overhead is uncorrected completion minus handler time.\n");
    if let Some(note) = warmup_note(s) {
        let _ = writeln!(o, "{note}\n");
    }
    let mut t = MdTable::new(
        o,
        &[("case", L), ("measure", L), ("samples", R), ("p50", R), ("p90", R), ("p99", R), ("p99.9", R), ("max", R)],
    );
    for r in &s.results {
        for (m, label) in Measure::all().filter_map(|m| Some((m, m.row()?))) {
            latency_row(&mut t, r, label, m);
        }
    }
    let shown = s.results.iter().flat_map(|r| Measure::all().filter(|m| m.row().is_some()).map(|m| r.latency(m)));
    if any_thin(shown, &["p50", "p90", "p99", "p999"]) {
        let _ = writeln!(o, "\n{THIN_NOTE}");
    }
}

/// Why a case's samples are fewer than its calls: the warm-up's calls are run and counted
/// among the calls, not measured. `None` when no case had any.
fn warmup_note(s: &Summary) -> Option<String> {
    let cases: Vec<(&str, u64)> =
        s.results.iter().filter(|r| r.calls.warmup > 0).map(|r| (r.case.as_str(), r.calls.warmup)).collect();
    let counts = match cases.as_slice() {
        [] => return None,
        [(_, n), rest @ ..] if rest.iter().all(|(_, m)| m == n) && s.results.len() == cases.len() => {
            format!("{n} a case")
        }
        few if few.len() <= 4 => few.iter().map(|(c, n)| format!("{c} {n}")).collect::<Vec<_>>().join(", "),
        many => {
            let (lo, hi) = many.iter().fold((u64::MAX, 0), |(lo, hi), (_, n)| (lo.min(*n), hi.max(*n)));
            format!("from {lo} to {hi} a case; summary.json's `calls.warmup` has each")
        }
    };
    Some(format!(
        "Samples leave out the warm-up's calls: they are run, and counted among a case's calls in the results \
         table, but not measured ({counts})."
    ))
}

/// How calls ended, and the request rates.
fn calls_and_requests(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "\n## Calls and requests\n");
    let mut t = MdTable::new(
        o,
        &[
            ("case", L),
            ("scheduled", R),
            ("ok", R),
            ("error", R),
            ("paused", R),
            ("lost", R),
            ("duplicated", R),
            ("leftover files", R),
        ],
    );
    for r in &s.results {
        let c = &r.calls;
        t.row(&[
            r.case.clone(),
            c.scheduled.to_string(),
            c.ok.to_string(),
            c.error.to_string(),
            c.paused.to_string(),
            c.lost.to_string(),
            c.duplicated.to_string(),
            r.leftover_files.to_string(),
        ]);
    }
    let _ = writeln!(o, "\nRates are per relay dir per minute: over the whole window; split by whether the dir had calls in flight (busy) or not, over the minutes a relay was alive (idle, live relay: the idle budget's figure) and over every dir-minute, between agent turns too (idle, dir); and over the workload's phases with turns (active) and without (idle phases: the steady state a request budget is about). Every list, whether a timer or a wake started it, and every watch exec is discovery; reads, stats, deletes and answer writes are data. `-`: not measured (no such stretch, or a black-box runner whose requests cannot be seen).\n");
    let mut t = MdTable::new(
        o,
        &[
            ("case", L),
            ("discovery/min/dir", R),
            ("busy", R),
            ("idle, live relay", R),
            ("idle, dir", R),
            ("active phases", R),
            ("idle phases", R),
            ("data/min/dir", R),
            ("requests by kind", L),
        ],
    );
    for r in &s.results {
        let q = &r.requests;
        let visible = !q.not_measured;
        let kinds: Vec<String> = q.by_kind.0.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        t.row(&[
            r.case.clone(),
            rate(r, "discovery_per_min", q.discovery_per_min, visible),
            stretch(r, "busy_discovery_per_min", &q.busy, visible),
            q.idle_relay
                .as_ref()
                .map_or_else(|| "-".into(), |live| stretch(r, "idle_discovery_per_min", live, visible)),
            stretch(r, "idle_dir_discovery_per_min", &q.idle, visible),
            stretch(r, "active_phase_discovery_per_min", &q.active_phases, visible),
            stretch(r, "idle_phase_discovery_per_min", &q.idle_phases, visible),
            rate(r, "data_per_min", q.data_per_min, visible),
            if visible { kinds.join(", ") } else { "-".into() },
        ]);
    }
    super::aside::daemon_log(o, s);
}

/// The charts drawn beside this file, linked when they will exist.
fn charts(o: &mut String, s: &Summary) {
    // The charts drawn beside this file (see `chart`), linked when they will exist.
    let any_latency = s.results.iter().any(|r| r.latency(Measure::PICKUP).count > 0);
    let charts = [
        ("latency-percentiles", "latency by percentile", any_latency),
        ("time-breakdown", "where a call's time goes", s.results.iter().any(|r| r.breakdown_ms().is_some())),
        (
            "discovery-over-time",
            "discovery requests over time",
            s.results.iter().any(|r| !r.requests.not_measured && !r.requests.timeline.is_empty()),
        ),
        (
            "fleet-over-time",
            "the fleet over time: held execs, demoted turns, requests per second",
            s.results
                .iter()
                .any(|r| super::fleet::telling(r).is_some_and(|f| f.org_measured && !f.timeline.is_empty())),
        ),
        ("faults-pickup-over-time", "pickup over time, faults shaded", s.results.iter().any(|r| !r.faults.is_empty())),
    ];
    if charts.iter().any(|c| c.2) {
        let _ = writeln!(o, "\n## Charts\n");
        for (file, title, _) in charts.iter().filter(|c| c.2) {
            let _ = writeln!(o, "![{title}](charts/{file}.png) ([SVG](charts/{file}.svg))\n");
        }
    }
}

/// What each case ran on, and what it could not measure.
fn cases(o: &mut String, s: &Summary) {
    let _ = writeln!(o, "\n## Cases\n");
    for r in &s.results {
        let _ = writeln!(
            o,
            "- **{}** — host: {}; runner `{}`: {}; writer `{}`: {}",
            r.case, r.host_params, r.strategy, r.strategy_params, r.writer, r.writer_params
        );
        if let Some(l) = &r.injected_leg_us {
            let _ = writeln!(
                o,
                "  - latency legs actually injected (one way, {} legs): p50 {}, p99 {}, max {}",
                l.count,
                stat(l, "p50"),
                stat(l, "p99"),
                us(l.max)
            );
        }
        if let Some(side) = &r.sandbox_side {
            let _ = writeln!(
                o,
                "  - in the sandbox: the writer and the watch program ran there (relay-bench uploaded, {:.1} MB in {:.0} ms, to {}; daemon {}); its clock joined to this one from {} round trips: offset {:.3} ms, drift {:.1} ppm, **wake, pickup and relay overhead ±{:.3} ms**, completion exact (one clock)",
                side.program_bytes as f64 / 1e6,
                side.upload_ms,
                side.root,
                side.daemon_version.as_deref().unwrap_or("version not known"),
                side.clock_readings,
                side.clock_offset_ms,
                side.clock_drift_ppm,
                side.clock_uncertainty_ms
            );
        }
        if r.runner.startup_ms >= STARTUP_SHOWN_MS {
            let _ = writeln!(
                o,
                "  - start-up before the schedule: {} (the slowest runner's: its stale sweep, or a black-box runner's answer to the probe call)",
                us(r.runner.startup_ms * 1000.0)
            );
        }
        for u in &r.unavailable {
            let _ = writeln!(o, "  - not measured: {u}");
        }
        if r.calls.unmeasured > 0 {
            let _ = writeln!(
                o,
                "  - answered but not in these histograms: {} call(s) whose answer no runner announced",
                r.calls.unmeasured
            );
        }
        if r.runner.inline > 0 || r.runner.missed_by_source > 0 {
            let _ = writeln!(
                o,
                "  - requests carried inline by the watch: {}; timer scans that found work the watch missed: {}",
                r.runner.inline, r.runner.missed_by_source
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::realistic;
    use super::*;
    use crate::report::doc::gfm_tests::check_tables;

    #[test]
    fn a_repeated_case_shows_each_median_with_its_spread_and_says_how_many_repeats() {
        let mut s = realistic();
        let once = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(!once.contains("Each case ran"), "a run of one says nothing of repeats");
        let r = &mut s.results[0];
        let three: Vec<CaseResult> = [0.9, 1.0, 1.2]
            .iter()
            .map(|f| {
                let mut x = r.clone();
                x.measures.get_mut(Measure::PICKUP).p50 *= f;
                x
            })
            .collect();
        *r = crate::results::summary::repeats::combine(three, vec![1, 2, 3]);
        let (p50, r) = (r.latency(Measure::PICKUP).p50, r.clone());
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(md.contains("Each case ran 3 times"), "{md}");
        let shown = format!("{} ({}–{})", us(p50), us(p50 * 0.9), us(p50 * 1.2));
        assert!(md.contains(&shown), "{shown} in:\n{md}");
        check_tables(&md).unwrap_or_else(|e| panic!("{e}:\n{md}"));
        let console = String::from_utf8(crate::report::export::Table.render(&s)).unwrap();
        assert!(console.contains(&format!("{}: median of 3 repeats (min–max): ", r.case)), "{console}");
    }

    #[test]
    fn the_warm_ups_calls_are_said_beside_the_samples_that_leave_them_out() {
        let mut s = realistic();
        for r in &mut s.results {
            r.calls.warmup = 0;
        }
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(!md.contains("warm-up's calls"), "no warm-up, no note: {md}");
        for r in &mut s.results {
            r.calls.warmup = 18;
        }
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(md.contains("but not measured (18 a case)."), "{md}");
        s.results[0].calls.warmup = 7;
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(s.results.len() > 4 && md.contains("(from 7 to 18 a case; summary.json's"), "a range past four: {md}");
        s.results.truncate(2);
        let first = s.results[0].case.clone();
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(md.contains(&format!("but not measured ({first} 7, ")), "each case named when they differ: {md}");
    }

    #[test]
    fn a_report_before_any_case_finished_names_no_clock_it_cannot_know() {
        let mut s = realistic();
        s.results.clear();
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(md.contains("clock: each case's own (no case has finished yet)"), "{md}");
        assert!(!md.contains("clock: real"), "{md}");
    }

    #[test]
    fn every_table_parses_as_a_gfm_table_with_one_column_count() {
        let md = String::from_utf8(Markdown.render(&realistic())).unwrap();
        let tables = check_tables(&md).unwrap_or_else(|e| panic!("{e}:\n{md}"));
        assert_eq!(tables, 7, "the verdict, results, latency, calls, requests, faults, calibration");
        for debug in ["Some(", "None", "NaN", " inf "] {
            assert!(!md.contains(debug), "{debug:?} in the report:\n{md}");
        }
    }

    #[test]
    fn the_report_says_each_case_design_and_what_was_not_measured() {
        let md = String::from_utf8(Markdown.render(&realistic())).unwrap();
        assert!(md.lines().nth(2).unwrap().starts_with("## Rollout verdict: "), "the verdict under the title:\n{md}");
        assert_eq!(md.matches("Rollout verdict").count(), 1, "declared, not inferred as well");
        let line = |start: &str| md.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}\n{md}"));
        assert!(line("| window-exec |").contains("| production as built |"));
        assert!(line("| window-exec-quiet-idle |").contains("| idle_wake = false |"));
        // The black-box case: no wake, no request rates; its start-up is said.
        let results = line("| python-poll | external |");
        assert!(results.contains("| - |"), "{results}");
        let rates = &md[md.find("| case | discovery/min/dir |").unwrap()..];
        let requests = rates.lines().find(|l| l.starts_with("| python-poll |")).unwrap();
        assert_eq!(requests, "| python-poll | - | - | - | - | - | - | - | - |");
        assert!(md.contains("start-up before the schedule: 1.02s"), "{md}");
        assert!(md.contains("start-up before the schedule: 41.7ms"));
        assert!(md.contains("- watch program exited with code 127"));
        assert!(md.contains("watch failure \\| exec rejected"));
    }

    #[test]
    fn invariants_that_hold_take_one_line_a_case_and_a_broken_one_its_own() {
        let mut s = realistic();
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        let section = &md[md.find("## Gates").unwrap()..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
        let case = s.results[0].case.clone();
        let held = format!("- ✅ **{case}** invariants hold — lost 0, duplicated 0");
        assert!(section.contains(&held), "{section}");
        assert!(!section.contains("`lost == 0`"), "no passing invariant on a line of its own:\n{section}");
        let declared = s
            .results
            .iter()
            .flat_map(|r| &r.gates)
            .filter(|g| !crate::scenario::rules::INVARIANTS.contains(&g.expr.as_str()));
        for g in declared {
            assert!(section.contains(&format!("`{}` — observed {}", g.expr, g.observed_text)), "{}", g.expr);
        }

        let lost = s.results[0].gates.iter_mut().find(|g| g.expr == "lost == 0").unwrap();
        lost.pass = false;
        lost.observed_text = "2".into();
        let md = String::from_utf8(Markdown.render(&s)).unwrap();
        assert!(md.contains(&format!("- ❌ **{case}** `lost == 0` — observed 2")), "{md}");
        assert!(md.contains(&format!("- ✅ **{case}** invariants hold — duplicated 0")), "{md}");
    }
}
