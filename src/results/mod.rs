//! The results layer: the typed results every report reads ([`summary`]; what calls and requests
//! counted, [`counts`]; the rollout verdict, [`verdict`]), the request-rate
//! arithmetic ([`rates`]), this machine's floor and facts ([`calibration`], [`env`]), and a
//! daemon's own capacity for held execs ([`capacity`]), a sweep's points and its best ([`sweep`]);
//! a case run several times made one, median and spread ([`repeat`]);
//! a conformance battery's grades ([`conform`]).

pub mod boundary;
pub mod calibration;
pub mod capacity;
pub mod conform;
pub mod counts;
pub mod env;
pub mod fleet;
pub mod rates;
pub mod repeat;
pub mod summary;
pub mod sweep;
pub mod verdict;
