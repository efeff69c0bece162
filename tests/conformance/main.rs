//! Conformance with production's relay as built (SPEC §8): the expectations of production's
//! own unit tests (`services/runner/tests/unit/relay-loop.test.ts` and `relay-watch.test.ts`
//! in Agenta-AI/agenta), ported to our code, in virtual time. Their tests state exact counts
//! and orders; so do these. Names follow theirs. Plus the exact request counts of an idle
//! window and of one call, on production's defaults.

#[path = "../common/mod.rs"]
mod common;
mod fakes;
mod loop_tests;
mod request_counts;
mod window_tests;
