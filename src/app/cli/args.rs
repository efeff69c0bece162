//! The flags: what each command accepts, with its help text, parsed by clap into plain
//! values before anything runs.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::base::units::parse_duration;
use crate::report::compare::{Format, Threshold};
use crate::runs::plan::RunRequest;

#[derive(Debug, Parser)]
#[command(
    name = "relay-bench",
    version,
    about = "Benchmark the file-based tool-call relays of AI agents",
    long_about = "Fires batches of relay calls through poll-only, watch-assisted, bounded-window exec and other \
strategies, on real relay directories (local or behind an emulated remote daemon) or in virtual time, and \
records wake, pickup and completion latency (HDR histograms) plus request counts per minute, \
then checks the scenario's gates. `serve` and `call` are the suite's reference runner and writer on a \
real relay dir; `check` replays the pairing invariant over a run's events.ndjson; `report` re-renders a run \
directory; `compare` puts two runs side by side with a noise-aware verdict.\n\nExit codes: 0 all \
gates passed (call: ok answer; check: no breach), 1 a gate failed (call: error answer; check: breaches \
found, or a log cut short), 2 bad input, 3 internal error, 4 call: paused answer, 5 call: timed out, 6 stdout could not be \
written (a full disk, an I/O error; the report files are still written; a reader that closes the pipe, as \
`| head -1` does, is not an error), 7 this machine failed the run (a full disk, a quota, a read-only or failing \
filesystem under the relay dirs or the run directory), 8 conform: no case FAILED but one was INCONCLUSIVE, 130 \
interrupted. `daemon-capacity` measures one real daemon's capacity \
for held execs (its own exit codes in its --help)."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run scenarios (the embedded default when none is given) and write their reports.
    Run(RunRequest),
    /// List the shipped scenarios, then the strategies and hosts a case can name and the measures a gate reads.
    List,
    /// Serve a relay dir with the reference runner until Ctrl-C (a stat line per interval).
    Serve(ServeArgs),
    /// Make one call through a relay dir as the reference writer and print the answer.
    Call(crate::engine::serve::CallOptions),
    /// Compare two run directories case by case: latency p50 and p99, request rates and
    /// requests per call, the fleet's figures and every gated one, each judged the way it
    /// gets worse, with a noise-aware verdict; exit 1 on any regression.
    Compare {
        /// The earlier run directory (or a baseline's).
        old: PathBuf,
        /// The later run directory.
        new: PathBuf,
        /// How far a figure must move to count (a latency quantile: its whole 95% interval):
        /// a percentage (`5%`) or a fraction of 1 (`0.05`, the same); a bare number of 1 or
        /// more is refused as ambiguous.
        #[arg(long, value_name = "SHARE", default_value = "5%", value_parser = threshold_arg)]
        threshold: Threshold,
        /// How to print the comparison: `table` (the console), `md` (markdown, for a pull
        /// request's comment) or `json` (reports/compare.schema.json).
        #[arg(long, default_value = "table", value_parser = Format::parse)]
        format: Format,
        /// Refuse to compare runs whose environments differ (kernel, filesystem, cpus,
        /// build profile, suite version).
        #[arg(long)]
        strict: bool,
    },
    /// Join the parts of a run split with `run --shard K/N` (each part's run directory, in
    /// any order) into the run one machine would have written: its summary.json, reports and
    /// verdict, and parts.json (each part's machine). Exit 1 when a gate fails, as `run`.
    Merge {
        /// Every part's run directory.
        #[arg(value_name = "DIR", required = true)]
        parts: Vec<PathBuf>,
        /// The merged run's directory (default: reports/<timestamp>-<scenario>/). It must be
        /// new, empty or an earlier run's, and none of the parts.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Also write the merged run's gates as JUnit XML to FILE, as `run --junit` does.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Print only the final table.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Re-render a run directory's summary.md, .hgrm files, charts and report.html from its
    /// summary.json and .hlog files.
    Report {
        /// A run directory (where summary.json is).
        dir: PathBuf,
    },
    /// Replay the pairing invariant (SPEC §7) over an events.ndjson; exit 1 on any breach or a log cut short.
    Check {
        /// The event log (a run directory's events.ndjson or events.bin).
        log: PathBuf,
        /// Print the log's events as ndjson lines (a compact log's too) instead of checking.
        #[arg(long)]
        ndjson: bool,
    },
    /// Measure how many held execs one real sandbox-agent daemon takes, and how it fails.
    DaemonCapacity(CapacityArgs),
    /// Grade a relay runner or writer against the file contract, case by case; exit 1 on
    /// any FAILED case.
    Conform(ConformArgs),
}

/// `conform`'s flags.
#[derive(Debug, clap::Args)]
#[command(long_about = "Grade a relay runner (--runner) or writer (--writer) against the file contract \
(SPEC §2, §7, §8), case by case, relay-bench playing the other side. Each case runs in a fresh relay dir, \
starts the implementation's command (given after `--`; never a shell), watches the dir with inotify and \
the bytes, and kills the command's process group at its end (at --bound at the latest). Each case gets a \
verdict: OK, NON-STRICT (works, not as the contract says), FAILED, or INFORMATIONAL (a figure), its \
expectation with the SPEC section it comes from, and its evidence.\n\n\
A runner's command gets `{dir}` (the relay dir, also $RELAY_DIR) and `{handler}` (also \
$RELAY_CONFORM_HANDLER): the tool to run, a program the runner runs once per call with the request's JSON on \
stdin, publishing what it prints on stdout as the answer (for a pause it prints {\"ok\":true,\"paused\":true}; a \
runner whose design writes no answer to a pause writes none). relay-bench's own: `relay-bench conform --runner \
-- relay-bench serve --dir {dir} --sweep --handler-command {handler}`.\n\n\
A writer's command is started once per call with `{dir}`, `{tool}`, `{id}`, `{args}` (JSON) and \
`{timeout_ms}` (the tool's timeout) substituted, also $RELAY_DIR, $RELAY_CALL_TOOL, $RELAY_CALL_ID, \
$RELAY_CALL_ARGS, $RELAY_CALL_TIMEOUT_MS. It publishes the request, waits for the answer, deletes both files, \
prints the answer it read as a response's JSON on one line and exits; an error is no answer printed and a \
non-zero exit (or {\"ok\":false,...}). relay-bench's own: `relay-bench conform --writer -- relay-bench call \
--dir {dir} --tool {tool} --id {id} --args {args} --timeout {timeout_ms}ms`.\n\n\
Writes conform.json (reports/conform.schema.json) and conform.md to --out (default \
reports/<stamp>-conform-<side>/) and prints a table. Exit codes: 0 no case FAILED or INCONCLUSIVE, 1 a case \
FAILED, 2 bad input, 7 no case FAILED but one INCONCLUSIVE (not observed in time on this machine), 130 \
interrupted (SIGINT, SIGTERM: the cases run so far are reported). docs/conform.md has every case.")]
pub(crate) struct ConformArgs {
    /// Grade a runner: relay-bench is the writer.
    #[arg(long, conflicts_with = "writer", required_unless_present_any = ["writer", "list"])]
    pub runner: bool,
    /// Grade a writer: relay-bench is the runner.
    #[arg(long)]
    pub writer: bool,
    /// Run only the cases with these names.
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// Print the cases (of the side given, else of both) and exit.
    #[arg(long)]
    pub list: bool,
    /// Each case's bound at an unloaded machine's pace, from 2s to 600s: it is stretched by
    /// the pace the battery measures at start (at most 10x, at most 600s), and the
    /// implementation is killed when it passes (the writer's deadline cases wait their
    /// deadline on top).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    pub bound: Duration,
    /// Grade a runner over a daemon: `sandbox-agent` puts each case's relay dir inside a
    /// sandbox-agent daemon's filesystem (a daemon started for each case) and gives the runner
    /// its URL (`{url}`, $RELAY_SANDBOX_URL) to reach the dir through.
    #[arg(long, value_name = "HOST", value_parser = clap::builder::PossibleValuesParser::new([crate::sandbox::host::AGENT_BINARY]), requires = "runner")]
    pub host: Option<String>,
    /// Grade a runner over the sandbox-agent daemon already running at this URL (on this
    /// machine: the battery records the relay dir with its own watch).
    #[arg(long, value_name = "URL", conflicts_with = "host", requires = "runner")]
    pub url: Option<String>,
    /// The sandbox-agent binary for --host (default: $SANDBOX_AGENT_BIN, tools/sandbox-agent/,
    /// PATH).
    #[arg(long, value_name = "PATH", requires = "host")]
    pub sandbox_agent: Option<PathBuf>,
    /// Report directory (default: reports/<timestamp>-conform-<side>/). It must be new, empty
    /// or an earlier report's.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Where the cases' relay dirs are made (default: the system temp dir).
    #[arg(long, value_name = "DIR")]
    pub relay_root: Option<PathBuf>,
    /// The implementation's command and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `--threshold`'s value, parsed by the library (clap prints its error's text after
/// "invalid value ... for '--threshold'").
fn threshold_arg(s: &str) -> Result<Threshold, crate::report::compare::ThresholdError> {
    s.parse()
}

#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The relay directory to serve.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// How requests are discovered: poll, watch (inotify, the poll delay racing it),
    /// window-exec or window-exec-inline (production's loop, without its stale sweep).
    #[arg(long, default_value = crate::strategy::SERVE_DEFAULT, value_parser = clap::builder::PossibleValuesParser::new(crate::strategy::serve_names()))]
    pub strategy: String,
    /// The poll interval (it grows to 5x after 5 idle lists, as production's does).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "300ms")]
    pub interval: Duration,
    /// How long the tool takes per call.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0ms")]
    pub handler: Duration,
    /// Share of calls answered {"ok":false,...}.
    #[arg(long, default_value_t = 0.0)]
    pub error_ratio: f64,
    /// How often a stat line is printed (at least 100ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "5s")]
    pub every: Duration,
    /// Request files larger than this are skipped (reported once, never read).
    #[arg(long, value_name = "BYTES", default_value_t = crate::sandbox::dir::RealDir::DEFAULT_MAX_BYTES)]
    pub max_file_bytes: u64,
    /// End the runner's turn this long after it started, and start a new one. Production
    /// runs one relay per agent turn (started when the turn starts, stopped when it ends);
    /// its seen set, backoff and demotion last the turn, so a call id reused within a turn
    /// is skipped (said once), never run twice, and runs in the next turn. Without --turn or
    /// --turn-idle, serve is one turn until it is stopped. At least 1s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub turn: Option<Duration>,
    /// End a turn that handled a call once no call came for this long (an agent's turn
    /// ends when it stops calling tools), and start a new one. At least 1s.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub turn_idle: Option<Duration>,
    /// Sweep stale relay files (requests, answers and their temp names) before each turn, as
    /// production's runner does. Off by default: a shared dir's files may be another's.
    #[arg(long)]
    pub sweep: bool,
    /// Run this program as the tool, once per call: the request's JSON on its stdin, the
    /// answer it prints on stdout published (not JSON, or a failure, is answered
    /// {"ok":false,...}). Without it the tool is --handler's sleep and --error-ratio's mix.
    #[arg(long, value_name = "PROGRAM")]
    pub handler_command: Option<PathBuf>,
    /// How long --handler-command's program may run for one call before it is killed (its
    /// whole process group) and the call answered {"ok":false,...} saying so. The default
    /// is the writer's deadline for a call without a tool timeout: nobody waits longer.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub handler_timeout: Duration,
}

/// `daemon-capacity`'s flags.
#[derive(Debug, clap::Args)]
#[command(long_about = "Measure how many held execs one real sandbox-agent daemon takes, and how it fails past \
that. The event-driven relay holds one watch window (a held POST /v1/processes/run) per active agent turn. \
At each step (--steps, up to --max) N execs are held at once, each on its own HTTP connection (a `sleep` that \
outlasts the ramp, marked by a nonce in its argument); then the next exec (`true`, on a new connection) is \
timed --samples times (p50/p99 of its round trip, HDR) and the daemon's RSS, open fds, threads and children \
are read from /proc, with the per-held-exec cost (the slope between steps and a least-squares line). The ramp \
stops at --max or where the daemon fails: an error status (its body kept), a refused or reset connection \
(its errno), a probe with no answer, held execs it never starts, its process gone; the limit hit is named \
(its Max open files from /proc/PID/limits, ...). Then every held request is cancelled, every held program \
killed by its pid (a closed connection does not end it) and the daemon stopped. Writes capacity.json, \
capacity.md and capacity.html to --out (default reports/<stamp>-daemon-capacity/) and prints a short table.\n\nExit codes: 0 \
the ramp completed or found the daemon's failure point, 2 bad input, 3 internal error (the ramp stopped \
for a reason of its own, such as relay-bench's own open-files limit, or something it started was left \
running), 130 interrupted (the cleanup still ran).")]
pub(crate) struct CapacityArgs {
    #[command(flatten)]
    pub request: crate::engine::capacity::CapacityRequest,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_parse_into_a_plain_config() {
        let args = ["relay-bench", "run", "a.toml", "--case", "x", "-q", "--sweep", "runner.window=5s,10s"];
        let cli = Cli::try_parse_from(args).unwrap();
        match cli.command {
            Command::Run(r) => {
                assert_eq!(r.scenarios, vec!["a.toml".to_string()]);
                assert_eq!(r.cases, vec!["x".to_string()]);
                assert_eq!(r.sweeps, vec!["runner.window=5s,10s".to_string()]);
                assert!(r.quiet);
            }
            _ => panic!("parsed as another command"),
        }
        let err = Cli::try_parse_from(["relay-bench", "run", "--bogus"]).unwrap_err();
        assert!(err.use_stderr(), "a bad flag is an error, exit code 2");
    }
}
