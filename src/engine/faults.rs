//! Striking the fault schedule (SPEC §6): each fault acts on what its target names — a
//! sandbox's daemon or wire, a condition of the sandbox, the relay dir, the runner, the
//! workload, or the organisation every sandbox shares — in one sandbox, or in every sandbox
//! at once for a fleet-wide fault (`sandbox = "all"`, and every `org-limit`).

use std::time::Duration;

use super::backend::Fire;
use super::setup::Parts;
use super::STOP_BOUND;
use crate::base::clock;
use crate::base::notice::Say;
use crate::sandbox::host::NotApplied;
use crate::scenario::fault::{FaultSpec, Target};

/// What a fault acts on in one case: the case's parts (its relays, daemons, backend and
/// organisation, whose own held-exec limit an `org-limit` restores when it ends), the calls
/// `fire` fires, and how many sandboxes there are.
pub(crate) struct Striker<'a> {
    pub parts: &'a Parts,
    pub fire: &'a Fire,
    pub sandboxes: u32,
}

/// What striking one fault did.
#[derive(Debug, Default)]
pub(crate) struct Struck {
    /// A runner restart: how long the (slowest) stop took.
    pub stop_took: Option<Duration>,
    /// Calls a burst fired.
    pub burst_calls: usize,
}

impl Striker<'_> {
    /// Strikes fault `i` (`on`) or ends its condition; what could not be applied is said.
    pub(super) async fn strike(&self, i: usize, f: &FaultSpec, on: bool) -> Struck {
        let mut struck = Struck::default();
        self.parts.sink.notice(f.sandbox, Say::Fault { kind: f.kind.name(), on });
        let mut errors = Vec::new();
        let sandboxes = f.sandboxes(self.sandboxes);
        match f.kind.target() {
            Target::Runner => {
                let stops: Vec<_> = sandboxes
                    .clone()
                    .map(|k| {
                        let relay = self.parts.relays[k as usize].clone();
                        tokio::spawn(async move { relay.restart_runner(clock::now() + STOP_BOUND).await })
                    })
                    .collect();
                for (k, stop) in sandboxes.zip(stops) {
                    match stop.await {
                        Ok(Ok(took)) => {
                            struck.stop_took = struck.stop_took.max(Some(took));
                            self.parts.sink.notice(k, Say::RunnerRestarted { took });
                        }
                        Ok(Err(e)) => errors.push((k, e.to_string())),
                        Err(e) => errors.push((k, e.to_string())),
                    }
                }
            }
            Target::Calls => {
                for k in sandboxes {
                    for c in 0..f.calls {
                        (self.fire)(k, format!("burst{i}-s{k}-c{c}"), clock::now(), false);
                    }
                    struck.burst_calls += f.calls as usize;
                }
            }
            Target::Daemon(_) if on => {
                errors = in_each(sandboxes, |k| match &self.parts.daemons[k as usize] {
                    Some(d) => f.kind.strike_daemon(&**d, f.duration, f.answer_fails),
                    None => Err(NotApplied::NoDaemon),
                })
            }
            Target::Daemon(_) => {}
            Target::Dir => {
                errors = in_each(sandboxes, |k| self.parts.backend.replace_dir(k, on, !on || f.duration.is_zero()))
            }
            Target::Sandbox(c) => errors = in_each(sandboxes, |k| self.parts.backend.switch(k, c, on)),
            Target::Org => {
                self.parts.org.set_org_held_execs(if on { f.held_execs } else { self.parts.limits.org.held_execs })
            }
        }
        for (k, error) in errors {
            self.parts.sink.notice(k, Say::FaultNotApplied { kind: f.kind.name(), error });
        }
        struck
    }

    /// Ends the conditions still on at the case's end (`pending`: the faults whose end is
    /// still to come), so the runners' stop is clean.
    pub(crate) fn undo(&self, faults: &[FaultSpec], pending: impl Iterator<Item = usize>) {
        for i in pending {
            let f = &faults[i];
            let _ = in_each(f.sandboxes(self.sandboxes), |k| match f.kind.target() {
                Target::Dir => self.parts.backend.replace_dir(k, false, true),
                Target::Sandbox(c) => self.parts.backend.switch(k, c, false),
                _ => Ok(()),
            });
            if f.kind.target() == Target::Org {
                self.parts.org.set_org_held_execs(self.parts.limits.org.held_execs);
            }
        }
    }
}

/// Does `act` in each of `sandboxes`; what could not be applied, by sandbox.
fn in_each(sandboxes: impl Iterator<Item = u32>, act: impl Fn(u32) -> Result<(), NotApplied>) -> Vec<(u32, String)> {
    sandboxes.filter_map(|k| act(k).err().map(|e| (k, e.to_string()))).collect()
}
