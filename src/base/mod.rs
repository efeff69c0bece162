//! The base layer: what every other layer speaks — the protocol's bytes and names,
//! durations and their units, the seeded generator, the wake signal, the strict TOML
//! reader, what the relay says (notices), the filesystem primitives of publication, and the
//! "did you mean" of an error.

pub mod fields;
pub mod fsio;
pub mod gauge;
pub mod notice;
pub mod protocol;
pub mod rng;
pub mod signal;
pub mod suggest;
pub mod units;
