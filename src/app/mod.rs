//! The application layer: running scenarios and writing their reports ([`bench`]; a sweep's
//! virtual points run several at once by `crate::engine::points`), what
//! `run`, `report` and `list` ask ([`runs`]; the directory a run writes is
//! `crate::report::outdir`), the
//! command line ([`cli`]: `serve` and `call` are wired there to `crate::engine::serve`)
//! and the outputs it writes to ([`console`]); and a daemon's own capacity for held execs
//! ([`capacity`]). `conform`'s battery is an engine (`crate::engine::conform`); its flags
//! and wiring are in [`cli`].

pub(crate) mod bench;
pub(crate) mod capacity;
pub(crate) mod cli;
pub(crate) mod console;
pub(crate) mod runs;

#[cfg(test)]
mod recipes;
