//! What the engine samples while a case runs: the hosts' request counters at the end of
//! each phase (phase rates) and every step of the schedule (the request timeline), with the
//! organisation's gauges beside them (the fleet timeline).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::sandbox::host::org::{Org, OrgSample};
use crate::sandbox::host::{Host, RequestCounts};

/// The request counters of all hosts, added up.
pub(crate) fn total_counts(hosts: &[Arc<dyn Host>]) -> RequestCounts {
    let mut c = RequestCounts::default();
    hosts.iter().for_each(|h| c.add(&h.counts()));
    c
}

/// The counters at the end of each phase (offsets from `epoch`).
pub(crate) fn at_phase_ends(
    hosts: &[Arc<dyn Host>],
    epoch: Instant,
    phases: Vec<Duration>,
) -> JoinHandle<Vec<RequestCounts>> {
    let hosts = hosts.to_vec();
    tokio::spawn(async move {
        let mut snaps = Vec::new();
        let mut end = epoch;
        for d in phases {
            end += d;
            tokio::time::sleep_until(end).await;
            snaps.push(total_counts(&hosts));
        }
        snaps
    })
}

/// One step's sample: when, the counters, the organisation.
pub(crate) type Point = (Duration, RequestCounts, OrgSample);

/// The counters and the organisation's gauges every `step` until `length`.
pub(crate) fn every(
    hosts: &[Arc<dyn Host>],
    org: Arc<Org>,
    epoch: Instant,
    step: Duration,
    length: Duration,
) -> JoinHandle<Vec<Point>> {
    let hosts = hosts.to_vec();
    tokio::spawn(async move {
        let (mut points, mut at, end) = (Vec::new(), epoch, epoch + length);
        while at < end {
            at = (at + step).min(end);
            tokio::time::sleep_until(at).await;
            points.push((at - epoch, total_counts(&hosts), org.sample()));
        }
        points
    })
}

/// A case's samplers, running on its schedule.
pub(crate) struct Samplers {
    phase_ends: JoinHandle<Vec<RequestCounts>>,
    timeline: JoinHandle<Vec<Point>>,
}

impl Samplers {
    /// The counters at each phase's end and every `step` until `length`, from `epoch`.
    pub(crate) fn start(
        hosts: &[Arc<dyn Host>],
        org: Arc<Org>,
        epoch: Instant,
        step: Duration,
        (phases, length): (Vec<Duration>, Duration),
    ) -> Samplers {
        Samplers { phase_ends: at_phase_ends(hosts, epoch, phases), timeline: every(hosts, org, epoch, step, length) }
    }

    /// What they sampled. They end with the schedule, which a finished case has reached; an
    /// interrupted case's are cut short and report nothing (its phases were cut short).
    pub(crate) async fn finish(self, interrupted: bool) -> (Vec<RequestCounts>, Vec<Point>) {
        if interrupted {
            self.phase_ends.abort();
            self.timeline.abort();
        }
        (self.phase_ends.await.unwrap_or_default(), self.timeline.await.unwrap_or_default())
    }
}
