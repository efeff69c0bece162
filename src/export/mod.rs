//! Exporters: each turns a [`Summary`] into bytes; the caller owns the file or terminal.
//! One file per format.

#[cfg(test)]
mod fixture;
mod gfm;
pub mod hdr;
mod json;
pub mod junit;
mod markdown;
mod table;
mod verdict;

pub use json::Json;
pub use junit::JUnit;
pub use markdown::Markdown;
pub use table::Table;

use crate::summary::{CaseResult, Summary};

pub trait Exporter {
    /// The file name this format is written to (`summary.json`), if it is a file.
    fn file_name(&self) -> &'static str;
    fn render(&self, summary: &Summary) -> Vec<u8>;
}

/// `p50 / p99` of a latency in a short human form, or `-` without samples.
pub(crate) fn pair(s: &crate::recorder::LatencyStats) -> String {
    if s.count == 0 {
        return "-".into();
    }
    format!("{} / {}", us(s.p50), us(s.p99))
}

/// Microseconds for a person.
pub(crate) fn us(v: f64) -> String {
    crate::units::human_us(v)
}

/// What a case is against production's relay as built: `production as built`, or the
/// options it departs with.
pub(crate) fn design(r: &CaseResult) -> String {
    match r.departures.as_deref() {
        Some([]) => "production as built".into(),
        Some(d) => d.join(", "),
        None => crate::summary::DEPARTURES_NOT_RECORDED.into(),
    }
}
