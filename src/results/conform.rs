//! A conformance battery's result, as `relay-bench conform` grades a runner or a writer
//! (`conform.json`): one verdict per named case, the expectation it was graded against (a
//! line naming the SPEC section it comes from) and the evidence (bytes seen, timings, what
//! was left in the relay dir). Verdicts follow the protocol test suites' habit (Autobahn,
//! h2spec): OK, NON-STRICT (works, but not as the contract says), FAILED, INFORMATIONAL
//! (a figure, not a grade).

use serde::{Deserialize, Serialize};

/// Bumped when a field changes meaning or goes away.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// Which side of the relay was graded.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Runner,
    Writer,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Runner => "runner",
            Side::Writer => "writer",
        }
    }
}

/// One case's grade.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    #[serde(rename = "OK")]
    Ok,
    #[serde(rename = "NON-STRICT")]
    NonStrict,
    #[serde(rename = "FAILED")]
    Failed,
    #[serde(rename = "INFORMATIONAL")]
    Informational,
}

impl Verdict {
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::NonStrict => "NON-STRICT",
            Verdict::Failed => "FAILED",
            Verdict::Informational => "INFORMATIONAL",
        }
    }
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
}

/// A whole battery.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConformReport {
    pub schema_version: u32,
    /// When the battery started (UTC, ISO 8601).
    pub started: String,
    pub side: Side,
    /// The implementation's command, as given (placeholders unsubstituted).
    pub command: Vec<String>,
    /// The bound each case ran under, in milliseconds (the deadline case adds the writer's
    /// deadline to it).
    pub case_bound_ms: u64,
    pub counts: Counts,
    pub cases: Vec<CaseResult>,
    /// The battery was cut short (Ctrl-C): the cases run so far.
    pub interrupted: bool,
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
            }
        }
        self.counts = c;
    }

    pub fn failed(&self) -> bool {
        self.cases.iter().any(|c| c.verdict == Verdict::Failed)
    }

    pub(crate) fn to_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(self).map(|s| s + "\n")
    }
}
