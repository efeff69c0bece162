//! What `relay-bench run` is asked: its flags, declared once as the request a
//! [`super::plan::Plan`] checks and runs (clap reads their docs as the `--help` text).

use std::path::PathBuf;
use std::time::Duration;

use crate::engine::logplan::EventLogFormat;
use crate::scenario::Overrides;

/// What `relay-bench run` was asked: its flags, declared here once (clap reads their docs as
/// the `--help` text).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct RunRequest {
    /// Scenario files (.toml) or names of shipped scenarios (see `relay-bench list`).
    #[arg(value_name = "SCENARIO")]
    pub scenarios: Vec<String>,
    /// Report directory (default: reports/<timestamp>-<scenario>/); with several scenarios,
    /// one subdirectory per scenario. It must be new, empty, or a previous run's (marked by
    /// its .relay-bench-run, which lists the files the run wrote): those files are removed
    /// first, every other file is kept; `/`, a directory of other files and one with a
    /// summary.json but no marker are refused. One run at a time writes it (a lock): a second
    /// is refused, naming the first.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print only the final table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Where to make the relay dirs (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    pub relay_root: Option<PathBuf>,
    /// Run only the cases with these names.
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// Run each case (or the cases --case names) over these values of one of its options:
    /// PATH=V1,V2,... or PATH=FROM..TO:STEPS[:log] (e.g. runner.window=5s,10s,25s); give it
    /// twice for the cross product of two options. A point per value, named after it
    /// (window-exec@window=10s); it replaces a sweep the scenario states.
    #[arg(long = "sweep", value_name = "PATH=VALUES")]
    pub sweeps: Vec<String>,
    /// A figure the sweep's table and charts show per point (a gate metric's name:
    /// pickup.p99, idle_discovery_per_min, fleet.held_execs.max); give it again for more.
    /// Without it a command-line sweep shows pickup.p50, completion.p50 and discovery_per_min
    /// beside the figures its case's gates name.
    #[arg(long = "figure", value_name = "NAME", requires = "sweeps")]
    pub figures: Vec<String>,
    /// Skip the calibration of this machine's floor.
    #[arg(long)]
    pub no_calibration: bool,
    /// Also write calls.csv: a row per call with its whole timeline (for small runs).
    #[arg(long)]
    pub calls_csv: bool,
    /// Write no event log (the per-call events `check` replays).
    #[arg(long, conflicts_with_all = ["event_log", "max_event_log"])]
    pub no_event_log: bool,
    /// The event log's form: `ndjson` (events.ndjson, a JSON object a line), `compact`
    /// (events.bin, about a twentieth of the size; `check --ndjson` prints its lines), or
    /// `auto`: ndjson while the run's estimate stays under 100 MB, compact past it.
    #[arg(long, value_name = "FORM", default_value = "auto", value_parser = event_log_arg())]
    pub event_log: EventLogFormat,
    /// Refuse, before it starts, a run whose event log would pass this size by its planned
    /// calls (bytes, or with KB, MB, GB); and stop a case's log there.
    #[arg(long, value_name = "SIZE", value_parser = crate::engine::logplan::parse_size)]
    pub max_event_log: Option<u64>,
    /// Virtual cases run side by side, up to N at once (default: this machine's cores); each
    /// is a paused clock of its own, so N changes the wall time, never a result. 1: one at a
    /// time. Real-clock cases always run one at a time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// Also keep this run as the baseline NAME (reports/baselines/NAME/).
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare this run with the baseline NAME afterwards; a regression exits 1.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Also write every case's gates as JUnit XML to FILE (a testsuite per case, a testcase
    /// per gate), for CI systems to display.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// The sandbox-agent binary for `host = "sandbox-agent"` cases (before
    /// $SANDBOX_AGENT_BIN, the project-local install and PATH).
    #[arg(long, value_name = "PATH")]
    pub sandbox_agent: Option<PathBuf>,
    /// Run every case on this clock: `virtual` decides in seconds, `real` confirms. A case
    /// that cannot (a real daemon, a black-box runner; a fault only the in-memory sandbox
    /// produces) is refused, naming it and why.
    #[arg(long, value_name = "real|virtual", value_parser = clock_arg)]
    pub clock: Option<crate::scenario::Clock>,
    /// Make the whole schedule (warm-up included) last this long: every phase, the warm-up
    /// and each fault's start scaled alike.
    #[arg(long, value_name = "DURATION", value_parser = crate::base::units::parse_duration, conflicts_with = "scale")]
    pub duration: Option<Duration>,
    /// Scale the schedule by this factor (0.1: a tenth as long), as --duration does.
    #[arg(long, value_name = "FACTOR")]
    pub scale: Option<f64>,
    /// The seed every random draw follows from, instead of the scenario's.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Sandboxes (relay dirs) per case, instead of the scenario's.
    #[arg(long, value_name = "N")]
    pub sandboxes: Option<u32>,
    /// Run every case N times, each with a seed of its own (the first: the run's seed);
    /// every figure is then the median across repeats, with its spread, and gates judge it.
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,
    /// Run part K of N of the run (2/3: the second of three), for one machine of several:
    /// the cases, sweep points and searches are dealt to N parts by their estimated time,
    /// each machine runs its part, and `relay-bench merge` joins the parts' directories into
    /// the run one machine would have written. A part's report has no verdict of its own.
    #[arg(long, value_name = "K/N", conflicts_with_all = ["baseline", "save_baseline"])]
    pub shard: Option<crate::scenario::shard::ShardArg>,
}

impl RunRequest {
    /// `--clock`, `--duration` / `--scale`, `--seed`, `--sandboxes`, `--figure`, `--repeat`
    /// and `--sandbox-agent`: applied to every scenario, recorded in its report.
    pub(super) fn overrides(&self) -> Overrides {
        Overrides {
            clock: self.clock,
            length: self.duration.map(crate::scenario::Length::To).or(self.scale.map(crate::scenario::Length::Scale)),
            seed: self.seed,
            sandboxes: self.sandboxes,
            figures: self.figures.clone(),
            repeat: self.repeat,
            sandbox_agent: self.sandbox_agent.clone(),
            ..Default::default()
        }
    }
}

/// A `--clock` that names no clock.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is no clock: give `real` or `virtual`")]
pub(crate) struct NoClock(String);

/// `--clock`'s value: one of the clocks by its name.
fn clock_arg(s: &str) -> Result<crate::scenario::Clock, NoClock> {
    crate::scenario::Clock::from_name(s).ok_or_else(|| NoClock(s.to_owned()))
}

/// `--event-log`'s value: one of the forms by its name.
fn event_log_arg() -> impl clap::builder::TypedValueParser<Value = EventLogFormat> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(EventLogFormat::NAMES)
        .map(|s| EventLogFormat::from_name(&s).expect("a possible value"))
}
