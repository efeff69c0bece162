//! Request rates (SPEC §5): per relay dir per minute, over the case's window, its busy and
//! idle stretches, the workload's phases, and a trailing-minute timeline. A pure function of
//! the request counters' snapshots, so the arithmetic is tested on its own.

use std::time::Duration;

use crate::base::units::round;
use crate::results::summary::{PhaseRates, RatePoint, Requests, Stretch};
use crate::sandbox::host::RequestCounts;
use crate::scenario::pacer::Phase;

/// The counters' snapshots a case took.
pub(crate) struct Snapshots<'a> {
    pub sandboxes: u32,
    /// From the first intended start to the end of the case.
    pub window: Duration,
    pub before: RequestCounts,
    pub after: RequestCounts,
    /// Every request the hosts made, from their first sweep to the runners' stop.
    pub whole: RequestCounts,
    pub phases: &'a [Phase],
    /// The counters at each phase's end, for the phases reached.
    pub at_phase_ends: &'a [RequestCounts],
    /// The counters every `step` (offset from the start, counters).
    pub timeline: &'a [(Duration, RequestCounts)],
    pub step: Duration,
    /// False for a black-box runner: its requests are not seen.
    pub visible: bool,
    /// False when the writer ran in the sandbox: which requests fell while a call was in
    /// flight is not known here, so the busy and idle stretches are not measured.
    pub busy_known: bool,
}

/// `n` per minute, to two decimals; 0 over no time.
fn rate(n: u64, minutes: f64) -> f64 {
    if minutes > 0.0 {
        round(n as f64 / minutes, 2)
    } else {
        0.0
    }
}

fn stretch(discovery: u64, data: u64, minutes: f64) -> Stretch {
    Stretch {
        minutes: round(minutes, 3),
        discovery_per_min: rate(discovery, minutes),
        data_per_min: rate(data, minutes),
    }
}

/// Every rate of a case.
pub(crate) fn requests(s: &Snapshots<'_>) -> Requests {
    let used = s.after.minus(&s.before);
    let dirs = f64::from(s.sandboxes.max(1));
    let dir_minutes = s.window.as_secs_f64() * dirs / 60.0;
    let busy_minutes = (used.busy_time.as_secs_f64() / 60.0).min(dir_minutes);
    let (disc_idle, data_idle) = (used.discovery_idle_total(), used.data_idle_total());
    let mut r = Requests {
        not_measured: !s.visible,
        discovery_per_min: rate(used.discovery_total(), dir_minutes),
        data_per_min: rate(used.data_total(), dir_minutes),
        discovery_total: used.discovery_total(),
        data_total: used.data_total(),
        by_kind: used.by_kind(),
        whole_case_by_kind: s.whole.by_kind(),
        ..Requests::default()
    };
    if s.busy_known {
        r.busy = stretch(used.discovery_total() - disc_idle, used.data_total() - data_idle, busy_minutes);
        r.idle = stretch(disc_idle, data_idle, dir_minutes - busy_minutes);
        // Requests are made by live relays alone, so the idle ones are all in live-relay
        // time; only the time they are over narrows to when a relay was alive.
        let alive_minutes = (used.alive_time.as_secs_f64() / 60.0).min(dir_minutes);
        r.idle_relay = Some(stretch(disc_idle, data_idle, (alive_minutes - busy_minutes).max(0.0)));
    }
    let mut prev = s.before;
    let (mut active, mut idle) = ((0u64, 0u64, 0.0f64), (0u64, 0u64, 0.0f64));
    for (p, snap) in s.phases.iter().zip(s.at_phase_ends) {
        let d = snap.minus(&prev);
        prev = *snap;
        let minutes = p.duration.as_secs_f64() / 60.0 * dirs;
        let acc = if p.turns_per_sec > 0.0 { &mut active } else { &mut idle };
        *acc = (acc.0 + d.discovery_total(), acc.1 + d.data_total(), acc.2 + minutes);
        r.phases.push(PhaseRates {
            turns_per_sec: p.turns_per_sec,
            seconds: p.duration.as_secs_f64(),
            discovery_per_min: rate(d.discovery_total(), minutes),
            data_per_min: rate(d.data_total(), minutes),
        });
    }
    r.active_phases = stretch(active.0, active.1, active.2);
    r.idle_phases = stretch(idle.0, idle.1, idle.2);
    // Each point: the rate over the trailing minute (or step, if longer), so sparse events
    // (a window every 25 s) read as a rate, not as spikes.
    let back = (60.0 / s.step.as_secs_f64().max(1e-9)).ceil().max(1.0) as usize;
    let points: Vec<(Duration, RequestCounts)> =
        std::iter::once((Duration::ZERO, s.before)).chain(s.timeline.iter().copied()).collect();
    for k in 1..points.len() {
        let (t, c) = points[k];
        let (t0, c0) = points[k.saturating_sub(back)];
        let minutes = (t - t0).as_secs_f64() / 60.0 * dirs;
        r.timeline.push(RatePoint {
            t_secs: t.as_secs_f64(),
            discovery_per_min: rate(c.minus(&c0).discovery_total(), minutes),
        });
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(discovery: u64, data: u64, idle_share: u64, busy: Duration) -> RequestCounts {
        let mut c = RequestCounts::default();
        c.discovery[0] = discovery;
        c.data[1] = data;
        c.discovery_idle[0] = idle_share;
        c.busy_time = busy;
        c
    }

    /// `sandboxes` dirs over `window`, ending at `end`, no phases, seen, busy known.
    fn plain(sandboxes: u32, window: u64, end: RequestCounts, step: u64) -> Snapshots<'static> {
        Snapshots {
            sandboxes,
            window: Duration::from_secs(window),
            before: RequestCounts::default(),
            after: end,
            whole: end,
            phases: &[],
            at_phase_ends: &[],
            timeline: &[],
            step: Duration::from_secs(step),
            visible: true,
            busy_known: true,
        }
    }

    #[test]
    fn rates_are_per_dir_per_minute_and_split_by_stretch() {
        let phases = [
            Phase { duration: Duration::from_secs(60), turns_per_sec: 1.0 },
            Phase { duration: Duration::from_secs(120), turns_per_sec: 0.0 },
        ];
        let end_active = counts(400, 100, 0, Duration::from_secs(60));
        let end = counts(400 + 16, 100, 16, Duration::from_secs(60));
        let timeline: Vec<(Duration, RequestCounts)> = vec![
            (Duration::from_secs(60), end_active),
            (Duration::from_secs(120), counts(408, 100, 8, Duration::from_secs(60))),
            (Duration::from_secs(180), end),
        ];
        let r = requests(&Snapshots {
            sandboxes: 2,
            window: Duration::from_secs(180),
            before: RequestCounts::default(),
            after: end,
            whole: end,
            phases: &phases,
            at_phase_ends: &[end_active, end],
            timeline: &timeline,
            step: Duration::from_secs(60),
            visible: true,
            busy_known: true,
        });
        // 2 dirs x 3 minutes = 6 dir-minutes.
        assert_eq!(r.discovery_per_min, 69.33);
        assert_eq!(r.data_per_min, 16.67);
        // Active phase: 400 discovery over 2 dir-minutes; idle phases: 16 over 4.
        assert_eq!(r.active_phases.discovery_per_min, 200.0);
        assert_eq!(r.idle_phases.discovery_per_min, 4.0);
        assert_eq!(r.phases.len(), 2);
        // Busy: one minute of calls in flight (summed over dirs) -> 5 dir-minutes idle.
        assert_eq!(r.busy.minutes, 1.0);
        assert_eq!(r.idle.discovery_per_min, 3.2);
        // The timeline: the trailing minute, per dir.
        let t: Vec<f64> = r.timeline.iter().map(|p| p.discovery_per_min).collect();
        assert_eq!(t, vec![200.0, 4.0, 4.0]);
    }

    /// Between agent turns no relay exists: the idle budget's figure is over live-relay
    /// minutes with no call in flight, the dir figure over every dir-minute with none.
    #[test]
    fn the_idle_budget_is_over_live_relay_time_and_the_dir_figure_over_dir_minutes() {
        // 2 dirs x 10 minutes, 1 of them busy; 16 idle discovery requests.
        let ten_minutes = |alive_secs: u64| {
            let mut end = counts(40, 10, 16, Duration::from_secs(60));
            end.alive_time = Duration::from_secs(alive_secs);
            requests(&plain(2, 600, end, 60))
        };
        // Relays alive 3 of the 20 dir-minutes.
        let r = ten_minutes(180);
        assert_eq!((r.idle.minutes, r.idle.discovery_per_min), (19.0, 0.84), "16 over 19 dir-minutes");
        let live = r.idle_relay.expect("measured");
        assert_eq!((live.minutes, live.discovery_per_min), (2.0, 8.0), "16 over 2 live idle minutes");
        // One relay alive the whole case: the two figures agree.
        let r = ten_minutes(1200);
        assert_eq!(r.idle_relay.as_ref(), Some(&r.idle));
    }

    #[test]
    fn nothing_over_no_time_is_zero_not_nan() {
        let r = requests(&Snapshots { visible: false, ..plain(1, 0, RequestCounts::default(), 1) });
        assert_eq!(r.discovery_per_min, 0.0);
        assert!(r.not_measured);
        assert_eq!(r.idle.rate(), None);
    }

    #[test]
    fn busy_and_idle_are_not_measured_when_the_calls_ran_elsewhere() {
        let end = counts(60, 30, 20, Duration::from_secs(30));
        let r = requests(&Snapshots { busy_known: false, ..plain(1, 60, end, 60) });
        assert_eq!(r.discovery_per_min, 60.0, "the totals stand");
        assert_eq!((r.busy.rate(), r.idle.rate()), (None, None));
        assert_eq!(r.idle_relay, None, "no call's flight is seen: not measured");
    }
}
