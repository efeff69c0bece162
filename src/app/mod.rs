//! The application layer: running scenarios and writing their reports ([`bench`]; a sweep's
//! virtual points several at once, [`points`]), what
//! `run`, `report` and `list` ask ([`runs`]) and the directory a run writes ([`outdir`]), the reference runner and writer on a real
//! relay dir ([`serve`]) and its lock on that dir ([`claim`]), the command line ([`cli`])
//! and the outputs it writes to ([`console`]); and a daemon's own capacity for held execs
//! ([`capacity`]). `conform`'s battery is an engine (`crate::engine::conform`); its flags
//! and wiring are in [`cli`].

pub(crate) mod bench;
pub(crate) mod capacity;
pub(crate) mod claim;
pub(crate) mod cli;
pub(crate) mod console;
pub(crate) mod logplan;
pub(crate) mod outdir;
mod points;
pub(crate) mod runs;
pub(crate) mod serve;
