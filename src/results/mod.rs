//! The results layer: the typed results every report reads ([`summary`]; what calls and requests
//! counted, [`counts`]; the rollout verdict, [`verdict`]), the request-rate
//! arithmetic ([`rates`]), this machine's floor and facts ([`calibration`], [`env`]), and a
//! daemon's own capacity for held execs ([`capacity`]), a sweep's points and its best ([`sweep`]);
//! a case run several times made one, median and spread ([`repeat`]);
//! a conformance battery's grades ([`conform`]); the provider's documented tiers, each
//! number with its source ([`tiers`]).

pub(crate) mod assumptions;
pub(crate) mod boundary;
pub(crate) mod calibration;
pub(crate) mod capacity;
pub(crate) mod conform;
pub(crate) mod counts;
pub(crate) mod env;
pub(crate) mod fleet;
pub(crate) mod rates;
pub(crate) mod recommend;
pub(crate) mod repeat;
pub(crate) mod standing;
pub(crate) mod stopped;
pub(crate) mod summary;
pub(crate) mod sweep;
pub(crate) mod tiers;
pub(crate) mod verdict;
