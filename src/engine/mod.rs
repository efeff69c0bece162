//! Runs one case: a backend lays out the relay dirs, a relay (runner + writer) starts per
//! dir over the case's host, the schedule starts once every runner is ready, calls are
//! paced open-loop while the fault schedule strikes, then everything stops and what the
//! recorder saw becomes a [`CaseResult`]. The recipe is the same on both clocks; what
//! depends on the clock is the [`backend::Backend`].

pub mod backend;
pub mod in_sandbox;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use self::backend::{Backend, Fire};
use crate::base::notice::Say;
use crate::base::signal::Signal;
use crate::base::units::{human, new_histogram};
use crate::events::{EventSink, Listener};
use crate::record::calls_csv::CallsCsv;
use crate::record::eventlog::EventLog;
use crate::record::recorder::{CaseHdr, LatencyStats, Measure, Recorder, Recording, Span};
use crate::relay::runner::RunnerReport;
use crate::relay::writer::{writer_deadline, CallSpec, Writer};
use crate::results::rates::Snapshots;
use crate::results::summary::{CaseResult, RunnerStats};
use crate::sandbox::host::{Busy, DaemonControl, Host, RequestCounts};
use crate::scenario::fault::{Target, AFTERMATH};
use crate::scenario::{CaseSpec, Clock, Scenario};
use crate::strategy::pair::{Relay, RelaySpec};

/// How long stopped runners get to finish their in-flight handlers.
const STOP_BOUND: Duration = Duration::from_secs(30);
/// How long runners get to be ready (their sweep, a black box's probe call).
const READY_BOUND: Duration = Duration::from_secs(60);

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
    Sandbox(String),
}

/// Where a case reports progress; `None` keeps quiet.
pub type Progress = Option<Arc<dyn Fn(&str) + Send + Sync>>;

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
    pub progress_every: Duration,
    /// Where the case appends its per-call event lines (`events.ndjson`), if anywhere.
    pub event_log: Option<PathBuf>,
    /// Where the case appends a row per call (`calls.csv`), if asked for.
    pub calls_csv: Option<PathBuf>,
}

/// The request counters of all hosts, added up.
fn total_counts(hosts: &[Arc<dyn Host>]) -> RequestCounts {
    let mut c = RequestCounts::default();
    hosts.iter().for_each(|h| c.add(&h.counts()));
    c
}

/// The backend of a case on its clock (or in the sandbox itself).
fn backend_for(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<Box<dyn Backend>, EngineError> {
    let setup = |source| EngineError::Setup { root: env.relay_root.display().to_string(), source };
    if let Some(root) = case.host.in_sandbox() {
        let text = scenario.source.clone();
        let b = in_sandbox::InSandbox::new(root, &case.name, &env.watch_program, text, scenario.workload.clone())
            .map_err(setup)?;
        return Ok(Box::new(b));
    }
    Ok(match case.clock {
        Clock::Virtual => Box::new(backend::Virtual::new()),
        Clock::Real => {
            let program_faults = case.faults.iter().any(|f| f.kind.acts_on_program());
            Box::new(
                backend::Real::new(&env.relay_root, &case.name, &env.watch_program, program_faults).map_err(setup)?,
            )
        }
    })
}

/// The recorder thread of a case, with the listeners the run asked for.
fn start_recorder(
    case: &CaseSpec,
    env: &CaseEnv,
    sink: &EventSink,
    rx: crate::events::EventInbox,
    (epoch, step): (Instant, Duration),
    calls: usize,
    live: Arc<AtomicU64>,
) -> std::io::Result<std::thread::JoinHandle<Recording>> {
    let spans: Vec<Span> = case
        .faults
        .iter()
        .map(|f| Span { sandbox: f.sandbox, from: epoch + f.at, to: epoch + f.at + f.duration + AFTERMATH })
        .collect();
    let recorder = Recorder::with_capacity(calls).with_spans(&spans).with_intervals(epoch, step, 60).with_live(live);
    let mut listeners: Vec<Box<dyn Listener>> = Vec::new();
    if let Some(path) = &env.calls_csv {
        match CallsCsv::append(path, &case.name, epoch) {
            Ok(csv) => listeners.push(Box::new(csv)),
            Err(e) => sink.notice(0, Say::Other(format!("cannot open {}: {e}", path.display()))),
        }
    }
    if let Some(path) = &env.event_log {
        match EventLog::append(path, &case.name, epoch) {
            Ok(log) => listeners.push(Box::new(log)),
            Err(e) => sink.notice(0, Say::Other(format!("cannot open the event log {}: {e}", path.display()))),
        }
    }
    std::thread::Builder::new().name("relay-bench-recorder".into()).spawn(move || recorder.drain(rx, listeners))
}

/// Runs `case` of `scenario` on the current runtime. A virtual-clock case must run on a
/// paused clock: use [`run_case_virtual`].
pub async fn run_case(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    let wl = &scenario.workload;
    let setup = |source| EngineError::Setup { root: env.relay_root.display().to_string(), source };
    let mut backend = backend_for(scenario, case, env)?;
    let watch_program = backend.watch_program();
    let (sink, rx) = EventSink::channel();
    // When the calls run elsewhere, their events come at the end: the runners' are held
    // apart until then, so that the two sides can be put in one order.
    let elsewhere = backend.settles_calls();
    let (runner_sink, runner_inbox) = if elsewhere {
        let (s, i) = EventSink::channel();
        (s, Some(i))
    } else {
        (sink.clone(), None)
    };

    // The relays: a dir, a host and a runner + writer per sandbox.
    let handler = Arc::new(scenario.handler.clone());
    let stderr_dir = env.event_log.as_ref().and_then(|p| p.parent()).map_or_else(|| backend.scratch(), PathBuf::from);
    let mut relays: Vec<Relay> = Vec::new();
    let mut daemons: Vec<Option<Arc<dyn DaemonControl>>> = Vec::new();
    let mut dirs = Vec::new();
    // Every host is built before any runner starts: a host that fails to build (a daemon
    // that will not start) leaves nothing running; the built ones go with this scope.
    let mut built = Vec::new();
    for sandbox in 0..wl.sandboxes {
        let dir = backend.make_dir(sandbox).map_err(setup)?;
        let busy = Arc::new(Busy::default());
        let seed = wl.seed.wrapping_mul(0x9E37_79B9).wrapping_add(u64::from(sandbox));
        let host = case.host.build(dir.clone(), busy.clone(), seed).map_err(EngineError::Host)?;
        backend.attach(sandbox, host.sandbox.clone());
        built.push((sandbox, dir, busy, seed, host));
    }
    backend.prepare().await.map_err(EngineError::Sandbox)?;
    for (sandbox, dir, busy, seed, built) in built {
        daemons.push(built.daemon);
        let spec = RelaySpec {
            sandbox,
            dir: dir.clone(),
            host: built.host,
            busy,
            runner: &case.runner,
            writer: (!elsewhere).then_some(&case.writer),
            handler: handler.clone(),
            watch_program: &watch_program,
            seed,
            stderr_to: Some(stderr_dir.join(format!("{}-sandbox-{sandbox}.stderr", case.name))),
        };
        relays.push(Relay::start(spec, &runner_sink));
        dirs.push(dir);
    }
    // The schedule starts once every runner is ready (its start-up is not the workload's).
    for k in 0..relays.len() {
        if !relays[k].ready(READY_BOUND).await {
            let said = relays[k].start_failure();
            let said_why = said.is_some();
            let detail = said.unwrap_or_else(|| format!("not ready within {}", human(READY_BOUND)));
            for r in &mut relays {
                let _ = r.stop(Instant::now() + STOP_BOUND).await;
            }
            backend.abandon().await;
            return Err(EngineError::NotReady { sandbox: k as u32, detail, said_why });
        }
    }
    let hosts: Vec<Arc<dyn Host>> = relays.iter().map(|r| r.host.clone()).collect();
    let writers: Vec<Arc<Writer>> = relays.iter().filter_map(|r| r.writer.clone()).collect();

    let slots = wl.schedule();
    let epoch = Instant::now() + backend.lead();
    // Pickup per interval and the request timeline share one step: 1/60 of the schedule.
    let step = Duration::from_secs(wl.duration().as_secs().div_ceil(60).max(1));
    let live_p50 = Arc::new(AtomicU64::new(0));
    let recorder = start_recorder(case, env, &sink, rx, (epoch, step), slots.len(), live_p50.clone()).map_err(setup)?;

    tokio::time::sleep_until(epoch).await;
    let before = total_counts(&hosts);
    let phase_ends = sample_at_phase_ends(&hosts, epoch, wl.phases.iter().map(|p| p.duration).collect());
    let timeline = sample_every(&hosts, epoch, step, wl.duration());
    let (mut total, length) = (slots.len(), wl.duration());
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let fire = firing(writers.clone(), wl, done_tx.clone());
    let mut pacer = backend.pace(slots, epoch, length, env.interrupt.clone(), fire.clone());

    // Drain: every call ends by its deadline; an interrupt ends them now. Faults strike on
    // their schedule meanwhile.
    let mut interrupted = false;
    let mut fired: Option<usize> = None;
    let mut finished = 0usize;
    let every = backend.progress_every(env.progress_every);
    let mut tick = tokio::time::interval_at(epoch + every, every);
    let mut actions = crate::scenario::fault::actions(&case.faults).into_iter().peekable();
    let mut stops: Vec<Option<Duration>> = vec![None; case.faults.len()];
    let mut burst_calls = 0usize;
    let far = epoch + Duration::from_secs(86_400 * 365);
    while fired.is_none_or(|n| finished < n) {
        let next_action = actions.peek().map_or(far, |a| epoch + a.0);
        tokio::select! {
            _ = tick.tick(), if env.progress.is_some() => {
                if let Some(p) = &env.progress {
                    let done = (!elsewhere).then_some(finished);
                    p(&progress_line(case, epoch, length, done, total, live_p50.load(Ordering::Relaxed)));
                }
            }
            _ = tokio::time::sleep_until(next_action), if actions.peek().is_some() => {
                let (_, i, on) = actions.next().expect("peeked");
                let f = &case.faults[i];
                let k = f.sandbox as usize;
                sink.notice(f.sandbox, Say::Fault { kind: f.kind.name(), on });
                let applied = match f.kind.target() {
                    Target::Runner => match relays[k].restart_runner(Instant::now() + STOP_BOUND).await {
                        Ok(took) => {
                            stops[i] = Some(took);
                            sink.notice(f.sandbox, Say::RunnerRestarted { took });
                            Ok(())
                        }
                        Err(e) => Err(e),
                    },
                    Target::Calls => {
                        for c in 0..f.calls {
                            fire(f.sandbox, format!("burst{i}-c{c}"), Instant::now(), false);
                        }
                        total += f.calls as usize;
                        fired = fired.map(|n| n + f.calls as usize);
                        burst_calls += f.calls as usize;
                        Ok(())
                    }
                    Target::Daemon(_) if on => match &daemons[k] {
                        Some(d) => f.kind.strike_daemon(&**d, f.duration),
                        None => Err("no daemon on this host".to_owned()),
                    },
                    Target::Daemon(_) => Ok(()),
                    Target::Dir => backend.replace_dir(f.sandbox, on, !on || f.duration.is_zero()),
                    Target::Sandbox(c) => backend.switch(f.sandbox, c, on),
                };
                if let Err(error) = applied {
                    sink.notice(f.sandbox, Say::FaultNotApplied { kind: f.kind.name(), error });
                }
            }
            r = &mut pacer, if fired.is_none() => {
                let (n, stopped) = r.map_err(|e| EngineError::Pacer(e.to_string()))?;
                fired = Some(n + burst_calls);
                if elsewhere {
                    finished = n;
                }
                if stopped && !interrupted {
                    interrupted = true;
                    writers.iter().for_each(|w| w.close());
                }
            }
            Some(()) = done_rx.recv() => finished += 1,
            () = env.interrupt.closed(), if !interrupted => {
                interrupted = true;
                writers.iter().for_each(|w| w.close());
            }
        }
    }
    // Conditions still on at the end are undone, so the stop below is clean.
    for (_, i, _) in actions.filter(|a| !a.2) {
        let f = &case.faults[i];
        let _ = match f.kind.target() {
            Target::Dir => backend.replace_dir(f.sandbox, false, true),
            Target::Sandbox(c) => backend.switch(f.sandbox, c, false),
            _ => Ok(()),
        };
    }
    let end = Instant::now();
    let after = total_counts(&hosts);
    // The samplers end with the schedule, which a finished case has reached; an interrupted
    // case reports no phase rates (its phases were cut short).
    if interrupted {
        phase_ends.abort();
        timeline.abort();
    }
    let at_phase_ends = phase_ends.await.unwrap_or_default();
    let timeline = timeline.await.unwrap_or_default();

    // Stop the runners and let their handlers finish.
    let mut reports: Vec<RunnerReport> = Vec::new();
    let stop_deadline = Instant::now() + STOP_BOUND;
    let mut stuck = 0u64;
    for relay in &mut relays {
        match relay.stop(stop_deadline).await {
            Ok(reps) => reports.extend(reps),
            Err(e) => {
                stuck += 1;
                sink.notice(relay.sandbox, Say::RunnerStuck(e));
            }
        }
    }
    let mut degraded: Vec<String> = reports.iter().filter_map(|r| r.degraded.clone()).collect();
    degraded.extend(writers.iter().filter_map(|w| w.degraded()));
    let mut leftover: u64 = 0;
    let mut sandbox_side = None;
    if let Some(mut inbox) = runner_inbox {
        let runner_msgs: Vec<crate::events::Msg> = inbox.try_iter().collect();
        if let Some(f) = backend.finish(runner_msgs).await {
            f.msgs.into_iter().for_each(|m| sink.forward(m));
            f.problems.into_iter().for_each(|p| sink.notice(0, Say::Other(p)));
            degraded.extend(f.degraded);
            leftover = f.leftover;
            sandbox_side = Some(f.side);
        }
    } else {
        leftover = dirs.iter().map(|d| d.relay_files().map_or(0, |f| f.len() as u64)).sum();
    }
    drop((writers, relays, fire, done_tx, runner_sink));
    drop(sink);
    let recording = tokio::task::spawn_blocking(move || recorder.join())
        .await
        .map_err(|e| EngineError::Recorder(e.to_string()))?
        .map_err(|_| EngineError::Recorder("recorder thread panicked".into()))?;

    let window = end.saturating_duration_since(epoch).max(Duration::from_millis(1));
    let mut injected = new_histogram();
    for h in &hosts {
        if let Some(legs) = h.injected_legs() {
            let _ = injected.add(&legs);
        }
    }
    let mut r = CaseResult {
        case: case.name.clone(),
        host: hosts.first().map_or_else(|| case.host.name().to_owned(), |h| h.label()),
        host_params: case.host.params(),
        injected_leg_us: (!injected.is_empty()).then(|| LatencyStats::of(&injected)),
        strategy: case.runner.name().into(),
        strategy_params: case.runner.params(),
        departures: Some(case.departures()),
        writer: case.writer.name().into(),
        writer_params: case.writer.params(),
        clock: case.clock.name().into(),
        sandboxes: wl.sandboxes,
        window_secs: (window.as_secs_f64() * 1000.0).round() / 1000.0,
        leftover_files: leftover,
        interrupted,
        unavailable: case.runner.unavailable(),
        pickup_definition: Some(case.runner.pickup_definition()),
        sandbox_side,
        ..CaseResult::default()
    };
    r.fill_from(&recording);
    r.calls.scheduled = total as u64;
    r.requests = crate::results::rates::requests(&Snapshots {
        sandboxes: wl.sandboxes,
        window,
        before,
        after,
        phases: &wl.phases,
        at_phase_ends: &at_phase_ends,
        timeline: &timeline,
        step,
        visible: case.runner.requests_visible(),
        busy_known: !elsewhere,
    });
    r.runner = RunnerStats::of(&reports, stuck, degraded);
    r.faults = crate::scenario::fault::rows(&case.faults, epoch, &recording, &stops);
    r.hdr = Some(Arc::new(CaseHdr {
        measures: Measure::ALL.iter().map(|m| (*m, recording.histogram(*m).clone())).collect(),
        intervals: recording.intervals.clone(),
        length: window,
    }));
    r.judge(&case.gates);
    Ok(r)
}

/// Starts one call of the workload `wl` on `writers[sandbox]` (on the current runtime) and
/// says on `done` when it has ended.
pub(crate) fn firing(
    writers: Vec<Arc<Writer>>,
    wl: &crate::scenario::pacer::Workload,
    done: tokio::sync::mpsc::UnboundedSender<()>,
) -> Fire {
    let deadline = writer_deadline(wl.tool_timeout);
    let args = Some(format!("{{\"payload\":\"{}\"}}", crate::relay::handler::filler(wl.payload_bytes)));
    let handle = tokio::runtime::Handle::current();
    Arc::new(move |sandbox: u32, id: String, at: Instant, warmup: bool| {
        let writer = writers[sandbox as usize].clone();
        let spec = CallSpec { id, tool: "bench".into(), args: args.clone(), intended: at, warmup, deadline };
        let done = done.clone();
        handle.spawn(async move {
            writer.call(spec).await;
            let _ = done.send(());
        });
    })
}

/// `done`: calls answered so far, `None` when they are counted only at the end (in the
/// sandbox).
fn progress_line(
    case: &CaseSpec,
    epoch: Instant,
    length: Duration,
    done: Option<usize>,
    total: usize,
    p50_ns: u64,
) -> String {
    let elapsed = epoch.elapsed();
    let p50 = if p50_ns == 0 { "-".to_owned() } else { human(Duration::from_nanos(p50_ns)) };
    let calls = match done {
        Some(done) => format!("{done}/{total} calls answered, pickup p50 {p50}"),
        None => format!("{total} calls running in the sandbox (counted when their log comes back)"),
    };
    format!(
        "  {}: {} / {}{} (ETA {}), {calls}",
        case.name,
        human(elapsed),
        human(length),
        if case.clock == Clock::Virtual { " simulated" } else { "" },
        human(length.saturating_sub(elapsed))
    )
}

/// The counters at the end of each phase (offsets from `epoch`).
fn sample_at_phase_ends(
    hosts: &[Arc<dyn Host>],
    epoch: Instant,
    phases: Vec<Duration>,
) -> tokio::task::JoinHandle<Vec<RequestCounts>> {
    let hosts = hosts.to_vec();
    tokio::spawn(async move {
        let mut snaps = Vec::new();
        let mut end = epoch;
        for d in phases {
            end += d;
            tokio::time::sleep_until(end).await;
            snaps.push(total_counts(&hosts));
        }
        snaps
    })
}

/// The counters every `step` until `length`.
fn sample_every(
    hosts: &[Arc<dyn Host>],
    epoch: Instant,
    step: Duration,
    length: Duration,
) -> tokio::task::JoinHandle<Vec<(Duration, RequestCounts)>> {
    let hosts = hosts.to_vec();
    tokio::spawn(async move {
        let (mut points, mut at, end) = (Vec::new(), epoch, epoch + length);
        while at < end {
            at = (at + step).min(end);
            tokio::time::sleep_until(at).await;
            points.push((at - epoch, total_counts(&hosts)));
        }
        points
    })
}

/// Runs a virtual-clock case on this thread, on a fresh single-threaded runtime whose clock
/// is paused: it jumps to the next timer whenever every task waits, so a simulated hour
/// takes as long as its work, and one seed gives one result. Call it from a thread that is
/// not inside a runtime.
pub fn run_case_virtual(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|source| EngineError::Setup { root: "(virtual runtime)".into(), source })?;
    rt.block_on(run_case(scenario, case, env))
}
