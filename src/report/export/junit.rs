//! Gates as JUnit XML, the format CI systems display: a `<testsuite>` per case, a
//! `<testcase>` per gate (its failure message the observed value and the threshold), and a
//! `finished` testcase that fails when the case was interrupted or its runner hung; and for
//! a scenario that declares rollout gates, a `<scenario>.verdict` testsuite, a testcase per
//! rollout gate that fails when production as built misses it. A run of several scenarios is
//! one file ([`render_all`]).

use std::fmt::Write;

use crate::base::escape::xml_attr as esc;
use crate::report::output::{Input, Staged, WriteError};
use crate::results::summary::{CaseResult, Summary};
use crate::results::verdict::Verdict;

/// Writes it: what [`crate::report::publish::RunOutput::JUnit`] renders.
pub(crate) fn write(input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
    out.put("junit.xml", &render_all(input.summaries))
}

/// One JUnit document for every scenario of a run.
pub(crate) fn render_all(summaries: &[Summary]) -> Vec<u8> {
    let cases: Vec<(&Summary, &CaseResult)> =
        summaries.iter().flat_map(|s| s.results.iter().map(move |r| (s, r))).collect();
    let verdicts: Vec<(&Summary, &Verdict)> =
        summaries.iter().filter_map(|s| s.verdict.as_ref().filter(|v| !v.gates.is_empty()).map(|v| (s, v))).collect();
    let tests: usize = cases.iter().map(|(_, r)| r.gates.len() + 1).sum::<usize>()
        + verdicts.iter().map(|(_, v)| v.gates.len()).sum::<usize>();
    let failures: usize = cases.iter().map(|(_, r)| failed(r)).sum::<usize>()
        + verdicts.iter().map(|(_, v)| v.missed().len()).sum::<usize>();
    let mut o = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(o, r#"<testsuites name="relay-bench" tests="{tests}" failures="{failures}">"#);
    for (s, v) in verdicts {
        verdict_suite(&mut o, s, v);
    }
    for (s, r) in cases {
        let suite = format!("{}.{}", s.scenario, r.case);
        // `time` is what CI systems add up as the job's: this machine's seconds. A virtual
        // case's simulated seconds are a property beside it, never its time.
        let virtual_clock = r.clock == crate::scenario::Clock::Virtual;
        let wall = r.wall_secs.or((!virtual_clock).then_some(r.window_secs));
        let time = wall.map_or_else(String::new, |w| format!(r#" time="{w:.3}""#));
        let _ = writeln!(
            o,
            r#"  <testsuite name="{}" tests="{}" failures="{}"{time}>"#,
            esc(&suite),
            r.gates.len() + 1,
            failed(r),
        );
        let design = super::design(r);
        let mut extra = if virtual_clock {
            format!(r#"<property name="simulated_secs" value="{:.3}"/>"#, r.window_secs)
        } else {
            String::new()
        };
        // Whether the case meets its rollout gates: the verdict's suite fails on production's
        // misses; an option set's standing is said here, beside its own gates.
        if let Some((met, of)) = r.rollout_met() {
            extra += &format!(r#"<property name="rollout_gates_met" value="{met} of {of}"/>"#);
        }
        let _ = writeln!(
            o,
            r#"    <properties><property name="strategy" value="{}"/><property name="design" value="{}"/><property name="clock" value="{}"/>{extra}</properties>"#,
            esc(&r.strategy),
            esc(&design),
            esc(r.clock.name())
        );
        testcase(&mut o, &suite, "finished", unfinished(r).map(|why| (r#"failure type="case""#, why)));
        for g in &r.gates {
            let failure = (!g.pass).then(|| {
                let threshold = g.gate.expr.split(g.gate.op.name()).nth(1);
                let threshold = threshold
                    .map_or_else(|| crate::base::units::readable(g.gate.threshold, 3), |t| t.trim().to_owned());
                let message = format!("observed {}; threshold {} {threshold}", g.observed_text, g.gate.op.name());
                (r#"failure type="gate""#, message)
            });
            testcase(&mut o, &suite, &g.gate.expr, failure);
        }
        o.push_str("  </testsuite>\n");
    }
    o.push_str("</testsuites>\n");
    o.into_bytes()
}

/// The verdict's testsuite: a testcase per rollout gate, failed when production as built
/// misses it, skipped when no case of production as built ran.
fn verdict_suite(o: &mut String, s: &Summary, v: &Verdict) {
    let suite = format!("{}.verdict", s.scenario);
    let skipped = v.gates.iter().filter(|g| g.production_pass().is_none()).count();
    let _ = writeln!(
        o,
        r#"  <testsuite name="{}" tests="{}" failures="{}" skipped="{skipped}">"#,
        esc(&suite),
        v.gates.len(),
        v.missed().len()
    );
    let _ = writeln!(
        o,
        r#"    <properties><property name="verdict" value="{}"/></properties>"#,
        esc(&super::rollout::headline(v))
    );
    for g in &v.gates {
        let met: Vec<&str> = g.option_sets.iter().filter(|j| j.pass).map(|j| j.case.as_str()).collect();
        let met = if met.is_empty() { "none".to_owned() } else { met.join(", ") };
        let outcome = match g.production_pass() {
            Some(true) => None,
            Some(false) => {
                let missed: Vec<String> = g
                    .production
                    .iter()
                    .filter(|j| !j.pass)
                    .map(|j| format!("{} observed {}", j.case, j.observed_text))
                    .collect();
                let message =
                    format!("production as built misses it: {}; option sets that meet it: {met}", missed.join(", "));
                Some((r#"failure type="rollout""#, message))
            }
            None => Some((
                "skipped",
                format!("no case of this run is production as built; option sets that meet it: {met}"),
            )),
        };
        testcase(o, &suite, &g.gate.expr, outcome);
    }
    o.push_str("  </testsuite>\n");
}

/// A `<testcase>` of `suite`: passed, or holding its outcome's element (`failure type="gate"`,
/// `skipped`) with the message.
fn testcase(o: &mut String, suite: &str, name: &str, outcome: Option<(&str, String)>) {
    let _ = write!(o, r#"    <testcase classname="{}" name="{}""#, esc(suite), esc(name));
    match outcome {
        None => o.push_str("/>\n"),
        Some((element, message)) => {
            let _ = writeln!(o, ">\n      <{element} message=\"{}\"/>\n    </testcase>", esc(&message));
        }
    }
}

/// Why a case did not finish cleanly, if it did not.
fn unfinished(r: &CaseResult) -> Option<String> {
    if r.interrupted {
        return Some("interrupted before the schedule ended".into());
    }
    (r.runner.stuck > 0).then(|| format!("{} runner(s) did not stop within the stop bound", r.runner.stuck))
}

fn failed(r: &CaseResult) -> usize {
    r.gates.iter().filter(|g| !g.pass).count() + usize::from(unfinished(r).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suites_time_is_wall_time_and_simulated_time_is_a_property() {
        let mut s = super::super::fixture::realistic();
        s.results.truncate(2);
        s.results[0].clock = crate::scenario::Clock::Virtual;
        s.results[0].window_secs = 3600.0;
        s.results[0].wall_secs = Some(1.25);
        s.results[1].clock = crate::scenario::Clock::Real;
        s.results[1].window_secs = 10.5;
        s.results[1].wall_secs = None;
        let xml = String::from_utf8(render_all(std::slice::from_ref(&s))).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let suite = |case: &str| {
            doc.descendants()
                .find(|n| n.has_tag_name("testsuite") && n.attribute("name").is_some_and(|x| x.ends_with(case)))
                .unwrap()
        };
        let v = suite(&s.results[0].case);
        assert_eq!(v.attribute("time"), Some("1.250"), "{xml}");
        let simulated = v.descendants().find(|n| n.attribute("name") == Some("simulated_secs")).unwrap();
        assert_eq!(simulated.attribute("value"), Some("3600.000"));
        assert_eq!(suite(&s.results[1].case).attribute("time"), Some("10.500"), "a real case: its window");
        s.results[0].wall_secs = None;
        let xml = String::from_utf8(render_all(std::slice::from_ref(&s))).unwrap();
        assert!(!xml.contains(r#"time="3600.000""#), "no simulated time as a suite's: {xml}");
    }

    #[test]
    fn every_gate_is_a_testcase_and_a_failure_says_observed_and_threshold() {
        let s = super::super::fixture::realistic();
        let xml = String::from_utf8(render_all(std::slice::from_ref(&s))).unwrap();
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        let suites: Vec<_> = root.children().filter(|n| n.has_tag_name("testsuite")).collect();
        assert_eq!(suites.len(), s.results.len() + 1, "a suite per case, and the verdict's");
        let rollout = s.verdict.as_ref().unwrap().gates.len();
        let gates: usize = s.results.iter().map(|r| r.gates.len()).sum();
        let cases = root.descendants().filter(|n| n.has_tag_name("testcase")).count();
        assert_eq!(
            cases,
            gates + s.results.len() + rollout,
            "a testcase per gate, `finished` per case, one per rollout gate"
        );
        assert_eq!(root.attribute("tests").unwrap(), cases.to_string());
        let failures: Vec<_> = root.descendants().filter(|n| n.has_tag_name("failure")).collect();
        assert_eq!(root.attribute("failures").unwrap(), failures.len().to_string());
        let idle = failures
            .iter()
            .find(|f| f.parent().unwrap().attribute("name") == Some("idle_phase_discovery_per_min <= 5.0"))
            .expect("production's failed budget gate");
        assert_eq!(
            idle.attribute("message").unwrap(),
            "production as built misses it: window-exec observed 5.33; option sets that meet it: window-exec-quiet-idle, window-exec-inline"
        );
        let suite = idle.parent().unwrap().parent().unwrap();
        assert_eq!(suite.attribute("name").unwrap(), format!("{}.verdict", s.scenario));
        assert_eq!((suite.attribute("tests"), suite.attribute("failures")), (Some("2"), Some("1")));
        assert!(xml.find(".verdict\"").unwrap() < xml.find(".window-exec\"").unwrap(), "the verdict first");
        // A case's gate failure still reads as observed and threshold.
        let mut s = s;
        s.results[0].judge(&[crate::scenario::gate::Gate::parse("pickup.p50 < 1us").unwrap()], &[]);
        let xml = String::from_utf8(render_all(std::slice::from_ref(&s))).unwrap();
        assert!(xml.contains("message=\"observed 213.5ms; threshold &lt; 1us\""), "{xml}");
    }

    #[test]
    fn hostile_text_stays_well_formed() {
        assert_eq!(esc("a<b & \"c\"\n\u{1}'"), "a&lt;b &amp; &quot;c&quot;&#10;&apos;");
    }
}
