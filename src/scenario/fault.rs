//! The fault schedule (SPEC §6): what strikes a case, when, and for how long.
//!
//! A scenario lists faults as `[[fault]]` (every case) or `[[case.fault]]` (one case):
//! `at` (offset from the start of the schedule), `kind`, `duration` (how long the
//! condition lasts, where that means something), `sandbox` (which relay dir, default 0)
//! and `calls` (for a burst). The engine strikes each at its time and reports, per fault,
//! how it was detected, how the strategy recovered, the worst pickup while it lasted and
//! what happened to the calls it touched.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::storm::StormRow;
use crate::base::notice::Recovery;
use crate::record::recorder::{Recording, Span};
use crate::sandbox::dir::SimFault;
use crate::sandbox::host::{DaemonControl, DaemonFault, ReadStorm};

crate::base::named! {
/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The sandbox's daemon restarts: requests in flight fail, new ones are refused for
    /// `duration`.
    DaemonRestart,
    /// The proxy drops every exec connection in flight (a held window, a stream).
    ProxyDisconnect,
    /// The wire goes dark for `duration`: nothing crosses, connections stay up; what was
    /// sent crosses at TCP's first retransmission after it heals.
    ProxyBlackhole,
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
    /// The organisation's held-exec limit lowered to `held_execs` for `duration` (every
    /// sandbox of the case at once).
    OrgLimit,
    /// The daemon's reads of request files fail for `duration`, and each request struck
    /// keeps failing while it is on disk: production answers it `{ok:false}` and leaves it,
    /// and every watch window finishes at once on it (a storm of re-armed windows).
    ReadFails,
}
names ["daemon-restart", "proxy-disconnect", "proxy-blackhole", "sandbox-pause", "dir-replaced", "watch-program-missing", "watch-enospc", "watch-emfile", "queue-overflow", "exec-hang", "repeated-timeouts", "exec-fail", "stop-during-window", "chunked-publish", "burst", "org-limit", "read-fails"]
}

impl FaultKind {
    /// How long the condition lasts when the scenario does not say.
    pub(crate) fn default_duration(self) -> Duration {
        let s = Duration::from_secs;
        match self {
            FaultKind::DaemonRestart | FaultKind::ProxyBlackhole => s(5),
            FaultKind::SandboxPause => s(20),
            FaultKind::DirReplaced | FaultKind::ProxyDisconnect | FaultKind::StopDuringWindow | FaultKind::Burst => {
                Duration::ZERO
            }
            FaultKind::ProgramMissing | FaultKind::WatchEnospc | FaultKind::WatchEmfile => s(60),
            FaultKind::QueueOverflow | FaultKind::ChunkedPublish => s(30),
            FaultKind::ExecHang | FaultKind::ExecFail | FaultKind::ReadFails => s(1),
            FaultKind::RepeatedTimeouts => s(90),
            FaultKind::OrgLimit => s(60),
        }
    }

    /// Whether the fault is a condition that lasts (a `duration`), not a single act: a
    /// disconnect, a runner restart and a burst happen once.
    pub fn lasts(self) -> bool {
        !matches!(self, FaultKind::ProxyDisconnect | FaultKind::StopDuringWindow | FaultKind::Burst)
    }

    /// Faults that swap the watch program (on the real clock, a symlink the schedule moves).
    pub(crate) fn acts_on_program(self) -> bool {
        matches!(self.target(), Target::Sandbox(SimFault::ProgramMissing | SimFault::ExecHang | SimFault::ExecFail))
    }

    /// What it acts on in a host's daemon or wire, if it is a daemon fault.
    pub(crate) fn daemon_fault(self) -> Option<DaemonFault> {
        match self.target() {
            Target::Daemon(d) => Some(d),
            _ => None,
        }
    }

    /// Faults that set off a storm of requests in their sandbox, whose row measures it
    /// against the sandbox's rate before and the other sandboxes' fate ([`StormRow`]).
    pub(crate) fn storms(self) -> bool {
        self == FaultKind::ReadFails
    }

    /// Faults this machine can produce for real, on the real clock. The others need the
    /// in-memory sandbox of the virtual clock.
    pub(crate) fn real_time(self) -> bool {
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
    /// The sandbox struck (0 for a fleet-wide fault).
    pub sandbox: u32,
    /// Every sandbox of the case at once (`sandbox = "all"`, and every `org-limit`).
    pub fleet: bool,
    /// Parallel calls of a burst.
    pub calls: u32,
    /// The held-exec limit an `org-limit` lowers the organisation's to.
    pub held_execs: Option<u32>,
    /// A `read-fails` whose struck requests' answers cannot be written either
    /// (`answer = "fails"`).
    pub answer_fails: bool,
}

impl FaultSpec {
    /// The sandboxes it strikes, of `sandboxes`.
    pub fn sandboxes(&self, sandboxes: u32) -> std::ops::Range<u32> {
        if self.fleet {
            0..sandboxes
        } else {
            self.sandbox..self.sandbox + 1
        }
    }
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
    /// The same steps, typed.
    #[serde(default)]
    pub steps: Vec<Recovery>,
    /// Calls whose life overlapped the fault, and how they ended.
    pub calls: u64,
    pub answered: u64,
    pub failed: u64,
    /// The worst pickup among those calls (ms); `None` if none was answered.
    pub worst_pickup_ms: Option<f64>,
    pub worst_completion_ms: Option<f64>,
    /// For a stop during a held window: how long stop() took (ms).
    pub stop_ms: Option<f64>,
    /// Every sandbox at once (`sandbox` is then 0).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fleet: bool,
    /// A fleet-wide fault: how the fleet came back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet_recovery: Option<FleetRecovery>,
    /// A `read-fails` fault: the storm it set off, counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storm: Option<StormRow>,
    /// Every call answered, none failed.
    pub ok: bool,
}

/// How a fleet came back from a fleet-wide fault.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetRecovery {
    /// From the fault's end until 95 % of active turns were healthy again; `None`: not by
    /// the end of the case.
    pub secs_to_95pct_healthy: Option<f64>,
    /// The lowest share of active turns that were healthy, from the strike on (%).
    pub worst_healthy_pct: f64,
    /// Turns demoted between the strike and the recovery.
    pub turns_demoted: u64,
    /// The organisation's busiest ten seconds from the strike to a minute after the recovery
    /// (requests per second): the storm of fallback polling.
    pub peak_requests_per_sec_10s: f64,
}

/// After a fault's condition ends, its calls are still followed this long: recovery (a
/// 30 s safety list, a demotion and its backoff) takes time.
pub(crate) const AFTERMATH: Duration = Duration::from_secs(60);

/// What striking a fault acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The sandbox's daemon (the host's).
    Daemon(DaemonFault),
    /// A condition of the sandbox (the backend's).
    Sandbox(SimFault),
    /// The relay dir itself: deleted, and recreated at once or when the fault ends.
    Dir,
    /// The runner: stopped during a held window and started again (the engine's).
    Runner,
    /// The workload: a burst of parallel calls (the engine's).
    Calls,
    /// The organisation every sandbox shares (its limits).
    Org,
}

impl FaultKind {
    /// What the fault strikes.
    pub fn target(self) -> Target {
        match self {
            FaultKind::DaemonRestart => Target::Daemon(DaemonFault::Restart),
            FaultKind::SandboxPause => Target::Daemon(DaemonFault::Pause),
            FaultKind::ProxyDisconnect => Target::Daemon(DaemonFault::Disconnect),
            FaultKind::ProxyBlackhole => Target::Daemon(DaemonFault::Blackhole),
            FaultKind::DirReplaced => Target::Dir,
            FaultKind::ProgramMissing => Target::Sandbox(SimFault::ProgramMissing),
            FaultKind::WatchEnospc => Target::Sandbox(SimFault::WatchLimit),
            FaultKind::WatchEmfile => Target::Sandbox(SimFault::WatchInstances),
            FaultKind::QueueOverflow => Target::Sandbox(SimFault::QueueOverflow),
            FaultKind::ExecHang | FaultKind::RepeatedTimeouts => Target::Sandbox(SimFault::ExecHang),
            FaultKind::ExecFail => Target::Sandbox(SimFault::ExecFail),
            FaultKind::ChunkedPublish => Target::Sandbox(SimFault::ChunkedPublish),
            FaultKind::StopDuringWindow => Target::Runner,
            FaultKind::Burst => Target::Calls,
            FaultKind::OrgLimit => Target::Org,
            FaultKind::ReadFails => Target::Daemon(DaemonFault::ReadFails),
        }
    }

    /// Acts on the host's daemon: strikes it for `duration`.
    pub(crate) fn strike_daemon(
        self,
        d: &dyn DaemonControl,
        duration: Duration,
        answer_fails: bool,
    ) -> Result<(), crate::sandbox::host::NotApplied> {
        match self.daemon_fault() {
            Some(DaemonFault::Restart) => d.restart(duration),
            Some(DaemonFault::Disconnect) => d.disconnect(),
            Some(DaemonFault::Blackhole) => d.blackhole(duration),
            Some(DaemonFault::Pause) => d.pause(duration),
            Some(DaemonFault::ReadFails) => d.fail_reads(duration, answer_fails),
            None => Ok(()),
        }
    }
}

/// The stretches whose calls the recorder follows, from a fault's strike to [`AFTERMATH`]
/// after its end: each fault's own (its sandbox, or every sandbox), in the schedule's order,
/// then, for each storming fault, the other sandboxes' ([`fill_storms`] reads them there).
pub(crate) fn spans(faults: &[FaultSpec], epoch: Instant) -> Vec<Span> {
    let span = |f: &FaultSpec, all: bool, others: bool| Span {
        sandbox: f.sandbox,
        all,
        others,
        from: epoch + f.at,
        to: epoch + f.at + f.duration + AFTERMATH,
    };
    let own = faults.iter().map(|f| span(f, f.fleet, false));
    own.chain(faults.iter().filter(|f| f.kind.storms()).map(|f| span(f, false, true))).collect()
}

/// Gives each storming fault's row its storm, read from the struck sandbox's daemon; a storm
/// still on at `end` (the case's end) lasted until then.
pub(crate) fn fill_storms(
    rows: &mut [FaultRow],
    faults: &[FaultSpec],
    (epoch, end): (Instant, Instant),
    rec: &Recording,
    storm_of: impl Fn(u32) -> Option<ReadStorm>,
) {
    let mut others = rec.spans.iter().skip(faults.len());
    for (f, row) in faults.iter().zip(rows).filter(|(f, _)| f.kind.storms()) {
        let seen = others.next().copied().unwrap_or_default();
        if let Some(storm) = storm_of(f.sandbox) {
            row.storm = Some(StormRow::of(f.sandbox, (epoch, end), &storm, rec, seen));
        }
    }
}

/// The fault schedule as actions in time order: (offset, fault index, on).
pub(crate) fn actions(faults: &[FaultSpec]) -> Vec<(Duration, usize, bool)> {
    let mut out = Vec::new();
    for (i, f) in faults.iter().enumerate() {
        out.push((f.at, i, true));
        // Conditions with a length end by themselves in the daemon; the others are undone.
        if f.kind.lasts() && !f.duration.is_zero() && f.kind.daemon_fault().is_none() {
            out.push((f.at + f.duration, i, false));
        }
    }
    out.sort_by_key(|a| (a.0, !a.2));
    out
}

/// A fault's recovery steps and their line. One sandbox's steps are a sequence (a step
/// repeated in a row said once, a run of two or three steps taken again and again said once
/// with its count: [`fold`]); a fleet-wide fault's interleave every sandbox's, so each step is
/// said once, in the order first seen, with how many times it was taken.
fn recovery_steps(seen: impl Iterator<Item = Recovery>, fleet: bool) -> (Vec<Recovery>, String) {
    let mut steps: Vec<Recovery> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for step in seen {
        match steps.iter().position(|s| *s == step) {
            Some(k) if fleet => counts[k] += 1,
            _ if steps.last() == Some(&step) => {}
            _ => {
                steps.push(step);
                counts.push(1);
            }
        }
    }
    if fleet {
        let line = steps.iter().zip(&counts).map(|(s, n)| format!("{} (×{n})", s.text())).collect::<Vec<_>>();
        return (steps, line.join(", "));
    }
    let units = fold(&steps);
    let text = |pat: &[Recovery]| pat.iter().map(|s| s.text()).collect::<Vec<_>>().join(" -> ");
    let line: Vec<String> =
        units.iter().map(|(pat, n)| if *n > 1 { format!("({}) ×{n}", text(pat)) } else { text(pat) }).collect();
    let folded = units.iter().flat_map(|(pat, _)| pat.iter().copied()).collect();
    (folded, line.join(" -> "))
}

/// One sandbox's steps as runs: a pattern of two or three steps repeated in a row (a watch
/// that fails and recovers in turn, thousands of times in a storm) is one run with its count.
fn fold(seq: &[Recovery]) -> Vec<(&[Recovery], usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < seq.len() {
        let repeats = |p: usize| {
            let pat = seq.get(i..i + p)?;
            let n = 1 + (1..).take_while(|r| seq.get(i + r * p..i + (r + 1) * p) == Some(pat)).count();
            (n > 1).then_some((p, n))
        };
        let (p, n) = (2..=3).filter_map(repeats).max_by_key(|(p, n)| p * n).unwrap_or((1, 1));
        out.push((&seq[i..i + p], n));
        i += p * n;
    }
    out
}

/// One report row per fault, from what the recorder saw.
pub(crate) fn rows(faults: &[FaultSpec], epoch: Instant, rec: &Recording, stops: &[Option<Duration>]) -> Vec<FaultRow> {
    let ms = crate::base::units::ms_2dp;
    faults
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (from, to) = (epoch + f.at, epoch + f.at + f.duration);
            let told: Vec<_> = rec
                .timed_notices
                .iter()
                .filter(|n| (f.fleet || n.sandbox == f.sandbox) && n.at >= from && n.at <= to + AFTERMATH)
                // The schedule's own "strikes" lines say nothing about detection.
                .filter(|n| !n.what.is_schedule())
                .collect();
            let (steps, recovery) = recovery_steps(told.iter().filter_map(|n| n.what.recovery()), f.fleet);
            let st = rec.spans.get(i).copied().unwrap_or_default();
            let recovery = if !steps.is_empty() {
                recovery
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
                detected: told.first().map_or_else(|| "nothing reported".into(), |n| n.what.to_string()),
                steps,
                detected_after_ms: told.first().map(|n| ms(n.at - from)),
                recovery,
                calls: st.calls,
                answered: st.answered,
                failed: st.failed,
                worst_pickup_ms: st.worst_pickup.map(ms),
                worst_completion_ms: st.worst_completion.map(ms),
                stop_ms: stops.get(i).copied().flatten().map(ms),
                fleet: f.fleet,
                fleet_recovery: None,
                storm: None,
                ok: st.failed == 0 && st.answered == st.calls,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleet_faults_recovery_says_each_step_once_with_its_count() {
        let (d, r) = (Recovery::Demoted, Recovery::RecoveredBeforeDemotion);
        let seen = [d, r, d, r, r, d];
        let (steps, line) = recovery_steps(seen.into_iter(), false);
        assert_eq!(steps, [d, r, d], "one sandbox: the sequence, a repeat in a row said once, a run folded");
        assert_eq!(line, format!("({} -> {}) ×2 -> {}", d.text(), r.text(), d.text()));
        let (steps, line) = recovery_steps([d, r, Recovery::Promoted].into_iter(), false);
        assert_eq!(steps.len(), 3, "nothing to fold");
        assert_eq!(line.matches(" -> ").count(), 2);
        let (steps, line) = recovery_steps(seen.into_iter(), true);
        assert_eq!(steps, [d, r]);
        assert_eq!(line, format!("{} (×3), {} (×3)", d.text(), r.text()));
    }

    #[test]
    fn names_round_trip_and_are_unique() {
        let names = FaultKind::NAMES;
        assert_eq!(names.len(), FaultKind::ALL.len());
        for k in FaultKind::ALL {
            assert_eq!(FaultKind::from_name(k.name()), Some(k));
        }
        let mut sorted = names.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
    }
}
