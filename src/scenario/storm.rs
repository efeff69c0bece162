//! A `read-fails` fault's storm, as its row tells it: from the struck daemon's marks
//! ([`ReadStorm`]), the struck dir's request rate before the fault and while the storm lasted
//! (windows armed, requests by kind), how long it lasted, and what it did to the other
//! sandboxes of the organisation: their requests the limits rejected, their turns demoted
//! and their calls' pickup. Every figure is a difference of the run's counters.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::base::notice::Recovery;
use crate::base::units::round;
use crate::record::recorder::{Recording, SpanStats, TimedNotice};
use crate::sandbox::host::{ByKind, Kind, ReadStorm, RequestCounts};

/// What a `read-fails` fault set off, counted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StormRow {
    /// Request files whose reads failed, the reads that failed, and the writes of their
    /// answers that failed (`answer = "fails"`).
    pub requests: u64,
    pub reads_failed: u64,
    #[serde(default)]
    pub answers_failed: u64,
    /// From the first failed read (seconds from the schedule's start; `None`: the fault
    /// caught no request) to the first daemon request once no struck request was on disk
    /// (`None`: one still was at the case's end).
    pub from_secs: Option<f64>,
    pub until_secs: Option<f64>,
    /// How long it lasted (to the case's end if it had not ended), and the part of that a
    /// relay was alive on the dir: between agent turns the file waits on disk, and nothing
    /// storms, until the next turn's sweep deletes it. The rates are per second of the latter.
    pub lasted_secs: f64,
    #[serde(default)]
    pub stormed_secs: f64,
    /// When the struck sandbox's own watch was demoted while it lasted (seconds after its
    /// start): its windows stop, polling goes on.
    #[serde(default)]
    pub demoted_after_secs: Option<f64>,
    /// The struck dir before the fault: daemon requests, and windows armed (execs), per
    /// second of relay life.
    pub before_per_sec: f64,
    pub before_execs_per_sec: f64,
    /// The same while the storm lasted, lists too, and its requests by kind.
    pub per_sec: f64,
    pub execs_per_sec: f64,
    pub lists_per_sec: f64,
    pub by_kind: ByKind,
    /// The struck dir's requests the organisation's limits rejected while it lasted.
    pub rejected: u64,
    /// The other sandboxes' requests the limits rejected: in all while it lasted, and per
    /// second before the fault and while it lasted.
    pub others_rejected: u64,
    pub others_rejected_per_sec_before: f64,
    pub others_rejected_per_sec: f64,
    /// The other sandboxes' turns demoted before the fault and while the storm lasted.
    pub others_demoted_before: u64,
    pub others_demoted: u64,
    /// The other sandboxes' calls whose life overlapped the fault or the 60 s after it.
    pub others_calls: u64,
    pub others_failed: u64,
    pub others_worst_pickup_ms: Option<f64>,
}

fn rate(n: u64, over: Duration) -> f64 {
    if over.is_zero() {
        return 0.0;
    }
    round(n as f64 / over.as_secs_f64(), 3)
}

fn total(c: &RequestCounts) -> u64 {
    c.discovery_total() + c.data_total()
}

fn of_kind(c: &RequestCounts, k: Kind) -> u64 {
    c.discovery[k as usize] + c.data[k as usize]
}

impl StormRow {
    /// The row of a storm in `sandbox` (`others`: the other sandboxes' calls it touched).
    pub(crate) fn of(
        sandbox: u32,
        (epoch, case_end): (Instant, Instant),
        storm: &ReadStorm,
        rec: &Recording,
        others: SpanStats,
    ) -> StormRow {
        let secs = |t: Instant| round(t.saturating_duration_since(epoch).as_secs_f64(), 3);
        // The demotions said from `from` to `to`, in any sandbox; the other sandboxes' counted.
        let demotions = |from: Instant, to: Instant| {
            let demotion =
                move |n: &&TimedNotice| n.at >= from && n.at <= to && n.what.recovery() == Some(Recovery::Demoted);
            rec.timed_notices.iter().filter(demotion)
        };
        let demoted = |from, to| demotions(from, to).filter(|n| n.sandbox != sandbox).count() as u64;
        let struck = &storm.struck;
        let before = struck.counts;
        let since_epoch = struck.at.saturating_duration_since(epoch);
        let mut row = StormRow {
            requests: storm.requests,
            reads_failed: storm.reads_failed,
            answers_failed: storm.answers_failed,
            before_per_sec: rate(total(&before), before.alive_time),
            before_execs_per_sec: rate(of_kind(&before, Kind::Exec), before.alive_time),
            others_rejected_per_sec_before: rate(struck.others_rejected, since_epoch),
            others_demoted_before: demoted(epoch, struck.at),
            others_calls: others.calls,
            others_failed: others.failed,
            others_worst_pickup_ms: others.worst_pickup.map(crate::base::units::ms_2dp),
            ..StormRow::default()
        };
        let Some(start) = storm.started else { return row };
        // Unended, it is counted to the runners' stop (their last requests) and timed to the
        // case's end.
        let end = storm.ended.unwrap_or(storm.now);
        let until = storm.ended.map_or(case_end.min(storm.now.at), |m| m.at);
        let during = end.counts.minus(&start.counts);
        let wall = until.saturating_duration_since(start.at);
        // Per second of relay life: between agent turns no relay runs, and none storms.
        let life = if during.alive_time.is_zero() { wall } else { during.alive_time.min(wall) };
        row.from_secs = Some(secs(start.at));
        row.until_secs = storm.ended.map(|m| secs(m.at));
        row.lasted_secs = round(wall.as_secs_f64(), 3);
        row.stormed_secs = round(life.as_secs_f64(), 3);
        row.per_sec = rate(total(&during), life);
        row.execs_per_sec = rate(of_kind(&during, Kind::Exec), life);
        row.lists_per_sec = rate(of_kind(&during, Kind::List), life);
        row.by_kind = during.by_kind();
        row.rejected = end.rejected - start.rejected;
        row.others_rejected = end.others_rejected - start.others_rejected;
        row.others_rejected_per_sec = rate(row.others_rejected, wall);
        row.others_demoted = demoted(start.at, end.at);
        row.demoted_after_secs = demotions(start.at, end.at)
            .find(|n| n.sandbox == sandbox)
            .map(|n| round(n.at.saturating_duration_since(start.at).as_secs_f64(), 3));
        row
    }

    /// How many times the struck dir's rate before the fault the storm's was (requests, and
    /// windows armed); `None` where the rate before was zero.
    pub fn ratios(&self) -> (Option<f64>, Option<f64>) {
        let r = |during: f64, before: f64| (before > 0.0).then(|| round(during / before, 1));
        (r(self.per_sec, self.before_per_sec), r(self.execs_per_sec, self.before_execs_per_sec))
    }
}
