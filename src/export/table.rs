//! The table printed at the end of a run: one row per case, under 100 columns.

use std::fmt::Write;

use super::{pair, Exporter};
use crate::summary::Summary;

pub struct Table;

impl Exporter for Table {
    fn file_name(&self) -> &'static str {
        "summary.txt"
    }

    fn render(&self, s: &Summary) -> Vec<u8> {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{:<18} {:>6} {:>4}  {:<17} {:<17} {:<17} {:>8}  gates",
            "case", "calls", "lost", "wake p50 / p99", "pickup p50 / p99", "complete p50/p99", "disc/min"
        );
        for r in &s.results {
            let passed = r.gates.iter().filter(|g| g.pass).count();
            let verdict = if r.interrupted {
                "INTERRUPTED".to_owned()
            } else if r.pass {
                format!("pass {passed}/{}", r.gates.len())
            } else {
                format!("FAIL {passed}/{}", r.gates.len())
            };
            let name: String = r.case.chars().take(18).collect();
            let disc =
                if !r.requests.not_measured { format!("{:.1}", r.requests.discovery_per_min) } else { "-".into() };
            let _ = writeln!(
                o,
                "{:<18} {:>6} {:>4}  {:<17} {:<17} {:<17} {:>8}  {}",
                name,
                r.calls.completed,
                r.calls.lost,
                pair(&r.latency_us.wake),
                pair(&r.latency_us.pickup),
                pair(&r.latency_us.completion),
                disc,
                verdict
            );
        }
        let virtuals: Vec<&str> = s.results.iter().filter(|r| r.clock == "virtual").map(|r| r.case.as_str()).collect();
        if !virtuals.is_empty() {
            let _ = writeln!(o, "  virtual clock (simulated time, in-memory sandbox): {}", virtuals.join(", "));
        }
        for r in &s.results {
            if r.runner.stuck > 0 {
                let _ =
                    writeln!(o, "  {}: {} runner(s) hung past the stop bound and were aborted", r.case, r.runner.stuck);
            }
        }
        for r in &s.results {
            if let Some(c) = &r.vs_baseline {
                let _ = writeln!(o, "  {} vs {}: {}", r.case, c.baseline, c.text);
            }
        }
        for r in &s.results {
            for g in r.gates.iter().filter(|g| !g.pass) {
                let _ = writeln!(o, "  {}: gate `{}` failed (observed {})", r.case, g.expr, g.observed_text);
            }
            if r.pairing_violations.total > 0 {
                let _ = writeln!(o, "  {}: {} pairing violation(s)", r.case, r.pairing_violations.total);
            }
            for d in &r.runner.degraded {
                let _ = writeln!(o, "  {}: degraded: {d}", r.case);
            }
            for f in r.faults.iter().filter(|f| !f.ok) {
                let _ = writeln!(
                    o,
                    "  {}: fault {} at {:.1} s: {} of {} calls answered, {} failed",
                    r.case, f.kind, f.at_secs, f.answered, f.calls, f.failed
                );
            }
        }
        if !s.cases_not_run.is_empty() {
            let _ = writeln!(o, "  not run (interrupted): {}", s.cases_not_run.join(", "));
        }
        o.into_bytes()
    }
}
