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

/// One step's sample: when, the counters, the organisation.
pub(crate) type Point = (Duration, RequestCounts, OrgSample);

/// A task that takes `sample` at each of the offsets `at` from `epoch` (ascending), given
/// the offset.
fn at_offsets<T: Send + 'static>(
    epoch: Instant,
    at: Vec<Duration>,
    sample: impl Fn(Duration) -> T + Send + 'static,
) -> JoinHandle<Vec<T>> {
    tokio::spawn(async move {
        let mut taken = Vec::with_capacity(at.len());
        for d in at {
            tokio::time::sleep_until(epoch + d).await;
            taken.push(sample(d));
        }
        taken
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
        // The counters at the end of each phase.
        let ends = phases.iter().scan(Duration::ZERO, |end, d| {
            *end += *d;
            Some(*end)
        });
        // The counters and the organisation's gauges every `step` until `length`.
        let steps = (1..).map(|k| (step * k).min(length)).take(length.as_nanos().div_ceil(step.as_nanos()) as usize);
        let (phase_hosts, hosts) = (hosts.to_vec(), hosts.to_vec());
        Samplers {
            phase_ends: at_offsets(epoch, ends.collect(), move |_| total_counts(&phase_hosts)),
            timeline: at_offsets(epoch, steps.collect(), move |d| (d, total_counts(&hosts), org.sample())),
        }
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
