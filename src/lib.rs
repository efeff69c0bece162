//! relay-bench: a benchmark and latency measurement suite for the file-based tool-call
//! relays of AI agents (see `../shared/SPEC.md`).
//!
//! The data flows one way: scenario -> validated config -> pacer (intended start times) ->
//! writers and runner over a host -> per-call events on one channel -> recorder (HDR
//! histograms, counters, pairing check) -> summary -> gates -> exporters.

pub mod calibration;
pub mod chart;
pub mod cli;
pub mod compare;
pub mod dir;
pub mod engine;
pub mod env;
pub mod eventlog;
pub mod events;
pub mod export;
pub mod external;
pub mod fault;
pub mod fsio;
pub mod gate;
pub mod handler;
pub mod host;
pub mod pacer;
pub mod pairing;
pub mod protocol;
pub mod recorder;
pub mod relay;
pub mod rng;
pub mod runner;
pub mod sandbox_watch;
pub mod scenario;
pub mod schedule;
pub mod serve;
pub mod source;
pub mod strategy;
pub mod summary;
pub mod timeline;
pub mod units;
pub mod writer;

use std::future::Future;
use std::pin::Pin;

/// A boxed future, for the object-safe async traits (host, activity source).
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
