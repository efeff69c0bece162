//! The measure registry, and the throwaway measure its recipe is tried with ([`Turnaround`],
//! in [`super::MEASURES`] in test builds only; `src/app/recipes.rs` runs it end to end).

use super::{CallMeasure, CallTimes, Measure, MEASURES};

/// The throwaway: request published -> answer renamed (the relay's whole turnaround).
pub(super) struct Turnaround;
impl CallMeasure for Turnaround {
    fn name(&self) -> &'static str {
        "turnaround"
    }
    fn about(&self) -> &'static str {
        "request published -> answer renamed (a measure of the registry's own test)"
    }
    fn row(&self) -> Option<&'static str> {
        Some("turnaround (test)")
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        CallTimes::between(c.published, c.answered)
    }
}

#[test]
fn the_named_measures_are_in_place_and_names_are_unique_keys() {
    let named = [
        (Measure::WAKE, "wake"),
        (Measure::PICKUP, "pickup"),
        (Measure::COMPLETION, "completion"),
        (Measure::COMPLETION_UNCORRECTED, "completion_uncorrected"),
        (Measure::RELAY_OVERHEAD, "relay_overhead"),
        (Measure::SCHEDULE_LAG, "schedule_lag"),
        (Measure::HANDLER, "handler"),
        (Measure::ANSWER_PUBLISH, "answer_publish"),
        (Measure::HOP1, "hop1"),
    ];
    for (m, name) in named {
        assert_eq!(m.name(), name, "a named measure's place in MEASURES");
    }
    let mut names: Vec<&str> = MEASURES.iter().map(|m| m.name()).collect();
    assert!(names
        .iter()
        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')));
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), MEASURES.len(), "a measure's name is its summary.json key: unique");
}
