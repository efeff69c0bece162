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
//!
//! The layers are private: the crate's surface is the `pub use` list below, and the
//! compiler keeps everything else inside (`unreachable_pub`, `dead_code`), and every
//! item of the surface is documented (`missing_docs`).

#![warn(unreachable_pub, missing_docs)]

// base: bytes and names of the protocol, units, the strict TOML reader, notices.
mod base;

// events: the per-call event channel, the pairing invariant, a call's timeline.
mod events;

// sandbox: a relay dir and the sandbox around it; the runner's counted view of it (hosts).
mod sandbox;

// relay: the runner's loop, the activity-source contract, the handler, the writer.
mod relay;

// strategy: every runner and writer strategy, registered; the pair a case runs per dir.
mod strategy;

// record: the listeners on the event channel: HDR histograms, the event log, calls.csv.
mod record;

// scenario: validated scenarios: workload, pacer, faults, gates.
mod scenario;

// results: the typed results, request-rate arithmetic, this machine's facts.
mod results;

// engine: one case on its clock (or in the sandbox itself).
mod engine;

// report: what a run directory holds: the outputs, charts, comparison.
mod report;

// runs: a scenario's cases in turn with their reports after each, baselines, re-rendering;
// daemon-capacity's report directory.
mod runs;

// app: the command line.
mod app;

// The public surface: what the binary, the tests and the benches use (see the crate's docs).

pub use app::cli::main_with_args;
pub use base::gauge::{Level, Tally};
pub use base::notice::Say;
pub use base::protocol::{Outcome, Request, Response};
pub use base::signal::Signal;
pub use engine::conform::runner::CASES as RUNNER_CASES;
pub use engine::conform::writer::CASES as WRITER_CASES;
pub use engine::logplan::{EventLogFormat, DEFAULT_MAX as DEFAULT_MAX_EVENT_LOG};
pub use engine::{run_case_virtual, CaseEnv};
pub use events::{CallId, CallOutcome, EventInbox, EventKind, EventSink, Listener, Msg, RunnerSide, WriterSide};
pub use record::calls_csv::HEADER as CALLS_CSV_HEADER;
pub use record::eventlog::EventLog;
pub use record::measure::Measure;
pub use record::recorder::{Recorder, Recording};
pub use relay::handler::HandlerModel;
pub use relay::runner::{LoopOptions, PauseAnswer, Runner, RunnerReport, SeenScope, Started};
pub use relay::source::{ActivitySource, Reporter, Wake};
pub use relay::writer::CallEnd;
pub use report::capacity::{html as capacity_html, markdown as capacity_markdown};
pub use report::conform::{html as conform_html, markdown as conform_markdown};
pub use report::output::{Dest, Moment, Output};
pub use report::publish::RunOutput;
pub use report::side::{Format, FORMATS};
pub use results::capacity::CapacityReport;
pub use results::conform::{ConformReport, Verdict};
pub use results::summary::{CaseResult, Summary};
pub use results::verdict::CLOCK_EVIDENCE;
pub use runs::plan::rerender;
pub use runs::scenario::{run_scenario, RunOptions};
pub use sandbox::dir::program::{node_argv, parse_report, Finish};
pub use sandbox::dir::{publish_now, ExecOutput, Lines, RealDir, RelayDir, SimDir, SimFault, Step};
pub use sandbox::host::org::{Caps, Limits, Org};
pub use sandbox::host::{
    find_sandbox_agent, sandbox_agent_request_kind, AgentHost, AgentProcess, BenchRequest, Daemon, DelayProxy, Gate,
    Host, Kind, LatencyProfile, LocalHost, Mark, ReadStorm, RemoteHost, RequestCounts, HOSTS,
};
pub use scenario::fault::FaultKind;
pub use scenario::{Clock, Overrides, Scenario};
pub use strategy::pair::{Relay, RelaySpec};
pub use strategy::window::arithmetic::{idle_cost, IdleCost};
pub use strategy::window::{WindowConfig, WindowExec, WindowFailure, WindowNotice, WindowSource};
pub use strategy::{runner_from_toml, writer_from_toml, ChangeKind, Departure, RUNNERS, WRITERS};

pub use base::BoxFut;
