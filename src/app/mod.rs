//! The application layer: the command line ([`cli`]): every command's flags parsed into
//! plain values, handed to the layer that does the work (`crate::runs` for `run`, `report`,
//! `list` and `daemon-capacity`; `crate::engine::serve` for `serve` and `call`;
//! `crate::engine::conform` for `conform`), what it reports printed, and the outcome mapped
//! to an exit code.

pub(crate) mod cli;

#[cfg(test)]
mod recipes;
