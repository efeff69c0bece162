//! The results layer: the typed results every report reads ([`summary`]; what calls and requests
//! counted, [`counts`]; the rollout verdict, [`verdict`]), the request-rate
//! arithmetic ([`rates`]), this machine's floor and facts ([`calibration`], [`env`]), and a
//! daemon's own capacity for held execs ([`capacity`]), a sweep's points and its best ([`sweep`]).

pub mod calibration;
pub mod capacity;
pub mod counts;
pub mod env;
pub mod fleet;
pub mod rates;
pub mod summary;
pub mod sweep;
pub mod verdict;
