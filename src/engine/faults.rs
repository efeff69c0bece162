//! Striking the fault schedule (SPEC §6): each fault acts on what its target names — a
//! sandbox's daemon or wire, a condition of the sandbox, the relay dir, the runner, the
//! workload, or the organisation every sandbox shares — in one sandbox, or in every sandbox
//! at once for a fleet-wide fault (`sandbox = "all"`, and every `org-limit`).

use std::sync::Arc;
use std::time::Duration;

use super::backend::{Backend, Fire};
use super::STOP_BOUND;
use crate::base::clock;
use crate::base::notice::Say;
use crate::events::EventSink;
use crate::sandbox::host::org::Org;
use crate::sandbox::host::{DaemonControl, NotApplied};
use crate::scenario::fault::{FaultSpec, Target};
use crate::strategy::Relay;

/// What a fault acts on in one case.
pub(crate) struct Striker<'a> {
    pub relays: &'a [Arc<Relay>],
    pub daemons: &'a [Option<Arc<dyn DaemonControl>>],
    pub backend: &'a dyn Backend,
    pub org: &'a Org,
    pub sink: &'a EventSink,
    pub fire: &'a Fire,
    pub sandboxes: u32,
    /// The organisation's own held-exec limit (an `org-limit` restores it when it ends).
    pub org_cap: Option<u32>,
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
        self.sink.notice(f.sandbox, Say::Fault { kind: f.kind.name(), on });
        let mut errors = Vec::new();
        let sandboxes = f.sandboxes(self.sandboxes);
        match f.kind.target() {
            Target::Runner => {
                let stops: Vec<_> = sandboxes
                    .clone()
                    .map(|k| {
                        let relay = self.relays[k as usize].clone();
                        tokio::spawn(async move { relay.restart_runner(clock::now() + STOP_BOUND).await })
                    })
                    .collect();
                for (k, stop) in sandboxes.zip(stops) {
                    match stop.await {
                        Ok(Ok(took)) => {
                            struck.stop_took = struck.stop_took.max(Some(took));
                            self.sink.notice(k, Say::RunnerRestarted { took });
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
                for k in sandboxes {
                    let applied = match &self.daemons[k as usize] {
                        Some(d) => f.kind.strike_daemon(&**d, f.duration, f.answer_fails),
                        None => Err(NotApplied::NoDaemon),
                    };
                    if let Err(e) = applied {
                        errors.push((k, e.to_string()));
                    }
                }
            }
            Target::Daemon(_) => {}
            Target::Dir => {
                for k in sandboxes {
                    if let Err(e) = self.backend.replace_dir(k, on, !on || f.duration.is_zero()) {
                        errors.push((k, e.to_string()));
                    }
                }
            }
            Target::Sandbox(c) => {
                for k in sandboxes {
                    if let Err(e) = self.backend.switch(k, c, on) {
                        errors.push((k, e.to_string()));
                    }
                }
            }
            Target::Org => self.org.set_org_held_execs(if on { f.held_execs } else { self.org_cap }),
        }
        for (k, error) in errors {
            self.sink.notice(k, Say::FaultNotApplied { kind: f.kind.name(), error });
        }
        struck
    }

    /// Ends the conditions still on at the case's end (`pending`: the faults whose end is
    /// still to come), so the runners' stop is clean.
    pub(crate) fn undo(&self, faults: &[FaultSpec], pending: impl Iterator<Item = usize>) {
        for i in pending {
            let f = &faults[i];
            for k in f.sandboxes(self.sandboxes) {
                let _ = match f.kind.target() {
                    Target::Dir => self.backend.replace_dir(k, false, true),
                    Target::Sandbox(c) => self.backend.switch(k, c, false),
                    _ => Ok(()),
                };
            }
            if f.kind.target() == Target::Org {
                self.org.set_org_held_execs(self.org_cap);
            }
        }
    }
}
