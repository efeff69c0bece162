//! This machine's pace, measured when the battery starts: how long a trivial command takes
//! to start and end, and how long a rename takes to be seen by the battery's watch. Every
//! wait a case makes is scaled from it ([`Pace::wait`]), so a loaded machine gives an
//! implementation the time it needs; and a wait that ends with nothing seen is re-measured
//! ([`Pace::slowed`]) before it counts against the implementation.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::observe::Observer;
use crate::base::protocol::FileKind;
use crate::results::conform::Calibration;

/// A trivial command's start-to-exit on an unloaded machine (the reference the factor is
/// taken against).
const REF_START: Duration = Duration::from_millis(2);
/// A rename seen by the watch on an unloaded machine.
const REF_SEEN: Duration = Duration::from_millis(2);
/// The most a wait is stretched: past it, the machine is too slow to grade on.
pub(crate) const MAX_FACTOR: f64 = 10.0;

/// The pace a battery runs at.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    pub start: Duration,
    pub seen: Duration,
    pub factor: f64,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// A trivial command (`true`, else `sh -c :`) started and waited for.
fn trivial() -> Option<Duration> {
    let t0 = Instant::now();
    let ok = Command::new("true").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok()
        || Command::new("sh").args(["-c", ":"]).status().is_ok();
    ok.then(|| t0.elapsed())
}

/// Renames seen by a watch on `dir`: each from just before the rename to its event.
fn renames(dir: &Path, n: usize) -> std::io::Result<Vec<Duration>> {
    let obs = Observer::watch(dir, FileKind::Request)?;
    let mut seen = Vec::new();
    for i in 0..n {
        let name = format!("pace-{i}.req.json");
        let at = super::publish(dir, &name, b"{}")?;
        if let Some(e) = obs.wait_appeared(&name, at, Duration::from_secs(5)) {
            seen.push(e.at - at);
        }
        let _ = std::fs::remove_file(dir.join(&name));
    }
    Ok(seen)
}

impl Pace {
    /// Measures this machine now, in `dir` (made if missing).
    pub(crate) fn measure(dir: &Path) -> std::io::Result<Pace> {
        std::fs::create_dir_all(dir)?;
        let start = median((0..7).filter_map(|_| trivial()).collect());
        let seen = median(renames(dir, 15)?);
        let factor = (start.as_secs_f64() / REF_START.as_secs_f64())
            .max(seen.as_secs_f64() / REF_SEEN.as_secs_f64())
            .clamp(1.0, MAX_FACTOR);
        Ok(Pace { start, seen, factor })
    }

    /// `d` at this machine's pace.
    pub(crate) fn wait(&self, d: Duration) -> Duration {
        d.mul_f64(self.factor)
    }

    /// Measured again now: `Some(pace now)` when the machine is markedly slower than when
    /// the battery started (a wait that saw nothing is then no evidence).
    pub(crate) fn slowed(&self, dir: &Path) -> Option<Pace> {
        let now = Pace::measure(dir).ok()?;
        (now.factor > self.factor * 1.5 && now.factor > 1.5).then_some(now)
    }

    pub(crate) fn calibration(&self) -> Calibration {
        Calibration {
            trivial_start_us: self.start.as_micros() as u64,
            rename_seen_us: self.seen.as_micros() as u64,
            factor: (self.factor * 100.0).round() / 100.0,
        }
    }

    pub(crate) fn line(&self) -> String {
        format!(
            "this machine: a trivial command {:.1} ms, a rename seen in {:.2} ms: waits x{:.2}",
            self.start.as_secs_f64() * 1e3,
            self.seen.as_secs_f64() * 1e3,
            self.factor
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pace_is_measured_and_stretches_waits_by_at_least_one() {
        let t = tempfile::tempdir().unwrap();
        let p = Pace::measure(&t.path().join("pace")).unwrap();
        assert!(p.start > Duration::ZERO && p.seen > Duration::ZERO, "{p:?}");
        assert!((1.0..=MAX_FACTOR).contains(&p.factor));
        assert!(p.wait(Duration::from_secs(1)) >= Duration::from_secs(1));
    }
}
