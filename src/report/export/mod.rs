//! The formats of a run's results, one file each: summary.json, summary.md, the console
//! table, JUnit XML and the HDR files. Each is an output of the registry
//! ([`crate::report::publish`]), which owns where and when they are written.

mod aside;
pub(crate) mod content;
#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod fleet;
pub(crate) mod gates;
pub(crate) mod hdr;
pub(crate) mod json;
pub(crate) mod junit;
pub(crate) mod markdown;
mod needs;
mod phases;
pub(crate) mod rollout;
mod storm;
mod sweep;
pub(crate) mod table;

use crate::base::units::human_us as us;
use crate::record::recorder::LatencyStats;
use crate::results::summary::CaseResult;
use crate::scenario::gate::Metric;

/// A case's gates as a table cell, from its [`standing`](CaseResult::standing): its own
/// gates' mark and count, then the rollout gates' (`✅ 5/5 · rollout ❌ 1/2`), and the gates
/// it meets only on the edge; `interrupted` for a case cut short.
pub(crate) fn standing_cell(r: &CaseResult) -> String {
    let st = r.standing();
    if st.interrupted {
        return "interrupted".into();
    }
    let own = st.gates_met == st.gates && !st.stuck;
    let mut cell = format!("{} {}/{}", crate::report::doc::mark(own), st.gates_met, st.gates);
    if st.rollout > 0 {
        let met = st.rollout_met == st.rollout;
        cell += &format!(" · rollout {} {}/{}", crate::report::doc::mark(met), st.rollout_met, st.rollout);
    }
    if !st.on_edge.is_empty() {
        cell += &format!(" · on the edge: {}", st.on_edge.join(", "));
    }
    if let Some(e) = &r.stopped_early {
        cell += &format!(" · {}", e.text());
    }
    cell
}

/// The mark of a percentile taken over fewer samples than it needs to mean anything
/// ([`crate::record::recorder::samples_needed`]); [`THIN_NOTE`] says what it means.
pub(crate) const THIN: &str = "†";

/// What [`THIN`] means, said once under a table that shows it.
pub(crate) const THIN_NOTE: &str = "† a percentile over fewer samples than it needs: a p-quantile needs at least \
     10/(1-p) samples (p50: 20, p90: 100, p99: 1,000, p99.9: 10,000), so that ten lie beyond it; over fewer it \
     is one of the few slowest samples, not an estimate of the tail.";

/// A latency statistic (`p50`, `p99`, `max`, ...) in a short human form, `-` without
/// samples, marked [`THIN`] when it is a percentile over too few of them.
pub(crate) fn stat(s: &LatencyStats, name: &str) -> String {
    if s.count == 0 {
        return "-".into();
    }
    let mark = if s.too_few_for(name) { THIN } else { "" };
    format!("{}{mark}", us(s.get(name).unwrap_or_default()))
}

/// Whether any of `stats` has a percentile among `names` over too few samples (a table
/// showing them needs [`THIN_NOTE`]).
pub(crate) fn any_thin<'a>(stats: impl IntoIterator<Item = &'a LatencyStats>, names: &[&str]) -> bool {
    stats.into_iter().any(|s| s.count > 0 && names.iter().any(|n| s.too_few_for(n)))
}

/// `p50 / p99` of a latency in a short human form, or `-` without samples; each marked
/// [`THIN`] when taken over too few samples.
pub(crate) fn pair(s: &LatencyStats) -> String {
    if s.count == 0 {
        return "-".into();
    }
    format!("{} / {}", stat(s, "p50"), stat(s, "p99"))
}

/// The spread across repeats of `figure` (a name in [`crate::results::repeat::Repeats`]),
/// formatted by `fmt`: ` [lo–hi]` (its 95 % interval, from five repeats), else ` (min–max)`;
/// empty when the case ran once or the repeats did not measure it.
pub(crate) fn spread(r: &CaseResult, figure: &str, fmt: impl Fn(f64) -> String) -> String {
    let Some(s) = r.repeat.as_ref().and_then(|p| p.get(figure)) else { return String::new() };
    match s.ci95 {
        Some([lo, hi]) => format!(" [{}–{}]", fmt(lo), fmt(hi)),
        None => format!(" ({}–{})", fmt(s.min), fmt(s.max)),
    }
}

/// [`spread`] of a gate's figure, each end written as the gate writes its observed value.
pub(crate) fn gate_spread(r: &CaseResult, metric: Metric) -> String {
    spread(r, &metric.name(), |v| metric.show(v))
}

/// A latency statistic as [`stat`] gives it, with its spread across repeats.
pub(crate) fn stat_of(r: &CaseResult, measure: &str, s: &LatencyStats, name: &str) -> String {
    if s.count == 0 {
        return "-".into();
    }
    format!("{}{}", stat(s, name), spread(r, &format!("{measure}.{name}"), us))
}

/// `p50 / p99` as [`pair`] gives it, each with its spread across repeats.
pub(crate) fn pair_of(r: &CaseResult, measure: &str, s: &LatencyStats) -> String {
    if s.count == 0 {
        return "-".into();
    }
    format!("{} / {}", stat_of(r, measure, s, "p50"), stat_of(r, measure, s, "p99"))
}

/// The line a report says of a run whose cases ran several times; `None`: each ran once.
pub(crate) fn repeats_note(s: &crate::results::summary::Summary) -> Option<String> {
    let n = s.results.iter().filter_map(|r| r.repeat.as_ref()).map(|p| p.seeds.len()).max()?;
    let ci = if n >= crate::results::repeat::MIN_CI_REPEATS {
        "with its 95 % bootstrap interval in brackets"
    } else {
        "with the lowest and highest repeat's in parentheses"
    };
    Some(format!(
        "Each case ran {n} times, each repeat with a seed of its own (in summary.json): every figure is the \
         median across repeats, {ci}, and gates and the verdict judge it. Invariants (lost, duplicated, pairing \
         violations, leftover files) are the worst repeat's; a latency's sample count is the fewest any repeat \
         had (a percentile † is thin in a single repeat). Histograms, timelines and fault rows are the first \
         repeat's (the run's own seed)."
    ))
}

/// What a case is against production's relay as built: `production as built`, or the
/// options it departs with, marked when one leaves production's operating envelope (a
/// window that reaches the safety wait).
pub(crate) fn design(r: &CaseResult) -> String {
    match r.departures.as_deref() {
        Some([]) => "production as built".into(),
        Some(d) if d.iter().any(|d| d.outside_envelope.is_some()) => {
            format!("{} (outside production's envelope)", d.join(", "))
        }
        Some(d) => d.join(", "),
        None => crate::results::summary::DEPARTURES_NOT_RECORDED.into(),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::record::recorder::Measure;
    #[test]
    fn no_rate_is_given_over_a_stretch_of_no_time() {
        let r = crate::results::summary::CaseResult::default();
        let s =
            |minutes: f64| crate::results::summary::Stretch { minutes, discovery_per_min: 68058.3, data_per_min: 0.0 };
        assert_eq!(super::content::stretch(&r, "busy_discovery_per_min", &s(0.0004), true), "- (only 0.02 s)");
        assert_eq!(super::content::stretch(&r, "busy_discovery_per_min", &s(0.04), true), "68058.3 (2.4 s)");
        assert_eq!(super::content::stretch(&r, "busy_discovery_per_min", &s(2.0), true), "68058.3 (2.0 min)");
        assert_eq!(super::content::stretch(&r, "busy_discovery_per_min", &s(0.0), true), "-");
    }

    #[test]
    fn the_baseline_heading_names_the_baseline_only_when_every_case_has_it() {
        let mut s = super::fixture::realistic();
        s.baseline = Some(s.results[0].case.clone());
        let base = s.results[0].clone();
        for r in s.results.iter_mut().skip(1) {
            r.vs_baseline = Some(crate::results::summary::Comparison::of(&base, r));
        }
        let md = String::from_utf8(super::markdown::render(&s)).unwrap();
        assert!(md.contains(&format!("## Against the baseline ({})", base.case)), "{md}");
        // One case set beside another baseline of its own.
        let other = s.results[1].clone();
        let last = s.results.len() - 1;
        s.results[last].vs_baseline = Some(crate::results::summary::Comparison::of(&other, &s.results[last]));
        let md = String::from_utf8(super::markdown::render(&s)).unwrap();
        assert!(!md.contains("## Against the baseline ("), "{md}");
        let line = format!("- **{}** against {}: ", s.results[last].case, other.case);
        assert!(md.contains("## Against the baselines") && md.contains(&line), "{md}");
    }

    use super::fixture::realistic;
    use super::*;

    /// The fixture with 20,000 samples in each measured latency and no calibration (its
    /// 200 samples a probe: a p99 marked, said apart in its own table).
    pub(crate) fn well_sampled() -> crate::results::summary::Summary {
        let mut s = realistic();
        s.calibration = None;
        for r in s.results.iter_mut() {
            for (m, st) in r.measures.iter_mut() {
                if [Measure::RelayOverhead, Measure::ScheduleLag].contains(&m) {
                    *st = LatencyStats::default();
                } else {
                    st.count = if st.count == 0 { 0 } else { 20_000 };
                }
            }
        }
        s
    }

    #[test]
    fn a_percentile_over_too_few_samples_is_marked_and_said_in_every_table() {
        let mut s = well_sampled();
        let render = |s: &crate::results::summary::Summary| {
            let md = String::from_utf8(crate::report::export::markdown::render(s)).unwrap();
            (md, String::from_utf8(crate::report::export::table::render(s)).unwrap())
        };
        let (md, table) = render(&s);
        let latency = &md[md.find("## Latency distributions").unwrap()..];
        assert!(!latency.contains(THIN) && !latency.contains("a p-quantile needs"), "{latency}");
        let note = "a p-quantile needs at least 10/(1-p) samples";
        assert!(!md.contains(THIN) && !table.contains(THIN), "20,000 samples: nothing marked");
        // p99.9 over 162 samples, as one archived run had it.
        s.results[0].measures.get_mut(Measure::Pickup).count = 162;
        let (md, table) = render(&s);
        let row = md.lines().find(|l| l.starts_with(&format!("| {} | pickup | 162 |", s.results[0].case))).unwrap();
        let cells: Vec<&str> = row.split(" | ").collect();
        let p = &s.results[0].latency(Measure::Pickup);
        assert_eq!(cells[3], us(p.p50), "162 samples are enough for a median: {row}");
        assert_eq!(cells[4], us(p.p90), "and for a p90 (100): {row}");
        assert_eq!(cells[5], format!("{}{THIN}", us(p.p99)), "{row}");
        assert_eq!(cells[6], format!("{}{THIN}", us(p.p999)), "{row}");
        assert_eq!(md.matches(note).count(), 2, "under the results and the distributions: {md}");
        let results = md.lines().find(|l| l.starts_with(&format!("| {} | ", s.results[0].case))).unwrap();
        assert!(results.contains(&format!("{} / {}{THIN}", us(p.p50), us(p.p99))), "{results}");
        let line = table.lines().find(|l| l.starts_with(&s.results[0].case)).unwrap();
        assert_eq!(line.matches(THIN).count(), 1, "the pickup pair: {line}");
        assert!(table.lines().all(|l| l.chars().count() <= 100), "{table}");
        assert!(table.replace("\n   ", "").contains(note), "{table}");
    }
}
