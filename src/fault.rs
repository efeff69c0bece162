//! The fault schedule (SPEC §6): what strikes a case, when, and for how long.
//!
//! A scenario lists faults as `[[fault]]` (every case) or `[[case.fault]]` (one case):
//! `at` (offset from the start of the schedule), `kind`, `duration` (how long the
//! condition lasts, where that means something), `sandbox` (which relay dir, default 0)
//! and `calls` (for a burst). The engine strikes each at its time and reports, per fault,
//! how it was detected, how the strategy recovered, the worst pickup while it lasted and
//! what happened to the calls it touched.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::dir::{SimDir, SimFault};
use crate::host::Host;
use crate::recorder::Recording;

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The sandbox's daemon restarts: requests in flight fail, new ones are refused for
    /// `duration`.
    DaemonRestart,
    /// The proxy drops every exec connection in flight (a held window, a stream).
    ProxyDisconnect,
    /// The sandbox is paused for `duration`: daemon requests stall until it resumes.
    SandboxPause,
    /// The relay dir is deleted and recreated `duration` later (0: at once); watches
    /// armed on the old directory go silent.
    DirReplaced,
    /// The watch program is missing from the sandbox for `duration`.
    ProgramMissing,
    /// Arming a watch fails with ENOSPC for `duration`.
    WatchEnospc,
    /// Arming a watch fails with EMFILE for `duration`.
    WatchEmfile,
    /// The watch queue overflows for `duration`: events arrive as rescans with no path.
    QueueOverflow,
    /// Watch execs started within `duration` never settle (one or two, at the default).
    ExecHang,
    /// The same for longer: timeouts in a row, enough to demote.
    RepeatedTimeouts,
    /// Watch execs started within `duration` fail at once.
    ExecFail,
    /// The runner is stopped while a window is held, then started again.
    StopDuringWindow,
    /// The writer publishes in slow chunks (temp file growing before the rename).
    ChunkedPublish,
    /// `calls` parallel calls at once in one sandbox, beyond the daemon's concurrency.
    Burst,
}

impl FaultKind {
    pub const ALL: [FaultKind; 14] = [
        FaultKind::DaemonRestart,
        FaultKind::ProxyDisconnect,
        FaultKind::SandboxPause,
        FaultKind::DirReplaced,
        FaultKind::ProgramMissing,
        FaultKind::WatchEnospc,
        FaultKind::WatchEmfile,
        FaultKind::QueueOverflow,
        FaultKind::ExecHang,
        FaultKind::RepeatedTimeouts,
        FaultKind::ExecFail,
        FaultKind::StopDuringWindow,
        FaultKind::ChunkedPublish,
        FaultKind::Burst,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FaultKind::DaemonRestart => "daemon-restart",
            FaultKind::ProxyDisconnect => "proxy-disconnect",
            FaultKind::SandboxPause => "sandbox-pause",
            FaultKind::DirReplaced => "dir-replaced",
            FaultKind::ProgramMissing => "watch-program-missing",
            FaultKind::WatchEnospc => "watch-enospc",
            FaultKind::WatchEmfile => "watch-emfile",
            FaultKind::QueueOverflow => "queue-overflow",
            FaultKind::ExecHang => "exec-hang",
            FaultKind::RepeatedTimeouts => "repeated-timeouts",
            FaultKind::ExecFail => "exec-fail",
            FaultKind::StopDuringWindow => "stop-during-window",
            FaultKind::ChunkedPublish => "chunked-publish",
            FaultKind::Burst => "burst",
        }
    }

    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|k| k.name()).collect()
    }

    pub fn from_name(name: &str) -> Option<FaultKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// How long the condition lasts when the scenario does not say.
    pub fn default_duration(self) -> Duration {
        let s = Duration::from_secs;
        match self {
            FaultKind::DaemonRestart => s(5),
            FaultKind::SandboxPause => s(20),
            FaultKind::DirReplaced | FaultKind::ProxyDisconnect | FaultKind::StopDuringWindow | FaultKind::Burst => {
                Duration::ZERO
            }
            FaultKind::ProgramMissing | FaultKind::WatchEnospc | FaultKind::WatchEmfile => s(60),
            FaultKind::QueueOverflow | FaultKind::ChunkedPublish => s(30),
            FaultKind::ExecHang | FaultKind::ExecFail => s(1),
            FaultKind::RepeatedTimeouts => s(90),
        }
    }

    /// Faults that swap the watch program (on the real clock, a symlink the schedule moves).
    pub fn acts_on_program(self) -> bool {
        matches!(
            self,
            FaultKind::ProgramMissing | FaultKind::ExecHang | FaultKind::RepeatedTimeouts | FaultKind::ExecFail
        )
    }

    /// Faults of the emulated daemon: only a remote host has one.
    pub fn needs_daemon(self) -> bool {
        matches!(self, FaultKind::DaemonRestart | FaultKind::ProxyDisconnect | FaultKind::SandboxPause)
    }

    /// Faults this machine can produce for real, on the real clock. The others need the
    /// in-memory sandbox of the virtual clock.
    pub fn real_time(self) -> bool {
        !matches!(
            self,
            FaultKind::WatchEnospc | FaultKind::WatchEmfile | FaultKind::QueueOverflow | FaultKind::ChunkedPublish
        )
    }
}

/// One scheduled fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSpec {
    pub kind: FaultKind,
    /// Offset from the start of the schedule.
    pub at: Duration,
    pub duration: Duration,
    pub sandbox: u32,
    /// Parallel calls of a burst.
    pub calls: u32,
}

/// What the report says about one fault.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultRow {
    pub kind: String,
    pub sandbox: u32,
    /// When it struck and when its condition ended (seconds from the schedule's start).
    pub at_secs: f64,
    pub until_secs: f64,
    /// The first thing the relay said after the fault struck, and when.
    pub detected: String,
    pub detected_after_ms: Option<f64>,
    /// How the strategy got back (demotion, promotion, re-arm, poll fallback, ...).
    pub recovery: String,
    /// Calls whose life overlapped the fault, and how they ended.
    pub calls: u64,
    pub answered: u64,
    pub failed: u64,
    /// The worst pickup among those calls (ms); `None` if none was answered.
    pub worst_pickup_ms: Option<f64>,
    pub worst_completion_ms: Option<f64>,
    /// For a stop during a held window: how long stop() took (ms).
    pub stop_ms: Option<f64>,
    /// Every call answered, none failed.
    pub ok: bool,
}

/// After a fault's condition ends, its calls are still followed this long: recovery (a
/// 30 s safety list, a demotion and its backoff) takes time.
pub const AFTERMATH: Duration = Duration::from_secs(60);

/// The watch program of a real-clock case with program faults: a symlink the schedule
/// points at the real program, at nothing (missing), or at a script that hangs or fails.
pub struct ProgramSwitch {
    link: PathBuf,
    real: PathBuf,
    hang: PathBuf,
    fail: PathBuf,
}

impl ProgramSwitch {
    /// Sets up `dir/bin/` with the link and the two scripts.
    pub fn new(dir: &Path, real: &Path) -> io::Result<ProgramSwitch> {
        use std::os::unix::fs::PermissionsExt;
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin)?;
        let script = |name: &str, body: &str| -> io::Result<PathBuf> {
            let p = bin.join(name);
            std::fs::write(&p, body)?;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
            Ok(p)
        };
        let hang = script("hang.sh", "#!/bin/sh\n# a watch exec that never settles\nexec sleep 86400\n")?;
        let fail = script("fail.sh", "#!/bin/sh\necho 'sandbox-watch: simulated failure' >&2\nexit 1\n")?;
        let sw = ProgramSwitch { link: bin.join("relay-bench"), real: real.to_path_buf(), hang, fail };
        sw.point(Some(&sw.real.clone()))?;
        Ok(sw)
    }

    /// The path strategies run.
    pub fn path(&self) -> &Path {
        &self.link
    }

    fn point(&self, to: Option<&Path>) -> io::Result<()> {
        match to {
            None => crate::fsio::remove_if_present(&self.link),
            Some(target) => {
                let tmp = self.link.with_extension("new");
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(target, &tmp)?;
                std::fs::rename(&tmp, &self.link)
            }
        }
    }
}

/// What the fault schedule acts on in one case.
#[derive(Default)]
pub struct Targets {
    /// The in-memory dirs (virtual clock), by sandbox.
    pub sims: Vec<SimDir>,
    /// The real dirs (real clock), by sandbox.
    pub paths: Vec<PathBuf>,
    pub hosts: Vec<Arc<dyn Host>>,
    pub program: Option<ProgramSwitch>,
}

impl Targets {
    /// Turns the condition of `f` on (it strikes) or off (it ends). Stops and bursts act
    /// on the relays and are the engine's.
    pub fn apply(&self, f: &FaultSpec, on: bool) -> Result<(), String> {
        let k = f.sandbox as usize;
        let daemon = || self.hosts.get(k).and_then(|h| h.daemon()).ok_or("no daemon on this host".to_owned());
        let sim_fault = match f.kind {
            FaultKind::DaemonRestart if on => return daemon().map(|d| d.restart(f.duration)),
            FaultKind::ProxyDisconnect if on => return daemon().map(|d| d.disconnect()),
            FaultKind::SandboxPause if on => return daemon().map(|d| d.pause(f.duration)),
            FaultKind::DaemonRestart | FaultKind::ProxyDisconnect | FaultKind::SandboxPause => return Ok(()),
            FaultKind::StopDuringWindow | FaultKind::Burst => return Ok(()),
            FaultKind::DirReplaced => return self.replace_dir(k, on, f.duration.is_zero()),
            FaultKind::ProgramMissing => SimFault::ProgramMissing,
            FaultKind::WatchEnospc => SimFault::WatchLimit,
            FaultKind::WatchEmfile => SimFault::WatchInstances,
            FaultKind::QueueOverflow => SimFault::QueueOverflow,
            FaultKind::ExecHang | FaultKind::RepeatedTimeouts => SimFault::ExecHang,
            FaultKind::ExecFail => SimFault::ExecFail,
            FaultKind::ChunkedPublish => SimFault::ChunkedPublish,
        };
        if let Some(sim) = self.sims.get(k) {
            sim.set_fault(sim_fault, on);
            return Ok(());
        }
        let Some(sw) = &self.program else {
            return Err(format!("{} cannot be produced on this clock", f.kind.name()));
        };
        let target = match (on, sim_fault) {
            (false, _) => Some(sw.real.as_path()),
            (true, SimFault::ProgramMissing) => None,
            (true, SimFault::ExecHang) => Some(sw.hang.as_path()),
            (true, SimFault::ExecFail) => Some(sw.fail.as_path()),
            (true, other) => return Err(format!("{other:?} cannot be produced on the real clock")),
        };
        sw.point(target).map_err(|e| format!("cannot switch the watch program: {e}"))
    }

    fn replace_dir(&self, k: usize, on: bool, at_once: bool) -> Result<(), String> {
        if let Some(sim) = self.sims.get(k) {
            if on {
                sim.delete_dir();
            }
            if !on || at_once {
                sim.recreate();
            }
            return Ok(());
        }
        let path = self.paths.get(k).ok_or("no such sandbox")?;
        let res = if on { std::fs::remove_dir_all(path) } else { Ok(()) };
        let res = res.and_then(|_| if !on || at_once { std::fs::create_dir_all(path) } else { Ok(()) });
        res.map_err(|e| format!("cannot replace {}: {e}", path.display()))
    }
}

/// The fault schedule as actions in time order: (offset, fault index, on).
pub fn actions(faults: &[FaultSpec]) -> Vec<(Duration, usize, bool)> {
    let mut out = Vec::new();
    for (i, f) in faults.iter().enumerate() {
        out.push((f.at, i, true));
        // Conditions with a length end by themselves in the daemon; the others are undone.
        if !f.duration.is_zero() && !f.kind.needs_daemon() {
            out.push((f.at + f.duration, i, false));
        }
    }
    out.sort_by_key(|a| (a.0, !a.2));
    out
}

/// How the engine's notices about the schedule itself begin.
pub const ENGINE_PREFIX: &str = "fault schedule: ";

/// Words in a notice that name a recovery step, and how the report says it.
const RECOVERY: &[(&str, &str)] = &[
    ("demoted to polling", "demoted to polling"),
    ("promoted", "promoted back to the watch"),
    ("recovered before demotion", "the next watch exec succeeded (no demotion)"),
    ("watch re-armed", "watch re-armed"),
    ("response watch re-armed", "response watch re-armed"),
    ("re-arm failed", "re-arm failed: polling"),
    ("readable again", "relay dir readable again"),
    ("a timed list found", "found by the poll / safety list"),
    ("started again", "runner restarted"),
];

/// One report row per fault, from what the recorder saw.
pub fn rows(faults: &[FaultSpec], epoch: Instant, rec: &Recording, stops: &[Option<Duration>]) -> Vec<FaultRow> {
    let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
    faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (from, to) = (epoch + f.at, epoch + f.at + f.duration);
            let told: Vec<_> = rec
                .timed_notices
                .iter()
                .filter(|n| n.sandbox == f.sandbox && n.at >= from && n.at <= to + AFTERMATH)
                // The engine's own "fault N strikes" lines say nothing about detection.
                .filter(|n| !n.what.starts_with(ENGINE_PREFIX))
                .collect();
            let mut steps: Vec<&str> = Vec::new();
            for n in &told {
                if let Some((_, say)) = RECOVERY.iter().find(|(k, _)| n.what.contains(k)) {
                    if steps.last() != Some(say) {
                        steps.push(say);
                    }
                }
            }
            let st = rec.spans.get(i).copied().unwrap_or_default();
            let recovery = if !steps.is_empty() {
                steps.join(" -> ")
            } else if st.failed == 0 {
                "no step needed: every call it touched was answered".into()
            } else {
                "none seen".into()
            };
            FaultRow {
                kind: f.kind.name().into(),
                sandbox: f.sandbox,
                at_secs: f.at.as_secs_f64(),
                until_secs: (f.at + f.duration).as_secs_f64(),
                detected: told.first().map_or_else(|| "nothing reported".into(), |n| n.what.clone()),
                detected_after_ms: told.first().map(|n| ms(n.at - from)),
                recovery,
                calls: st.calls,
                answered: st.answered,
                failed: st.failed,
                worst_pickup_ms: st.worst_pickup.map(ms),
                worst_completion_ms: st.worst_completion.map(ms),
                stop_ms: stops.get(i).copied().flatten().map(ms),
                ok: st.failed == 0 && st.answered == st.calls,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let names = FaultKind::names();
        assert_eq!(names.len(), FaultKind::ALL.len());
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::from_name(k.name()), Some(k));
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }
}
