//! A run end to end, below the command line: a scenario's cases in turn on their clocks
//! with the machine's calibration beside them and the reports rewritten as it goes
//! ([`scenario`]); what `run`, `report` and `list` ask: scenarios loaded and narrowed, every
//! input checked before anything runs, a baseline kept or compared with, a run directory
//! drawn again ([`plan`]); the parts of a run split over machines joined ([`merge`]); and `daemon-capacity`'s report directory, rewritten after every
//! step of its ramp ([`capacity`]).
//! A scenario's run draws its progress on stderr (`crate::base::console`); the rest say
//! what they do to their caller, who prints it.

mod bench_error;
pub(crate) mod capacity;
pub(crate) mod merge;
mod merge_error;
pub(crate) mod plan;
mod request;
pub(crate) mod scenario;
