//! Why a scenario's run failed ([`BenchError`]), and whose doing that is: the user's input
//! (a path, a runner command: exit 2), this machine (a full disk under the run directory:
//! exit 7) or relay-bench itself.

use crate::engine::EngineError;
use crate::report::publish::OutputError;

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("--out {path}: cannot create: {source}")]
    OutDir { path: String, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error("case {case:?}: {source}")]
    Case { case: String, source: EngineError },
    /// A sweep's point's own event log or calls.csv.
    #[error(transparent)]
    Part(#[from] crate::engine::points::PartFailed),
    #[error("case {case:?}: {part}: {why}")]
    Unavailable { case: String, part: String, why: String },
    #[error(transparent)]
    EventLog(#[from] crate::engine::logplan::TooLarge),
    /// A search's probe would not read (a value its option refuses, past the bracket).
    #[error("case {case:?}: {why}")]
    Search { case: String, why: crate::base::fields::ScenarioError },
}

impl BenchError {
    /// Whether the user can fix it (a path, a runner command), rather than something broken
    /// inside.
    pub(crate) fn is_bad_input(&self) -> bool {
        use crate::base::fsio::is_refusal;
        match self {
            BenchError::Output(e) => e.refused(),
            BenchError::Write { source, .. } => is_refusal(source),
            BenchError::Part(p) => is_refusal(&p.source),
            // A daemon binary the case names (or found installed) that is no daemon.
            BenchError::Case { source: EngineError::Host(e), .. } => crate::sandbox::host::is_not_a_daemon(e),
            // A runner that cannot start is the case's command (a black-box runner), not us.
            _ => matches!(
                self,
                BenchError::OutDir { .. }
                    | BenchError::Unavailable { .. }
                    | BenchError::Search { .. }
                    | BenchError::EventLog(_)
                    | BenchError::Case { source: EngineError::NotReady { said_why: true, .. }, .. }
            ),
        }
    }

    /// This machine's failure while the run wrote its files (a full disk, ...), if it is one.
    pub(crate) fn environment(&self) -> Option<&'static str> {
        use crate::base::fsio::environment_failure;
        match self {
            BenchError::Output(e) => e.environment(),
            BenchError::Write { source, .. } | BenchError::OutDir { source, .. } => environment_failure(source),
            BenchError::Part(p) => environment_failure(&p.source),
            _ => None,
        }
    }
}
