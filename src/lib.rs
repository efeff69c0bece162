//! relay-bench: a benchmark and latency measurement suite for the file-based tool-call
//! relays of AI agents.
//!
//! The data flows one way: scenario -> validated config -> pacer (intended start times) ->
//! writers and runners over a host -> per-call events on one channel -> recorder (HDR
//! histograms, counters, pairing check) -> summary -> gates -> exporters.
//!
//! Each folder under `src/` is one layer of that pipeline, and the modules below are
//! declared bottom-up: a module imports only from its own layer or the layers declared
//! before it (`tests/architecture.rs` reads this order and fails on an upward import or an
//! import cycle between two modules of one layer).

// base: bytes and names of the protocol, units, the strict TOML reader, notices.
pub mod base;

// events: the per-call event channel, the pairing invariant, a call's timeline.
pub mod events;

// sandbox: a relay dir and the sandbox around it; the runner's counted view of it (hosts).
pub mod sandbox;

// relay: the runner's loop, the activity-source contract, the handler, the writer.
pub mod relay;

// strategy: every runner and writer strategy, registered; the pair a case runs per dir.
pub mod strategy;

// record: the listeners on the event channel: HDR histograms, the event log, calls.csv.
pub mod record;

// scenario: validated scenarios: workload, pacer, faults, gates.
pub mod scenario;

// results: the typed results, request-rate arithmetic, this machine's facts.
pub mod results;

// engine: one case on its clock (or in the sandbox itself).
pub mod engine;

// report: what a run directory holds: the outputs, charts, comparison.
pub mod report;

// app: running scenarios, serve and call, the command line.
pub mod app;

use std::future::Future;
use std::pin::Pin;

/// A boxed future, for the object-safe async traits (host, activity source).
pub type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
