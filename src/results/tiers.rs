//! The sandbox provider's documented organisation limits, as data: each tier's request rate
//! with where the number comes from, and what is documented of held execs (nothing). A
//! report prints each number beside its source; a number with no source is not here.
//! [`covering`] says which tier covers a measured need.

/// Where the request rates of the tiers come from.
pub(crate) const RATE_SOURCE: &str = "Daytona's published limits (daytona.io/docs/en/limits), general requests per minute by tier, as the design's archived research notes record them: Agenta-AI/agenta docs/design/agent-workflows/archive/research/open-questions.md at 753af38, \"Rate limits (per minute, by tier)\"";

/// What is documented of held execs: nothing, so any held-exec limit is an assumption.
pub(crate) const HELD_EXECS_SOURCE: &str = "not documented: Daytona publishes organisation request rates, not concurrent execs per sandbox or per organisation (the design's open question 1 and plan.md \"Held connections and Daytona limits\", Agenta-AI/agenta branch event-driven-tool-relay at ea3e3fa); a held-exec limit is assumed, and relay-bench sweeps it";

/// How a covered need is judged, and what about it is assumed.
pub(crate) const HOW_COUNTED: &str = "assumed: a tier covers a fleet whose busiest minute is within its rate; how the provider counts a minute (a fixed window, a token bucket) and what burst it allows are not documented";

/// One documented tier of an organisation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Tier {
    pub name: &'static str,
    /// General requests a minute; `None`: no published number.
    pub requests_per_min: Option<u32>,
    /// What the number is, when there is none.
    pub note: &'static str,
    pub source: &'static str,
}

/// The tiers, smallest first.
pub(crate) static TIERS: [Tier; 5] = [
    Tier { name: "tier 1", requests_per_min: Some(10_000), note: "", source: RATE_SOURCE },
    Tier { name: "tier 2", requests_per_min: Some(20_000), note: "", source: RATE_SOURCE },
    Tier { name: "tier 3", requests_per_min: Some(40_000), note: "", source: RATE_SOURCE },
    Tier { name: "tier 4", requests_per_min: Some(50_000), note: "", source: RATE_SOURCE },
    Tier { name: "Enterprise", requests_per_min: None, note: "custom: no published number", source: RATE_SOURCE },
];

/// Which documented tier covers a rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Cover {
    /// The smallest tier whose rate is at least the need.
    Tier(&'static Tier),
    /// No tier with a published number does: the need is above the highest of them.
    Above(&'static Tier),
}

/// The smallest documented tier whose request rate covers `per_min` requests a minute.
pub(crate) fn covering(per_min: f64) -> Cover {
    let numbered = || TIERS.iter().filter_map(|t| Some((t, f64::from(t.requests_per_min?))));
    match numbered().find(|(_, rate)| per_min <= *rate) {
        Some((t, _)) => Cover::Tier(t),
        None => Cover::Above(numbered().next_back().expect("a numbered tier").0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_tier_that_covers_a_need_or_none() {
        assert_eq!(covering(0.0), Cover::Tier(&TIERS[0]));
        assert_eq!(covering(10_000.0), Cover::Tier(&TIERS[0]), "a rate at the tier's is covered");
        assert_eq!(covering(10_001.0), Cover::Tier(&TIERS[1]));
        assert_eq!(covering(13_590.0), Cover::Tier(&TIERS[1]));
        assert_eq!(covering(45_000.0), Cover::Tier(&TIERS[3]));
        assert_eq!(covering(50_000.0), Cover::Tier(&TIERS[3]));
        // 10,000 sandboxes need about 100,000 a minute: no documented tier has it.
        assert_eq!(covering(99_900.0), Cover::Above(&TIERS[3]));
    }

    #[test]
    fn every_number_has_its_source_and_the_tiers_grow() {
        for t in TIERS {
            assert!(!t.source.is_empty(), "{}", t.name);
            assert!(t.requests_per_min.is_some() || !t.note.is_empty(), "{}: a number or what stands for it", t.name);
        }
        let rates: Vec<u32> = TIERS.iter().filter_map(|t| t.requests_per_min).collect();
        assert_eq!(rates, [10_000, 20_000, 40_000, 50_000]);
        assert!(HELD_EXECS_SOURCE.starts_with("not documented"));
    }
}
