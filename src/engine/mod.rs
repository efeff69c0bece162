//! Runs one case: a backend lays out the relay dirs, a host and a relay (runner + writer)
//! per dir over the case's organisation, then the calls are made — on an open-loop
//! schedule through relays that run the whole case, or as agent turns that start and stop
//! their relay each ([`drive`]) — while the fault schedule strikes ([`faults`]); then
//! everything stops and what the recorder saw becomes a [`CaseResult`] ([`result`]). The
//! recipe is the same on both clocks; what depends on the clock is the [`backend::Backend`].

pub mod backend;
mod drive;
mod faults;
pub mod in_sandbox;
mod result;
mod sample;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use self::backend::Backend;
use crate::base::notice::Say;
use crate::base::signal::Signal;
use crate::base::units::human;
use crate::events::{EventSink, Listener, TurnEvent};
use crate::record::calls_csv::CallsCsv;
use crate::record::eventlog::EventLog;
use crate::record::recorder::{Fleet, Recorder, Recording, Span};
use crate::relay::runner::RunnerReport;
use crate::relay::writer::Writer;
use crate::results::summary::CaseResult;
use crate::sandbox::host::org::Org;
use crate::sandbox::host::{Busy, DaemonControl, Host, Seat};
use crate::scenario::fault::AFTERMATH;
use crate::scenario::{CaseSpec, Clock, Scenario};
use crate::strategy::pair::{Relay, RelaySpec};

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

/// The backend of a case on its clock (or in the sandbox itself).
fn backend_for(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<Box<dyn Backend>, EngineError> {
    let setup = |source| EngineError::Setup { root: env.relay_root.display().to_string(), source };
    if let Some(root) = case.host.in_sandbox() {
        let text = scenario.source.clone();
        let b = in_sandbox::InSandbox::new(root, &case.name, &env.watch_program, text, case.workload.clone())
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

/// The recorder thread of a case, with the listeners the run asked for; its recording comes
/// back on the returned channel (awaited, not joined: a blocking join would stop a paused
/// clock from advancing while the runners' last timers are still due).
fn start_recorder(
    case: &CaseSpec,
    env: &CaseEnv,
    sink: &EventSink,
    rx: crate::events::EventInbox,
    (epoch, step, warmup): (Instant, Duration, Duration),
    calls: usize,
    live: Arc<AtomicU64>,
) -> std::io::Result<tokio::sync::oneshot::Receiver<Recording>> {
    let spans: Vec<Span> = case
        .faults
        .iter()
        .map(|f| Span {
            sandbox: f.sandbox,
            all: f.fleet,
            from: epoch + f.at,
            to: epoch + f.at + f.duration + AFTERMATH,
        })
        .collect();
    let fleet_faults: Vec<(Instant, Instant)> =
        case.faults.iter().filter(|f| f.fleet).map(|f| (epoch + f.at, epoch + f.at + f.duration)).collect();
    let recorder = Recorder::with_capacity(calls)
        .with_spans(&spans)
        .with_intervals(epoch, step, 60)
        .with_live(live)
        .with_fleet(Fleet::new(epoch, step, &fleet_faults, epoch + warmup));
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
    let (tx, done) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name("relay-bench-recorder".into()).spawn(move || {
        let _ = tx.send(recorder.drain(rx, listeners));
    })?;
    Ok(done)
}

/// One sandbox's relay dir, host and relay, as a case builds them.
struct Built {
    relays: Vec<Arc<Relay>>,
    daemons: Vec<Option<Arc<dyn DaemonControl>>>,
    dirs: Vec<Arc<dyn crate::sandbox::dir::RelayDir>>,
}

/// Builds every sandbox's host first (a host that fails to build, a daemon that will not
/// start, leaves nothing running), then readies the sandbox side, then the relays: started
/// for the whole case, or idle until their first turn (`turns`).
async fn build_relays(
    scenario: &Scenario,
    case: &CaseSpec,
    env: &CaseEnv,
    backend: &mut dyn Backend,
    org: &Arc<Org>,
    runner_sink: &EventSink,
) -> Result<Built, EngineError> {
    let wl = &case.workload;
    let setup = |source| EngineError::Setup { root: env.relay_root.display().to_string(), source };
    let watch_program = backend.watch_program();
    let elsewhere = backend.settles_calls();
    let handler = Arc::new(scenario.handler.clone());
    let stderr_dir = env.event_log.as_ref().and_then(|p| p.parent()).map_or_else(|| backend.scratch(), PathBuf::from);
    let mut hosts = Vec::new();
    for sandbox in 0..wl.sandboxes {
        let dir = backend.make_dir(sandbox).map_err(setup)?;
        let busy = Arc::new(Busy::default());
        let seed = wl.seed.wrapping_mul(0x9E37_79B9).wrapping_add(u64::from(sandbox));
        let seat = Seat { dir: dir.clone(), busy: busy.clone(), seed, sandbox, org: org.clone() };
        let host = case.host.build(seat).map_err(EngineError::Host)?;
        backend.attach(sandbox, host.sandbox.clone());
        hosts.push((sandbox, dir, busy, seed, host));
    }
    backend.prepare().await.map_err(EngineError::Sandbox)?;
    let mut built = Built { relays: Vec::new(), daemons: Vec::new(), dirs: Vec::new() };
    for (sandbox, dir, busy, seed, host) in hosts {
        built.daemons.push(host.daemon);
        let spec = RelaySpec {
            sandbox,
            dir: dir.clone(),
            host: host.host,
            busy,
            runner: &case.runner,
            writer: (!elsewhere).then_some(&case.writer),
            handler: handler.clone(),
            watch_program: &watch_program,
            seed,
            stderr_to: Some(stderr_dir.join(format!("{}-sandbox-{sandbox}.stderr", case.name))),
        };
        let relay = if wl.agent.is_some() { Relay::idle(spec, runner_sink) } else { Relay::start(spec, runner_sink) };
        built.relays.push(Arc::new(relay));
        built.dirs.push(dir);
    }
    Ok(built)
}

/// Runs `case` of `scenario` on the current runtime. A virtual-clock case must run on a
/// paused clock: use [`run_case_virtual`].
pub(crate) async fn run_case(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    let wl = &case.workload;
    let setup = |source| EngineError::Setup { root: env.relay_root.display().to_string(), source };
    let mut backend = backend_for(scenario, case, env)?;
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
    let limits = case.host.limits();
    let org = Arc::new(Org::new(limits.clone(), wl.sandboxes));
    let Built { relays, daemons, dirs } = build_relays(scenario, case, env, &mut *backend, &org, &runner_sink).await?;
    let turns = wl.agent.is_some();
    // An open-loop schedule starts once every runner is ready (its start-up is not the
    // workload's); agent turns wait for their own relay each.
    for (k, relay) in relays.iter().enumerate().filter(|_| !turns) {
        if !relay.ready(READY_BOUND).await {
            let said = relay.start_failure();
            let said_why = said.is_some();
            let detail = said.unwrap_or_else(|| format!("not ready within {}", human(READY_BOUND)));
            for r in &relays {
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
    let calls_hint = usize::try_from(wl.planned_calls()).unwrap_or(usize::MAX).min(1 << 24);
    let times = (epoch, step, wl.warmup);
    let recorder = start_recorder(case, env, &sink, rx, times, calls_hint, live_p50.clone()).map_err(setup)?;

    tokio::time::sleep_until(epoch).await;
    org.restart_clock(epoch);
    // The organisation's gauges and rates measure after the warm-up, as the histograms do.
    let warmed = (!wl.warmup.is_zero()).then(|| {
        let (org, at) = (org.clone(), epoch + wl.warmup);
        tokio::spawn(async move {
            tokio::time::sleep_until(at).await;
            org.restart_clock(at);
        })
    });
    let before = sample::total_counts(&hosts);
    // Today's keys: one long turn per sandbox, the whole case.
    // (On the runners' channel: when the calls run elsewhere, that one is put in time order
    // with the writers' messages at the end, and the turn's marks must be too.)
    if !turns {
        relays.iter().for_each(|r| runner_sink.turn(r.sandbox, TurnEvent::Started));
    }
    let phase_ends = sample::at_phase_ends(&hosts, epoch, wl.phases.iter().map(|p| p.duration).collect());
    let timeline = sample::every(&hosts, org.clone(), epoch, step, wl.duration());
    let (mut total, length) = (slots.len(), wl.duration());
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let per_sandbox: Arc<Vec<AtomicU32>> = Arc::new((0..wl.sandboxes).map(|_| AtomicU32::new(0)).collect());
    let fire = drive::firing(writers.clone(), wl, done_tx.clone(), per_sandbox.clone());
    let mut pacer = match drive::Sessions::of(wl, epoch, sink.clone(), env.interrupt.clone(), done_tx.clone()) {
        Some(s) => drive::sessions(relays.clone(), wl, s),
        None => backend.pace(slots, epoch, length, env.interrupt.clone(), fire.clone()),
    };
    // The pacer's task ends when its calls have (they follow each other's answers, or run
    // in the sandbox): then every call it fired has finished.
    let settles = turns || elsewhere;

    // Drain: every call ends by its deadline; an interrupt ends them now. Faults strike on
    // their schedule meanwhile.
    let striker = faults::Striker {
        relays: &relays,
        daemons: &daemons,
        backend: &*backend,
        org: &org,
        sink: &sink,
        fire: &fire,
        sandboxes: wl.sandboxes,
        org_cap: limits.org.held_execs,
    };
    let (interrupted, stops) = {
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
                        let total = (!turns).then_some(total);
                        p(&progress_line(case, epoch, length, done, total, live_p50.load(Ordering::Relaxed)));
                    }
                }
                _ = tokio::time::sleep_until(next_action), if actions.peek().is_some() => {
                    let (_, i, on) = actions.next().expect("peeked");
                    let struck = striker.strike(i, &case.faults[i], on).await;
                    stops[i] = stops[i].or(struck.stop_took);
                    total += struck.burst_calls;
                    fired = fired.map(|n| n + struck.burst_calls);
                    burst_calls += struck.burst_calls;
                }
                r = &mut pacer, if fired.is_none() => {
                    let (n, stopped) = r.map_err(|e| EngineError::Pacer(e.to_string()))?;
                    fired = Some(n + burst_calls);
                    if settles {
                        finished = finished.max(n);
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
        striker.undo(&case.faults, actions.filter(|a| !a.2).map(|a| a.1));
        (interrupted, stops)
    };
    let end = Instant::now();
    let after = sample::total_counts(&hosts);
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
    for relay in &relays {
        match relay.stop(stop_deadline).await {
            Ok(reps) => reports.extend(reps),
            Err(e) => {
                stuck += 1;
                sink.notice(relay.sandbox, Say::RunnerStuck(e));
            }
        }
        if !turns {
            let calls = per_sandbox[relay.sandbox as usize].load(Ordering::Relaxed);
            runner_sink.turn(relay.sandbox, TurnEvent::Ended { calls });
        }
    }
    let whole = sample::total_counts(&hosts);
    for w in &writers {
        let tidied = w.tidy();
        if tidied > 0 {
            let what = format!("{tidied} answer(s) published after the interrupt cut their call off: removed");
            sink.notice(w.sandbox, Say::Other(what));
        }
    }
    if let Some(w) = warmed {
        w.abort();
    }
    let org_stats = org.finish(end);
    let mut degraded: Vec<String> = reports.iter().filter_map(|r| r.degraded.clone()).collect();
    degraded.extend(writers.iter().filter_map(|w| w.degraded()));
    let mut leftover: u64 = 0;
    let mut sandbox_side = None;
    if let Some(mut inbox) = runner_inbox {
        let runner_msgs: Vec<crate::events::Msg> = inbox.try_iter().collect();
        if let Some(mut f) = backend.finish(runner_msgs).await {
            count_calls_of_turns(&mut f.msgs);
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
    let recording = recorder.await.map_err(|_| EngineError::Recorder("the recorder thread ended early".into()))?;
    let ended = result::Ended {
        case,
        wl,
        hosts: &hosts,
        epoch,
        end,
        step,
        total,
        interrupted,
        leftover,
        sandbox_side,
        before,
        after,
        whole,
        at_phase_ends,
        timeline,
        busy_known: !elsewhere,
        reports,
        stuck,
        degraded,
        stops,
        org: (case.host.admits()).then_some((org_stats, limits)),
        org_handle: &org,
    };
    Ok(ended.result(&recording))
}

/// The calls made elsewhere (the in-sandbox writers') into the turn marks that end each
/// sandbox's turn: the runner's side, which marked them, could not count them.
fn count_calls_of_turns(msgs: &mut [crate::events::Msg]) {
    use crate::events::{EventKind, Msg};
    let mut calls: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for m in msgs.iter_mut() {
        match m {
            Msg::Call(e) if matches!(e.kind, EventKind::Writer(_)) => *calls.entry(e.sandbox).or_default() += 1,
            Msg::Turn(t) => {
                if let TurnEvent::Ended { calls: n } = &mut t.what {
                    *n = calls.remove(&t.sandbox).unwrap_or(0);
                }
            }
            _ => {}
        }
    }
}

/// `done`: calls answered so far, `None` when they are counted only at the end (in the
/// sandbox); `total`: the calls scheduled, `None` for agent turns (their count is known
/// when they end).
fn progress_line(
    case: &CaseSpec,
    epoch: Instant,
    length: Duration,
    done: Option<usize>,
    total: Option<usize>,
    p50_ns: u64,
) -> String {
    let elapsed = epoch.elapsed();
    let p50 = if p50_ns == 0 { "-".to_owned() } else { human(Duration::from_nanos(p50_ns)) };
    let calls = match (done, total) {
        (Some(done), Some(total)) => format!("{done}/{total} calls answered, pickup p50 {p50}"),
        (Some(done), None) => format!("{done} calls answered, pickup p50 {p50}"),
        (None, total) => {
            format!("{} calls running in the sandbox (counted when their log comes back)", total.unwrap_or(0))
        }
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
