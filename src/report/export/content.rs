//! A run's report as content ([`Doc`]): built once from the summary, written by summary.md
//! ([`super::Markdown`]) and report.html alike. Its title and outcome, the stored verdict
//! (or that an older run stores none), where and how the run ran, then a section each: the
//! results, each sweep, the baseline, the gates, the latency distributions, calls
//! and requests (and why calls were lost or doubled), the faults, the fleet, what each fleet
//! size needs of the provider, the charts, the cases, this machine's floor, and what
//! happened along the way.

use super::{any_thin, aside, design, pair_of, spread, stat, stat_of, us, THIN_NOTE};
use crate::record::recorder::Measure;
use crate::report::doc::{inline, plain, Block, Chart, Doc, Section, Table, Verdict};
use crate::results::summary::{CaseResult, Stretch, Summary};

/// Start-up shorter than this is not worth a line: a local stale sweep.
const STARTUP_SHOWN_MS: f64 = 1.0;

/// The report of `s`.
pub(crate) fn document(s: &Summary) -> Doc {
    let outcome = if s.interrupted {
        ("INTERRUPTED", false)
    } else if s.shard.is_some() {
        // A part's gates are its cases' only: the run's outcome is the merged run's.
        ("PART OF A RUN", s.pass)
    } else if s.pass {
        ("PASS", true)
    } else {
        ("FAIL", false)
    };
    let mut sections = vec![results(s)];
    sections.extend(super::sweep::sections(s));
    let verdict = match (&s.verdict, &s.shard) {
        (_, Some(part)) => Some(Verdict { section: part_of_a_run(part), held: false }),
        (Some(v), None) => super::rollout::section(v, s).map(|(section, held)| Verdict { section, held }),
        // A run from before verdicts were stored: said, not inferred from its gates.
        (None, None) => Some(Verdict {
            section: Section::new(
                "verdict",
                "Rollout verdict: not stored",
                vec![Block::Para(plain(
                    "This run stores no rollout verdict (it was recorded before verdicts were): each case's own \
                     gates are below, and no verdict is inferred from them.",
                ))],
            ),
            held: false,
        }),
    };
    sections.extend(baseline(s));
    sections.push(super::gates::document(s));
    sections.push(latency(s));
    sections.push(calls_and_requests(s));
    sections.extend(aside::faults(s));
    sections.extend(super::fleet::document(s));
    sections.extend(super::needs::document(s));
    sections.extend(charts(s));
    sections.push(cases(s));
    sections.push(aside::calibration(s));
    sections.extend(aside::along_the_way(s));
    sections.push(assumptions(s));
    Doc { title: format!("relay-bench: {}", s.scenario), outcome, verdict, lead: lead(s), sections }
}

/// A part of a split run has no verdict of its own: which part it is, what it ran, and
/// how the parts become the run.
fn part_of_a_run(part: &crate::scenario::shard::ShardRecord) -> Section {
    let text = format!(
        "A run split with `--shard`, {}{}. Its gates are its own cases'; the rollout verdict is the whole \
         run's: `relay-bench merge` joins the {} parts' run directories into it.",
        part.describe(),
        if part.runs.is_empty() { String::new() } else { format!(" ({})", part.runs.join(", ")) },
        part.count
    );
    Section::new("verdict", "Rollout verdict: in the merged run", vec![Block::Para(plain(text))])
}

/// The description, and where and how the run ran.
fn lead(s: &Summary) -> Vec<Block> {
    let mut out = Vec::new();
    if !s.description.is_empty() {
        out.push(Block::Para(plain(s.description.clone())));
    }
    let e = &s.environment;
    let virtuals = s.results.iter().filter(|r| r.clock == crate::scenario::Clock::Virtual).count();
    let clock = match virtuals {
        // Before a case has finished there is no result to tell a clock by.
        _ if s.results.is_empty() => "clock: each case's own (no case has finished yet)",
        0 => "clock: real (wall time, real files and inotify)",
        n if n == s.results.len() => "clock: virtual (simulated time over an in-memory sandbox: timings come from the model, not from this machine's speed)",
        _ => "clocks: real and virtual (cases marked *virtual* ran in simulated time over an in-memory sandbox)",
    };
    out.push(Block::Para(plain(format!(
        "{} {} v{} · started {} · {} · kernel {} · {} cpus · relay dirs on {} ({}) · {} build · {clock}",
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
    ))));
    if let Some(ov) = &s.overrides {
        out.push(Block::Para(plain(format!("Run with overrides of the scenario file: {}.", ov.describe()))));
    }
    if let Some(note) = super::repeats_note(s) {
        out.push(Block::Para(plain(note)));
    }
    if e.build == "debug" {
        out.push(Block::Quote(inline("**Warning:** a debug build; its numbers include unoptimized harness code.")));
    }
    out
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

/// [`THIN_NOTE`] as a paragraph, when a table showed a thin percentile.
fn thin_note(thin: bool) -> Option<Block> {
    thin.then(|| Block::Para(plain(THIN_NOTE)))
}

/// One row per case.
fn results(s: &Summary) -> Section {
    let rows = s.results.iter().map(|r| {
        let gates = super::standing_cell(r);
        vec![
            format!("{}{}", r.case, if r.clock == crate::scenario::Clock::Virtual { " *virtual*" } else { "" }),
            r.strategy.clone(),
            r.writer.clone(),
            design(r),
            r.calls.completed.to_string(),
            r.calls.lost.to_string(),
            pair_of(r, "wake", r.latency(Measure::Wake)),
            pair_of(r, "pickup", r.latency(Measure::Pickup)),
            pair_of(r, "completion", r.latency(Measure::Completion)),
            rate(r, "discovery_per_min", r.requests.discovery_per_min, !r.requests.not_measured),
            gates,
        ]
    });
    let table = Table::new("case|strategy|writer|departs from production|>calls|>lost|wake p50 / p99|pickup p50 / p99|completion p50 / p99|>discovery/min/dir|gates", rows);
    let thin = any_thin(s.results.iter().flat_map(|r| Measure::SPEC.map(|m| r.latency(m))), &["p50", "p99"]);
    Section::new("results", "Results", [Some(Block::Table(table)), thin_note(thin)].into_iter().flatten().collect())
}

/// Each case against its baseline case: the scenario's, named in the heading, unless some
/// case has one of its own (a remote case set beside remote-poll): then each line names it.
fn baseline(s: &Summary) -> Option<Section> {
    let b = s.baseline.as_ref()?;
    let compared: Vec<(&str, &crate::results::summary::Comparison)> =
        s.results.iter().filter_map(|r| Some((r.case.as_str(), r.vs_baseline.as_ref()?))).collect();
    let one_baseline = compared.iter().all(|(_, c)| &c.baseline == b);
    let items = compared
        .iter()
        .map(|(case, c)| match one_baseline {
            true => inline(format!("**{case}**: {}", c.text)),
            false => inline(format!("**{case}** against {}: {}", c.baseline, c.text)),
        })
        .collect();
    let title = if one_baseline { format!("Against the baseline ({b})") } else { "Against the baselines".into() };
    Some(Section::new("baseline", title, vec![Block::List(items)]))
}

/// A case's row for one measure of the latency table.
fn latency_row(r: &CaseResult, label: &str, measure: Measure) -> Vec<String> {
    let (case, s) = (r.case.clone(), r.latency(measure));
    if s.count == 0 {
        return [case.as_str(), label, "0", "-", "-", "-", "-", "-"].map(str::to_owned).to_vec();
    }
    let m = measure.name();
    vec![
        case,
        label.to_owned(),
        s.count.to_string(),
        stat_of(r, m, s, "p50"),
        stat_of(r, m, s, "p90"),
        stat_of(r, m, s, "p99"),
        stat_of(r, m, s, "p999"),
        format!("{}{}", us(s.max), spread(r, &format!("{m}.max"), us)),
    ]
}

/// The latency distributions of every case.
fn latency(s: &Summary) -> Section {
    let mut blocks = vec![Block::Para(inline(
        "Completion is timed from each call's intended start (open loop); `completion (uncorrected)` from its actual \
         start; relay overhead is uncorrected completion minus handler time.",
    ))];
    blocks.extend(warmup_note(s).map(|n| Block::Para(inline(n))));
    let rows = s.results.iter().flat_map(|r| Measure::all().filter_map(move |m| Some(latency_row(r, m.row()?, m))));
    blocks.push(Block::Table(Table::new("case|measure|>samples|>p50|>p90|>p99|>p99.9|>max", rows)));
    let shown = s.results.iter().flat_map(|r| Measure::all().filter(|m| m.row().is_some()).map(|m| r.latency(m)));
    blocks.extend(thin_note(any_thin(shown, &["p50", "p90", "p99", "p999"])));
    Section::new("latency", "Latency distributions", blocks)
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

/// What the request rates' columns mean.
const RATES: &str = "Rates are per relay dir per minute: over the whole window; split by whether the dir had calls in flight (busy) or not, over the minutes a relay was alive (idle, live relay: the idle budget's figure) and over every dir-minute, between agent turns too (idle, dir); and over the workload's phases with turns (active) and without (idle phases: the steady state a request budget is about). Every list, whether a timer or a wake started it, and every watch exec is discovery; reads, stats, deletes and answer writes are data. `-`: not measured (no such stretch, or a black-box runner whose requests cannot be seen).";

/// How calls ended, and the request rates; why calls were lost or doubled.
fn calls_and_requests(s: &Summary) -> Section {
    let calls = s.results.iter().map(|r| {
        let c = &r.calls;
        vec![
            r.case.clone(),
            c.scheduled.to_string(),
            c.ok.to_string(),
            c.error.to_string(),
            c.paused.to_string(),
            c.lost.to_string(),
            c.duplicated.to_string(),
            r.leftover_files.to_string(),
        ]
    });
    let rates = s.results.iter().map(|r| {
        let q = &r.requests;
        let visible = !q.not_measured;
        let kinds: Vec<String> = q.by_kind.0.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        vec![
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
        ]
    });
    let mut blocks = vec![
        Block::Table(Table::new("case|>scheduled|>ok|>error|>paused|>lost|>duplicated|>leftover files", calls)),
        Block::Para(inline(RATES)),
        Block::Table(Table::new("case|>discovery/min/dir|>busy|>idle, live relay|>idle, dir|>active phases|>idle phases|>data/min/dir|requests by kind", rates)),
    ];
    blocks.extend(aside::daemon_log(s));
    blocks.extend(aside::causes(s));
    Section::new("calls", "Calls and requests", blocks)
}

/// The charts drawn beside the report, when some will exist.
fn charts(s: &Summary) -> Option<Section> {
    let any_latency = s.results.iter().any(|r| r.latency(Measure::Pickup).count > 0);
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
    let shown: Vec<Chart> = charts
        .iter()
        .filter(|c| c.2)
        .map(|(stem, title, _)| Chart { stem: (*stem).into(), title: (*title).into() })
        .collect();
    (!shown.is_empty()).then(|| Section::new("charts", "Charts", vec![Block::Charts(shown)]))
}

/// What each case ran on, and what it could not measure.
fn cases(s: &Summary) -> Section {
    let items = s.results.iter().map(|r| {
        let head = inline(format!(
            "**{}** — host: {}; runner `{}`: {}; writer `{}`: {}",
            r.case, r.host_params, r.strategy, r.strategy_params, r.writer, r.writer_params
        ));
        (head, case_notes(r).into_iter().map(inline).collect())
    });
    Section::new("cases", "Cases", vec![Block::Outline(items.collect())])
}

/// What a case's line in [`cases`] says under it.
fn case_notes(r: &CaseResult) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(l) = &r.injected_leg_us {
        out.push(format!(
            "latency legs actually injected (one way, {} legs): p50 {}, p99 {}, max {}",
            l.count,
            stat(l, "p50"),
            stat(l, "p99"),
            us(l.max)
        ));
    }
    if let Some(side) = &r.sandbox_side {
        out.push(format!(
            "in the sandbox: the writer and the watch program ran there (relay-bench uploaded, {:.1} MB in {:.0} ms, to {}; daemon {}); its clock joined to this one from {} round trips: offset {:.3} ms, drift {:.1} ppm, **wake, pickup and relay overhead ±{:.3} ms**, completion exact (one clock)",
            side.program_bytes as f64 / 1e6,
            side.upload_ms,
            side.root,
            side.daemon_version.as_deref().unwrap_or("version not known"),
            side.clock_readings,
            side.clock_offset_ms,
            side.clock_drift_ppm,
            side.clock_uncertainty_ms
        ));
    }
    if r.runner.startup_ms >= STARTUP_SHOWN_MS {
        out.push(format!(
            "start-up before the schedule: {} (the slowest runner's: its stale sweep, or a black-box runner's answer to the probe call)",
            us(r.runner.startup_ms * 1000.0)
        ));
    }
    out.extend(r.unavailable.iter().map(|u| format!("not measured: {u}")));
    if r.calls.unmeasured > 0 {
        out.push(format!(
            "answered but not in these histograms: {} call(s) whose answer no runner announced",
            r.calls.unmeasured
        ));
    }
    if r.runner.inline > 0 || r.runner.missed_by_source > 0 {
        out.push(format!(
            "requests carried inline by the watch: {}; timer scans that found work the watch missed: {}",
            r.runner.inline, r.runner.missed_by_source
        ));
    }
    if r.runner.safety_lists > 0 {
        out.push(format!(
            "safety lists (the safety wait ended a wait while the window watch was healthy): {}",
            r.runner.safety_lists
        ));
    }
    out
}

/// What the run assumes and does not measure, each with its source: the report's last word.
fn assumptions(s: &Summary) -> Section {
    let blocks = match &s.assumptions {
        Some(all) => vec![
            Block::Para(inline(
                "What this run takes as given rather than measures, and where each value comes from: a figure above \
                 holds for these, not beyond them.",
            )),
            Block::Table(Table::new(
                "what|value|source",
                all.iter().map(|a| vec![a.what.clone(), a.value.clone(), a.source.clone()]),
            )),
        ],
        None => vec![Block::Para(plain(
            "This run did not record what it assumes (a run from before assumptions were recorded): its scenario \
             file and docs/production.md say what its workload and limits stand for.",
        ))],
    };
    Section::new("assumptions", "Assumptions", blocks)
}
