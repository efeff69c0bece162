//! A run split over machines: `run --shard K/N` runs the K-th of N parts of a scenario, and
//! `merge` joins the parts' run directories into the run one machine would have written.
//!
//! A part is made of whole units: a case, a sweep's point, or a searched case with all its
//! probes (a search's next probe depends on the last ones), and a case stays with the case it
//! is compared with (its ratios and `vs_baseline` gates read both). The units are dealt out
//! by their estimated wall time ([`super::CaseSpec::wall_estimate`], the estimate `list` and
//! `--max-event-log` use), longest first, each to the part with the least so far; nextest's
//! `--partition` and Playwright's `--shard` deal tests by count, which a scenario whose
//! largest point costs a hundred of its smallest cannot use.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Scenario;
use crate::base::units::round;

/// `--shard K/N`: part `index` of `count` parts, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardArg {
    pub index: u32,
    pub count: u32,
}

/// The most parts a run may be split into.
pub(crate) const MAX_SHARDS: u32 = 1000;

/// A `--shard` that is not `K/N` with `1 <= K <= N <= 1000`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is no part of a run: give K/N with 1 <= K <= N <= 1000 (2/3: the second of three parts)")]
pub(crate) struct BadShard(pub String);

impl std::str::FromStr for ShardArg {
    type Err = BadShard;

    fn from_str(s: &str) -> Result<ShardArg, BadShard> {
        let bad = || BadShard(s.to_owned());
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let number = |x: &str| x.trim().parse::<u32>().map_err(|_| bad());
        let (index, count) = (number(k)?, number(n)?);
        if index == 0 || index > count || count > MAX_SHARDS {
            return Err(bad());
        }
        Ok(ShardArg { index, count })
    }
}

impl std::fmt::Display for ShardArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a part of a run records of the whole (summary.json's `shard`): which part it is, the
/// run it is a part of, and the whole scenario's cases and sweeps in order, so `merge` joins
/// the parts without the scenario file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardRecord {
    /// This part, from 1, and how many there are.
    pub index: u32,
    pub count: u32,
    /// The run the part belongs to: a digest of the scenario's text, the overrides it was
    /// run with and relay-bench's version. Parts with different digests are not joined.
    pub digest: String,
    /// Every case of the whole scenario, in its order (a sweep's points among them).
    pub cases: Vec<String>,
    /// Every swept or searched case of the whole scenario, in order.
    pub sweeps: Vec<String>,
    /// The cases and searched cases this part runs.
    pub runs: Vec<String>,
    /// This part's estimated wall time, and a part's on average (seconds).
    pub estimate_secs: f64,
    pub mean_secs: f64,
}

impl ShardRecord {
    /// `part 2 of 3: 4 of the run's cases and searched cases, estimated 134.382 s of wall
    /// time (a part's mean: 134.382 s)`: what the console and the part's report say of it.
    pub(crate) fn describe(&self) -> String {
        let ran = match self.runs.len() {
            0 => "none of the run's cases (the run has fewer units than parts)".to_owned(),
            n => format!("{n} of the run's cases and searched cases"),
        };
        format!(
            "part {} of {}: {ran}, estimated {} s of wall time (a part's mean: {} s)",
            self.index, self.count, self.estimate_secs, self.mean_secs
        )
    }
}

/// One unit of a split: the names [`Scenario::retain_cases`] keeps, and its estimated cost.
#[derive(Debug, Clone)]
struct Unit {
    names: Vec<String>,
    cost: Duration,
}

impl Scenario {
    /// The scenario's units (see the module's text), in the scenario's order.
    fn units(&self) -> Vec<Unit> {
        let repeats = self.repeats();
        let mut units: Vec<Unit> = self
            .cases
            .iter()
            .map(|c| Unit { names: vec![c.name.clone()], cost: c.wall_estimate() * repeats })
            .collect();
        for (w, probe, n) in self.searches() {
            units.push(Unit { names: vec![w.case.clone()], cost: probe.wall_estimate() * n as u32 * repeats });
        }
        // Every case compared with the scenario's baseline: one unit.
        if self.baseline.is_some() {
            let cost = units.iter().map(|u| u.cost).sum();
            return vec![Unit { names: units.into_iter().flat_map(|u| u.names).collect(), cost }];
        }
        // A case and its own baseline together (a searched case's probes compare as it does).
        let probe_baselines = self.probes.iter().map(|(case, p)| (case, &p.baseline));
        let links: Vec<(&String, &String)> = self
            .cases
            .iter()
            .map(|c| (&c.name, &c.baseline))
            .chain(probe_baselines)
            .filter_map(|(case, b)| Some((case, b.as_ref()?)))
            .collect();
        for (case, baseline) in links {
            let find = |units: &[Unit], name: &String| units.iter().position(|u| u.names.contains(name));
            let (Some(a), Some(b)) = (find(&units, case), find(&units, baseline)) else { continue };
            if a != b {
                let (keep, gone) = (a.min(b), a.max(b));
                let moved = units.remove(gone);
                units[keep].names.extend(moved.names);
                units[keep].cost += moved.cost;
            }
        }
        units
    }

    /// Narrows the scenario to part `arg` of its split (see the module's text) and says what
    /// the part records of the whole; the whole is kept ([`Scenario::whole`]) for what a part
    /// reports of it (its assumptions).
    pub(crate) fn shard(&mut self, arg: ShardArg) -> ShardRecord {
        let whole = self.clone();
        let units = self.units();
        let total: Duration = units.iter().map(|u| u.cost).sum();
        let mut order: Vec<usize> = (0..units.len()).collect();
        // Longest first; the scenario's order among equals, so every machine deals alike.
        order.sort_by(|a, b| units[*b].cost.cmp(&units[*a].cost).then(a.cmp(b)));
        let mut load = vec![Duration::ZERO; arg.count as usize];
        let mut part = vec![0usize; units.len()];
        for u in order {
            let least = (0..load.len()).min_by_key(|p| (load[*p], *p)).expect("at least one part");
            load[least] += units[u].cost;
            part[u] = least;
        }
        let mine = arg.index as usize - 1;
        let runs: Vec<String> =
            units.iter().zip(&part).filter(|(_, p)| **p == mine).flat_map(|(u, _)| u.names.clone()).collect();
        let record = ShardRecord {
            index: arg.index,
            count: arg.count,
            digest: self.digest(),
            cases: whole.cases.iter().map(|c| c.name.clone()).collect(),
            sweeps: whole.sweeps.iter().map(|w| w.case.clone()).collect(),
            runs: runs.clone(),
            estimate_secs: round(load[mine].as_secs_f64(), 3),
            mean_secs: round((total / arg.count).as_secs_f64(), 3),
        };
        if runs.is_empty() {
            self.cases.clear();
            self.sweeps.clear();
            self.probes.clear();
        } else {
            self.retain_cases(&runs).expect("a part's names are the scenario's own");
        }
        self.whole = Some(std::sync::Arc::new(whole));
        self.shard = Some(record.clone());
        record
    }

    /// The run this scenario makes, as a digest: relay-bench's version, its text, the
    /// overrides it was read with, its cases (`--case`, `--sweep` narrow and add them) and
    /// each sweep's figures (`--figure`) (FNV-1a, 64 bits: the same on every machine).
    fn digest(&self) -> String {
        let overrides = self.overrides.as_ref().map(|o| o.given.join(" ")).unwrap_or_default();
        let cases: Vec<&str> = self.cases.iter().map(|c| c.name.as_str()).collect();
        let figures: Vec<String> = self
            .sweeps
            .iter()
            .map(|w| format!("{}: {}", w.case, w.figures.iter().map(|m| m.name()).collect::<Vec<_>>().join(",")))
            .collect();
        let text = format!(
            "{}\n{}\n{}\n{}\n{}\n{}",
            env!("CARGO_PKG_VERSION"),
            self.name,
            overrides,
            cases.join("\n"),
            figures.join("\n"),
            self.source
        );
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_k_of_n_and_anything_else_is_refused() {
        assert_eq!("2/3".parse::<ShardArg>().unwrap(), ShardArg { index: 2, count: 3 });
        assert_eq!("1/1".parse::<ShardArg>().unwrap().to_string(), "1/1");
        for bad in ["0/3", "4/3", "3", "a/b", "1/1001", "-1/2", ""] {
            let e = bad.parse::<ShardArg>().unwrap_err();
            assert!(e.to_string().contains("give K/N with 1 <= K <= N"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_decision_maps_parts_hold_every_unit_once_and_the_longest_apart() {
        let whole = Scenario::load("decision-map").unwrap();
        let mut seen: Vec<String> = Vec::new();
        let mut estimates = Vec::new();
        for k in 1..=3 {
            let mut s = whole.clone();
            let r = s.shard(ShardArg { index: k, count: 3 });
            assert_eq!(r.cases, whole.cases.iter().map(|c| c.name.clone()).collect::<Vec<_>>());
            assert_eq!(r.digest, whole.digest());
            seen.extend(r.runs.clone());
            estimates.push(r.estimate_secs);
            // A part's scenario keeps its own cases and searches, and the whole beside it.
            assert!(s.whole.as_ref().is_some_and(|w| w.cases.len() == whole.cases.len()));
            assert!(s
                .sweeps
                .iter()
                .all(|w| r.runs.contains(&w.case) || w.points.iter().all(|p| r.runs.contains(&p.case))));
        }
        seen.sort();
        let mut all: Vec<String> = whole.cases.iter().map(|c| c.name.clone()).collect();
        all.extend(whole.sweeps.iter().filter(|w| w.search.is_some()).map(|w| w.case.clone()));
        all.sort();
        assert_eq!(seen, all, "every case and searched case in exactly one part");
        // The two 10,000-sandbox searches are the two longest units: never in one part.
        let parts: Vec<Vec<String>> =
            (1..=3).map(|k| whole.clone().shard(ShardArg { index: k, count: 3 }).runs).collect();
        assert!(!parts.iter().any(|p| p.contains(&"held-10000".into()) && p.contains(&"rate-10000".into())));
        // A run narrowed by `--case` is another run.
        let mut narrowed = whole.clone();
        narrowed.retain_cases(&["held-100".to_owned()]).unwrap();
        assert_ne!(narrowed.digest(), whole.digest());
        let mean = estimates.iter().sum::<f64>() / 3.0;
        assert!(estimates.iter().all(|e| *e > 0.0 && *e < 2.0 * mean), "{estimates:?}");
    }

    #[test]
    fn a_case_stays_with_its_baseline_and_a_part_may_be_empty() {
        // The default scenario compares every case with local-poll: one unit.
        let mut first = Scenario::load("default").unwrap();
        let all = first.cases.len();
        assert_eq!(first.shard(ShardArg { index: 1, count: 2 }).runs.len(), all);
        let mut second = Scenario::load("default").unwrap();
        let r = second.shard(ShardArg { index: 2, count: 2 });
        assert!(r.runs.is_empty() && second.cases.is_empty() && r.estimate_secs == 0.0, "{r:?}");
    }
}
