//! The recommendation made from a run's results ([`crate::results::recommend`] says what it
//! ranks and why): each case that departs from production and meets every rollout gate that
//! production as built missed under the same conditions is an option; the least invasive
//! with margin inside production's envelope is recommended.

use crate::results::recommend::{Choice, Recommendation};
use crate::results::summary::CaseResult;
use crate::results::sweep::SweepResult;
use crate::strategy::{kind_of, ChangeKind, Departure};

/// At most this many other options are named beside the one recommended.
const OTHERS_NAMED: usize = 6;

/// The conditions a case ran under that are not the relay's to choose: the host and its
/// profile and limits, the fleet's size, the clock. An option is weighed only against
/// production as built under the same ones (a higher organisation rate is no option).
fn conditions(r: &CaseResult) -> (&str, &str, u32, &str) {
    (&r.host, &r.host_params, r.sandboxes, r.clock.name())
}

/// Whether `r`, a case that departs from production, answers a miss: production as built
/// under the same conditions missed a rollout gate, and `r` was judged on every rollout
/// gate that case was.
fn answers_a_miss(r: &CaseResult, results: &[CaseResult]) -> bool {
    results.iter().any(|p| {
        p.departures.as_ref().is_some_and(|d| d.is_empty())
            && conditions(p) == conditions(r)
            && p.rollout.iter().any(|g| !g.pass)
            && p.rollout.iter().all(|g| r.rollout.iter().any(|o| o.gate.expr == g.gate.expr))
    })
}

/// The options a case is a candidate for: it departs from production's design by some
/// option, and was judged on every rollout gate production was.
fn choice(r: &CaseResult, searched: Option<String>) -> Option<Choice> {
    let departures = r.departures.as_ref().filter(|d| !d.is_empty())?;
    let kind = kind_of(departures);
    if r.other_design || kind == ChangeKind::Design || kind == ChangeKind::NotRecorded {
        return None;
    }
    let st = r.standing();
    if !st.meets_every_gate() || r.rollout.is_empty() {
        return None;
    }
    let margins = r
        .rollout
        .iter()
        .map(|g| [g.gate.expr.clone(), g.observed_text.clone(), g.margin_text().unwrap_or_else(|| "met".into())])
        .collect();
    let outside_envelope: Vec<String> = departures.iter().filter_map(|d| d.outside_envelope.clone()).collect();
    Some(Choice {
        case: r.case.clone(),
        departures: departures.clone(),
        kind,
        margins,
        on_edge: !st.on_edge.is_empty(),
        outside_envelope,
        costs: Vec::new(),
        searched,
    })
}

/// What an option outside the envelope cost in every case of the run that made it (the
/// case the gates judged, and the same option under other workloads: agent turns), from
/// each case's own counts.
fn crossing_costs(c: &Choice, results: &[CaseResult]) -> Vec<String> {
    let same = |r: &&CaseResult| {
        r.departures.as_ref().is_some_and(|d| {
            d.len() == c.departures.len() && d.iter().zip(&c.departures).all(|(a, b)| a.text == b.text)
        })
    };
    results
        .iter()
        .filter(same)
        .map(|r| {
            let hours = r.window_secs * f64::from(r.sandboxes.max(1)) / 3600.0;
            let per_hour = if hours > 0.0 { r.runner.safety_lists as f64 / hours } else { 0.0 };
            let mut cost = format!(
                "{}: {} safety lists ({per_hour:.1} a relay-hour), {} watch misses",
                r.case, r.runner.safety_lists, r.runner.missed_by_source
            );
            match r.fleet.as_ref().filter(|f| f.turns.started > 0) {
                Some(f) => {
                    cost += &format!(
                        " in {} calls, {} of {} agent turns demoted",
                        r.calls.completed, f.turns.demoted, f.turns.started
                    )
                }
                None => cost += &format!(" in {} calls", r.calls.completed),
            }
            cost
        })
        .collect()
}

/// The option names of a departure set (`window`, `idle_wake`): the same option at other
/// values is the same change, made smaller or larger.
fn options(d: &[Departure]) -> Vec<String> {
    d.iter().map(|x| x.text.split(" = ").next().unwrap_or(&x.text).to_owned()).collect()
}

/// The recommendation of these results: `production_meets` says whether production as
/// built met every rollout gate; `sweeps` tell which case a search found at its boundary.
pub(crate) fn recommend(
    results: &[CaseResult],
    sweeps: &[SweepResult],
    production_meets: Option<bool>,
    scenario: &str,
) -> Option<Recommendation> {
    if results.iter().all(|r| r.rollout.is_empty()) {
        return None;
    }
    let assumed = format!(
        "Assumed, not measured: the workload of scenario {scenario} and each case's emulated daemon (the \
         Assumptions section lists each with its source)."
    );
    if production_meets == Some(true) {
        let text =
            format!("Recommendation: keep production's defaults: they meet every rollout gate in this run. {assumed}");
        return Some(Recommendation { chosen: None, others: Vec::new(), outside: Vec::new(), text });
    }
    // The probe a search found at its boundary, with the line's sentence.
    let searched = |case: &str| -> Option<String> {
        sweeps.iter().find_map(|w| {
            let x = w.search.as_ref()?;
            let unit = w.axes.last().map_or("", |a| a.unit.as_str());
            x.lines.iter().find_map(|l| {
                let meet = l.meet?;
                let p = w.points.iter().find(|p| {
                    let k = p.at.len() - 1;
                    p.at[..k] == l.at[..] && w.axes[k].numbers.as_ref().and_then(|n| n.get(p.at[k])) == Some(&meet)
                })?;
                (p.case == case).then(|| format!("`{}` searched: {}", x.path, x.sentence(l, unit)))
            })
        })
    };
    let mut all: Vec<Choice> =
        results.iter().filter(|r| answers_a_miss(r, results)).filter_map(|r| choice(r, searched(&r.case))).collect();
    // Least invasive first: inside the envelope, with margin, by kind, by how many options,
    // a search's boundary first among the values of one option, then the run's order.
    all.sort_by_key(|c| (!c.outside_envelope.is_empty(), c.on_edge, c.kind, c.departures.len(), c.searched.is_none()));
    let mut seen: Vec<Vec<String>> = Vec::new();
    let mut inside = Vec::new();
    let mut outside = Vec::new();
    for c in all {
        if !c.outside_envelope.is_empty() {
            // Each value past the envelope costs its own: every one is said.
            let costs = crossing_costs(&c, results);
            outside.push(Choice { costs, ..c });
            continue;
        }
        let names = options(&c.departures);
        if seen.contains(&names) {
            continue; // one value per option set inside it: the smallest change of it
        }
        seen.push(names);
        inside.push(c);
    }
    let chosen = inside.first().filter(|c| !c.on_edge).cloned();
    let others: Vec<Choice> = inside.into_iter().filter(|c| Some(c) != chosen.as_ref()).take(OTHERS_NAMED).collect();
    let text = match &chosen {
        Some(c) => format!(
            "Recommendation: {} — the least invasive option this run measured that meets every rollout gate with \
             margin, inside production's envelope: {}.{} {assumed}",
            c.name(),
            c.margins_text(),
            c.searched.as_ref().map(|s| format!(" {s}.")).unwrap_or_default()
        ),
        None if others.is_empty() && outside.is_empty() => format!(
            "Recommendation: no option this run measured meets every rollout gate inside production's envelope; the \
             boundaries above say where each gate holds. {assumed}"
        ),
        None if others.is_empty() => format!(
            "Recommendation: none. The only options that meet every rollout gate leave production's envelope \
             (below): not recommended. {assumed}"
        ),
        None => format!(
            "Recommendation: none with margin. The options below meet every rollout gate only on the edge: a \
             repeat could miss. {assumed}"
        ),
    };
    Some(Recommendation { chosen, others, outside, text })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::gate::Gate;

    const IDLE: &str = "idle_phase_discovery_per_min <= 5.0";

    fn case(name: &str, departures: Vec<Departure>, idle: f64) -> CaseResult {
        let mut r = CaseResult { case: name.into(), departures: Some(departures), pass: true, ..Default::default() };
        r.rollout = vec![Gate::parse(IDLE).unwrap().evaluate(Some(idle))];
        r
    }

    fn window(secs: u64) -> Departure {
        let text = format!("window = {secs}.00s");
        let d = Departure::setting(text, "REMOTE_WATCH_WINDOW_MS", secs * 1000);
        if secs >= 30 {
            d.outside("reaches the 30 s safety wait")
        } else {
            d
        }
    }

    /// A setting before a change of code, with margin before on the edge, inside the
    /// envelope before outside it; one value per option inside, every value outside.
    #[test]
    fn the_least_invasive_option_with_margin_inside_the_envelope_is_recommended() {
        let results = vec![
            case("window-exec", vec![], 5.33),
            case("quiet", vec![Departure::code("idle_wake = false")], 4.65),
            case("w@27", vec![window(27)], 4.93),
            case("w@28", vec![window(28)], 4.75),
            case("w@29", vec![window(29)], 4.6),
            case("w@40", vec![window(40)], 4.99),
            case("w@60", vec![window(60)], 3.3),
            case("follow", vec![Departure::design("strategy = follow")], 2.0),
        ];
        let r = recommend(&results, &[], Some(false), "s").unwrap();
        let chosen = r.chosen.as_ref().unwrap();
        assert_eq!(chosen.case, "w@28", "27 s is on the edge, 29 s a larger change: {r:?}");
        assert_eq!(chosen.kind, ChangeKind::Setting);
        assert!(r.text.starts_with("Recommendation: `window = 28.00s` (w@28; a setting production already reads: `AGENTA_AGENT_TOOLS_RELAY_REMOTE_WATCH_WINDOW_MS=28000`)"), "{}", r.text);
        let others: Vec<&str> = r.others.iter().map(|c| c.case.as_str()).collect();
        assert_eq!(others, ["quiet"], "one window inside (the one chosen), no other design");
        let outside: Vec<&str> = r.outside.iter().map(|c| c.case.as_str()).collect();
        assert_eq!(outside, ["w@60", "w@40"], "each value outside said, with margin first");
        assert!(r.outside[0].costs[0].starts_with("w@60: 0 safety lists"), "{:?}", r.outside[0].costs);
        // Nothing inside with margin: nothing recommended, and said.
        let r =
            recommend(&results[..1].iter().chain(&results[5..]).cloned().collect::<Vec<_>>(), &[], Some(false), "s")
                .unwrap();
        assert!(r.chosen.is_none() && r.text.starts_with("Recommendation: none."), "{}", r.text);
        // An option under other conditions (a higher limit) is no answer to production's miss.
        let mut higher = case("poll@rate", vec![Departure::code("writer = poll")], 4.0);
        higher.host_params = "limits: 333.3/s".into();
        let r = recommend(&[results[0].clone(), higher], &[], Some(false), "s").unwrap();
        assert!(r.chosen.is_none() && r.others.is_empty(), "{r:?}");
        // Production meets them: keep it.
        let r = recommend(&[case("window-exec", vec![], 4.0)], &[], Some(true), "s").unwrap();
        assert!(r.text.starts_with("Recommendation: keep production's defaults"), "{}", r.text);
    }
}
