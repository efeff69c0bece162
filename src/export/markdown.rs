//! `summary.md`: a report a person reads, fit for a CI job summary.

use std::fmt::Write;

use super::{pair, us, Exporter};
use crate::recorder::LatencyStats;
use crate::summary::Summary;

pub struct Markdown;

fn row(o: &mut String, case: &str, measure: &str, s: &LatencyStats) {
    if s.count == 0 {
        let _ = writeln!(o, "| {case} | {measure} | 0 | - | - | - | - | - |");
        return;
    }
    let _ = writeln!(
        o,
        "| {case} | {measure} | {} | {} | {} | {} | {} | {} |",
        s.count,
        us(s.p50),
        us(s.p90),
        us(s.p99),
        us(s.p999),
        us(s.max)
    );
}

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "summary.md"
    }

    fn render(&self, s: &Summary) -> Vec<u8> {
        let mut o = String::new();
        let verdict = if s.interrupted {
            "INTERRUPTED"
        } else if s.pass {
            "PASS"
        } else {
            "FAIL"
        };
        let _ = writeln!(o, "# relay-bench: {} — {verdict}\n", s.scenario);
        if !s.description.is_empty() {
            let _ = writeln!(o, "{}\n", s.description);
        }
        let e = &s.environment;
        let virtuals = s.results.iter().filter(|r| r.clock == "virtual").count();
        let clock = match virtuals {
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
        if e.build == "debug" {
            let _ = writeln!(o, "> **Warning:** a debug build; its numbers include unoptimized harness code.\n");
        }

        let _ = writeln!(o, "## Results\n");
        let _ = writeln!(o, "| case | strategy | writer | calls | lost | wake p50 / p99 | pickup p50 / p99 | completion p50 / p99 | discovery/min/dir | gates |");
        let _ = writeln!(o, "|---|---|---|---:|---:|---|---|---|---:|---|");
        for r in &s.results {
            let passed = r.gates.iter().filter(|g| g.pass).count();
            let mark = if r.interrupted {
                "interrupted".to_owned()
            } else if r.pass {
                format!("✅ {passed}/{}", r.gates.len())
            } else {
                format!("❌ {passed}/{}", r.gates.len())
            };
            let _ = writeln!(
                o,
                "| {}{} | {} | {} | {} | {} | {} | {} | {} | {} | {mark} |",
                r.case,
                if r.clock == "virtual" { " *virtual*" } else { "" },
                r.strategy,
                r.writer,
                r.calls.completed,
                r.calls.lost,
                pair(&r.latency_us.wake),
                pair(&r.latency_us.pickup),
                pair(&r.latency_us.completion),
                if !r.requests.not_measured { format!("{:.1}", r.requests.discovery_per_min) } else { "-".into() }
            );
        }

        if let Some(b) = &s.baseline {
            let _ = writeln!(o, "\n## Against the baseline ({b})\n");
            for r in &s.results {
                if let Some(c) = &r.vs_baseline {
                    let _ = writeln!(o, "- **{}**: {}", r.case, c.text);
                }
            }
        }

        let _ = writeln!(o, "\n## Gates\n");
        for r in &s.results {
            for g in &r.gates {
                let _ = writeln!(
                    o,
                    "- {} **{}** `{}` — observed {}",
                    if g.pass { "✅" } else { "❌" },
                    r.case,
                    g.expr,
                    g.observed_text
                );
            }
        }

        let _ = writeln!(o, "\n## Latency distributions\n");
        let _ = writeln!(o, "Completion is timed from each call's intended start (open loop); `completion (uncorrected)` from its actual start; relay overhead is uncorrected completion minus handler time.\n");
        let _ = writeln!(o, "| case | measure | samples | p50 | p90 | p99 | p99.9 | max |");
        let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---:|");
        for r in &s.results {
            let l = &r.latency_us;
            row(&mut o, &r.case, "wake", &l.wake);
            row(&mut o, &r.case, "pickup", &l.pickup);
            row(&mut o, &r.case, "completion", &l.completion);
            row(&mut o, &r.case, "completion (uncorrected)", &l.completion_uncorrected);
            row(&mut o, &r.case, "relay overhead", &l.relay_overhead);
            row(&mut o, &r.case, "schedule lag", &r.schedule_lag_us);
        }

        let _ = writeln!(o, "\n## Calls and requests\n");
        let _ = writeln!(o, "Rates are per relay dir per minute: over the whole window; split by whether the dir had calls in flight (busy) or not (idle); and over the workload's phases with turns (active) and without (idle phases: the steady state a request budget is about). A list after a wake fetches known work and counts as data; a list the timer starts, and every watch exec, is discovery.\n");
        let _ = writeln!(o, "| case | scheduled | ok | error | paused | lost | duplicated | discovery/min/dir | busy | idle | active phases | idle phases | data/min/dir | requests by kind | leftover files |");
        let _ = writeln!(o, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|");
        for r in &s.results {
            let kinds: Vec<String> =
                r.requests.by_kind.0.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} ({:.1} min) | {:.1} ({:.1} min) | {:.1} ({:.1} min) | {:.1} ({:.1} min) | {:.1} | {} | {} |",
                r.case,
                r.calls.scheduled,
                r.calls.ok,
                r.calls.error,
                r.calls.paused,
                r.calls.lost,
                r.calls.duplicated,
                r.requests.discovery_per_min,
                r.requests.busy.discovery_per_min,
                r.requests.busy.minutes,
                r.requests.idle.discovery_per_min,
                r.requests.idle.minutes,
                r.requests.active_phases.discovery_per_min,
                r.requests.active_phases.minutes,
                r.requests.idle_phases.discovery_per_min,
                r.requests.idle_phases.minutes,
                r.requests.data_per_min,
                kinds.join(", "),
                r.leftover_files
            );
        }

        if s.results.iter().any(|r| !r.faults.is_empty()) {
            let _ = writeln!(o, "\n## Faults\n");
            let _ = writeln!(
                o,
                "Calls touched: calls whose life overlapped the fault or the {} after it.\n",
                crate::units::human(crate::fault::AFTERMATH)
            );
            let _ = writeln!(o, "| case | fault | sandbox | struck / ended | detected (after) | recovery | calls touched: answered / failed | worst pickup | ok |");
            let _ = writeln!(o, "|---|---|---:|---|---|---|---|---:|---|");
            for r in &s.results {
                for f in &r.faults {
                    let after = f.detected_after_ms.map_or(String::new(), |ms| format!(" ({})", us(ms * 1000.0)));
                    let stop = f.stop_ms.map_or(String::new(), |ms| format!("; stop() took {}", us(ms * 1000.0)));
                    let _ = writeln!(
                        o,
                        "| {} | `{}` | {} | {:.1} s / {:.1} s | {}{after} | {}{stop} | {}: {} / {} | {} | {} |",
                        r.case,
                        f.kind,
                        f.sandbox,
                        f.at_secs,
                        f.until_secs,
                        f.detected.replace('|', "\\|"),
                        f.recovery,
                        f.calls,
                        f.answered,
                        f.failed,
                        f.worst_pickup_ms.map_or("-".into(), |ms| us(ms * 1000.0)),
                        if f.ok { "✅" } else { "❌" }
                    );
                }
            }
        }

        // The charts drawn beside this file (see `chart`), linked when they will exist.
        let any_latency = s.results.iter().any(|r| r.latency_us.pickup.count > 0);
        let charts = [
            ("latency-percentiles", "latency by percentile", any_latency),
            ("time-breakdown", "where a call's time goes", s.results.iter().any(|r| r.latency_us.wake.count > 0)),
            (
                "discovery-over-time",
                "discovery requests over time",
                s.results.iter().any(|r| !r.requests.not_measured && !r.requests.timeline.is_empty()),
            ),
            (
                "faults-pickup-over-time",
                "pickup over time, faults shaded",
                s.results.iter().any(|r| !r.faults.is_empty()),
            ),
        ];
        if charts.iter().any(|c| c.2) {
            let _ = writeln!(o, "\n## Charts\n");
            for (file, title, _) in charts.iter().filter(|c| c.2) {
                let _ = writeln!(o, "![{title}](charts/{file}.png) ([SVG](charts/{file}.svg))\n");
            }
        }

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
                    us(l.p50),
                    us(l.p99),
                    us(l.max)
                );
            }
            for u in &r.unavailable {
                let _ = writeln!(o, "  - not measured: {u}");
            }
            if r.runner.inline > 0 || r.runner.missed_by_source > 0 {
                let _ = writeln!(
                    o,
                    "  - requests carried inline by the watch: {}; timer scans that found work the watch missed: {}",
                    r.runner.inline, r.runner.missed_by_source
                );
            }
        }

        if let Some(c) = &s.calibration {
            let _ = writeln!(o, "\n## Calibration: this machine's floor\n");
            let _ = writeln!(o, "| probe | samples | p50 | p99 | max |");
            let _ = writeln!(o, "|---|---:|---:|---:|---:|");
            for (name, st) in [
                ("rename -> inotify event delivered", &c.inotify_rename_us),
                ("1 ms timer overshoot", &c.timer_overshoot_1ms_us),
                ("list a 16-file dir", &c.list_16_files_us),
            ] {
                let _ = writeln!(o, "| {name} | {} | {} | {} | {} |", st.count, us(st.p50), us(st.p99), us(st.max));
            }
            if c.inotify_missed > 0 {
                let _ = writeln!(o, "\n{} rename event(s) never arrived within 1 s.", c.inotify_missed);
            }
        } else {
            let _ = writeln!(o, "\n## Calibration\n\nNot measured in this run.");
        }

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
        o.into_bytes()
    }
}
