//! Why a gate or a metric name does not parse: each says what is wrong in it and what it may
//! say instead (the allowed names, the closest one to a typo).

use crate::base::units::DurationError;

/// A gate that does not parse: what in it is wrong, and what it may say instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    #[error("{0:?} has no comparison (use <, <=, >, >=, == or !=)")]
    NoComparison(String),
    #[error(transparent)]
    Metric(#[from] MetricError),
    #[error("latency gate {expr:?}: {why}")]
    Duration { expr: String, why: DurationError },
    #[error("gate {expr:?}: {rhs:?} is not a number")]
    NotANumber { expr: String, rhs: String },
    #[error("gate {0:?}: the threshold must be a finite number")]
    NotFinite(String),
}

/// A metric name no gate knows: what was unknown, the closest known name (empty when none is
/// close) and every name allowed there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{unknown}{hint}; allowed: {allowed}")]
pub struct MetricError {
    pub unknown: Unknown,
    pub hint: String,
    pub allowed: String,
}

impl MetricError {
    pub(super) fn new(unknown: Unknown, allowed: String) -> MetricError {
        MetricError { unknown, hint: String::new(), allowed }
    }
}

/// The part of a metric name that matched nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unknown {
    #[error("unknown fleet figure {0:?}")]
    FleetFigure(String),
    #[error("unknown baseline ratio {0:?}")]
    Ratio(String),
    #[error("unknown metric {0:?}")]
    Metric(String),
    #[error("unknown statistic {0:?}")]
    Statistic(String),
}
