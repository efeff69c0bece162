//! A conformance battery's result, as `relay-bench conform` grades a runner or a writer
//! (`conform.json`): one verdict per named case, the expectation it was graded against (a
//! line naming the SPEC section it comes from) and the evidence (bytes seen, timings, what
//! was left in the relay dir). Verdicts follow the protocol test suites' habit (Autobahn,
//! h2spec): OK, NON-STRICT (works, but not as the contract says), FAILED, INFORMATIONAL
//! (a figure, not a grade), and INCONCLUSIVE (the implementation could not be observed in
//! time on this machine: no grade).

use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or goes away.
pub(crate) const SCHEMA_VERSION: u32 = 1;

crate::base::named! {
/// Which side of the relay was graded.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Runner,
    Writer,
}
names ["runner", "writer"]
}

crate::base::named! {
/// One case's grade.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// The implementation does what the case asks.
    #[serde(rename = "OK")]
    Ok,
    /// It does, but not as strictly as production.
    #[serde(rename = "NON-STRICT")]
    NonStrict,
    /// It breaks the case's rule.
    #[serde(rename = "FAILED")]
    Failed,
    /// A figure, not a pass or a failure.
    #[serde(rename = "INFORMATIONAL")]
    Informational,
    /// The battery could not tell (the case could not be set up, or it broke).
    #[serde(rename = "INCONCLUSIVE")]
    Inconclusive,
}
names ["OK", "NON-STRICT", "FAILED", "INFORMATIONAL", "INCONCLUSIVE"]
}

/// One case, graded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseResult {
    pub name: String,
    /// The SPEC section the expectation comes from (`§2`).
    pub section: String,
    /// What the implementation is expected to do, in one line.
    pub expectation: String,
    pub verdict: Verdict,
    /// Why this verdict, in one line.
    pub reason: String,
    /// What was seen: bytes, timings, what was left in the dir.
    pub evidence: Vec<String>,
    /// Wall time of the case, in milliseconds.
    pub duration_ms: u64,
}

/// How many cases got each verdict.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Counts {
    pub ok: u32,
    pub non_strict: u32,
    pub failed: u32,
    pub informational: u32,
    #[serde(default, skip_serializing_if = "crate::record::recorder::is_zero")]
    pub inconclusive: u32,
}

/// This machine's pace as the battery measured it at start; every wait was scaled by
/// `factor`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// A trivial command's start to exit (median), in microseconds.
    pub trivial_start_us: u64,
    /// A rename seen by the battery's watch (median), in microseconds.
    pub rename_seen_us: u64,
    /// How much every wait was stretched (1 on an unloaded machine).
    pub factor: f64,
}

/// A whole battery.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConformReport {
    /// The version of this report's JSON schema.
    pub schema_version: u32,
    /// When the battery started (UTC, ISO 8601).
    pub started: String,
    /// The side tested: the runner or the writer.
    pub side: Side,
    /// The implementation's command, as given (placeholders unsubstituted).
    pub command: Vec<String>,
    /// The bound each case ran under, in milliseconds (the deadline case adds the writer's
    /// deadline to it).
    pub case_bound_ms: u64,
    /// Cases by verdict.
    pub counts: Counts,
    /// Every case run, in the battery's order.
    pub cases: Vec<CaseResult>,
    /// The battery was cut short (Ctrl-C): the cases run so far.
    pub interrupted: bool,
    /// This machine's pace at the battery's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
    /// Where the relay dir was, when not a local dir the implementation reaches directly
    /// (`sandbox-agent 0.4.2 at http://…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

impl ConformReport {
    pub(crate) fn recount(&mut self) {
        let mut c = Counts::default();
        for case in &self.cases {
            match case.verdict {
                Verdict::Ok => c.ok += 1,
                Verdict::NonStrict => c.non_strict += 1,
                Verdict::Failed => c.failed += 1,
                Verdict::Informational => c.informational += 1,
                Verdict::Inconclusive => c.inconclusive += 1,
            }
        }
        self.counts = c;
    }

    /// Whether any case FAILED (the battery then exits 1).
    pub fn failed(&self) -> bool {
        self.cases.iter().any(|c| c.verdict == Verdict::Failed)
    }

    /// No case failed, but one could not be graded.
    pub fn inconclusive(&self) -> bool {
        !self.failed() && self.cases.iter().any(|c| c.verdict == Verdict::Inconclusive)
    }
}
