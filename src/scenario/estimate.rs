//! How long a scenario will take, from its workload alone, before anything runs: a
//! real-clock case takes its schedule (plus a little to start and drain), a virtual one a
//! rough rate of this suite's simulation — per call, per sandbox-minute simulated, per case
//! — measured on a 2-core machine with a release build (`request-budget`, `faults` and
//! `fleet-capacity`); a debug build is about fifteen times slower.

use std::time::Duration;

use super::{Clock, Scenario};
use crate::base::units::wall;

/// Wall time a virtual case spends per call it simulates (release build).
const PER_CALL: Duration = Duration::from_micros(50);
/// ... per sandbox-minute of schedule (the runners' timers, idle or not).
const PER_SANDBOX_MINUTE: Duration = Duration::from_micros(40);
/// ... per case (building it, the reports rewritten after it).
const PER_VIRTUAL_CASE: Duration = Duration::from_millis(300);
/// What a real-clock case takes beyond its schedule: start-up, the last answers, stopping.
const PER_REAL_CASE: Duration = Duration::from_secs(1);
/// How much slower a debug build simulates (its per-case cost is mostly writing reports).
const DEBUG_FACTOR: u32 = 15;

/// A scenario's expected wall time, by clock.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Estimate {
    pub real_cases: usize,
    pub virtual_cases: usize,
    /// The real-clock cases' wall time: their schedules and a little more.
    pub real: Duration,
    /// The virtual cases' wall time at this suite's rough rate.
    pub virtual_wall: Duration,
    /// The schedule one case runs (simulated time for virtual cases).
    pub schedule: Duration,
    /// How many times each case runs (`--repeat`).
    pub repeats: u32,
}

impl Estimate {
    pub fn total(&self) -> Duration {
        self.real + self.virtual_wall
    }

    /// `real`, `virtual` or `real and virtual`.
    pub(crate) fn clocks(&self) -> &'static str {
        match (self.real_cases > 0, self.virtual_cases > 0) {
            (true, true) => "real and virtual",
            (true, false) => "real",
            _ => "virtual",
        }
    }

    /// `about 6m 10s: 3 cases on the real clock (2m of schedule each), 3 virtual (about 1s)`.
    pub(crate) fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.real_cases > 0 {
            let n = self.real_cases;
            parts.push(format!(
                "{n} case{} on the real clock ({} of schedule each)",
                if n == 1 { "" } else { "s" },
                wall(self.schedule)
            ));
        }
        if self.virtual_cases > 0 {
            let n = self.virtual_cases;
            parts.push(format!(
                "{n} virtual case{} ({} simulated each, about {} in all)",
                if n == 1 { "" } else { "s" },
                wall(self.schedule),
                wall(self.virtual_wall)
            ));
        }
        let repeats = if self.repeats > 1 { format!(", each run {} times", self.repeats) } else { String::new() };
        format!("about {}: {}{repeats}", wall(self.total()), parts.join("; "))
    }
}

impl Scenario {
    /// How long this scenario should take here, from each case's own workload (a sweep's
    /// point's sandboxes and length are its own).
    pub fn estimate(&self) -> Estimate {
        // Every repeat counted in full (virtual ones run side by side, as a sweep's points
        // do, which this estimate leaves out for both).
        let repeats = self.repeats();
        let mut e = Estimate { schedule: self.workload.duration(), repeats, ..Estimate::default() };
        let cases = self.cases.iter().map(|c| (c.clock, c.wall_estimate(), 1));
        // A search's probes as many as it should take when its boundary is in its bracket.
        let probes = self.searches().map(|(_, p, n)| (p.clock, p.wall_estimate(), n));
        for (clock, wall, n) in cases.chain(probes) {
            let (count, time) = match clock {
                Clock::Real => (&mut e.real_cases, &mut e.real),
                Clock::Virtual => (&mut e.virtual_cases, &mut e.virtual_wall),
            };
            *count += n;
            *time += wall * n as u32 * repeats;
        }
        e
    }
}

impl super::CaseSpec {
    /// How long this case should take here, run once: a real-clock case its schedule and a
    /// little more, a virtual one this suite's rough rate for its calls and sandbox-minutes.
    pub(crate) fn wall_estimate(&self) -> Duration {
        let wl = &self.workload;
        match self.clock {
            Clock::Real => wl.duration() + PER_REAL_CASE,
            Clock::Virtual => {
                let sandbox_minutes = f64::from(wl.sandboxes) * wl.duration().as_secs_f64() / 60.0;
                let build = if cfg!(debug_assertions) { DEBUG_FACTOR } else { 1 };
                (PER_CALL.mul_f64(wl.planned_calls() as f64) + PER_SANDBOX_MINUTE.mul_f64(sandbox_minutes)) * build
                    + PER_VIRTUAL_CASE
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_real_case_takes_its_schedule_and_a_virtual_one_a_rate() {
        let clock_check = Scenario::load("clock-check").unwrap().estimate();
        assert_eq!((clock_check.real_cases, clock_check.virtual_cases), (3, 3));
        assert_eq!(clock_check.real, Duration::from_secs(3 * 121));
        assert!(clock_check.virtual_wall < clock_check.real, "{clock_check:?}");
        assert_eq!(clock_check.clocks(), "real and virtual");
        assert!(clock_check.describe().starts_with("about 6m"), "{}", clock_check.describe());
        assert!(clock_check.describe().contains("3 cases on the real clock (2m of schedule each)"));
        let budget = Scenario::load("request-budget").unwrap().estimate();
        assert_eq!((budget.real_cases, budget.clocks()), (0, "virtual"));
        assert!(budget.describe().contains("8 virtual cases (1h simulated each"), "{}", budget.describe());
        let over = crate::scenario::Overrides { repeat: Some(3), ..Default::default() };
        let thrice = Scenario::load_with("clock-check", &over).unwrap().estimate();
        assert_eq!(thrice.real, clock_check.real * 3);
        assert_eq!(thrice.virtual_wall, clock_check.virtual_wall * 3);
        assert!(thrice.describe().ends_with(", each run 3 times"), "{}", thrice.describe());
    }
}
