//! The report layer: what a run directory holds, rendered from the results — every output
//! in one registry ([`outputs`]): the formats (summary.json, summary.md, the console table,
//! JUnit, HDR files: [`export`]) and the charts ([`chart`]); and two runs compared
//! ([`compare`]). A daemon-capacity run's outputs have a registry of their own ([`capacity`]).

pub mod capacity;
pub mod chart;
pub mod compare;
pub mod export;
pub mod output;
pub mod publish;
