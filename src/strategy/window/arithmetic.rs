//! What an idle relay dir costs under a window source, by arithmetic: the figure a long idle
//! phase must measure (the known-answer tests hold the real loop to it within 2 %).
//!
//! A healthy window source that suspends polling, on a dir with no request, repeats a cycle:
//!
//! - **an idle window that wakes** (production: `idle_wake = true`): the exec, the window
//!   `W_j` (jittered: uniform over [0.8 W, W]), the exec's answer back, the runner's list,
//!   the next exec. A cycle lasts `W_j` plus about two round trips and costs an exec and a
//!   list, plus one safety list for each safety wait that elapses while the window is held:
//!   the loop's wait starts when the exec is sent and ends after the safety wait `S`, and
//!   the window's end reaches the runner a round trip after the exec was sent, so a window
//!   with `W_j + rtt > S` makes a safety list, one with `W_j + rtt > 2 S + rtt` a second, and
//!   so on. A window shorter than the safety wait makes none: the plan's arithmetic of an
//!   exec per window and a list per safety wait (`60/25 + 60/30 = 4.4`) is not what the
//!   design as built does (`2 x 60/22.5 = 5.33`).
//! - **an idle window that does not wake** (`idle_wake = false`): the source re-arms within
//!   the loop's wait, so execs follow each other a round trip apart, and the loop lists once
//!   per safety wait (plus the list's round trip).
//!
//! Rates are per dir per minute; `rtt` is the daemon's mean round trip (two mean legs).

use std::time::Duration;

use super::WindowConfig;

/// The idle cost of one dir, per minute, by arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleCost {
    /// Watch execs a minute.
    pub execs_per_min: f64,
    /// Lists a minute after a window ended (the wake's list).
    pub wake_lists_per_min: f64,
    /// Lists a minute after the safety wait elapsed while a window was held.
    pub safety_lists_per_min: f64,
}

impl IdleCost {
    /// Discovery requests a minute: every exec and every list.
    pub fn discovery_per_min(&self) -> f64 {
        self.execs_per_min + self.wake_lists_per_min + self.safety_lists_per_min
    }
}

/// The expected number of `k >= 1` with `W_j > k * step + offset`, `W_j` uniform over
/// `[lo, hi]` (a point when `lo == hi`).
fn expected_crossings(lo: f64, hi: f64, step: f64, offset: f64) -> f64 {
    let mut n = 0.0;
    for k in 1.. {
        let at = k as f64 * step + offset;
        if at >= hi {
            break;
        }
        n += if hi > lo { ((hi - at) / (hi - lo)).clamp(0.0, 1.0) } else { 1.0 };
    }
    n
}

/// The idle cost of a dir under `cfg`, the loop's `safety_wait` and a mean round trip of
/// `rtt`; `None` for the inline variant (its program carries requests, and its idle cycle
/// is not this arithmetic's).
pub fn idle_cost(cfg: &WindowConfig, safety_wait: Duration, rtt: Duration) -> Option<IdleCost> {
    if cfg.inline {
        return None;
    }
    let w = cfg.clamped_window().as_secs_f64();
    let (lo, hi) = if cfg.jitter { (0.8 * w, w) } else { (w, w) };
    let (s, rtt) = (safety_wait.as_secs_f64(), rtt.as_secs_f64());
    let mean = (lo + hi) / 2.0;
    Some(if cfg.idle_wake {
        let cycle = mean + 2.0 * rtt;
        // The k-th safety wait ends k S + (k - 1) rtt after the exec was sent; the window's
        // end reaches the runner W_j + rtt after it.
        let safety = expected_crossings(lo, hi, s + rtt, -2.0 * rtt);
        IdleCost {
            execs_per_min: 60.0 / cycle,
            wake_lists_per_min: 60.0 / cycle,
            safety_lists_per_min: 60.0 * safety / cycle,
        }
    } else {
        IdleCost { execs_per_min: 60.0 / (mean + rtt), wake_lists_per_min: 0.0, safety_lists_per_min: 60.0 / (s + rtt) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(window: u64, idle_wake: bool, jitter: bool) -> f64 {
        let cfg = WindowConfig { window: Duration::from_secs(window), idle_wake, jitter, ..WindowConfig::default() };
        idle_cost(&cfg, Duration::from_secs(30), Duration::ZERO).unwrap().discovery_per_min()
    }

    /// SPEC §5's figures: the design as built at 25 s (5.33 with jitter, 4.8 without), the
    /// plan's reading (4.4 without jitter, 4.67 with it).
    #[test]
    fn the_spec_figures() {
        assert!((cost(25, true, true) - 5.333).abs() < 1e-3);
        assert!((cost(25, true, false) - 4.8).abs() < 1e-9);
        assert!((cost(25, false, false) - 4.4).abs() < 1e-9);
        assert!((cost(25, false, true) - 4.667).abs() < 1e-3);
    }

    /// A window whose jittered span passes the safety wait adds a safety list for the part
    /// of its windows that do: at 35 s (28-35 s) five in seven windows; at 40 s (32-40 s)
    /// every one, so 3 requests per 36 s: 5.0 a minute.
    #[test]
    fn a_window_past_the_safety_wait_adds_safety_lists() {
        let at = |w| {
            let cfg = WindowConfig { window: Duration::from_secs(w), ..WindowConfig::default() };
            idle_cost(&cfg, Duration::from_secs(30), Duration::ZERO).unwrap()
        };
        assert_eq!(at(25).safety_lists_per_min, 0.0);
        assert_eq!(at(30).safety_lists_per_min, 0.0, "24-30 s never passes 30 s");
        assert!((at(35).discovery_per_min() - (2.0 + 5.0 / 7.0) * 60.0 / 31.5).abs() < 1e-9);
        assert!((at(40).discovery_per_min() - 5.0).abs() < 1e-9);
        // 96-120 s: three safety waits in every window, a fourth never.
        assert!((at(120).safety_lists_per_min - 3.0 * 60.0 / 108.0).abs() < 1e-9);
    }
}
