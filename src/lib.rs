//! relay-bench: a benchmark and latency measurement suite for the file-based tool-call
//! relays of AI agents (see `../shared/SPEC.md`).
//!
//! The data flows one way: scenario -> validated config -> pacer (intended start times) ->
//! writers and runners over a host -> per-call events on one channel -> recorder (HDR
//! histograms, counters, pairing check) -> summary -> gates -> exporters.
//!
//! # Layers
//!
//! Modules import only from their own layer or the layers below (a test,
//! `tests/architecture.rs`, fails on an upward import or an import cycle):
//!
//! | layer | modules | owns |
//! |---|---|---|
//! | 0 base | `units`, `rng`, `protocol`, `config`, `signal`, `notice` | bytes and names of the protocol, durations, the strict TOML reader, the wake signal, what the relay says |
//! | 1 events | `events`, `pairing`, `timeline` | the event channel and its listeners' contract; the pairing invariant as a pure replay; a call's two timeline halves joined |
//! | 2 sandbox | `fsio`, `dir`, `host` | a relay dir and the sandbox around it (files, watches, the watch program); the runner's counted view of it (local, emulated remote daemon, the real sandbox-agent daemon and the delay proxy on its wire, and relay-bench's own requests into its sandbox) |
//! | 3 sources | `source`, `handler` | the activity-source contract and what sources share; the tool's duration and outcome |
//! | 4 sides | `runner`, `writer` | production's runner loop; the in-sandbox writer |
//! | 5 strategies | `strategy`, `relay` | every runner and writer strategy (one file each, registered); a runner + writer pair |
//! | 6 recording | `recorder`, `eventlog`, `calls_csv` | the listeners on the event channel: HDR histograms and counters, `events.ndjson`, `calls.csv` |
//! | 7 scenario | `gate`, `fault`, `pacer`, `scenario` | gates, the fault schedule, intended start times, validated scenarios |
//! | 8 summary | `summary`, `rates`, `calibration`, `env` | the typed results, request-rate arithmetic, this machine's floor and facts |
//! | 9 engine | `engine` | running one case on a backend (real or virtual clock, or the in-sandbox side in the sandbox itself, with the program it runs there) |
//! | 10 reports | `export`, `chart`, `compare` | summary.json / summary.md / table / HDR files, charts, run comparison |
//! | 11 run | `bench`, `serve`, `runs` | running scenarios and writing reports; `serve` and `call`; what `run`, `report` and `list` ask: scenarios and cases chosen, baselines kept and compared |
//! | 12 cli | `cli` | flags, printing, exit codes |

pub mod bench;
pub mod calibration;
pub mod calls_csv;
pub mod chart;
pub mod cli;
pub mod compare;
pub mod config;
pub mod dir;
pub mod engine;
pub mod env;
pub mod eventlog;
pub mod events;
pub mod export;
pub mod fault;
pub mod fsio;
pub mod gate;
pub mod handler;
pub mod host;
pub mod notice;
pub mod pacer;
pub mod pairing;
pub mod protocol;
pub mod rates;
pub mod recorder;
pub mod relay;
pub mod rng;
pub mod runner;
pub mod runs;
pub mod scenario;
pub mod serve;
pub mod signal;
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
