//! The end of a case, once its calls have drained: the runners stopped and their handlers
//! finished ([`stop_relays`]), answers published too late removed ([`tidy_writers`]), and
//! the calls run elsewhere brought back and put in one order with the runners' events
//! ([`settle`]).

use std::sync::atomic::{AtomicU32, Ordering};

use super::setup::Parts;
use super::STOP_BOUND;
use crate::base::clock;
use crate::base::notice::Say;
use crate::events::{EventKind, Msg, TurnEvent};
use crate::relay::runner::RunnerReport;
use crate::results::summary::SandboxSide;

/// What the runners said as they stopped.
pub(super) struct Stopped {
    pub reports: Vec<RunnerReport>,
    /// Runners that did not stop in time.
    pub stuck: u64,
}

/// Stops every relay at once, each runner and its handlers given [`STOP_BOUND`] of their
/// own to finish (a runner's stop waits out its current poll delay: one after another, a
/// fleet's would add up); a case of one long turn per sandbox ends each sandbox's turn with
/// the calls it fired (`per_sandbox`).
pub(super) async fn stop_relays(parts: &Parts, per_sandbox: &[AtomicU32]) -> Stopped {
    let mut stopped = Stopped { reports: Vec::new(), stuck: 0 };
    let stops = parts.relays.iter().map(|relay| relay.stop(clock::now() + STOP_BOUND)).collect();
    let ends = crate::relay::runner::join_all(stops).await;
    for (relay, end) in parts.relays.iter().zip(ends) {
        match end {
            Ok(reps) => stopped.reports.extend(reps),
            Err(e) => {
                stopped.stuck += 1;
                parts.sink.notice(relay.sandbox, Say::RunnerStuck(e.to_string()));
            }
        }
        if !parts.turns {
            let calls = per_sandbox[relay.sandbox as usize].load(Ordering::Relaxed);
            parts.runner_sink.turn(relay.sandbox, TurnEvent::Ended { calls });
        }
    }
    stopped
}

/// Removes the answers published after an interrupt cut their call off, saying so.
pub(super) fn tidy_writers(parts: &Parts) {
    for w in &parts.writers {
        let tidied = w.tidy();
        if tidied > 0 {
            let what = format!("{tidied} answer(s) published after the interrupt cut their call off: removed");
            parts.sink.notice(w.sandbox, Say::Other(what));
        }
    }
}

/// Where a case's calls ended up.
#[derive(Default)]
pub(super) struct Settled {
    /// Relay files left behind.
    pub leftover: u64,
    /// The sandbox side's own account, when the calls ran there.
    pub sandbox_side: Option<SandboxSide>,
    /// What the sandbox side ran degraded on.
    pub degraded: Vec<String>,
}

/// When the calls ran elsewhere: their events (and the runners', held apart until now) go
/// to the recorder in one order, and the sandbox side says what it left; otherwise the
/// relay dirs say what is left in them.
pub(super) async fn settle(parts: &mut Parts) -> Settled {
    let Some(mut inbox) = parts.runner_inbox.take() else {
        let leftover = parts.dirs.iter().map(|d| d.relay_files().map_or(0, |f| f.len() as u64)).sum();
        return Settled { leftover, ..Settled::default() };
    };
    let runner_msgs: Vec<Msg> = inbox.try_iter().collect();
    let Some(mut f) = parts.backend.finish(runner_msgs).await else { return Settled::default() };
    count_calls_of_turns(&mut f.msgs);
    f.msgs.into_iter().for_each(|m| parts.sink.forward(m));
    f.problems.into_iter().for_each(|p| parts.sink.notice(0, Say::Other(p)));
    Settled { leftover: f.leftover, sandbox_side: Some(f.side), degraded: f.degraded }
}

/// The calls made elsewhere (the in-sandbox writers') into the turn marks that end each
/// sandbox's turn: the runner's side, which marked them, could not count them.
fn count_calls_of_turns(msgs: &mut [Msg]) {
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
