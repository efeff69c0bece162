//! The result types every exporter reads: one [`CaseResult`] per case and the run's
//! [`Summary`] (the shape of `summary.json`, `schema_version` 1).

use crate::base::fsio::{read_bounded, Bound, BoundedReadError};
use serde::{Deserialize, Serialize};

use crate::events::pairing::BreachKind;
use crate::record::recorder::{LatencyStats, Measure, Recording};
use crate::results::calibration::Calibration;
use crate::results::env::Environment;
use crate::results::verdict::{Case as VerdictCase, Verdict};
use crate::scenario::gate::{FleetMetric, Gate, GateResult, Metric, Phase};
use crate::scenario::Clock;
use crate::strategy::PickupDefinition;

pub(crate) use crate::results::counts::{PhaseRates, RatePoint, Requests, RunnerStats, Stretch, Violations};

pub(crate) use comparison::Comparison;
pub(crate) use latencies::Latencies;

pub(crate) const SCHEMA_VERSION: u32 = 1;

/// The largest summary.json read, and written: a run of the most cases a scenario may hold
/// ([`crate::scenario::MAX_CASES`]), each repeated the most times `--repeat` allows, is
/// written within it (compact JSON past [`PRETTY_SUMMARY_BYTES`]); the writer refuses
/// anything larger rather than write a summary the reader would refuse.
pub(crate) const MAX_SUMMARY_BYTES: u64 = 256 << 20;

/// The largest summary.json written indented for people; a larger one is written compact
/// (a third of the size: a run of many cases repeated many times).
pub(crate) const PRETTY_SUMMARY_BYTES: usize = 32 << 20;

/// Why a summary.json could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    #[error(transparent)]
    Read(#[from] BoundedReadError),
    #[error("{path}: not a relay-bench summary: {why}")]
    Parse { path: String, why: String },
    #[error("{path}: `results[{i}].case`: {why}")]
    CaseName { path: String, i: usize, why: crate::scenario::NameError },
    #[error(
        "{path}: schema_version {found}: this relay-bench ({}) reads schema_version {SCHEMA_VERSION} only; \
         read it with the relay-bench that wrote it",
        env!("CARGO_PKG_VERSION")
    )]
    Version { path: String, found: String },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calls {
    /// Calls in the schedule (warm-up included).
    pub scheduled: u64,
    /// Calls the writers started.
    pub started: u64,
    /// Calls whose answer the writer read.
    pub completed: u64,
    pub ok: u64,
    pub error: u64,
    pub paused: u64,
    /// Started calls that never got their answer (timeout, publish error); a call cut off by
    /// an interrupt is counted under `interrupted` instead.
    pub lost: u64,
    /// Answers or requests seen twice (pairing: duplicate response + duplicate request).
    pub duplicated: u64,
    pub timeout: u64,
    pub id_collision: u64,
    pub publish_error: u64,
    /// Requests this machine failed to publish (a full disk, a quota, a read-only or failing
    /// filesystem): never visible, so not lost by the relay; the run's exit code says so.
    #[serde(default, skip_serializing_if = "crate::record::recorder::is_zero")]
    pub environment: u64,
    pub interrupted: u64,
    /// Warm-up calls, run but not in the histograms.
    pub warmup: u64,
    /// Answered calls not in the histograms either: the writer read an answer whose runner
    /// half never reached the recorder (an answer no runner announced). 0 in a sound run.
    #[serde(default)]
    pub unmeasured: u64,
    /// Why calls were lost or doubled, by chain of what happened (`lost_by_cause`,
    /// `duplicated_by_cause`), tools run after their writer gave up, an example call each.
    #[serde(flatten)]
    pub causes: crate::record::recorder::CauseReport,
}

/// One case's results, as summary.json holds them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    /// The case's name.
    pub case: String,
    /// The host the runner talked to, described.
    pub host: String,
    /// What the host models: its latency profile, or none.
    pub host_params: String,
    /// The latency legs the emulated daemon actually paid (one way, µs); null when local.
    pub injected_leg_us: Option<LatencyStats>,
    /// The runner strategy's name.
    pub strategy: String,
    /// Its parameters, as a line.
    pub strategy_params: String,
    /// The options this case sets away from production's relay as built (SPEC §8); empty:
    /// the case is production's design. `None`: a run from before they were recorded,
    /// which is not production's design either ([`DEPARTURES_NOT_RECORDED`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub departures: Option<Vec<crate::strategy::Departure>>,
    /// Another design than production's (a followed stream, an external program): its
    /// departures are no change of production's defaults.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub other_design: bool,
    /// The writer strategy's name.
    pub writer: String,
    /// Its parameters, as a line.
    pub writer_params: String,
    /// `real`: timings come from the machine's clock; `virtual`: from a simulated clock
    /// over an in-memory sandbox (deterministic per seed; not this machine's speed).
    pub clock: Clock,
    /// Sandboxes (relay dirs) in the case.
    pub sandboxes: u32,
    /// The workload's seed (under `--repeat`, the first repeat's; `repeat.seeds` has all).
    /// Absent: a run from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Seconds from the first intended start to the last answer (request rates use it);
    /// on the virtual clock, simulated seconds.
    pub window_secs: f64,
    /// Seconds of this machine's time the case took to run (every repeat's, summed).
    /// Absent: a run from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_secs: Option<f64>,
    /// Calls by how they ended.
    pub calls: Calls,
    /// Every measure's percentiles, in microseconds: `latency_us` and `schedule_lag_us` (how
    /// late the pacer started calls against their intended start) in summary.json.
    #[serde(flatten)]
    pub measures: Latencies,
    /// Requests to the host, by kind and class, and their rates.
    pub requests: Requests,
    /// Breaches of the pairing invariant, by kind.
    pub pairing_violations: Violations,
    /// Relay files (requests, responses, temp names) left in the dirs after the case.
    pub leftover_files: u64,
    /// The runners' own counts (lists, pickups, errors).
    pub runner: RunnerStats,
    /// Measures this case cannot take, and why (a black-box runner hides its wake).
    #[serde(default)]
    pub unavailable: Vec<String>,
    /// What pickup is timed to here; `None`: a run from before it was recorded (see
    /// [`CaseResult::pickup_defined_as`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pickup_definition: Option<PickupDefinition>,
    /// The in-sandbox side when it ran in the sandbox itself (`in_sandbox = true`): how it
    /// got there and how well the two clocks were joined. Absent: it ran on this machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_side: Option<SandboxSide>,
    /// One row per scheduled fault: when, how detected, how recovered, the calls it touched.
    #[serde(default)]
    pub faults: Vec<crate::scenario::fault::FaultRow>,
    /// The fleet: agent turns, and the remote side as the organisation saw it. Absent: a run
    /// from before the fleet was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<crate::results::fleet::FleetResult>,
    /// Things survived and said (malformed files, failed deletes, watch errors...).
    pub notices: Vec<String>,
    /// Every notice said, repeats included.
    pub notices_total: u64,
    /// Writes of the relay this machine failed (a full disk, a quota, a read-only or failing
    /// filesystem): the run's failure, not the relay's (exit 7).
    #[serde(default, skip_serializing_if = "crate::record::recorder::is_zero")]
    pub environment_failures: u64,
    /// Each of the case's gates and whether it held.
    pub gates: Vec<GateResult>,
    /// The rollout gates this case was judged on (the verdict's, not the case's pass).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rollout: Vec<GateResult>,
    /// Whether this case meets every rollout gate (`None`: the scenario declares none). A
    /// case's `pass` is its own gates'; a rollout gate it misses is said here, in its gates
    /// column and in JUnit, never hidden behind a passing `pass`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_pass: Option<bool>,
    /// This case against the scenario's baseline case, when it has one.
    pub vs_baseline: Option<Comparison>,
    /// `run --repeat N`: each repeat's seed and every figure's spread; the figures above
    /// are then the medians across repeats ([`crate::results::repeat`]). Absent: run once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<crate::results::repeat::Repeats>,
    /// The case was cut short.
    pub interrupted: bool,
    /// A search's probe stopped once a `lost` gate had failed for good: its figures are of
    /// the part that ran (under `--repeat`, the first repeat that stopped). Absent: it ran to
    /// its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<crate::results::stopped::StoppedEarly>,
    /// Every gate of the case held.
    pub pass: bool,
    /// The histograms behind the figures (written as `.hgrm` / `.hlog`, not in the JSON).
    #[serde(skip)]
    pub hdr: Option<std::sync::Arc<crate::record::recorder::CaseHdr>>,
}

/// The writer and the watch program ran in the sandbox, uploaded and started through its
/// daemon; the writer's times were brought back and put on this machine's clock.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SandboxSide {
    /// Where in the sandbox the case's files were (removed after the case).
    pub root: String,
    /// What the daemon's binary says to `--version`, when it could be asked.
    pub daemon_version: Option<String>,
    /// The relay-bench binary uploaded (bytes), and how long the upload took.
    pub program_bytes: u64,
    pub upload_ms: f64,
    /// The sandbox's clock minus this machine's, at the start.
    pub clock_offset_ms: f64,
    /// At most this far off (half the best round trip): measures that join the two clocks
    /// (wake, pickup, relay overhead) carry it; completion, read on the sandbox's clock
    /// alone, does not.
    pub clock_uncertainty_ms: f64,
    /// How fast the offset moved between the readings before and after the case.
    pub clock_drift_ppm: f64,
    pub clock_readings: u32,
}

/// What an archived case's `departures` reads as when its run did not record them.
pub(crate) const DEPARTURES_NOT_RECORDED: &str = "not recorded (a run from before departures were)";

impl CaseResult {
    /// Where a call's time goes, as mean milliseconds: wake, wake to pickup, handler, answer
    /// publication, hop 1; `None` unless every step was measured (the time-breakdown chart).
    pub(crate) fn breakdown_ms(&self) -> Option<[f64; 5]> {
        let mean_ms = |s: &LatencyStats| (s.count > 0).then(|| s.mean / 1000.0);
        let mean = |m: Measure| mean_ms(self.latency(m));
        let (wake, pickup) = (mean(Measure::Wake)?, mean(Measure::Pickup)?);
        Some([
            wake,
            (pickup - wake).max(0.0),
            mean(Measure::Handler)?,
            mean(Measure::AnswerPublish)?,
            mean(Measure::Hop1)?,
        ])
    }

    pub(crate) fn fill_from(&mut self, rec: &Recording) {
        let c = &rec.calls;
        self.calls.started = c.started;
        self.calls.completed = c.completed;
        self.calls.ok = c.ok;
        self.calls.error = c.error;
        self.calls.paused = c.paused;
        self.calls.lost = c.started.saturating_sub(c.completed + c.id_collision + c.interrupted + c.environment);
        self.calls.duplicated =
            rec.pairing.count(BreachKind::DuplicateResponse) + rec.pairing.count(BreachKind::DuplicateRequest);
        self.calls.timeout = c.timeout;
        self.calls.id_collision = c.id_collision;
        self.calls.publish_error = c.publish_error;
        self.calls.environment = c.environment;
        self.calls.interrupted = c.interrupted;
        self.calls.warmup = c.warmup;
        self.calls.unmeasured = rec.unmeasured;
        self.calls.causes = rec.causes.clone();
        self.measures = Latencies::from_fn(|m| rec.stats(m));
        self.pairing_violations = Violations::of(&rec.pairing);
        self.notices = rec.notices.clone();
        self.notices_total = rec.notices_total;
        self.environment_failures = rec.environment_failures;
        if let Some(e) = &rec.log_error {
            self.notices.push(e.clone());
            self.notices_total += 1;
        }
    }

    /// What this case's pickup is timed to. A run from before it was recorded is read from
    /// what it did record: only a black-box runner's requests are not measured.
    pub(crate) fn pickup_defined_as(&self) -> PickupDefinition {
        self.pickup_definition.unwrap_or(if self.requests.not_measured {
            PickupDefinition::RequestGone
        } else {
            PickupDefinition::HandlerStart
        })
    }

    /// The statistics of one measure.
    pub fn latency(&self, m: Measure) -> &LatencyStats {
        self.measures.get(m)
    }

    /// The rollout gates this case met, of how many (`None`: the scenario declares none).
    pub(crate) fn rollout_met(&self) -> Option<(usize, usize)> {
        (!self.rollout.is_empty()).then(|| (self.rollout.iter().filter(|g| g.pass).count(), self.rollout.len()))
    }

    /// A gate's verdict on this case; a `fleet.worst.*` figure says which phase it came from
    /// (`1.36 in the warm-up`), unless it is a median across repeats.
    fn evaluate(&self, g: &Gate) -> GateResult {
        let mut r = g.evaluate(self.metric(g.metric));
        let phase = match (g.metric, &self.fleet) {
            (Metric::Fleet(FleetMetric::Phased(Phase::Worst, f)), Some(fleet)) if self.repeat.is_none() => {
                fleet.worst(*f).map(|(_, from)| from)
            }
            _ => None,
        };
        if let (Some(from), Some(_)) = (phase, r.observed) {
            r.observed_text = format!("{} {}", r.observed_text, from.in_words());
        }
        r
    }

    /// Evaluates the gates and sets `pass` (an interrupted case never passes), and the
    /// rollout gates, which make the run's verdict instead.
    pub(crate) fn judge(&mut self, gates: &[Gate], rollout: &[Gate]) {
        self.gates = gates.iter().map(|g| self.evaluate(g)).collect();
        self.rollout = rollout.iter().map(|g| self.evaluate(g)).collect();
        self.rollout_pass = (!self.rollout.is_empty()).then(|| self.rollout.iter().all(|g| g.pass));
        self.pass = !self.interrupted && self.runner.stuck == 0 && self.gates.iter().all(|g| g.pass);
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// A run's results: summary.json.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// The version of summary.json's schema.
    pub schema_version: u32,
    /// The relay-bench that ran it.
    pub tool: Tool,
    /// The scenario's name.
    pub scenario: String,
    /// Where the scenario came from: an embedded name or a file's path.
    pub scenario_origin: String,
    /// The scenario's description.
    pub description: String,
    /// UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub started_at: String,
    /// This machine: its system, its cores, the relay dirs' filesystem, its inotify limits, the build.
    pub environment: Environment,
    /// This machine's floor, measured before the cases (real clock).
    pub calibration: Option<Calibration>,
    /// Every case's results, in the scenario's order.
    pub results: Vec<CaseResult>,
    /// Cases of the scenario not run (the run was interrupted first).
    pub cases_not_run: Vec<String>,
    /// The scenario's sweeps: their axes, points and best (none: no case is swept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweeps: Vec<crate::results::sweep::SweepResult>,
    /// The case the others are compared with.
    pub baseline: Option<String>,
    /// What `run` overrode of the scenario file (`--clock`, `--duration`, `--scale`,
    /// `--seed`, `--sandboxes`). Absent: nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overrides: Option<crate::scenario::Applied>,
    /// The rollout verdict ([`Verdict::of`] the results), computed once when the results
    /// change. Absent: a run from before verdicts were stored (its reports say none is
    /// stored and infer none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// What the run assumes and does not measure, each with its source. Absent: a run from
    /// before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumptions: Option<Vec<crate::results::assumptions::Assumption>>,
    /// The run was cut short.
    pub interrupted: bool,
    /// Every gate of every case held.
    pub pass: bool,
    /// A part of a run split over machines (`run --shard K/N`), which `merge` joins with the
    /// other parts. Absent: a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::scenario::shard::ShardRecord>,
}

impl Summary {
    /// This relay-bench: its name and version.
    pub fn tool() -> Tool {
        Tool { name: env!("CARGO_PKG_NAME").into(), version: env!("CARGO_PKG_VERSION").into() }
    }

    /// Fills each case's comparison with its baseline (its own, else the scenario's), once
    /// that baseline has run. `own` gives a case's own baseline by case name.
    pub fn compare(&mut self, own: impl Fn(&str) -> Option<String>) {
        let snapshot = self.results.clone();
        for r in self.results.iter_mut() {
            let Some(name) = own(&r.case).or_else(|| self.baseline.clone()).filter(|b| *b != r.case) else { continue };
            if let Some(base) = snapshot.iter().find(|b| b.case == name) {
                r.vs_baseline = Some(Comparison::of(base, r));
            }
        }
    }

    /// Reads a run's `summary.json`; `path` is the file or the run directory holding it.
    /// The file is read as every run-directory file is: a regular file, no link followed,
    /// at most [`MAX_SUMMARY_BYTES`].
    pub fn read(path: &std::path::Path) -> Result<Summary, SummaryError> {
        let file = if path.is_dir() { path.join("summary.json") } else { path.to_path_buf() };
        let at = || file.display().to_string();
        let bytes = read_bounded(&file, Bound::new("a run's summary.json", MAX_SUMMARY_BYTES))?;
        let parse = |why: String| SummaryError::Parse { path: at(), why };
        // The version first: a summary of another schema is named as such, not as a field
        // this one lacks (nor read as this one when its fields happen to fit). Read apart
        // from the rest (through a `Value`, the maps' key order would be lost).
        #[derive(Deserialize)]
        struct Version {
            schema_version: Option<serde_json::Value>,
        }
        let version: Version = serde_json::from_slice(&bytes).map_err(|e| parse(e.to_string()))?;
        match version.schema_version {
            Some(v) if v.as_u64() == Some(u64::from(SCHEMA_VERSION)) => {}
            Some(v) => return Err(SummaryError::Version { path: at(), found: v.to_string() }),
            None => return Err(parse("it has no schema_version".into())),
        }
        let mut summary: Summary = serde_json::from_slice(&bytes).map_err(|e| parse(e.to_string()))?;
        // A sweep's marks and counts are its points' cases' standings, read again here: a run
        // written when a point's mark was its own gates alone reads as its results say.
        summary.settle_sweeps();
        // Case names become paths under the run directory (`hdr/<case>/`): one that would
        // leave it is refused here, for every reader at once.
        for (i, r) in summary.results.iter().enumerate() {
            crate::scenario::check_case_name(&r.case).map_err(|why| SummaryError::CaseName { path: at(), i, why })?;
        }
        Ok(summary)
    }

    /// Each sweep's points from the cases run so far (whether each meets every gate, its
    /// rollout gates included; its figures), and its best.
    pub(crate) fn settle_sweeps(&mut self) {
        let results = &self.results;
        for w in &mut self.sweeps {
            w.settle(|case, figures| {
                let r = results.iter().find(|r| r.case == case)?;
                Some((r.standing().meets_every_gate(), figures.iter().map(|m| r.metric(*m)).collect()))
            });
        }
    }

    /// Puts the results in the run's order: the scenario's cases (`cases`, a sweep's points
    /// among them) in order, then each searched case's probes, sweep by sweep, in the order
    /// they were probed. A run split over machines (`merge`) and a whole one end alike.
    pub(crate) fn order_results(&mut self, cases: &[String]) {
        let sweeps = &self.sweeps;
        let key = |case: &str| {
            if let Some(i) = cases.iter().position(|c| c == case) {
                return (0, i, 0);
            }
            sweeps
                .iter()
                .enumerate()
                .find_map(|(k, w)| Some((1, k, w.points.iter().position(|p| p.case == case)?)))
                .unwrap_or((2, 0, 0))
        };
        self.results.sort_by_cached_key(|r| key(&r.case));
    }

    /// The verdict and `pass` from the results: every case passed, and production as built
    /// met every rollout gate it was given.
    pub(crate) fn recompute_pass(&mut self) {
        // A sweep's points draw the boundaries; the verdict's gates judge the stated cases.
        let swept = |case: &str| self.sweeps.iter().any(|s| s.points.iter().any(|p| p.case == case));
        let cases: Vec<VerdictCase<'_>> = self
            .results
            .iter()
            .filter(|r| !swept(&r.case))
            .map(|r| VerdictCase {
                name: &r.case,
                departures: r.departures.as_deref(),
                clock: r.clock,
                interrupted: r.interrupted,
                rollout: &r.rollout,
            })
            .collect();
        let mut verdict = Verdict::of(&cases);
        verdict.boundaries = crate::results::boundary::boundaries(&self.sweeps, |name| {
            let r = self.results.iter().find(|r| r.case == name && !r.interrupted)?;
            let round_trip_ms =
                r.injected_leg_us.as_ref().filter(|l| l.count > 0).map(|l| (2.0 * l.p50 / 100.0).round() / 10.0);
            let stopped_early = r.stopped_early.is_some();
            Some(crate::results::boundary::PointCase { round_trip_ms, rollout: &r.rollout, stopped_early })
        });
        verdict.recommendation = recommend::recommend(&self.results, &self.sweeps, verdict.pass, &self.scenario);
        self.pass = !self.interrupted
            && self.cases_not_run.is_empty()
            && self.results.iter().all(|r| r.pass)
            && verdict.pass != Some(false);
        self.verdict = Some(verdict);
    }
}

mod comparison;
mod figures;
mod latencies;
mod recommend;
pub(crate) mod repeats;
#[cfg(test)]
mod tests;
