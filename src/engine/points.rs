//! A run's virtual cases (a sweep's points among them, and a case's repeats), several at
//! once: each is a case on a paused clock of its own, so they share nothing but the machine,
//! and up to `--jobs` run at a time. Each job's event log and calls.csv are written apart and
//! added to the run's in the jobs' order once every earlier job's are (two jobs never
//! interleave their lines, and the files are the same whatever `--jobs` is); its result is
//! handed back on the caller's thread as it finishes, so the reports are rewritten after
//! every job. The cases run one at a time go through [`run_one`]: one case on its clock.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::engine::{run_case, run_case_virtual, CaseEnv, EngineError};
use crate::results::summary::CaseResult;
use crate::scenario::{CaseSpec, Clock, Scenario};

/// The cases from `i` on that can run side by side (`parallel`): the virtual cases in a row,
/// a sweep's points among them (at least case `i` itself). Each is a paused clock of its own,
/// so running them together changes nothing but the wall time.
pub(crate) fn batch_at(s: &Scenario, i: usize, parallel: bool) -> Vec<usize> {
    if !parallel || s.cases[i].clock != Clock::Virtual {
        return vec![i];
    }
    (i..s.cases.len()).take_while(|&j| s.cases[j].clock == Clock::Virtual).collect()
}

/// A point's own part of a run file that could not be made or added to the run's.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct PartFailed {
    pub path: String,
    pub source: std::io::Error,
}

/// A point's own file for a run file (`events.ndjson`, `calls.csv`), added to the run's
/// when the point is over.
struct Part {
    file: tempfile::NamedTempFile,
    into: PathBuf,
    /// calls.csv: the part's header line is left out when the run's file has one.
    header: bool,
}

impl Part {
    fn new(into: &Path, header: bool, dir: &Path) -> Result<Part, PartFailed> {
        // The part keeps the run file's extension: it says which log it is.
        let suffix = into.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
        let file = tempfile::Builder::new()
            .prefix(".relay-bench-point-")
            .suffix(&suffix)
            .tempfile_in(dir)
            .map_err(|source| PartFailed { path: dir.display().to_string(), source })?;
        Ok(Part { file, into: into.to_path_buf(), header })
    }

    fn append(self) -> Result<(), PartFailed> {
        let fail = |source| PartFailed { path: self.into.display().to_string(), source };
        let bytes = std::fs::read(self.file.path()).map_err(fail)?;
        let has = std::fs::metadata(&self.into).is_ok_and(|m| m.len() > 0);
        let body = match (self.header && has, bytes.iter().position(|b| *b == b'\n')) {
            (true, Some(nl)) => &bytes[nl + 1..],
            _ => &bytes[..],
        };
        crate::base::runfiles::note(&self.into);
        let mut out = crate::base::fsio::open_to_write(&self.into, true).map_err(fail)?;
        std::io::Write::write_all(&mut out, body).map_err(fail)
    }
}

/// One virtual case to run: case `case` of `scenario` (a repeat's scenario has seeds of its
/// own), its events logged when `logs` (only a case's first repeat writes the run's logs).
pub(crate) struct Job<'a> {
    pub scenario: &'a Scenario,
    pub case: usize,
    pub logs: bool,
}

/// Runs the jobs `batch` (virtual points, repeats), up to `workers` at once, the largest
/// first, each with its own event log and calls.csv parts (made under `scratch`). `done`
/// gets each result as it finishes, on this thread. A job that fails stops new ones from
/// starting; the first error is returned once the running ones are over.
pub(crate) fn run_parallel<E: From<PartFailed>>(
    batch: &[Job<'_>],
    workers: usize,
    env: &CaseEnv,
    scratch: &Path,
    mut done: impl FnMut(usize, Result<CaseResult, EngineError>, Duration) -> Result<(), E>,
) -> Result<(), E> {
    // The largest first (by planned calls, then sandbox-time; ties in the batch's order): a
    // long point started last would run alone at the end while the other workers sit idle.
    let mut order: Vec<usize> = (0..batch.len()).collect();
    order.sort_by_key(|&k| {
        let wl = &batch[k].scenario.cases[batch[k].case].workload;
        std::cmp::Reverse((wl.planned_calls(), u128::from(wl.sandboxes) * wl.duration().as_millis()))
    });
    let order = &order;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        let mut first: Option<E> = None;
        for _ in 0..workers.min(batch.len()) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            let work = move || loop {
                let Some(&k) = order.get(next.fetch_add(1, Ordering::SeqCst)) else { return };
                if stop.load(Ordering::SeqCst) || env.interrupt.is_closed() {
                    return;
                }
                let job = &batch[k];
                let (i, s) = (k, job.scenario);
                let case = &s.cases[job.case];
                let parts = (
                    env.event_log.as_deref().filter(|_| job.logs).map(|p| Part::new(p, false, scratch)).transpose(),
                    env.calls_csv.as_deref().filter(|_| job.logs).map(|p| Part::new(p, true, scratch)).transpose(),
                );
                let (log, csv) = match parts {
                    (Ok(log), Ok(csv)) => (log, csv),
                    (Err(e), _) | (_, Err(e)) => {
                        let _ = tx.send((i, Err(e), Duration::ZERO));
                        return;
                    }
                };
                let own = CaseEnv {
                    event_log: log.as_ref().map(|p| p.file.path().to_path_buf()),
                    calls_csv: csv.as_ref().map(|p| p.file.path().to_path_buf()),
                    ..env.clone()
                };
                let wall = Instant::now();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case_virtual(s, case, &own)))
                    .unwrap_or_else(|_| Err(EngineError::Pacer("virtual case panicked".into())));
                let _ = tx.send((i, Ok((r, log, csv)), wall.elapsed()));
            };
            let spawned = std::thread::Builder::new().name("relay-bench-point".into()).spawn_scoped(scope, work);
            if let Err(source) = spawned {
                stop.store(true, Ordering::SeqCst);
                first = Some(PartFailed { path: "(a sweep point's thread)".into(), source }.into());
                break;
            }
        }
        drop(tx);
        // Parts wait for every earlier job's: the run's files keep the jobs' order.
        let mut parts: Vec<Option<Vec<Part>>> = (0..batch.len()).map(|_| None).collect();
        let mut appended = 0;
        for (i, got, wall) in rx {
            let handled = got.map_err(E::from).and_then(|(r, log, csv)| {
                parts[i] = Some([log, csv].into_iter().flatten().collect());
                while let Some(ready) = parts.get_mut(appended).and_then(Option::take) {
                    ready.into_iter().try_for_each(Part::append)?;
                    appended += 1;
                }
                done(i, r, wall)
            });
            if let Err(e) = handled {
                stop.store(true, Ordering::SeqCst);
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    })
}

/// Runs one case on its clock: a real one here, a virtual one on a paused clock of its own
/// (a runtime of its own, on a thread of its own).
pub(crate) async fn run_one(s: &Scenario, case: &CaseSpec, env: &CaseEnv) -> Result<CaseResult, EngineError> {
    match case.clock {
        Clock::Real => run_case(s, case, env).await,
        Clock::Virtual => tokio::task::block_in_place(|| {
            std::thread::scope(|scope| {
                let t = std::thread::Builder::new()
                    .name("relay-bench-virtual".into())
                    .spawn_scoped(scope, || run_case_virtual(s, case, env));
                match t {
                    Ok(t) => t.join().unwrap_or_else(|_| Err(EngineError::Pacer("virtual case panicked".into()))),
                    Err(source) => Err(EngineError::Setup { root: "(virtual case thread)".into(), source }),
                }
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// The order one worker runs the points of `sweep` in (one worker: they finish in the
    /// order they start).
    fn order_of(sweep: &str) -> Vec<usize> {
        let text = format!(
            "name = \"order\"\n[workload]\nsandboxes = 1\nturns_per_sec = 4\nduration = \"2s\"\nseed = 1\n\
             [[case]]\nname = \"w\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\n\
             runner = \"window-exec\"\nwriter = \"watch\"\nsweep = {{ {sweep} }}\n"
        );
        let s = Scenario::parse("order.toml", &text).unwrap();
        let jobs: Vec<Job<'_>> = (0..s.cases.len()).map(|case| Job { scenario: &s, case, logs: false }).collect();
        let env = CaseEnv::quiet();
        let order = Mutex::new(Vec::new());
        run_parallel::<PartFailed>(&jobs, 1, &env, &std::env::temp_dir(), |i, r, _| {
            r.expect("the point ran");
            order.lock().unwrap().push(i);
            Ok(())
        })
        .unwrap();
        order.into_inner().unwrap()
    }

    #[test]
    fn the_largest_point_runs_first() {
        assert_eq!(order_of("\"workload.turns_per_sec\" = [2, 6, 4]"), [1, 2, 0], "by planned calls");
        // The same calls over more sandboxes: more relays to run.
        assert_eq!(order_of("\"workload.sandboxes\" = [1, 3, 2]"), [1, 2, 0], "by sandbox-time");
    }
}
