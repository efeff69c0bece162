//! The report layer: what a run directory holds, rendered from the results — every output
//! in one registry ([`publish`]): the formats (summary.json, summary.md, the console table,
//! JUnit, HDR files: [`export`]), the charts ([`chart`]) and the page that holds them with
//! the verdict and the tables ([`html`]); and two runs compared ([`compare`]). A
//! daemon-capacity run's outputs have a registry of their own ([`capacity`]), and so do a
//! conform battery's ([`conform`]).

pub mod capacity;
pub mod chart;
pub mod compare;
pub mod conform;
pub mod export;
pub mod html;
pub mod output;
pub mod publish;
