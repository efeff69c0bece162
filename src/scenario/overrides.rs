//! What the command line puts into a scenario: sweeps over the cases `--case` names, and
//! what `run` may override — the clock of every case, the schedule's length, the seed, the
//! number of sandboxes, how many times each case runs (`--clock`, `--duration` or `--scale`,
//! `--seed`, `--sandboxes`, `--repeat`) —
//! applied where the scenario file is read, so every check the file passes holds for the
//! overridden scenario too. An override that cannot apply is refused, naming
//! the flag, the case and why ([`Overrides::refusal`]); one that applies is recorded in the
//! report ([`Applied`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sweep::SweepArg;
use super::Clock;
use crate::base::fields::ScenarioError;
use crate::base::units::wall;

/// How long the schedule is made: to a length, or by a factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Length {
    /// `--duration D`: the whole schedule (warm-up included) lasts `D`.
    To(Duration),
    /// `--scale F`: every phase, the warm-up and each fault's start times `F`.
    Scale(f64),
}

/// What the command line puts into a scenario; nothing by default. A sweep given here
/// replaces the one a case states; `cases` narrows the sweeps to the cases `--case` names
/// (every case when it names none).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--sweep` options: a case's option over several values.
    pub sweeps: Vec<SweepArg>,
    /// `--figure NAME`: what each command-line sweep shows per point, beside its gates'.
    pub figures: Vec<String>,
    /// `--case`: the cases to run (all when empty).
    pub cases: Vec<String>,
    /// `--clock`: every case on this clock.
    pub clock: Option<Clock>,
    /// `--duration` or `--calls`: the schedule's length.
    pub length: Option<Length>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--sandboxes`.
    pub sandboxes: Option<u32>,
    /// `--repeat N`: every case run N times, each repeat with a seed of its own.
    pub repeat: Option<u32>,
    /// The sandbox-agent binary to run (`--sandbox-agent PATH`), for the cases on that host
    /// that name none; nothing in the report changes but the daemon's version.
    pub sandbox_agent: Option<std::path::PathBuf>,
}

/// The largest `--scale`: a thousand times the schedule is a scenario of its own.
pub(crate) const MAX_SCALE: f64 = 1000.0;

/// What was overridden, as a report records it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    /// The flags as given: `--clock virtual`, `--duration 30s`.
    pub given: Vec<String>,
    /// The clock every case ran on (`real` or `virtual`).
    pub clock: Option<Clock>,
    /// The factor every phase, the warm-up and each fault's start were multiplied by.
    pub scale: Option<f64>,
    /// The schedule's length in the scenario file, and as run (seconds).
    pub schedule_secs: Option<f64>,
    pub scaled_schedule_secs: Option<f64>,
    pub seed: Option<u64>,
    pub sandboxes: Option<u32>,
    /// How many times every case ran (`--repeat`); absent: once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
}

/// What a command-line sweep shows per point when neither its case nor `--figure` names
/// any, beside the figures its gates name.
pub(crate) const CLI_SWEEP_FIGURES: [&str; 3] = ["pickup.p50", "completion.p50", "discovery_per_min"];

/// The most repeats `--repeat` takes.
pub(crate) const MAX_REPEAT: u32 = 100;

impl Overrides {
    /// No `run` override (sweeps aside).
    pub(crate) fn run_is_empty(&self) -> bool {
        self.clock.is_none()
            && self.length.is_none()
            && self.seed.is_none()
            && self.sandboxes.is_none()
            && self.repeat.is_none()
    }

    /// Puts the sweeps into the cases they name.
    pub(super) fn put_into(&self, table: &mut toml::Table) -> Result<(), ScenarioError> {
        let sweep: toml::Table = self.sweeps.iter().map(|a| (a.path.clone(), a.spec.clone())).collect();
        let Some(toml::Value::Array(cases)) = table.get_mut("case") else { return Ok(()) };
        let mut names = Vec::new();
        for c in cases.iter_mut().filter_map(toml::Value::as_table_mut) {
            let name = c.get("name").and_then(toml::Value::as_str).unwrap_or_default().to_owned();
            if self.cases.is_empty() || self.cases.contains(&name) {
                c.insert("sweep".into(), toml::Value::Table(sweep.clone()));
                // What each point shows: the case's own `figures`, the command line's, else
                // the headline figures (a case gated on invariants alone would show none).
                let mut figures = c.get("figures").and_then(toml::Value::as_array).cloned().unwrap_or_default();
                let given: Vec<&str> = if self.figures.is_empty() && figures.is_empty() {
                    CLI_SWEEP_FIGURES.to_vec()
                } else {
                    self.figures.iter().map(String::as_str).collect()
                };
                for f in given {
                    if !figures.iter().any(|x| x.as_str() == Some(f)) {
                        figures.push(toml::Value::String(f.to_owned()));
                    }
                }
                c.insert("figures".into(), toml::Value::Array(figures));
            }
            names.push(name);
        }
        if let Some(bad) = self.cases.iter().find(|n| !names.contains(n)) {
            return Err(ScenarioError {
                file: "--sweep".into(),
                key: bad.clone(),
                msg: format!(
                    "sweeps the cases --case names, and no [[case]] is named {bad:?}; cases: {}",
                    names.join(", ")
                ),
            });
        }
        Ok(())
    }

    /// The flags as a person gave them.
    pub fn flags(&self) -> Vec<String> {
        let length = self.length.map(|l| match l {
            Length::To(d) => format!("--duration {}", wall(d)),
            Length::Scale(x) => format!("--scale {x}"),
        });
        [
            self.clock.map(|c| format!("--clock {}", c.name())),
            length,
            self.seed.map(|s| format!("--seed {s}")),
            self.sandboxes.map(|n| format!("--sandboxes {n}")),
            self.repeat.map(|n| format!("--repeat {n}")),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The factor a schedule of `total` is scaled by (1: unchanged).
    pub(crate) fn factor(&self, total: Duration) -> f64 {
        match self.length {
            Some(Length::To(d)) if !total.is_zero() => d.as_secs_f64() / total.as_secs_f64(),
            Some(Length::Scale(x)) => x,
            _ => 1.0,
        }
    }

    /// `d` scaled by the factor `f` (whole nanoseconds).
    pub fn scaled(d: Duration, f: f64) -> Duration {
        if f == 1.0 {
            d
        } else {
            Duration::from_nanos((d.as_nanos() as f64 * f).round() as u64)
        }
    }

    /// What the report records of these overrides, for a schedule of `total` in the file.
    pub fn applied(&self, total: Duration) -> Option<Applied> {
        if self.run_is_empty() {
            return None;
        }
        let f = self.length.map(|_| self.factor(total));
        Some(Applied {
            given: self.flags(),
            clock: self.clock,
            scale: f,
            schedule_secs: f.map(|_| total.as_secs_f64()),
            scaled_schedule_secs: f.map(|f| Overrides::scaled(total, f).as_secs_f64()),
            seed: self.seed,
            sandboxes: self.sandboxes,
            repeat: self.repeat,
        })
    }

    /// An error of the scenario with these overrides, where the file alone had none: said as
    /// the flags' refusal, naming the case it concerns (`case[2].host` is case `names[2]`).
    pub fn refusal(&self, e: ScenarioError, names: &[String]) -> ScenarioError {
        let case = e
            .key
            .strip_prefix("case[")
            .and_then(|rest| rest.split(']').next())
            .and_then(|i| i.parse::<usize>().ok())
            .and_then(|i| names.get(i));
        let msg = match case {
            Some(name) => format!("cannot apply to case {name:?} (`{}`): {}", e.key, e.msg),
            None => format!("cannot apply (`{}`): {}", e.key, e.msg),
        };
        ScenarioError { file: e.file, key: self.flags().join(" "), msg }
    }
}

impl Applied {
    /// `--clock virtual`, `--duration 30s (the 4m schedule scaled by 0.125)`, ...
    pub(crate) fn describe(&self) -> String {
        self.given
            .iter()
            .map(|g| match (g.starts_with("--duration") || g.starts_with("--scale"), self.schedule_secs, self.scale) {
                (true, Some(from), Some(f)) => format!(
                    "`{g}` (the {} schedule scaled by {})",
                    wall(crate::base::units::secs(from)),
                    crate::base::units::readable(f, 3)
                ),
                _ => format!("`{g}`"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_factors_and_what_is_recorded() {
        let o = Overrides {
            sweeps: Vec::new(),
            figures: Vec::new(),
            cases: Vec::new(),
            clock: Some(Clock::Virtual),
            length: Some(Length::To(Duration::from_secs(30))),
            seed: Some(5),
            sandboxes: Some(2),
            repeat: None,
            sandbox_agent: None,
        };
        assert_eq!(o.flags(), ["--clock virtual", "--duration 30s", "--seed 5", "--sandboxes 2"]);
        assert_eq!(o.factor(Duration::from_secs(240)), 0.125);
        let a = o.applied(Duration::from_secs(240)).unwrap();
        assert_eq!((a.scale, a.scaled_schedule_secs), (Some(0.125), Some(30.0)));
        assert_eq!(
            a.describe(),
            "`--clock virtual`, `--duration 30s` (the 4m schedule scaled by 0.125), `--seed 5`, `--sandboxes 2`"
        );
        assert!(Overrides::default().applied(Duration::from_secs(1)).is_none());
        let e = ScenarioError { file: "f".into(), key: "case[1].host".into(), msg: "needs the real clock".into() };
        let r = o.refusal(e, &["a".into(), "daemon".into()]);
        assert_eq!(r.key, "--clock virtual --duration 30s --seed 5 --sandboxes 2");
        assert_eq!(r.msg, "cannot apply to case \"daemon\" (`case[1].host`): needs the real clock");
    }
}
