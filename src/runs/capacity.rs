//! `relay-bench daemon-capacity` wired to its engine ([`crate::engine::capacity`]): the
//! report directory (`--out`, locked, or a new one under `reports/`), taken only once the
//! daemon answers, and the report rewritten there after every step of the ramp.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::signal::Signal;
use crate::engine::capacity::{CapacityError, CapacityPlan, Session};
use crate::report::outdir::{take_new, utc_stamps, OutDirError, OutLock};
use crate::report::output::Moment;
use crate::report::publish::OutputError;
use crate::report::side::publish;
use crate::results::capacity::{CapacityReport, Step};

use super::plan::DEFAULT_REPORTS;

/// What stopped a capacity run: the engine's refusal, or the report's directory.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CapacityRunError {
    #[error(transparent)]
    Capacity(#[from] CapacityError),
    #[error(transparent)]
    OutDir(#[from] OutDirError),
    #[error("cannot create the report directory {path}: {source}")]
    ReportDir { path: String, source: std::io::Error },
    #[error(transparent)]
    Output(#[from] OutputError),
}

impl CapacityRunError {
    /// Whether the flags (or what they name) were wrong, not relay-bench.
    pub(crate) fn is_bad_input(&self) -> bool {
        match self {
            CapacityRunError::Capacity(e) => e.is_bad_input(),
            CapacityRunError::OutDir(_) => true,
            CapacityRunError::ReportDir { .. } | CapacityRunError::Output(_) => false,
        }
    }
}

/// A finished ramp: its report, where it was written, the console table.
#[derive(Debug)]
pub(crate) struct Finished {
    pub report: CapacityReport,
    pub dir: PathBuf,
    pub console: Vec<u8>,
}

/// Runs the plan: the daemon, the ramp, the cleanup, the report. `progress` hears each step.
pub(crate) async fn run(
    plan: CapacityPlan,
    interrupt: Arc<Signal>,
    progress: &mut dyn FnMut(&Step),
) -> Result<Finished, CapacityRunError> {
    let (started_iso, stamp) = utc_stamps();
    let holder = crate::report::outdir::this_run(&started_iso);
    // Last of the checks, first of the effects: a refused --out is left as it was found.
    let lock: Option<OutLock> = plan.out().map(|d| crate::report::outdir::take(d, &holder)).transpose()?;
    let session = Session::start(plan, interrupt, started_iso).await?;
    let stem = format!("{stamp}-daemon-capacity");
    let taken = match lock {
        Some(l) => crate::report::outdir::clear(&l).map(|_| l).map_err(CapacityRunError::from),
        None => take_new(Path::new(DEFAULT_REPORTS), &stem, &holder).map_err(|source| CapacityRunError::ReportDir {
            path: Path::new(DEFAULT_REPORTS).join(&stem).display().to_string(),
            source,
        }),
    };
    let lock = match taken {
        Ok(l) => l,
        Err(e) => {
            session.abandon();
            return Err(e);
        }
    };
    let dir = lock.dir().to_path_buf();
    let mut write_error: Option<OutputError> = None;
    let report = session
        .ramp(&mut |report| {
            if let Some(s) = report.steps.last() {
                progress(s);
            }
            if write_error.is_none() {
                write_error = publish(Moment::Case, report, &dir).err();
            }
        })
        .await;
    let published = publish(Moment::End, &report, &dir)?;
    if let Some(e) = write_error {
        return Err(e.into());
    }
    Ok(Finished { report, dir, console: published.console })
}
