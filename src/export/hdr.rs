//! HdrHistogram's own formats, per case and measure: the `.hgrm` percentile distribution
//! (the text HdrHistogram's `outputPercentileDistribution` prints, which its online plotter
//! loads; values in milliseconds) and the `.hlog` interval log (V2 compressed histograms,
//! lossless: `report` re-renders charts from it). Pickup's log has one histogram per
//! interval of the case; the other measures' logs hold the whole case as one interval.

use std::io;
use std::path::Path;
use std::time::Duration;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, Tag};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::recorder::{CaseHdr, Measure};

/// Nanoseconds per millisecond: `.hgrm` values are in ms.
const MS: f64 = 1e6;

/// The percentile distribution of `h` in HdrHistogram's text format, values in ms.
pub fn hgrm(h: &Histogram<u64>) -> String {
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
pub fn parse_hgrm(text: &str) -> Vec<(f64, f64)> {
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
pub struct Interval {
    pub start: Duration,
    pub length: Duration,
    pub hist: Histogram<u64>,
}

/// Writes an interval log of `intervals`, tagged with the measure's name.
pub fn write_hlog(out: &mut impl io::Write, measure: &str, intervals: &[Interval]) -> io::Result<()> {
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

/// Reads an interval log back, interval by interval.
pub fn read_hlog(bytes: &[u8]) -> Result<Vec<Interval>, String> {
    let mut de = Deserializer::new();
    let mut out = Vec::new();
    for entry in IntervalLogIterator::new(bytes) {
        match entry.map_err(|e| format!("{e:?}"))? {
            LogEntry::Interval(ilh) => {
                let raw = base64_decode(ilh.encoded_histogram())?;
                let hist: Histogram<u64> =
                    de.deserialize(&mut io::Cursor::new(raw)).map_err(|e| format!("bad histogram: {e:?}"))?;
                out.push(Interval { start: ilh.start_timestamp(), length: ilh.duration(), hist });
            }
            LogEntry::StartTime(_) | LogEntry::BaseTime(_) => {}
        }
    }
    Ok(out)
}

fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| format!("bad base64: {e}"))
}

/// The whole case of one measure, summed over its intervals.
pub fn total(intervals: &[Interval]) -> Option<Histogram<u64>> {
    let mut it = intervals.iter();
    let mut h = it.next()?.hist.clone();
    for iv in it {
        let _ = h.add(&iv.hist);
    }
    Some(h)
}

/// Writes `<dir>/<measure>.hgrm` and `<dir>/<measure>.hlog` for every measure with samples.
pub fn write_case(dir: &Path, hdr: &CaseHdr) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (m, h) in &hdr.measures {
        if h.is_empty() {
            continue;
        }
        std::fs::write(dir.join(format!("{}.hgrm", m.name())), hgrm(h))?;
        let intervals: Vec<Interval> = match (&hdr.intervals, m) {
            (Some(iv), Measure::Pickup) => iv
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
        let mut f = io::BufWriter::new(std::fs::File::create(dir.join(format!("{}.hlog", m.name())))?);
        write_hlog(&mut f, m.name(), &intervals)?;
        io::Write::flush(&mut f)?;
    }
    Ok(())
}

/// Rewrites every `.hgrm` under `hdr_dir` (`hdr/<case>/`) from its `.hlog`; returns how many.
pub fn rewrite_hgrm(hdr_dir: &Path) -> Result<usize, String> {
    let mut n = 0;
    let Ok(cases) = std::fs::read_dir(hdr_dir) else { return Ok(0) };
    for case in cases.flatten() {
        let Ok(files) = std::fs::read_dir(case.path()) else { continue };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().and_then(|e| e.to_str()) != Some("hlog") {
                continue;
            }
            let bytes = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let ivs = read_hlog(&bytes).map_err(|e| format!("{}: {e}", p.display()))?;
            if let Some(h) = total(&ivs) {
                let out = p.with_extension("hgrm");
                std::fs::write(&out, hgrm(&h)).map_err(|e| format!("{}: {e}", out.display()))?;
                n += 1;
            }
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::new_histogram;

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
