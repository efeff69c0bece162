//! Each figure of the figure table ([`Metric::table`]) read from a case's result, and
//! written back once a case's repeats have made it one ([`super::repeats`]). A figure
//! stored in a field is named once, in [`stored!`], which gives both directions; a figure
//! computed from several fields (requests per call, the faults', most of the fleet's) is
//! read here and never written back.

use super::CaseResult;
use crate::results::repeat::{stat, stat_place, Place};
use crate::scenario::gate::{Counter, Metric, Ratio};
use crate::scenario::Clock;

/// The counters each stored in one field: the read and the write-back from one list.
macro_rules! stored {
    ($($(#[cfg($cfg:meta)])? $c:ident => $($f:ident).+;)*) => {
        fn stored(&self, c: Counter) -> Option<f64> {
            match c {
                $($(#[cfg($cfg)])? Counter::$c => Some(self.$($f).+ as f64),)*
                _ => None,
            }
        }

        fn stored_mut(&mut self, c: Counter) -> Option<Place<'_>> {
            match c {
                $($(#[cfg($cfg)])? Counter::$c => Some(Place::from(&mut self.$($f).+)),)*
                _ => None,
            }
        }
    };
}

/// The request stretches' three counters each (discovery rate, data rate, minutes).
const STRETCHES: [[Counter; 3]; 5] = {
    use Counter as C;
    [
        [C::BusyDiscoveryPerMin, C::BusyDataPerMin, C::BusyMinutes],
        [C::IdleDirDiscoveryPerMin, C::IdleDirDataPerMin, C::IdleDirMinutes],
        [C::IdleDiscoveryPerMin, C::IdleDataPerMin, C::IdleMinutes],
        [C::ActivePhaseDiscoveryPerMin, C::ActivePhaseDataPerMin, C::ActivePhaseMinutes],
        [C::IdlePhaseDiscoveryPerMin, C::IdlePhaseDataPerMin, C::IdlePhaseMinutes],
    ]
};

/// Where a counter is among [`STRETCHES`]: which stretch, which of its three.
fn stretch_at(c: Counter) -> Option<(usize, usize)> {
    STRETCHES.iter().enumerate().find_map(|(i, s)| s.iter().position(|x| *x == c).map(|p| (i, p)))
}

/// A counter computed from several fields: never written back, and a repeated case's gate
/// reads its spread.
fn derived(c: Counter) -> bool {
    matches!(c, Counter::RequestsPerCall | Counter::FaultsFailed | Counter::FaultWorstPickupMs)
}

impl CaseResult {
    stored! {
        DiscoveryPerMin => requests.discovery_per_min;
        DataPerMin => requests.data_per_min;
        DiscoveryTotal => requests.discovery_total;
        DataTotal => requests.data_total;
        Scheduled => calls.scheduled;
        Started => calls.started;
        Completed => calls.completed;
        Ok => calls.ok;
        Error => calls.error;
        Paused => calls.paused;
        Warmup => calls.warmup;
        Lost => calls.lost;
        Duplicated => calls.duplicated;
        Timeout => calls.timeout;
        IdCollision => calls.id_collision;
        PublishError => calls.publish_error;
        Environment => calls.environment;
        Interrupted => calls.interrupted;
        Unmeasured => calls.unmeasured;
        PairingViolations => pairing_violations.total;
        LeftoverFiles => leftover_files;
        Malformed => runner.malformed;
        Stuck => runner.stuck;
        SafetyLists => runner.safety_lists;
        WatchMisses => runner.missed_by_source;
        WindowSecs => window_secs;
        #[cfg(test)]
        Probe => calls.started;
    }

    /// A request stretch's field for one of its counters; `None` for another counter, or a
    /// stretch the case did not have.
    fn stretch_mut(&mut self, c: Counter) -> Option<&mut f64> {
        let (i, part) = stretch_at(c)?;
        let q = &mut self.requests;
        let s = [
            Some(&mut q.busy),
            Some(&mut q.idle),
            q.idle_relay.as_mut(),
            Some(&mut q.active_phases),
            Some(&mut q.idle_phases),
        ]
        .into_iter()
        .nth(i)??;
        [&mut s.discovery_per_min, &mut s.data_per_min, &mut s.minutes].into_iter().nth(part)
    }

    /// A counter's value; `None` where the case did not measure it (a black-box runner's
    /// requests, a stretch that never happened, no fault).
    fn counter(&self, c: Counter) -> Option<f64> {
        if c.row().requests && self.requests.not_measured {
            return None;
        }
        if let Some((i, part)) = stretch_at(c) {
            let q = &self.requests;
            let s =
                [Some(&q.busy), Some(&q.idle), q.idle_relay.as_ref(), Some(&q.active_phases), Some(&q.idle_phases)][i]?;
            // A stretch that never happened has no figure.
            return (s.minutes > 0.0).then_some([s.discovery_per_min, s.data_per_min, s.minutes][part]);
        }
        match c {
            Counter::RequestsPerCall => (self.calls.completed > 0).then(|| {
                (self.requests.discovery_total + self.requests.data_total) as f64 / self.calls.completed as f64
            }),
            Counter::FaultsFailed => Some(self.faults.iter().filter(|f| !f.ok).count() as f64),
            Counter::FaultWorstPickupMs => self.faults.iter().filter_map(|f| f.worst_pickup_ms).reduce(f64::max),
            _ => self.stored(c),
        }
    }

    /// A figure of the table as the case holds it; `None` where it was not measured. What
    /// repeats combine; gates read [`CaseResult::metric`].
    pub(crate) fn figure(&self, m: Metric) -> Option<f64> {
        match m {
            Metric::Latency(measure, s) => stat(self.latency(measure), s),
            Metric::InjectedLeg(s) => stat(self.injected_leg_us.as_ref()?, s),
            Metric::Count(c) => self.counter(c),
            Metric::Fleet(f) => {
                let recoveries: Vec<Option<f64>> = self
                    .faults
                    .iter()
                    .filter_map(|r| r.fleet_recovery.as_ref().map(|fr| fr.secs_to_95pct_healthy))
                    .collect();
                // The slowest recovery; one that never came is no value (the gate fails).
                let recovery = (!recoveries.is_empty())
                    .then(|| recoveries.iter().try_fold(0.0f64, |worst, r| r.map(|v| worst.max(v))));
                self.fleet.as_ref()?.metric(f, recovery)
            }
            Metric::VsBaseline(r) => {
                // This case's figure over its baseline's: stored the other way round.
                let c = self.vs_baseline.as_ref()?;
                let stored = match r {
                    Ratio::PickupP50 => c.pickup_p50_ratio,
                    Ratio::CompletionP50 => c.completion_p50_ratio,
                    Ratio::DiscoveryPerMin => c.discovery_per_min_ratio,
                    Ratio::IdleDiscoveryPerMin => c.idle_discovery_per_min_ratio,
                    Ratio::WakeP50 => c.wake_p50_ratio,
                    Ratio::WakeP90 => c.wake_p90_ratio,
                    Ratio::PickupP90 => c.pickup_p90_ratio,
                    Ratio::CompletionP90 => c.completion_p90_ratio,
                    Ratio::CompletionMean => c.completion_mean_ratio,
                    Ratio::PickupMean => c.pickup_mean_ratio,
                }?;
                Some(1.0 / stored)
            }
        }
    }

    /// The field a figure is stored in, to write a combined value back; `None` for a figure
    /// computed from several fields.
    pub(crate) fn place(&mut self, m: Metric) -> Option<Place<'_>> {
        match m {
            Metric::Latency(measure, s) => stat_place(self.measures.get_mut(measure), s),
            Metric::InjectedLeg(s) => stat_place(self.injected_leg_us.as_mut()?, s),
            Metric::Count(c) if stretch_at(c).is_some() => self.stretch_mut(c).map(Place::F),
            Metric::Count(c) => self.stored_mut(c),
            Metric::Fleet(f) => self.fleet.as_mut()?.place(f),
            Metric::VsBaseline(_) => None,
        }
    }

    /// The value a gate reads; `None` when there is nothing to read (no samples). A repeated
    /// case's figures are its medians; those computed from several fields are read from
    /// their spreads.
    pub(crate) fn metric(&self, m: Metric) -> Option<f64> {
        if let Some(rep) = &self.repeat {
            if matches!(m, Metric::Fleet(_)) || matches!(m, Metric::Count(c) if derived(c)) {
                return rep.get(&m.name()).map(|s| s.value);
            }
        }
        let v = self.figure(m)?;
        // On the virtual clock a local dir's steps take no simulated time (no daemon legs are
        // injected): a 0 there is a step the simulation does not time, not a measured instant.
        let untimed =
            matches!(m, Metric::Latency(..)) && self.clock == Clock::Virtual && self.injected_leg_us.is_none();
        (!(untimed && v == 0.0)).then_some(v)
    }
}
