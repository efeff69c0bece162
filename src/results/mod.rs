//! The results layer: the typed results every report reads ([`summary`]), the request-rate
//! arithmetic ([`rates`]), and this machine's floor and facts ([`calibration`], [`env`]).

pub mod calibration;
pub mod env;
pub mod fleet;
pub mod rates;
pub mod summary;
