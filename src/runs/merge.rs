//! `relay-bench merge DIR...`: the parts of a run split with `run --shard K/N` (each on a
//! machine of its own, say a CI matrix's jobs) joined into the run one machine would have
//! written: every part's results in the scenario's order, each sweep whole again, the
//! verdict, the boundaries and the recommendation computed once over all of them, the parts'
//! histogram logs and event logs beside them, and the reports drawn as `run` draws them
//! (its gates as JUnit with `--junit`).
//! Its summary.json is a one-machine run's of the same scenario and seed, apart from the
//! wall times, `started_at` (the earliest part's) and the machine (the first part's
//! `environment` and `calibration`; `parts.json` keeps each part's).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::report::outdir::{take, this_run, utc_stamps, OutLock};
use crate::report::output::{Input, Moment};
use crate::report::publish::{publish, FlagPaths, Published};
use crate::results::summary::Summary;
use crate::scenario::shard::ShardRecord;

use super::merge_error::MergeError;
use super::plan::{new_report_dir, RunsError, DEFAULT_REPORTS};

/// One part, read.
struct Part {
    dir: PathBuf,
    summary: Summary,
    record: ShardRecord,
}

/// What `parts.json` keeps of each part: where it was read from and the machine it ran on.
#[derive(Serialize)]
struct PartNote<'a> {
    part: String,
    dir: String,
    started_at: &'a str,
    environment: &'a crate::results::env::Environment,
    calibration: &'a Option<crate::results::calibration::Calibration>,
    estimate_secs: f64,
    wall_secs: f64,
    runs: &'a [String],
}

/// Merges the parts in `dirs` into `out` (default: a new `reports/<stamp>-<scenario>/`);
/// the merged summary, where it was written and what the console shows.
pub(crate) fn merge(
    dirs: &[PathBuf],
    out: Option<&Path>,
    junit: Option<&Path>,
) -> Result<(Summary, PathBuf, Published), RunsError> {
    let parts = read_parts(dirs)?;
    if let Some(j) = junit {
        super::plan::check_junit(j)?;
    }
    let holder = this_run(&utc_stamps().0);
    let lock: OutLock = match out {
        Some(d) => {
            let same = |p: &Part| d.canonicalize().ok().is_some_and(|o| p.dir.canonicalize().ok() == Some(o));
            if parts.iter().any(same) {
                return Err(MergeError::OutIsAPart(d.display().to_string()).into());
            }
            let lock = take(d, &holder)?;
            crate::report::outdir::clear(&lock)?;
            lock
        }
        None => new_report_dir(Path::new(DEFAULT_REPORTS), &utc_stamps().1, &parts[0].summary.scenario)?,
    };
    let dir = lock.dir().to_path_buf();
    let merged = joined(&parts);
    copy_files(&parts, &dir)?;
    write_parts_note(&parts, &dir)?;
    let flags = FlagPaths(junit.iter().map(|p| ("--junit", p.to_path_buf())).collect());
    let published = publish(Moment::End, &Input { summaries: std::slice::from_ref(&merged), dir: &dir }, &flags, None)?;
    Ok((merged, dir, published))
}

/// Every part's summary, each checked to be a part of the first's run, every part there once.
fn read_parts(dirs: &[PathBuf]) -> Result<Vec<Part>, RunsError> {
    let mut parts: Vec<Part> = Vec::new();
    for dir in dirs {
        let summary = Summary::read(dir)?;
        let Some(record) = summary.shard.clone() else {
            return Err(MergeError::NotAPart { dir: dir.display().to_string() }.into());
        };
        let cases: Vec<&str> = summary.results.iter().map(|r| r.case.as_str()).collect();
        crate::report::export::hdr::check_logs(dir, &cases)?;
        if let Some(f) = parts.first() {
            if record.digest != f.record.digest || record.count != f.record.count {
                let what = format!("part {} of {} of {:?}", record.index, record.count, summary.scenario);
                return Err(MergeError::OtherRun {
                    dir: dir.display().to_string(),
                    first: f.dir.display().to_string(),
                    what,
                }
                .into());
            }
        }
        if let Some(twin) = parts.iter().find(|p| p.record.index == record.index) {
            return Err(MergeError::Twice {
                index: record.index,
                count: record.count,
                first: twin.dir.display().to_string(),
                second: dir.display().to_string(),
            }
            .into());
        }
        parts.push(Part { dir: dir.clone(), summary, record });
    }
    let count = parts[0].record.count;
    let missing: Vec<String> =
        (1..=count).filter(|k| !parts.iter().any(|p| p.record.index == *k)).map(|k| k.to_string()).collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing { missing: missing.join(", "), count }.into());
    }
    parts.sort_by_key(|p| p.record.index);
    Ok(parts)
}

/// The run the parts make: their results in the scenario's order, each sweep whole again,
/// and the verdict over all of them.
fn joined(parts: &[Part]) -> Summary {
    let first = &parts[0];
    let whole = &first.record;
    let mut s = first.summary.clone();
    s.shard = None;
    s.started_at = parts.iter().map(|p| p.summary.started_at.clone()).min().unwrap_or_default();
    s.results = parts.iter().flat_map(|p| p.summary.results.iter().cloned()).collect();
    let not_run = |c: &String| parts.iter().any(|p| p.summary.cases_not_run.contains(c));
    s.cases_not_run = whole.cases.iter().chain(&whole.sweeps).filter(|c| not_run(c)).cloned().collect();
    s.interrupted = parts.iter().any(|p| p.summary.interrupted);
    s.sweeps = whole
        .sweeps
        .iter()
        .filter_map(|name| {
            let mut pieces = parts.iter().flat_map(|p| p.summary.sweeps.iter().filter(|w| w.case == *name));
            let mut w = pieces.next()?.clone();
            // A sweep's points dealt to several parts: all of them, in the scenario's order.
            w.points.extend(pieces.flat_map(|more| more.points.iter().cloned()));
            let at = |case: &str| whole.cases.iter().position(|c| c == case).unwrap_or(usize::MAX);
            if w.search.is_none() {
                w.points.sort_by_key(|p| at(&p.case));
            }
            Some(w)
        })
        .collect();
    s.order_results(&whole.cases);
    s.settle_sweeps();
    s.recompute_pass();
    s
}

/// Each part's histogram logs (`hdr/<case>/`), event logs and calls.csv into the merged run:
/// the logs' sections appended part after part, calls.csv's header once. Only regular files
/// are read (a link planted in a part is not followed) and every file is written through
/// [`crate::base::fsio::open_to_write`] (never through a link at its name).
fn copy_files(parts: &[Part], dir: &Path) -> Result<(), RunsError> {
    for p in parts {
        for r in &p.summary.results {
            let from = p.dir.join("hdr").join(&r.case);
            let Ok(files) = std::fs::read_dir(&from) else { continue };
            let to = crate::base::fsio::dirs_under(dir, &Path::new("hdr").join(&r.case)).map_err(copy_failed(&from))?;
            for f in files.flatten().filter(|f| f.file_type().is_ok_and(|t| t.is_file())) {
                concatenate(&[f.path()], &to.join(f.file_name()), false)?;
            }
        }
    }
    for name in crate::report::outdir::RUN_FILES {
        let have: Vec<PathBuf> = parts
            .iter()
            .map(|p| p.dir.join(name))
            .filter(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.is_file()))
            .collect();
        if !have.is_empty() {
            concatenate(&have, &dir.join(name), *name == "calls.csv")?;
        }
    }
    Ok(())
}

/// `target`, noted as the run's, made of `sources` one after another (`skip_headers`: the
/// first line of every source after the first left out).
fn concatenate(sources: &[PathBuf], target: &Path, skip_headers: bool) -> Result<(), RunsError> {
    crate::base::runfiles::note(target);
    let file = crate::base::fsio::open_to_write(target, false).map_err(copy_failed(target))?;
    let mut out = std::io::BufWriter::new(file);
    for (i, f) in sources.iter().enumerate() {
        let mut input = std::io::BufReader::new(std::fs::File::open(f).map_err(copy_failed(f))?);
        if skip_headers && i > 0 {
            std::io::BufRead::read_line(&mut input, &mut String::new()).map_err(copy_failed(f))?;
        }
        std::io::copy(&mut input, &mut out).map_err(copy_failed(f))?;
    }
    std::io::Write::flush(&mut out).map_err(copy_failed(target))
}

/// A file of a part that could not be copied into the merged run.
fn copy_failed(path: &Path) -> impl FnOnce(std::io::Error) -> RunsError {
    let path = path.display().to_string();
    move |source| MergeError::Copy { path, source }.into()
}

/// `parts.json`: each part's directory, start, machine, estimate and wall time.
fn write_parts_note(parts: &[Part], dir: &Path) -> Result<(), RunsError> {
    let notes: Vec<PartNote<'_>> = parts
        .iter()
        .map(|p| PartNote {
            part: format!("{}/{}", p.record.index, p.record.count),
            dir: p.dir.display().to_string(),
            started_at: &p.summary.started_at,
            environment: &p.summary.environment,
            calibration: &p.summary.calibration,
            estimate_secs: p.record.estimate_secs,
            wall_secs: p.summary.results.iter().filter_map(|r| r.wall_secs).sum(),
            runs: &p.record.runs,
        })
        .collect();
    let target = dir.join("parts.json");
    crate::base::runfiles::note(&target);
    let text = serde_json::to_string_pretty(&notes).expect("plain data serializes");
    crate::base::fsio::publish_file(&target, text.as_bytes()).map_err(copy_failed(&target))
}
