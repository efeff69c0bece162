//! A case's parts, built before its clock starts: the backend of its clock, the relay dir,
//! host and relay (runner + writer) of every sandbox over the case's organisation, the event
//! channels, every runner ready ([`Parts::build`]); and the recorder thread its events go to
//! ([`start_recorder`]).

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::backend::{self, Backend};
use super::{in_sandbox, CaseEnv, EngineError, READY_BOUND, STOP_BOUND};
use crate::base::clock;
use crate::base::notice::Say;
use crate::base::units::human;
use crate::events::{EventInbox, EventSink, Listener};
use crate::record::calls_csv::CallsCsv;
use crate::record::compact::CompactLog;
use crate::record::eventlog::EventLog;
use crate::record::recorder::{Fleet, Recorder, Recording};
use crate::relay::writer::Writer;
use crate::sandbox::host::org::{Limits, Org};
use crate::sandbox::host::{Busy, DaemonControl, DaemonFault, Host, Seat};
use crate::scenario::{CaseSpec, Clock, Scenario};
use crate::strategy::pair::{Relay, RelaySpec};

/// How many events a virtual case's recorder thread is woken for at once.
const VIRTUAL_BATCH: usize = 4096;

/// A case's parts, built and ready.
pub(super) struct Parts {
    pub backend: Box<dyn Backend>,
    /// Where every event goes (the recorder's channel).
    pub sink: EventSink,
    /// Where the runners' events go: `sink`, or a channel of their own when the calls run
    /// elsewhere ([`Parts::runner_inbox`]).
    pub runner_sink: EventSink,
    /// The runners' events held apart until the end, when the calls run elsewhere: their
    /// events come at the end, and the two sides are put in one order then.
    pub runner_inbox: Option<EventInbox>,
    /// The calls run elsewhere (in the sandbox): they settle, and are counted, at the end.
    pub elsewhere: bool,
    /// The calls are agent turns that start and stop their relay each.
    pub turns: bool,
    pub limits: Limits,
    pub org: Arc<Org>,
    pub relays: Vec<Arc<Relay>>,
    pub daemons: Vec<Option<Arc<dyn DaemonControl>>>,
    pub dirs: Vec<Arc<dyn crate::sandbox::dir::RelayDir>>,
    pub hosts: Vec<Arc<dyn Host>>,
    pub writers: Vec<Arc<Writer>>,
}

impl Parts {
    /// Builds `case`'s parts and readies its runners; returns them with the recorder's end
    /// of the event channel.
    pub(super) async fn build(
        scenario: &Scenario,
        case: &CaseSpec,
        env: &CaseEnv,
    ) -> Result<(Parts, EventInbox), EngineError> {
        let mut backend = backend_for(scenario, case, env)?;
        // The virtual clock's recorder is woken per batch of events, not per call.
        let (sink, rx) =
            if case.clock == Clock::Virtual { EventSink::batched(VIRTUAL_BATCH) } else { EventSink::channel() };
        let elsewhere = backend.settles_calls();
        let (runner_sink, runner_inbox) = if elsewhere {
            let (s, i) = EventSink::channel();
            (s, Some(i))
        } else {
            (sink.clone(), None)
        };
        let limits = case.host.limits();
        let org = Arc::new(Org::new(limits.clone(), case.workload.sandboxes));
        if case.faults.iter().any(|f| f.fleet) {
            org.keep_seconds();
        }
        let Built { relays, daemons, dirs } =
            build_relays(scenario, case, env, &mut *backend, &org, &runner_sink).await?;
        let turns = case.workload.agent.is_some();
        // An open-loop schedule starts once every runner is ready (its start-up is not the
        // workload's); agent turns wait for their own relay each.
        if !turns {
            ready_all(&relays, &mut *backend).await?;
        }
        let hosts = relays.iter().map(|r| r.host.clone()).collect();
        let writers = relays.iter().filter_map(|r| r.writer.clone()).collect();
        let parts = Parts {
            backend,
            sink,
            runner_sink,
            runner_inbox,
            elsewhere,
            turns,
            limits,
            org,
            relays,
            daemons,
            dirs,
            hosts,
            writers,
        };
        Ok((parts, rx))
    }
}

/// Waits for every runner to be ready; when one is not, stops them all and undoes what the
/// backend laid out.
async fn ready_all(relays: &[Arc<Relay>], backend: &mut dyn Backend) -> Result<(), EngineError> {
    for (k, relay) in relays.iter().enumerate() {
        if !relay.ready(READY_BOUND).await {
            let said = relay.start_failure();
            let said_why = said.is_some();
            let detail = said.unwrap_or_else(|| format!("not ready within {}", human(READY_BOUND)));
            for r in relays {
                let _ = r.stop(clock::now() + STOP_BOUND).await;
            }
            backend.abandon().await;
            return Err(EngineError::NotReady { sandbox: k as u32, detail, said_why });
        }
    }
    Ok(())
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
        Clock::Virtual => Box::new(backend::Virtual::default()),
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
pub(super) fn start_recorder(
    case: &CaseSpec,
    env: &CaseEnv,
    sink: &EventSink,
    rx: EventInbox,
    (epoch, step, warmup): (Instant, Duration, Duration),
    calls: usize,
    live: Arc<AtomicU64>,
) -> std::io::Result<tokio::sync::oneshot::Receiver<Recording>> {
    let spans = crate::scenario::fault::spans(&case.faults, epoch);
    let fleet_faults: Vec<(Instant, Instant)> =
        case.faults.iter().filter(|f| f.fleet).map(|f| (epoch + f.at, epoch + f.at + f.duration)).collect();
    // Agent turns scope the pairing check by turn: nothing is sized by the planned calls.
    let recorder = match case.workload.agent {
        Some(_) => Recorder::with_capacity(0).scoped_by_turns(),
        None => Recorder::with_capacity(calls),
    };
    let recorder = recorder.with_spans(&spans).with_intervals(epoch, step, 60).with_live(live).with_fleet(Fleet::new(
        epoch,
        step,
        &fleet_faults,
        epoch + warmup,
    ));
    let mut listeners: Vec<Box<dyn Listener>> = Vec::new();
    if let Some(path) = &env.calls_csv {
        match CallsCsv::append(path, &case.name, epoch) {
            Ok(csv) => listeners.push(Box::new(csv)),
            Err(e) => sink.notice(0, Say::Other(format!("cannot open {}: {e}", path.display()))),
        }
    }
    if let Some(path) = &env.event_log {
        let log: std::io::Result<Box<dyn Listener>> = if path.extension().is_some_and(|e| e == "bin") {
            CompactLog::append(path, &case.name, epoch, env.event_log_max).map(|l| Box::new(l) as Box<dyn Listener>)
        } else {
            EventLog::append(path, &case.name, epoch).map(|l| Box::new(l) as Box<dyn Listener>)
        };
        match log {
            Ok(log) => listeners.push(log),
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
    let struck = case.faults.iter().any(|f| f.kind.daemon_fault().is_some_and(DaemonFault::breaks_requests));
    let mut hosts = Vec::new();
    for sandbox in 0..wl.sandboxes {
        let dir = backend.make_dir(sandbox).map_err(setup)?;
        let busy = Arc::new(Busy::default());
        let seed = wl.seed.wrapping_mul(0x9E37_79B9).wrapping_add(u64::from(sandbox));
        let seat = Seat { dir: dir.clone(), busy: busy.clone(), seed, sandbox, org: org.clone(), struck };
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
