//! HdrHistogram's own formats, per case and measure: the `.hgrm` percentile distribution
//! (the text HdrHistogram's `outputPercentileDistribution` prints, which its online plotter
//! loads; values in milliseconds) and the `.hlog` interval log (V2 compressed histograms,
//! lossless: `report` re-renders charts from it). Pickup's log has one histogram per
//! interval of the case; the other measures' logs hold the whole case as one interval.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, LogIteratorError, Tag,
};
use hdrhistogram::serialization::{DeserializeError, Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::base::fsio::{check_bounded, read_bounded, Bound, BoundedReadError, Refused};
use crate::record::recorder::{CaseHdr, Measure};
use crate::report::output::{Input, Staged, WriteError};

/// Nanoseconds per millisecond: `.hgrm` values are in ms.
const MS: f64 = 1e6;

/// The percentile distribution of `h` in HdrHistogram's text format, values in ms.
pub(crate) fn hgrm(h: &Histogram<u64>) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(o, "{:>12} {:>14} {:>10} {:>14}\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    if !h.is_empty() {
        let mut count = 0u64;
        for v in h.iter_quantiles(5) {
            let (q, value) = (v.quantile_iterated_to(), v.value_iterated_to() as f64 / MS);
            count += v.count_since_last_iteration();
            if q < 1.0 {
                let _ = writeln!(o, "{value:12.3} {q:2.12} {count:10} {:14.2}", 1.0 / (1.0 - q));
            } else {
                let _ = writeln!(o, "{value:12.3} {q:2.12} {count:10}");
            }
        }
    }
    let _ = writeln!(o, "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]", h.mean() / MS, h.stdev() / MS);
    let _ = writeln!(o, "#[Max     = {:12.3}, Total count    = {:12}]", h.max() as f64 / MS, h.len());
    let _ = writeln!(o, "#[Buckets = {:12}, SubBuckets     = {:12}]", h.buckets(), h.distinct_values());
    o
}

/// The (value in ms, percentile in [0, 1]) rows of a `.hgrm` file.
#[cfg(test)]
pub(crate) fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let v = f.next()?.parse().ok()?;
            let q = f.next()?.parse().ok()?;
            Some((v, q))
        })
        .collect()
}

/// One interval of an `.hlog`: its start and length from the case's epoch.
pub(crate) struct Interval {
    pub start: Duration,
    pub length: Duration,
    pub hist: Histogram<u64>,
}

/// Writes an interval log of `intervals`, tagged with the measure's name.
pub(crate) fn write_hlog(out: &mut impl io::Write, measure: &str, intervals: &[Interval]) -> io::Result<()> {
    let mut ser = V2DeflateSerializer::new();
    let mut b = IntervalLogWriterBuilder::new();
    b.add_comment(&format!(
        "relay-bench: {measure}, nanoseconds; timestamps are seconds from the case's first intended start"
    ));
    b.with_base_time(std::time::SystemTime::UNIX_EPOCH);
    let mut w = b.begin_log_with(out, &mut ser).map_err(io::Error::other)?;
    for iv in intervals {
        w.write_histogram(&iv.hist, iv.start, iv.length, Tag::new(measure))
            .map_err(|e| io::Error::other(format!("{e:?}")))?;
    }
    Ok(())
}

/// Reads an interval log back, interval by interval, in time linear in its size: each line is
/// parsed on its own (the log parser, given the whole file, looks past a comment line for the
/// next `.` anywhere after it, which made a log of comments quadratic), and a plain comment
/// is skipped without parsing.
pub(crate) fn read_hlog(bytes: &[u8]) -> Result<Vec<Interval>, HlogError> {
    let mut de = Deserializer::new();
    let mut out = Vec::new();
    let lines = bytes.split_inclusive(|b| *b == b'\n');
    let parsed = lines.filter(|l| !l.starts_with(b"#") || l.starts_with(b"#[")).flat_map(IntervalLogIterator::new);
    for entry in parsed {
        // A start or base time line says nothing the intervals need.
        if let LogEntry::Interval(ilh) = entry.map_err(HlogError::Log)? {
            let raw = BASE64.decode(ilh.encoded_histogram()).map_err(HlogError::Base64)?;
            let hist: Histogram<u64> = de.deserialize(&mut io::Cursor::new(raw)).map_err(HlogError::Histogram)?;
            out.push(Interval { start: ilh.start_timestamp(), length: ilh.duration(), hist });
        }
    }
    Ok(out)
}

/// An interval log that does not read back: the file is damaged or not one (draw it again
/// from the run with `relay-bench run`, or leave the case's charts out).
#[derive(Debug, thiserror::Error)]
pub(crate) enum HlogError {
    #[error("{0:?}")]
    Log(LogIteratorError),
    #[error("bad histogram: {0:?}")]
    Histogram(DeserializeError),
    #[error("bad base64: {0}")]
    Base64(base64::DecodeError),
}

/// Why the histogram files of a run could not be staged.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HdrError {
    /// The staging area refused a file (its own message: report/output.rs).
    #[error("{0}")]
    Staged(WriteError),
    #[error("{measure}: {why}")]
    Write { measure: &'static str, why: io::Error },
    #[error(transparent)]
    Read(#[from] BoundedReadError),
    #[error("{path}: {why}")]
    Log { path: String, why: HlogError },
}

/// The whole case of one measure, summed over its intervals.
pub(crate) fn total(intervals: &[Interval]) -> Option<Histogram<u64>> {
    let mut it = intervals.iter();
    let mut h = it.next()?.hist.clone();
    for iv in it {
        let _ = h.add(&iv.hist);
    }
    Some(h)
}

/// How an interval log is read back (`report`, `compare`, charts): a regular file under the
/// run directory, no link followed, at most 256 MiB.
pub(crate) const HLOG: Bound = Bound::new("an interval log (.hlog)", 256 << 20);

/// `hdr/<case>/<measure>.hgrm` (percentile distribution) and `.hlog` (interval log) for
/// every measure with samples: written for a case as it finishes, and the `.hgrm` drawn
/// again from its `.hlog` by a re-render; what [`crate::report::publish::RunOutput::Hdr`] renders.
pub(crate) fn write(input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
    // After a case, the case just finished is the last result, its histograms still in
    // memory; a re-render has none in memory and reads the logs.
    match input.summary().results.last().and_then(|r| r.hdr.as_ref().map(|h| (r, h))) {
        Some((r, hdr)) => write_case(Path::new("hdr").join(&r.case), hdr, out),
        None => rewrite_hgrm(&input.dir.join("hdr"), out),
    }
    .map_err(|e| match e {
        HdrError::Staged(w) => w,
        e @ (HdrError::Read(_) | HdrError::Log { .. }) => WriteError::Damaged(Box::new(e)),
        e => WriteError::render(e),
    })
}

/// Stages `<dir>/<measure>.hgrm` and `<dir>/<measure>.hlog` for every measure with samples.
fn write_case(dir: PathBuf, hdr: &CaseHdr, out: &mut Staged) -> Result<(), HdrError> {
    for (m, h) in &hdr.measures {
        if h.is_empty() {
            continue;
        }
        out.put(dir.join(format!("{}.hgrm", m.name())), hgrm(h).as_bytes()).map_err(HdrError::Staged)?;
        let intervals: Vec<Interval> = match (&hdr.intervals, m) {
            (Some(iv), &Measure::Pickup) => iv
                .hists
                .iter()
                .enumerate()
                .filter_map(|(i, h)| {
                    let hist = h.clone()?;
                    Some(Interval { start: iv.interval * i as u32, length: iv.interval, hist })
                })
                .collect(),
            _ => vec![Interval { start: Duration::ZERO, length: hdr.length, hist: h.clone() }],
        };
        let mut bytes = Vec::new();
        write_hlog(&mut bytes, m.name(), &intervals).map_err(|why| HdrError::Write { measure: m.name(), why })?;
        out.put(dir.join(format!("{}.hlog", m.name())), &bytes).map_err(HdrError::Staged)?;
    }
    Ok(())
}

/// Checks, before anything is drawn from them, that the interval logs of `cases` under
/// `run_dir/hdr/` can be read: each case's folder a real folder (not a link), each `.hlog`
/// in it a regular file within [`HLOG`]'s cap. A case without a folder is not checked here
/// (the outputs say what they miss).
pub(crate) fn check_logs(run_dir: &Path, cases: &[&str]) -> Result<(), BoundedReadError> {
    for case in cases {
        let folder = run_dir.join("hdr").join(case);
        let refuse =
            |why| BoundedReadError { what: "a case's histogram folder", path: folder.display().to_string(), why };
        match std::fs::symlink_metadata(&folder) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(refuse(Refused::Io(e))),
            Ok(m) if m.file_type().is_symlink() => return Err(refuse(Refused::Symlink)),
            Ok(m) if !m.is_dir() => return Err(refuse(Refused::NotRegular("not a directory"))),
            Ok(_) => {}
        }
        for e in std::fs::read_dir(&folder).map_err(|e| refuse(Refused::Io(e)))?.flatten() {
            if e.path().extension().is_some_and(|x| x == "hlog") {
                check_bounded(&e.path(), HLOG)?;
            }
        }
    }
    Ok(())
}

/// Stages every `.hgrm` under `hdr_dir` (`hdr/<case>/`) anew from its `.hlog`.
fn rewrite_hgrm(hdr_dir: &Path, out: &mut Staged) -> Result<(), HdrError> {
    let Ok(cases) = std::fs::read_dir(hdr_dir) else { return Ok(()) };
    let mut logs: Vec<PathBuf> = cases
        .flatten()
        // A case's folder, not a link to somewhere else.
        .filter(|c| c.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|c| std::fs::read_dir(c.path()).ok())
        .flat_map(|files| files.flatten().map(|f| f.path()))
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("hlog"))
        .collect();
    logs.sort();
    for p in logs {
        let bytes = read_bounded(&p, HLOG)?;
        let ivs = read_hlog(&bytes).map_err(|why| HdrError::Log { path: p.display().to_string(), why })?;
        if let Some(h) = total(&ivs) {
            let rel = p.strip_prefix(hdr_dir.parent().unwrap_or(hdr_dir)).unwrap_or(&p).with_extension("hgrm");
            out.put(rel, hgrm(&h).as_bytes()).map_err(HdrError::Staged)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::recorder::new_histogram;

    fn sample() -> Histogram<u64> {
        let mut h = new_histogram();
        for i in 1..=10_000u64 {
            h.record(i * 37_000).unwrap(); // 37 µs .. 370 ms
        }
        h
    }

    #[test]
    fn hgrm_parses_back_to_the_same_percentiles() {
        let h = sample();
        let rows = parse_hgrm(&hgrm(&h));
        assert!(rows.len() > 20);
        for q in [0.5, 0.9, 0.99, 0.999] {
            let (v, _) = rows.iter().find(|(_, p)| *p >= q).copied().unwrap();
            let want = h.value_at_quantile(q) as f64 / MS;
            assert!((v - want).abs() <= 0.0015 + want * 1e-3, "p{q}: {v} vs {want}");
        }
        assert_eq!(rows.last().unwrap().1, 1.0);
    }

    #[test]
    fn an_hlog_of_many_comments_reads_in_linear_time() {
        let ivs = vec![Interval { start: Duration::from_secs(1), length: Duration::from_secs(2), hist: sample() }];
        let mut body = Vec::new();
        write_hlog(&mut body, "pickup", &ivs).unwrap();
        // The same work, 20x the lines: linear reading takes about 20x as long, the old
        // quadratic one about 400x. Timed against itself, so a busy machine slows both.
        let log = |comments: usize| {
            let mut b = b"#relay-bench: a comment line without a dot\n".repeat(comments);
            b.extend_from_slice(&body);
            b
        };
        let (small, large) = (log(5_000), log(100_000));
        // The quickest of five: a busy machine's pauses fall on some runs, not on all.
        let time = |b: &[u8]| {
            (0..5)
                .map(|_| {
                    let t0 = std::time::Instant::now();
                    assert_eq!(read_hlog(b).unwrap().len(), 1);
                    t0.elapsed()
                })
                .min()
                .expect("five runs")
        };
        let (a, b) = (time(&small).max(Duration::from_micros(50)), time(&large));
        assert!(b < a * 100, "20x the lines took {:.0}x the time ({a:?} -> {b:?})", b.as_secs_f64() / a.as_secs_f64());
    }

    #[test]
    fn hlog_round_trips_losslessly() {
        let h = sample();
        let mut buf = Vec::new();
        let ivs = [
            Interval { start: Duration::ZERO, length: Duration::from_secs(1), hist: h.clone() },
            Interval { start: Duration::from_secs(1), length: Duration::from_secs(1), hist: h.clone() },
        ];
        write_hlog(&mut buf, "pickup", &ivs).unwrap();
        let back = read_hlog(&buf).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back[1].start, Duration::from_secs(1));
        assert_eq!(back[0].hist, h);
        assert_eq!(total(&back).unwrap().len(), 20_000);
    }
}
