//! The report layer: what a run directory holds, rendered from the results — every output
//! in one registry ([`publish`]): the formats (summary.json, summary.md, the console table,
//! JUnit, HDR files: [`export`]), the charts ([`chart`]) and the page that holds them with
//! the verdict and the tables ([`html`]); and two runs compared ([`compare`]). A
//! daemon-capacity run's outputs have a registry of their own ([`capacity`]), and so do a
//! conform battery's ([`conform`]). The directory a run writes, taken by one run at a time,
//! is [`outdir`].

pub(crate) mod capacity;
pub(crate) mod chart;
pub(crate) mod compare;
pub(crate) mod conform;
pub(crate) mod doc;
pub(crate) mod export;
pub(crate) mod html;
pub(crate) mod outdir;
pub(crate) mod output;
pub(crate) mod publish;
pub(crate) mod side;
