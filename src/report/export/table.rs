//! The table printed at the end of a run: one row per case, at most 100 columns. A `*`
//! after a case's name marks a case that departs from production's relay as built; the
//! notes under the table say with which options, and what else went wrong.

use std::fmt::Write;

use super::{any_thin, THIN, THIN_NOTE};
use crate::record::recorder::{LatencyStats, Measure};
use crate::report::output::{Input, Staged, WriteError};
use crate::results::summary::{CaseResult, Summary};

/// The console's width the table keeps within.
const WIDTH: usize = 100;
/// A case name is never cut shorter than this.
const MIN_NAME: usize = 12;

/// `p50/p99` as short as a person still reads it (`95.9/120.2ms`, `850µs/1.23ms`), or `-`
/// without samples; marked [`THIN`] after it when its p99 (under 20 samples, its p50
/// too) is taken over too few samples.
fn pair(s: &LatencyStats) -> String {
    if s.count == 0 {
        return "-".into();
    }
    let (a, b) = (super::us(s.p50), super::us(s.p99));
    let unit = |t: &str| t.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.').to_owned();
    let mark = if s.too_few_for("p99") { THIN } else { "" };
    if unit(&a) == unit(&b) {
        format!("{}/{b}{mark}", a.trim_end_matches(|c: char| !(c.is_ascii_digit() || c == '.')))
    } else {
        format!("{a}/{b}{mark}")
    }
}

/// A repeated case's medians in the row above with their spread: `window-exec: median of 5
/// repeats: pickup p50 88.0ms [85.0ms–92.0ms], ...`; `None` when it ran once.
fn repeated(r: &CaseResult) -> Option<String> {
    let n = r.repeat.as_ref()?.seeds.len();
    let mut parts = Vec::new();
    for m in Measure::SPEC {
        let st = r.latency(m);
        if st.count > 0 {
            parts.push(format!("{} p50 {}", m.name(), super::stat_of(r, m.name(), st, "p50")));
        }
    }
    let one = |v: f64| format!("{v:.1}");
    for (label, figure) in [("disc/min", "discovery_per_min"), ("idle-phase disc/min", "idle_phase_discovery_per_min")]
    {
        if let Some(sp) = r.repeat.as_ref()?.get(figure) {
            parts.push(format!("{label} {}{}", one(sp.value), super::spread(r, figure, one)));
        }
    }
    let how = if n >= crate::results::repeat::MIN_CI_REPEATS { "[95% interval]" } else { "(min–max)" };
    Some(format!("{}: median of {n} repeats {how}: {}", r.case, parts.join(", ")))
}

/// Whether the case knowingly departs from production's relay as built (an archived run
/// that did not record it is not marked).
fn departs(r: &CaseResult) -> bool {
    r.departures.as_ref().is_some_and(|d| !d.is_empty())
}

fn verdict(r: &CaseResult) -> String {
    let passed = r.gates.iter().filter(|g| g.pass).count();
    if r.interrupted {
        "INTERRUPTED".to_owned()
    } else if r.pass {
        format!("pass {passed}/{}", r.gates.len())
    } else if r.stopped_early.is_some() {
        format!("FAIL {passed}/{}, stopped", r.gates.len())
    } else {
        format!("FAIL {passed}/{}", r.gates.len())
    }
}

/// `text` cut to `width` characters, with `…` where it was cut.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    format!("{}…", text.chars().take(width.saturating_sub(1)).collect::<String>())
}

/// `text` wrapped at [`WIDTH`] columns on spaces, its first line indented by `indent` and
/// the lines it continues on by two more: a note under the table is indented by two, the
/// comparison's lines by none.
pub(crate) fn wrap(o: &mut String, text: &str, indent: usize) {
    let mut line = " ".repeat(indent);
    for word in text.split(' ') {
        if line.chars().count() + 1 + word.chars().count() > WIDTH && !line.trim().is_empty() {
            let _ = writeln!(o, "{}", line.trim_end());
            line = " ".repeat(indent + 2);
        }
        if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    let _ = writeln!(o, "{}", line.trim_end());
}

/// Writes it: what [`crate::report::publish::RunOutput::Table`] renders.
pub(crate) fn write(input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
    out.console(&render(input.summary()));
    Ok(())
}

pub(crate) fn render(s: &Summary) -> Vec<u8> {
    let header = ["case", "calls", "lost", "wake p50/p99", "pickup p50/p99", "compl. p50/p99", "disc/min", "gates"];
    let right = [false, true, true, false, false, false, true, false];
    let rows: Vec<[String; 8]> = s
        .results
        .iter()
        .map(|r| {
            [
                format!("{}{}", r.case, if departs(r) { "*" } else { "" }),
                r.calls.completed.to_string(),
                r.calls.lost.to_string(),
                pair(r.latency(Measure::Wake)),
                pair(r.latency(Measure::Pickup)),
                pair(r.latency(Measure::Completion)),
                if r.requests.not_measured { "-".into() } else { format!("{:.1}", r.requests.discovery_per_min) },
                verdict(r),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // The name takes what the other columns (one space apart) leave of the width.
    let rest: usize = widths[1..].iter().sum::<usize>() + widths.len() - 1;
    widths[0] = widths[0].min(WIDTH.saturating_sub(rest).max(MIN_NAME));
    let mut o = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let w = widths[i];
            let cell = if i == 0 { fit_name(cell, w) } else { cell.clone() };
            let _ = match (i, right[i]) {
                (0, _) => write!(l, "{cell:<w$}"),
                (_, true) => write!(l, " {cell:>w$}"),
                (_, false) => write!(l, " {cell:<w$}"),
            };
        }
        let _ = writeln!(o, "{}", l.trim_end());
    };
    line(&header.map(String::from));
    for row in &rows {
        line(row);
    }

    let departing: Vec<&CaseResult> = s.results.iter().filter(|r| departs(r)).collect();
    let footnote = !departing.is_empty();
    if footnote {
        let _ = writeln!(o, "* departs from production's relay as built:");
        for r in departing {
            wrap(&mut o, &format!("{}: {}", r.case, super::design(r)), 2);
        }
    }
    let notes_start = o.len();
    notes(&mut o, s);
    // The other notes stand apart from the departures' footnote.
    if footnote && o.len() > notes_start {
        o.insert(notes_start, '\n');
    }
    // Last, the verdict.
    if let Some(v) = &s.verdict {
        super::rollout::console(&mut o, v, s, |o, t| wrap(o, t, 2));
    }
    o.into_bytes()
}

/// The notes under the table: thin percentiles, virtual cases, repeats, hung runners, each
/// case against its baseline, every failed gate, pairing violation, degraded wake and failed
/// fault, the cases an interrupt left unrun, and each sweep's best point.
fn notes(o: &mut String, s: &Summary) {
    let mut note = |text: &str| wrap(o, text, 2);
    let shown = s.results.iter().flat_map(|r| Measure::SPEC.map(|m| r.latency(m)));
    if any_thin(shown, &["p99"]) {
        note(THIN_NOTE);
    }
    let virtuals: Vec<&str> =
        s.results.iter().filter(|r| r.clock == crate::scenario::Clock::Virtual).map(|r| r.case.as_str()).collect();
    if !virtuals.is_empty() {
        note(&format!("virtual clock (simulated time, in-memory sandbox): {}", virtuals.join(", ")));
    }
    for line in s.results.iter().filter_map(repeated) {
        note(&line);
    }
    for r in s.results.iter().filter(|r| r.runner.stuck > 0) {
        note(&format!("{}: {} runner(s) hung past the stop bound and were aborted", r.case, r.runner.stuck));
    }
    for r in &s.results {
        if let Some(c) = &r.vs_baseline {
            note(&format!("{} vs {}: {}", r.case, c.baseline, c.text));
        }
    }
    for r in &s.results {
        for g in r.gates.iter().filter(|g| !g.pass) {
            let why = if g.observed.is_some() {
                format!(" (observed {})", g.observed_text)
            } else {
                format!(": {}", g.observed_text)
            };
            note(&format!("{}: gate `{}` failed{why}", r.case, g.gate.expr));
        }
        if r.pairing_violations.total > 0 {
            note(&format!("{}: {} pairing violation(s)", r.case, r.pairing_violations.total));
        }
        for d in &r.runner.degraded {
            note(&format!("{}: degraded: {d}", r.case));
        }
        for f in r.faults.iter().filter(|f| !f.ok) {
            note(&format!(
                "{}: fault {} at {:.1} s: {} of {} calls answered, {} failed",
                r.case, f.kind, f.at_secs, f.answered, f.calls, f.failed
            ));
        }
    }
    if !s.cases_not_run.is_empty() {
        note(&format!("not run (interrupted): {}", s.cases_not_run.join(", ")));
    }
    for w in &s.sweeps {
        note(&format!("sweep {}: {}", w.case, w.best_line()));
    }
}

/// A case's name cut to `width`, keeping its `*` mark.
fn fit_name(name: &str, width: usize) -> String {
    match name.strip_suffix('*') {
        Some(bare) if name.chars().count() > width => format!("{}*", fit(bare, width - 1)),
        _ => fit(name, width),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::realistic;

    use super::*;

    #[test]
    fn the_table_keeps_within_100_columns_and_marks_departures() {
        let mut s = realistic();
        s.results[0].case = "window-exec-requests-only".into();
        let text = String::from_utf8(render(&s)).unwrap();
        for l in text.lines() {
            assert!(l.chars().count() <= WIDTH, "{} columns: {l:?}\n{text}", l.chars().count());
        }
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("case "), "{text}");
        assert!(text.contains("\nwindow-exec-requests-only* "), "a long name fits when the figures do:\n{text}");
        assert!(text.contains("\nwindow-exec "), "production as built is not marked:\n{text}");
        assert!(text.contains("\nwindow-exec-quiet-idle* "), "{text}");
        assert!(text.contains("95.9/120.2ms"), "{text}");
        let python = lines.iter().find(|l| l.starts_with("python-poll*")).unwrap();
        assert!(python.contains(" - "), "its wake and requests are not measured: {python}");
        let notes = &text[text.find("* departs from production's relay as built:\n").expect("a footnote")..];
        assert!(notes.contains("\n  window-exec-quiet-idle: idle_wake = false\n"), "{notes}");
        assert!(!notes.contains("gate `idle_phase"), "a rollout gate is the verdict's, not a case's: {notes}");
        let verdict = &text[text
            .find("\nrollout verdict: FAIL: production as built misses 1 of 2 rollout gates\n")
            .expect("the verdict")..];
        let unwrapped = verdict.replace("\n    ", " ");
        assert!(unwrapped.contains("\n  FAIL idle_phase_discovery_per_min <= 5.0: window-exec 5.33; option sets that meet it: window-exec-quiet-idle, window-exec-inline\n"), "{verdict}");
        let met = verdict.find("\n  every rollout gate met by: window-exec-quiet-idle").expect("the option sets");
        let said = verdict
            .find("\n  Recommendation: `idle_wake = false` (window-exec-quiet-idle; a change of production's code)")
            .expect("it");
        assert!(met < said && !verdict[said..].contains("\n\n"), "the recommendation is last: {verdict}");
        for l in verdict.lines() {
            assert!(l.chars().count() <= WIDTH, "{l:?}");
        }
    }

    #[test]
    fn names_too_long_for_the_width_are_cut_keeping_their_mark() {
        assert_eq!(fit_name("window-exec-requests-only*", 12), "window-exe…*");
        assert_eq!(fit_name("window-exec", 12), "window-exec");
        assert_eq!(fit("abcdef", 4), "abc…");
        let mut o = String::new();
        wrap(&mut o, &"word ".repeat(40), 2);
        assert!(o.lines().all(|l| l.chars().count() <= WIDTH) && o.lines().count() == 3, "{o}");
        assert!(o.lines().nth(1).unwrap().starts_with("    word"), "{o}");
    }
}
