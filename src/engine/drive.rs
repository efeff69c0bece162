//! How a case's calls are made. On an open-loop schedule ([`firing`]): every call at its
//! intended start, fixed before the case (as wrk2 does), through relays that run for the
//! whole case — one long turn per sandbox. Or as agent turns ([`sessions`]): each sandbox's
//! sessions of turns, each turn starting its relay (the stale sweep first), making its steps
//! one after another as their answers come back, and stopping its relay — production's
//! lifecycle. A step's calls are timed from the step's start: the model asks for them then.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::backend::Fire;
use super::{READY_BOUND, STOP_BOUND};
use crate::base::clock;
use crate::base::notice::Say;
use crate::base::rng::Rng;
use crate::base::signal::Signal;
use crate::events::{EventSink, FailKind, TurnEvent};
use crate::relay::writer::{writer_deadline, CallEnd, CallSpec, Writer};
use crate::results::stopped::StoppedEarly;
use crate::scenario::pacer::Workload;
use crate::scenario::turns::AgentTurns;
use crate::strategy::Relay;

/// The request's args of every call of a workload.
fn args_of(wl: &Workload) -> Option<String> {
    Some(format!("{{\"payload\":\"{}\"}}", crate::relay::handler::filler(wl.payload_bytes)))
}

/// Where each call's end is told: the drain, which counts the calls that have ended, and a
/// search probe's [`Cutoff`].
#[derive(Clone)]
pub(crate) struct Told {
    pub done: UnboundedSender<()>,
    pub cutoff: Option<Arc<Cutoff>>,
}

impl Told {
    /// Makes the call on `writer`, then tells its end.
    async fn call(&self, writer: &Writer, spec: CallSpec) {
        let end = writer.call(spec).await;
        if let Some(c) = &self.cutoff {
            c.count(&end);
        }
        let _ = self.done.send(());
    }
}

/// A search's probe decided before its end ([`crate::scenario::CaseSpec::stop_past_lost`]):
/// the first call lost past what its gates allow closes `stop`, which ends the case as an
/// interrupt does (the calls in flight cut off, the relays stopped); the user's interrupt
/// closes it too. Counted as each call ends, on the case's own clock, so a virtual case
/// stops at the same simulated instant on every run.
pub(crate) struct Cutoff {
    allowed: u64,
    lost: AtomicU64,
    pub stop: Arc<Signal>,
    decided: Mutex<Option<Instant>>,
    forward: JoinHandle<()>,
}

impl Cutoff {
    /// A cutoff after `allowed` lost calls; on the case's runtime.
    pub(crate) fn new(allowed: u64, interrupt: Arc<Signal>) -> Arc<Cutoff> {
        let stop = Arc::new(Signal::new());
        let to = stop.clone();
        let forward = tokio::spawn(async move {
            interrupt.closed().await;
            to.close();
        });
        Arc::new(Cutoff { allowed, lost: AtomicU64::new(0), stop, decided: Mutex::new(None), forward })
    }

    /// A call ended: a lost one (timed out, or never published: what `lost` counts) past
    /// the allowance stops the case, the first time.
    fn count(&self, end: &CallEnd) {
        if !matches!(end, CallEnd::Failed(FailKind::Timeout | FailKind::PublishError)) {
            return;
        }
        if self.lost.fetch_add(1, Ordering::Relaxed) >= self.allowed {
            let mut decided = self.decided.lock().expect("cutoff poisoned");
            if decided.is_none() {
                *decided = Some(clock::now());
                self.stop.close();
            }
        }
    }

    /// Where the case stopped, from `epoch`, if the cutoff stopped it (not the user's
    /// `interrupt`) before the schedule's `length`.
    pub(crate) fn stopped_early(&self, epoch: Instant, length: Duration, interrupt: &Signal) -> Option<StoppedEarly> {
        let decided = (*self.decided.lock().expect("cutoff poisoned")).filter(|_| !interrupt.is_closed())?;
        let secs = |d: Duration| (d.as_secs_f64() * 1000.0).round() / 1000.0;
        let at_secs = secs(decided.saturating_duration_since(epoch));
        Some(StoppedEarly { at_secs, of_secs: secs(length), lost_allowed: self.allowed })
    }
}

impl Drop for Cutoff {
    fn drop(&mut self) {
        self.forward.abort();
    }
}

/// Starts one call of the workload `wl` on `writers[sandbox]` (on the current runtime), counts
/// it in `per_sandbox`, and tells its end.
pub(crate) fn firing(writers: Vec<Arc<Writer>>, wl: &Workload, told: Told, per_sandbox: Arc<Vec<AtomicU32>>) -> Fire {
    let deadline = writer_deadline(wl.tool_timeout);
    let args = args_of(wl);
    let handle = tokio::runtime::Handle::current();
    Arc::new(move |sandbox: u32, id: String, at: Instant, warmup: bool| {
        let writer = writers[sandbox as usize].clone();
        if let Some(n) = per_sandbox.get(sandbox as usize) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        let spec = CallSpec { id, tool: "bench".into(), args: args.clone(), intended: at, warmup, deadline };
        let told = told.clone();
        handle.spawn(async move { told.call(&writer, spec).await });
    })
}

/// What every sandbox's sessions share.
pub(crate) struct Sessions {
    pub agent: AgentTurns,
    pub epoch: Instant,
    pub length: Duration,
    pub warmup: Duration,
    pub seed: u64,
    pub deadline: Duration,
    pub args: Option<String>,
    pub sink: EventSink,
    pub stop: Arc<Signal>,
    pub told: Told,
}

/// Runs agent turns on every relay until the schedule's end; resolves to (calls made,
/// stopped early) once every turn has ended, so every call has ended too.
pub(crate) fn sessions(relays: Vec<Arc<Relay>>, s: Sessions) -> JoinHandle<(usize, bool)> {
    let s = Arc::new(s);
    tokio::spawn(async move {
        let drivers: Vec<JoinHandle<usize>> =
            relays.into_iter().map(|relay| tokio::spawn(sandbox_sessions(relay, s.clone()))).collect();
        let mut calls = 0;
        for d in drivers {
            calls += d.await.unwrap_or(0);
        }
        (calls, s.stop.is_closed())
    })
}

/// Sleeps `d`, but not past `end` nor past a stop; false when the sessions must end.
async fn pause(d: Duration, end: Instant, stop: &Signal) -> bool {
    let until = (clock::now() + d).min(end);
    tokio::select! {
        biased;
        () = tokio::time::sleep_until(until) => clock::now() < end,
        () = stop.closed() => false,
    }
}

/// One sandbox's sessions, turn after turn, until the end; returns the calls it made.
async fn sandbox_sessions(relay: Arc<Relay>, s: Arc<Sessions>) -> usize {
    let sandbox = relay.sandbox;
    let Some(writer) = relay.writer.clone() else { return 0 };
    let end = s.epoch + s.length;
    let mut rng = Rng::new(s.seed ^ 0xA6E7_7000_0000_0000 ^ u64::from(sandbox).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let first = s.agent.spread().mul_f64(rng.unit());
    if !pause(s.epoch.saturating_duration_since(clock::now()) + first, end, &s.stop).await {
        return 0;
    }
    let (mut made, mut turn_no) = (0usize, 0u64);
    'sessions: loop {
        for turn in s.agent.session(&mut rng) {
            if clock::now() >= end || s.stop.is_closed() {
                break 'sessions;
            }
            relay.begin_turn();
            if !relay.ready(READY_BOUND).await {
                let why = relay.start_failure().unwrap_or_else(|| "not ready in time".into());
                s.sink.notice(sandbox, Say::Other(format!("turn {turn_no}: its relay did not start: {why}")));
                let _ = relay.end_turn(clock::now() + STOP_BOUND).await;
                break 'sessions;
            }
            s.sink.turn(sandbox, TurnEvent::Started);
            let mut calls = 0u32;
            for (k, (think, n)) in turn.steps.iter().enumerate() {
                if !pause(*think, end, &s.stop).await {
                    break;
                }
                let at = clock::now();
                let step: Vec<JoinHandle<()>> = (0..*n)
                    .map(|c| {
                        let spec = CallSpec {
                            id: format!("s{sandbox}-t{turn_no}-k{k}-c{c}"),
                            tool: "bench".into(),
                            args: s.args.clone(),
                            intended: at,
                            warmup: at < s.epoch + s.warmup,
                            deadline: s.deadline,
                        };
                        let (writer, told) = (writer.clone(), s.told.clone());
                        tokio::spawn(async move { told.call(&writer, spec).await })
                    })
                    .collect();
                for h in step {
                    let _ = h.await;
                }
                calls += n;
            }
            // The model's final step runs with the relay live; the prompt resolves, then stop().
            pause(turn.last, end, &s.stop).await;
            if let Err(e) = relay.end_turn(clock::now() + STOP_BOUND).await {
                s.sink.notice(sandbox, Say::RunnerStuck(e.to_string()));
            }
            s.sink.turn(sandbox, TurnEvent::Ended { calls });
            made += calls as usize;
            turn_no += 1;
            if !pause(turn.after, end, &s.stop).await {
                break 'sessions;
            }
        }
        if !pause(s.agent.session_gap.draw(&mut rng), end, &s.stop).await {
            break;
        }
    }
    made
}

impl Sessions {
    /// What every sandbox's sessions of `wl` share.
    pub(crate) fn of(
        wl: &Workload,
        epoch: Instant,
        sink: EventSink,
        stop: Arc<Signal>,
        told: Told,
    ) -> Option<Sessions> {
        Some(Sessions {
            agent: wl.agent.clone()?,
            epoch,
            length: wl.duration(),
            warmup: wl.warmup,
            seed: wl.seed,
            deadline: writer_deadline(wl.tool_timeout),
            args: args_of(wl),
            sink,
            stop,
            told,
        })
    }
}
