//! Runs one case ([`run_case`]): a backend lays out the relay dirs, a host and a relay
//! (runner + writer) per dir over the case's organisation, every runner ready ([`setup`]);
//! then the calls are made — on an open-loop schedule through relays that run the whole
//! case, or as agent turns that start and stop their relay each ([`drive`]) — and drained
//! while the fault schedule strikes ([`drain`], [`faults`]); then everything stops and the
//! calls made elsewhere come back ([`teardown`]), and what the recorder saw becomes a
//! [`CaseResult`] ([`result`]). The recipe is the same on both clocks; what depends on the
//! clock is the [`backend::Backend`].
//!
//! Beside it, the engines of the other commands: a scenario's cases several at once
//! ([`points`]) and its event log planned ([`logplan`]); `conform`'s batteries
//! ([`conform`]); a daemon's capacity ([`capacity`]); and the reference runner and writer
//! on a real relay dir, `serve` and `call` ([`serve`]).

pub(crate) mod backend;
pub(crate) mod capacity;
pub(crate) mod conform;
mod drain;
mod drive;
mod faults;
pub(crate) mod in_sandbox;
pub(crate) mod logplan;
pub(crate) mod points;
mod result;
mod sample;
pub(crate) mod serve;
mod setup;
mod teardown;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use self::drain::Drain;
use self::setup::{start_recorder, Parts};
use self::teardown::Stopped;
use crate::base::clock;
use crate::base::signal::Signal;
use crate::events::TurnEvent;
use crate::results::summary::CaseResult;
use crate::sandbox::host::org::Org;
use crate::scenario::pacer::{Slot, Workload};
use crate::scenario::{CaseSpec, Scenario};

/// How long stopped runners get to finish their in-flight handlers.
pub(crate) const STOP_BOUND: Duration = Duration::from_secs(30);
/// How long runners get to be ready (their sweep, a black box's probe call).
pub(crate) const READY_BOUND: Duration = Duration::from_secs(60);
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot prepare relay dirs under {root}: {source}")]
    Setup { root: String, source: std::io::Error },
    #[error("the runner of sandbox {sandbox} did not start: {detail}")]
    NotReady {
        sandbox: u32,
        detail: String,
        /// The runner said why it could not start (a black-box command that would not run):
        /// the user's to fix, unlike a runner of ours that was merely not ready in time.
        said_why: bool,
    },
    #[error("cannot start the host: {0}")]
    Host(std::io::Error),
    #[error("the pacer failed: {0}")]
    Pacer(String),
    #[error("the recorder thread failed: {0}")]
    Recorder(String),
    #[error("cannot ready the sandbox side: {0}")]
    Sandbox(backend::PrepareError),
}

/// Where a case reports progress; `None` keeps quiet.
pub(crate) type Progress = Option<Arc<dyn Fn(&str) + Send + Sync>>;

/// Where and how cases run.
#[derive(Clone)]
pub struct CaseEnv {
    /// Where the relay dirs are made.
    pub relay_root: PathBuf,
    /// The relay-bench binary, run in the sandbox as the watch program.
    pub watch_program: PathBuf,
    /// Ends a case early (the result is then marked interrupted).
    pub interrupt: Arc<Signal>,
    /// Gets a progress line every `progress_every`.
    pub progress: Progress,
    /// How often `progress` gets a line.
    pub progress_every: Duration,
    /// Where the case appends its per-call events, if anywhere: `events.ndjson`, or the
    /// compact log of [`crate::record::compact`] when the file's name ends in `.bin`.
    pub event_log: Option<PathBuf>,
    /// The most a case writes of its event log (bytes); the rest is left out, and said.
    pub event_log_max: u64,
    /// Where the case appends a row per call (`calls.csv`), if asked for.
    pub calls_csv: Option<PathBuf>,
}

impl CaseEnv {
    /// A case run alone and quietly: relay dirs under the system's temp dir, the watch
    /// program `relay-bench` (a virtual case never starts it), no progress, no event log,
    /// no calls.csv, never interrupted. What a virtual case run in-process needs.
    pub fn quiet() -> CaseEnv {
        CaseEnv {
            relay_root: std::env::temp_dir(),
            watch_program: "relay-bench".into(),
            interrupt: Arc::new(Signal::new()),
            progress: None,
            progress_every: Duration::from_secs(3600),
            event_log: None,
            event_log_max: u64::MAX,
            calls_csv: None,
        }
    }
}

/// Runs `case` of `scenario` on the current runtime. A virtual-clock case must run on a
/// paused clock: use [`run_case_virtual`].
pub(crate) async fn run_case(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    let wl = &case.workload;
    let (mut parts, rx) = Parts::build(scenario, case, env).await?;
    // Laid out before the clock starts: the first intended start is not kept waiting.
    let slots = wl.schedule();
    let epoch = clock::now() + parts.backend.lead();
    // Pickup per interval and the request timeline share one step: 1/60 of the schedule.
    let step = Duration::from_secs(wl.duration().as_secs().div_ceil(60).max(1));
    let live_p50 = Arc::new(AtomicU64::new(0));
    let calls_hint = usize::try_from(wl.planned_calls()).unwrap_or(usize::MAX).min(1 << 24);
    let recorder = start_recorder(case, env, &parts.sink, rx, (epoch, step, wl.warmup), calls_hint, live_p50.clone())
        .map_err(|source| EngineError::Setup { root: env.relay_root.display().to_string(), source })?;

    tokio::time::sleep_until(epoch).await;
    let warmed = start_org_clock(&parts.org, epoch, wl.warmup);
    let before = sample::total_counts(&parts.hosts);
    // Today's keys: one long turn per sandbox, the whole case.
    // (On the runners' channel: when the calls run elsewhere, that one is put in time order
    // with the writers' messages at the end, and the turn's marks must be too.)
    if !parts.turns {
        parts.relays.iter().for_each(|r| parts.runner_sink.turn(r.sandbox, TurnEvent::Started));
    }
    let phases = wl.phases.iter().map(|p| p.duration).collect();
    let samplers = sample::Samplers::start(&parts.hosts, parts.org.clone(), epoch, step, (phases, wl.duration()));
    // A search's probe stops once its `lost` gates have failed for good.
    let cutoff = case.stop_past_lost.map(|allowed| drive::Cutoff::new(allowed, env.interrupt.clone()));
    let stop = cutoff.as_ref().map_or_else(|| env.interrupt.clone(), |c| c.stop.clone());
    let mut calls = Calls::start(&parts, wl, slots, epoch, (stop.clone(), cutoff.clone()));
    let drained = Drain::of(case, env, &parts, &calls.fire, epoch, &live_p50)
        .run(calls.pacer, &mut calls.done_rx, calls.total, &stop)
        .await?;
    let stopped_early = cutoff.and_then(|c| c.stopped_early(epoch, wl.duration(), &env.interrupt));
    let end = parts.org.close_rates();
    let after = sample::total_counts(&parts.hosts);
    let (at_phase_ends, timeline) = samplers.finish(drained.interrupted).await;

    let Stopped { reports, stuck } = teardown::stop_relays(&parts, &calls.per_sandbox).await;
    let whole = sample::total_counts(&parts.hosts);
    teardown::tidy_writers(&parts);
    let warmup_org = warmup_seen(warmed).await;
    let org_stats = parts.org.finish(end);
    let mut degraded: Vec<String> = reports.iter().flat_map(|r| r.degraded.iter().cloned()).collect();
    degraded.extend(parts.writers.iter().filter_map(|w| w.degraded()));
    let settled = teardown::settle(&mut parts).await;
    degraded.extend(settled.degraded);
    // Every sender of the recorder's channel gone, its thread ends with the recording.
    let Parts { backend: _backend, sink, runner_sink, relays, writers, org, hosts, limits, elsewhere, daemons, .. } =
        parts;
    drop((writers, relays, calls.fire, calls.done_tx, runner_sink));
    drop(sink);
    let recording = recorder.await.map_err(|_| EngineError::Recorder("the recorder thread ended early".into()))?;
    let ended = result::Ended {
        case,
        hosts: &hosts,
        epoch,
        end,
        step,
        total: drained.total,
        interrupted: drained.interrupted && stopped_early.is_none(),
        stopped_early,
        leftover: settled.leftover,
        sandbox_side: settled.sandbox_side,
        before,
        after,
        whole,
        at_phase_ends,
        timeline,
        busy_known: !elsewhere,
        reports,
        stuck,
        degraded,
        stops: drained.stops,
        org: (case.host.admits()).then_some((org_stats, limits)),
        warmup_org: warmup_org.filter(|_| case.host.admits()),
        org_handle: &org,
        daemons: &daemons,
    };
    Ok(ended.result(&recording))
}

/// Restarts the organisation's clock at `epoch`, and again after the warm-up: its gauges and
/// rates measure after the warm-up, as the histograms do. Returns the warm-up's task, which
/// ends with what the organisation saw during the warm-up (reported beside the steady state).
fn start_org_clock(
    org: &Arc<Org>,
    epoch: Instant,
    warmup: Duration,
) -> Option<tokio::task::JoinHandle<crate::sandbox::host::org::OrgStats>> {
    org.restart_clock(epoch);
    (!warmup.is_zero()).then(|| {
        let (org, at) = (org.clone(), epoch + warmup);
        tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            org.warmup_over(at)
        })
    })
}

/// What the organisation saw during the warm-up, if the case got past it (the warm-up's task
/// ended); a task still waiting for the warm-up's end is stopped.
async fn warmup_seen(
    warmed: Option<tokio::task::JoinHandle<crate::sandbox::host::org::OrgStats>>,
) -> Option<crate::sandbox::host::org::OrgStats> {
    let w = warmed?;
    if w.is_finished() {
        w.await.ok()
    } else {
        w.abort();
        None
    }
}

/// A case's calls, started: the pacer that fires them (or the agents' sessions that make
/// them), and how their ends are counted.
struct Calls {
    pacer: tokio::task::JoinHandle<(usize, bool)>,
    fire: backend::Fire,
    /// A message per call that ended.
    done_tx: tokio::sync::mpsc::UnboundedSender<()>,
    done_rx: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// Calls fired per sandbox.
    per_sandbox: Arc<Vec<AtomicU32>>,
    /// Calls scheduled.
    total: usize,
}

impl Calls {
    /// Starts the pacer of the open-loop schedule `slots`, or the agents' sessions, until
    /// `stop` (the user's interrupt, or a probe's cutoff, which hears each call's end).
    fn start(
        parts: &Parts,
        wl: &Workload,
        slots: Vec<Slot>,
        epoch: Instant,
        (stop, cutoff): (Arc<Signal>, Option<Arc<drive::Cutoff>>),
    ) -> Calls {
        let total = slots.len();
        let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        let per_sandbox: Arc<Vec<AtomicU32>> = Arc::new((0..wl.sandboxes).map(|_| AtomicU32::new(0)).collect());
        let told = drive::Told { done: done_tx.clone(), cutoff };
        let fire = drive::firing(parts.writers.clone(), wl, told.clone(), per_sandbox.clone());
        let pacer = match drive::Sessions::of(wl, epoch, parts.sink.clone(), stop.clone(), told) {
            Some(s) => drive::sessions(parts.relays.clone(), s),
            None => {
                let schedule = backend::Schedule { slots, epoch, length: wl.duration(), stop };
                parts.backend.pace(schedule, fire.clone())
            }
        };
        Calls { pacer, fire, done_tx, done_rx, per_sandbox, total }
    }
}

/// Runs a virtual-clock case on this thread, on a fresh single-threaded runtime whose clock
/// is paused: it jumps to the next timer whenever every task waits, so a simulated hour
/// takes as long as its work, and one seed gives one result. Call it from a thread that is
/// not inside a runtime.
pub fn run_case_virtual(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    let rt =
        clock::paused_runtime().map_err(|source| EngineError::Setup { root: "(virtual runtime)".into(), source })?;
    rt.block_on(async {
        let _hold = clock::Holding::start();
        run_case(scenario, case, env).await
    })
}
