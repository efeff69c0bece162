//! Runs one case: builds its parts from the case spec, lays out the relay dirs, starts a
//! runner per dir, paces the writers' calls open-loop, drains, stops, and turns what the
//! recorder saw into a [`CaseResult`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::dir::{RealDir, RelayDir, SimDir};
use crate::eventlog::EventLog;
use crate::events::{EventSink, Listener};
use crate::export::calls_csv::CallsCsv;
use crate::fault::{FaultKind, ProgramSwitch, Targets, AFTERMATH};
use crate::fsio::sweep_stale;
use crate::host::{Busy, Host, RequestCounts};
use crate::pacer::Slot;
use crate::recorder::{new_histogram, CaseHdr, LatencyStats, Measure, Recorder, Span};
use crate::relay::{Relay, RelaySpec};
use crate::runner::RunnerReport;
use crate::scenario::{CaseSpec, Clock, Scenario};
use crate::source::Signal;
use crate::summary::CaseResult;
use crate::units::human;
use crate::writer::{writer_deadline, CallSpec, Writer};

/// Lead time between building the parts and the first intended start.
const LEAD: Duration = Duration::from_millis(100);
/// How often a virtual case reports progress, in simulated time.
const PROGRESS_EVERY_VIRTUAL: Duration = Duration::from_secs(3600);
/// How long stopped runners get to finish their in-flight handlers.
const STOP_BOUND: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot prepare relay dirs under {root}: {source}")]
    Setup { root: String, source: std::io::Error },
    #[error("the pacer thread failed: {0}")]
    Pacer(String),
    #[error("the recorder thread failed: {0}")]
    Recorder(String),
}

/// Where a case reports progress (calls done so far); `None` keeps quiet.
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

/// Runs `case` of `scenario` on the current runtime. A virtual-clock case must run on a
/// paused clock: use [`run_case_virtual`].
pub async fn run_case(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    let (relay_root, interrupt, progress) = (env.relay_root.as_path(), env.interrupt.clone(), env.progress.clone());
    let virtual_clock = case.clock == Clock::Virtual;
    let wl = &scenario.workload;
    let setup_err = |source| EngineError::Setup { root: relay_root.display().to_string(), source };
    // Real relay dirs live under a fresh temp root; virtual ones only in memory.
    let root = match virtual_clock {
        true => None,
        false => Some(
            tempfile::Builder::new()
                .prefix(&format!("relay-bench-{}-", case.name))
                .tempdir_in(relay_root)
                .map_err(setup_err)?,
        ),
    };

    let slots = wl.schedule();
    let epoch = Instant::now() + LEAD;
    let spans: Vec<Span> = case
        .faults
        .iter()
        .map(|f| Span { sandbox: f.sandbox, from: epoch + f.at, to: epoch + f.at + f.duration + AFTERMATH })
        .collect();
    let (sink, rx) = EventSink::channel();
    // Pickup per interval and the request timeline share one step: 1/60 of the schedule.
    let step = Duration::from_secs(wl.duration().as_secs().div_ceil(60).max(1));
    let live_p50 = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let recorder = Recorder::with_capacity(slots.len())
        .with_spans(&spans)
        .with_intervals(epoch, step, 60)
        .with_live(live_p50.clone());
    let mut listeners: Vec<Box<dyn Listener>> = Vec::new();
    if let Some(path) = &env.calls_csv {
        match CallsCsv::append(path, &case.name, epoch) {
            Ok(csv) => listeners.push(Box::new(csv)),
            Err(e) => sink.notice(0, format!("cannot open {}: {e}", path.display())),
        }
    }
    if let Some(path) = &env.event_log {
        match EventLog::append(path, &case.name, epoch) {
            Ok(log) => listeners.push(Box::new(log)),
            Err(e) => sink.notice(0, format!("cannot open the event log {}: {e}", path.display())),
        }
    }
    let recorder = std::thread::Builder::new()
        .name("relay-bench-recorder".into())
        .spawn(move || recorder.drain(rx, listeners))
        .map_err(setup_err)?;

    // Program faults on the real clock switch a symlink to the watch program.
    let mut targets = Targets::default();
    let program_faults = case.faults.iter().any(|f| f.kind.acts_on_program());
    if let (Some(root), true) = (&root, program_faults) {
        targets.program = Some(ProgramSwitch::new(root.path(), &env.watch_program).map_err(setup_err)?);
    }
    let watch_program = targets.program.as_ref().map_or(env.watch_program.clone(), |p| p.path().to_path_buf());

    let handler = Arc::new(scenario.handler.clone());
    // An external runner's stderr is kept beside the run's reports (else in the relay root).
    let stderr_dir = match (env.event_log.as_ref().and_then(|p| p.parent()), &root) {
        (Some(d), _) => d.to_path_buf(),
        (None, Some(r)) => r.path().to_path_buf(),
        (None, None) => std::env::temp_dir(),
    };
    let mut relays: Vec<Relay> = Vec::new();
    let mut dirs: Vec<Arc<dyn RelayDir>> = Vec::new();
    for sandbox in 0..wl.sandboxes {
        let dir: Arc<dyn RelayDir> = match &root {
            None => {
                // A hostile name (SPEC §6): quotes, spaces, a newline, shell metacharacters.
                // It travels to the watch program's twin in argv and must come back intact.
                let sim = SimDir::new(format!("/sandbox-{sandbox}/relay 'q' \"dq\" $(x) ;&\n|"));
                targets.sims.push(sim.clone());
                Arc::new(sim)
            }
            Some(root) => {
                let path = root.path().join(format!("sandbox-{sandbox}"));
                std::fs::create_dir(&path).map_err(setup_err)?;
                let swept = sweep_stale(&path, 3, Duration::from_millis(150)).map_err(setup_err)?;
                if !swept.remaining.is_empty() {
                    sink.notice(sandbox, format!("stale sweep left {:?}", swept.remaining));
                }
                targets.paths.push(path.clone());
                Arc::new(RealDir::new(path))
            }
        };
        let busy = Arc::new(Busy::default());
        let seed = wl.seed.wrapping_mul(0x9E37_79B9).wrapping_add(u64::from(sandbox));
        let spec = RelaySpec {
            sandbox,
            dir: dir.clone(),
            host: case.host.build(&dir, busy.clone(), seed),
            busy,
            runner: &case.runner,
            writer: &case.writer,
            handler: handler.clone(),
            watch_program: &watch_program,
            seed,
            stderr_to: Some(stderr_dir.join(format!("{}-sandbox-{sandbox}.stderr", case.name))),
        };
        relays.push(Relay::start(spec, &sink));
        dirs.push(dir);
    }
    let hosts: Vec<Arc<dyn Host>> = relays.iter().map(|r| r.host.clone()).collect();
    targets.hosts = hosts.clone();
    let writers: Vec<Arc<Writer>> = relays.iter().map(|r| r.writer.clone()).collect();

    // Pace the calls open-loop.
    let deadline = writer_deadline(wl.tool_timeout);
    let args = Some(format!("{{\"payload\":\"{}\"}}", crate::handler::filler(wl.payload_bytes)));
    tokio::time::sleep_until(epoch).await;
    let before = total_counts(&hosts);
    // Snapshot the request counters at every phase end, for per-phase rates.
    let phase_snaps = {
        let (hosts, phases) = (hosts.clone(), wl.phases.clone());
        tokio::spawn(async move {
            let mut snaps = Vec::new();
            let mut end = epoch;
            for p in phases {
                end += p.duration;
                tokio::time::sleep_until(end).await;
                snaps.push(total_counts(&hosts));
            }
            snaps
        })
    };
    // ... and the discovery rate over time, every `step`.
    let timeline = {
        let hosts = hosts.clone();
        let end = epoch + wl.duration();
        tokio::spawn(async move {
            let mut points = Vec::new();
            let mut at = epoch;
            while at < end {
                at = (at + step).min(end);
                tokio::time::sleep_until(at).await;
                points.push((at - epoch, total_counts(&hosts)));
            }
            points
        })
    };
    let (mut total, length) = (slots.len(), wl.duration());
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let fire = {
        let (handle, writers, done_tx) = (tokio::runtime::Handle::current(), writers.clone(), done_tx.clone());
        move |sandbox: u32, id: String, at: Instant, warmup: bool| {
            let writer = writers[sandbox as usize].clone();
            let spec = CallSpec { id, tool: "bench".into(), args: args.clone(), intended: at, warmup, deadline };
            let done_tx = done_tx.clone();
            handle.spawn(async move {
                writer.call(spec).await;
                let _ = done_tx.send(());
            });
        }
    };
    let mut pacer = {
        let (fire, interrupt) = (fire.clone(), interrupt.clone());
        if virtual_clock {
            tokio::spawn(async move {
                let fire = |slot: &Slot, at: Instant| fire(slot.sandbox, slot.call_id(), at, slot.warmup);
                crate::pacer::pace_async(&slots, epoch, length, || interrupt.is_closed(), fire).await
            })
        } else {
            // The pacer runs on its own OS thread: tokio's timer wheel ticks in whole
            // milliseconds, a thread sleep is precise to tens of microseconds, and the pacer
            // must not add lag.
            let epoch_std = epoch.into_std();
            tokio::task::spawn_blocking(move || {
                let fire = |slot: &Slot, at| fire(slot.sandbox, slot.call_id(), Instant::from_std(at), slot.warmup);
                crate::pacer::pace(&slots, epoch_std, length, || interrupt.is_closed(), fire)
            })
        }
    };

    // Drain: every call ends by its deadline; an interrupt ends them now. Faults strike on
    // their schedule meanwhile.
    let mut interrupted = false;
    let mut fired: Option<usize> = None;
    let mut finished = 0usize;
    let every = if virtual_clock { PROGRESS_EVERY_VIRTUAL } else { env.progress_every };
    let mut tick = tokio::time::interval_at(epoch + every, every);
    let mut actions = crate::fault::actions(&case.faults).into_iter().peekable();
    let mut stops: Vec<Option<Duration>> = vec![None; case.faults.len()];
    let mut burst_calls = 0usize;
    let far = epoch + Duration::from_secs(86_400 * 365);
    while fired.is_none_or(|n| finished < n) {
        let next_action = actions.peek().map_or(far, |a| epoch + a.0);
        tokio::select! {
            _ = tick.tick(), if progress.is_some() => {
                if let Some(p) = &progress {
                    let elapsed = epoch.elapsed();
                    let p50 = live_p50.load(std::sync::atomic::Ordering::Relaxed);
                    let p50 = if p50 == 0 { "-".to_owned() } else { human(Duration::from_nanos(p50)) };
                    p(&format!(
                        "  {}: {} / {}{} (ETA {}), {finished}/{total} calls answered, pickup p50 {p50}",
                        case.name,
                        human(elapsed),
                        human(length),
                        if virtual_clock { " simulated" } else { "" },
                        human(length.saturating_sub(elapsed))
                    ));
                }
            }
            _ = tokio::time::sleep_until(next_action), if actions.peek().is_some() => {
                let (_, i, on) = actions.next().expect("peeked");
                let f = &case.faults[i];
                let k = f.sandbox as usize;
                let what = format!("{} {}", f.kind.name(), if on { "strikes" } else { "ends" });
                sink.notice(f.sandbox, format!("{}{what}", crate::fault::ENGINE_PREFIX));
                match f.kind {
                    FaultKind::StopDuringWindow => match relays[k].restart_runner(Instant::now() + STOP_BOUND).await {
                        Ok(took) => {
                            stops[i] = Some(took);
                            let took = human(took);
                            sink.notice(f.sandbox, format!("runner stopped in {took} with a window held, started again"));
                        }
                        Err(e) => sink.notice(f.sandbox, format!("stop during the window failed: {e}")),
                    },
                    FaultKind::Burst => {
                        for c in 0..f.calls {
                            fire(f.sandbox, format!("burst{i}-c{c}"), Instant::now(), false);
                        }
                        total += f.calls as usize;
                        fired = fired.map(|n| n + f.calls as usize);
                        burst_calls += f.calls as usize;
                    }
                    _ => {
                        if let Err(e) = targets.apply(f, on) {
                            sink.notice(f.sandbox, format!("fault {} could not be applied: {e}", f.kind.name()));
                        }
                    }
                }
            }
            r = &mut pacer, if fired.is_none() => {
                let (n, stopped) = r.map_err(|e| EngineError::Pacer(e.to_string()))?;
                fired = Some(n + burst_calls);
                if stopped && !interrupted {
                    interrupted = true;
                    writers.iter().for_each(|w| w.close());
                }
            }
            Some(()) = done_rx.recv() => finished += 1,
            // Only a close is an interrupt: the wait's own timeout (a day, simulated or
            // not) just comes round again.
            w = interrupt.wait(Duration::from_secs(86_400)), if !interrupted => {
                if w == crate::source::Wake::Closed {
                    interrupted = true;
                    writers.iter().for_each(|w| w.close());
                }
            }
        }
    }
    // Conditions still on at the end are undone, so the stop below is clean.
    for (_, i, on) in actions.filter(|a| !a.2) {
        let _ = targets.apply(&case.faults[i], on);
    }
    let end = Instant::now();
    let after = total_counts(&hosts);
    // The sampler ends with the schedule, which a finished case has reached; an interrupted
    // case reports no phase rates (its phases were cut short).
    if interrupted {
        phase_snaps.abort();
        timeline.abort();
    }
    let snaps = phase_snaps.await.unwrap_or_default();
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
                sink.notice(relay.sandbox, e);
            }
        }
    }
    let leftover: u64 = dirs.iter().map(|d| d.relay_files().map_or(0, |f| f.len() as u64)).sum();
    let mut degraded: Vec<String> = reports.iter().filter_map(|r| r.health.degraded.clone()).collect();
    degraded.extend(writers.iter().filter_map(|w| w.health().degraded));
    drop((writers, relays, fire, done_tx));
    drop(sink);
    let recording = tokio::task::spawn_blocking(move || recorder.join())
        .await
        .map_err(|e| EngineError::Recorder(e.to_string()))?
        .map_err(|_| EngineError::Recorder("recorder thread panicked".into()))?;

    let window = end.saturating_duration_since(epoch).max(Duration::from_millis(1));
    let used = after.minus(&before);
    // Rates are per relay dir (one sandbox's active turn), as SPEC §5 states them.
    // Rates are per relay dir (one sandbox's turn), as SPEC §5 states them: over the whole
    // window, and split by whether the dir had calls in flight.
    let dir_minutes = window.as_secs_f64() * f64::from(wl.sandboxes.max(1)) / 60.0;
    let busy_minutes = (used.busy_time.as_secs_f64() / 60.0).min(dir_minutes);
    let idle_minutes = dir_minutes - busy_minutes;
    let rate = |n: u64, minutes: f64| {
        if minutes > 0.0 {
            (n as f64 / minutes * 100.0).round() / 100.0
        } else {
            0.0
        }
    };
    let mut injected = new_histogram();
    for h in &hosts {
        if let Some(legs) = h.injected_legs() {
            let _ = injected.add(&legs);
        }
    }
    let mut r = CaseResult {
        case: case.name.clone(),
        host: hosts.first().map_or_else(|| case.host.name().to_owned(), |h| h.label()),
        strategy: case.runner.name().into(),
        strategy_params: case.runner.params(),
        writer: case.writer.name().into(),
        writer_params: case.writer.params(),
        clock: case.clock.name().into(),
        sandboxes: wl.sandboxes,
        window_secs: (window.as_secs_f64() * 1000.0).round() / 1000.0,
        leftover_files: leftover,
        interrupted,
        ..CaseResult::default()
    };
    r.fill_from(&recording);
    r.calls.scheduled = total as u64;
    let (disc_idle, data_idle) = (used.discovery_idle_total(), used.data_idle_total());
    r.requests = crate::summary::Requests {
        not_measured: !case.runner.requests_visible(),
        discovery_per_min: rate(used.discovery_total(), dir_minutes),
        data_per_min: rate(used.data_total(), dir_minutes),
        discovery_total: used.discovery_total(),
        data_total: used.data_total(),
        busy: crate::summary::Stretch {
            minutes: (busy_minutes * 1000.0).round() / 1000.0,
            discovery_per_min: rate(used.discovery_total() - disc_idle, busy_minutes),
            data_per_min: rate(used.data_total() - data_idle, busy_minutes),
        },
        idle: crate::summary::Stretch {
            minutes: (idle_minutes * 1000.0).round() / 1000.0,
            discovery_per_min: rate(disc_idle, idle_minutes),
            data_per_min: rate(data_idle, idle_minutes),
        },
        by_kind: used.by_kind(),
        ..Default::default()
    };
    let dirs_f = f64::from(wl.sandboxes.max(1));
    let mut prev = before;
    let mut phases = Vec::new();
    let (mut active, mut idle) = ((0u64, 0u64, 0.0f64), (0u64, 0u64, 0.0f64));
    for (p, snap) in wl.phases.iter().zip(&snaps) {
        let d = snap.minus(&prev);
        prev = *snap;
        let minutes = p.duration.as_secs_f64() / 60.0 * dirs_f;
        let acc = if p.turns_per_sec > 0.0 { &mut active } else { &mut idle };
        *acc = (acc.0 + d.discovery_total(), acc.1 + d.data_total(), acc.2 + minutes);
        phases.push(crate::summary::PhaseRates {
            turns_per_sec: p.turns_per_sec,
            seconds: p.duration.as_secs_f64(),
            discovery_per_min: rate(d.discovery_total(), minutes),
            data_per_min: rate(d.data_total(), minutes),
        });
    }
    let stretch = |(disc, data, minutes): (u64, u64, f64)| crate::summary::Stretch {
        minutes: (minutes * 1000.0).round() / 1000.0,
        discovery_per_min: rate(disc, minutes),
        data_per_min: rate(data, minutes),
    };
    r.requests.phases = phases;
    r.requests.active_phases = stretch(active);
    r.requests.idle_phases = stretch(idle);
    r.host_params = case.host.params();
    r.injected_leg_us = (!injected.is_empty()).then(|| LatencyStats::of(&injected));
    r.runner = crate::summary::RunnerStats {
        scans: reports.iter().map(|x| x.scans).sum(),
        woken_by_activity: reports.iter().map(|x| x.woken_by_activity).sum(),
        malformed: reports.iter().map(|x| x.malformed).sum(),
        delete_retries: reports.iter().map(|x| x.delete_retries).sum(),
        list_errors: reports.iter().map(|x| x.list_errors).sum(),
        missed_by_source: reports.iter().map(|x| x.missed_by_source).sum(),
        inline: reports.iter().map(|x| x.inline).sum(),
        stuck,
        degraded,
    };
    r.faults = crate::fault::rows(&case.faults, epoch, &recording, &stops);
    // Each point: the rate over the trailing minute (or step, if longer), so sparse events
    // (a window every 25 s) read as a rate, not as spikes.
    let back = (60.0 / step.as_secs_f64()).ceil().max(1.0) as usize;
    let points: Vec<(Duration, RequestCounts)> = std::iter::once((Duration::ZERO, before)).chain(timeline).collect();
    for k in 1..points.len() {
        let (t, c) = points[k];
        let (t0, c0) = points[k.saturating_sub(back)];
        let minutes = (t - t0).as_secs_f64() / 60.0 * dirs_f;
        r.requests.timeline.push(crate::summary::RatePoint {
            t_secs: t.as_secs_f64(),
            discovery_per_min: rate(c.minus(&c0).discovery_total(), minutes),
        });
    }
    r.hdr = Some(Arc::new(CaseHdr {
        measures: Measure::ALL.iter().map(|m| (*m, recording.histogram(*m).clone())).collect(),
        intervals: recording.intervals.clone(),
        length: window,
    }));
    r.unavailable = case.runner.unavailable();
    r.judge(&case.gates);
    Ok(r)
}

/// Runs a virtual-clock case on this thread, on a fresh single-threaded runtime whose clock
/// is paused: it jumps to the next timer whenever every task waits, so a simulated hour
/// takes as long as its work, and one seed gives one result. Call it from a thread that is
/// not inside a runtime (the CLI gives it its own thread).
pub fn run_case_virtual(scenario: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|source| EngineError::Setup { root: "(virtual runtime)".into(), source })?;
    rt.block_on(run_case(scenario, case, env))
}
