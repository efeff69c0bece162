//! `summary.md`: a report a person reads, fit for a CI job summary: the report's content
//! ([`super::content`]) in Markdown.

use crate::report::output::{Input, Staged, WriteError};
use crate::results::summary::Summary;

/// Writes it: what [`crate::report::publish::RunOutput::Markdown`] renders.
pub(crate) fn write(input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
    out.put("summary.md", &render(input.summary()))
}

/// The report ([`super::content::document`]) in Markdown.
pub(crate) fn render(s: &Summary) -> Vec<u8> {
    crate::report::doc::document(&super::content::document(s)).into_bytes()
}

#[cfg(test)]
mod tests {
    use super::super::fixture::realistic;
    use super::super::us;
    use super::*;
    use crate::record::recorder::Measure;
    use crate::report::doc::gfm_tests::check_tables;
    use crate::results::summary::CaseResult;

    #[test]
    fn a_repeated_case_shows_each_median_with_its_spread_and_says_how_many_repeats() {
        let mut s = realistic();
        let once = String::from_utf8(render(&s)).unwrap();
        assert!(!once.contains("Each case ran"), "a run of one says nothing of repeats");
        let r = &mut s.results[0];
        let three: Vec<CaseResult> = [0.9, 1.0, 1.2]
            .iter()
            .map(|f| {
                let mut x = r.clone();
                x.measures.get_mut(Measure::Pickup).p50 *= f;
                x
            })
            .collect();
        *r = crate::results::summary::repeats::combine(three, vec![1, 2, 3]);
        let (p50, r) = (r.latency(Measure::Pickup).p50, r.clone());
        let md = String::from_utf8(render(&s)).unwrap();
        assert!(md.contains("Each case ran 3 times"), "{md}");
        let shown = format!("{} ({}–{})", us(p50), us(p50 * 0.9), us(p50 * 1.2));
        assert!(md.contains(&shown), "{shown} in:\n{md}");
        check_tables(&md).unwrap_or_else(|e| panic!("{e}:\n{md}"));
        let console = String::from_utf8(crate::report::export::table::render(&s)).unwrap();
        assert!(console.contains(&format!("{}: median of 3 repeats (min–max): ", r.case)), "{console}");
    }

    #[test]
    fn the_warm_ups_calls_are_said_beside_the_samples_that_leave_them_out() {
        let mut s = realistic();
        for r in &mut s.results {
            r.calls.warmup = 0;
        }
        let md = String::from_utf8(render(&s)).unwrap();
        assert!(!md.contains("warm-up's calls"), "no warm-up, no note: {md}");
        for r in &mut s.results {
            r.calls.warmup = 18;
        }
        let md = String::from_utf8(render(&s)).unwrap();
        assert!(md.contains("but not measured (18 a case)."), "{md}");
        s.results[0].calls.warmup = 7;
        let md = String::from_utf8(render(&s)).unwrap();
        assert!(s.results.len() > 4 && md.contains("(from 7 to 18 a case; summary.json's"), "a range past four: {md}");
        s.results.truncate(2);
        let first = s.results[0].case.clone();
        let md = String::from_utf8(render(&s)).unwrap();
        assert!(md.contains(&format!("but not measured ({first} 7, ")), "each case named when they differ: {md}");
    }

    #[test]
    fn a_report_before_any_case_finished_names_no_clock_it_cannot_know() {
        let mut s = realistic();
        s.results.clear();
        let md = String::from_utf8(render(&s)).unwrap();
        assert!(md.contains("clock: each case's own (no case has finished yet)"), "{md}");
        assert!(!md.contains("clock: real"), "{md}");
    }

    #[test]
    fn every_table_parses_as_a_gfm_table_with_one_column_count() {
        let md = String::from_utf8(render(&realistic())).unwrap();
        let tables = check_tables(&md).unwrap_or_else(|e| panic!("{e}:\n{md}"));
        assert_eq!(tables, 7, "the verdict, results, latency, calls, requests, faults, calibration");
        for debug in ["Some(", "None", "NaN", " inf "] {
            assert!(!md.contains(debug), "{debug:?} in the report:\n{md}");
        }
    }

    #[test]
    fn the_report_says_each_case_design_and_what_was_not_measured() {
        let md = String::from_utf8(render(&realistic())).unwrap();
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

    /// A run from before verdicts were stored says so; nothing is inferred from its cases'
    /// own gates.
    #[test]
    fn a_run_without_a_stored_verdict_says_so_and_infers_none() {
        let md = String::from_utf8(render(&super::super::fixture::inferred())).unwrap();
        assert!(md.lines().nth(2).unwrap().starts_with("## Rollout verdict: not stored"), "{md}");
        assert!(md.contains("no verdict is inferred from them"), "{md}");
        assert!(!md.contains("Production as built (**"), "nothing inferred:\n{md}");
    }

    #[test]
    fn invariants_that_hold_take_one_line_a_case_and_a_broken_one_its_own() {
        let mut s = realistic();
        let md = String::from_utf8(render(&s)).unwrap();
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
            .filter(|g| !crate::scenario::rules::INVARIANTS.contains(&g.gate.expr.as_str()));
        for g in declared {
            assert!(section.contains(&format!("`{}` — observed {}", g.gate.expr, g.observed_text)), "{}", g.gate.expr);
        }

        let lost = s.results[0].gates.iter_mut().find(|g| g.gate.expr == "lost == 0").unwrap();
        lost.pass = false;
        lost.observed_text = "2".into();
        let md = String::from_utf8(render(&s)).unwrap();
        assert!(md.contains(&format!("- ❌ **{case}** `lost == 0` — observed 2")), "{md}");
        assert!(md.contains(&format!("- ✅ **{case}** invariants hold — duplicated 0")), "{md}");
    }
}
