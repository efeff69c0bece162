//! The formats of a run's results, one file each: summary.json, summary.md, the console
//! table, JUnit XML and the HDR files. Each is an output of the registry
//! ([`crate::report::outputs`]), which owns where and when they are written.

#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod fleet;

pub use fleet::telling as fleet_worth_showing;
mod gfm;
pub(crate) use gfm::{Align, MdTable};
pub mod hdr;
mod json;
pub mod junit;
mod markdown;
mod table;
pub(crate) mod verdict;

pub use json::Json;
pub use junit::JUnit;
pub use markdown::Markdown;
pub use table::Table;

use crate::results::summary::CaseResult;

/// `p50 / p99` of a latency in a short human form, or `-` without samples.
pub(crate) fn pair(s: &crate::record::recorder::LatencyStats) -> String {
    if s.count == 0 {
        return "-".into();
    }
    format!("{} / {}", us(s.p50), us(s.p99))
}

/// Microseconds for a person.
pub(crate) fn us(v: f64) -> String {
    crate::base::units::human_us(v)
}

/// What a case is against production's relay as built: `production as built`, or the
/// options it departs with.
pub(crate) fn design(r: &CaseResult) -> String {
    match r.departures.as_deref() {
        Some([]) => "production as built".into(),
        Some(d) => d.join(", "),
        None => crate::results::summary::DEPARTURES_NOT_RECORDED.into(),
    }
}
