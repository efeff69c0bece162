//! `summary.json`: the machine-readable result (see `Summary` for the fields).

use crate::report::output::{Input, Staged, WriteError};
use crate::results::summary::{Summary, MAX_SUMMARY_BYTES, PRETTY_SUMMARY_BYTES};

/// A summary.json the reader would refuse: not written.
#[derive(Debug, thiserror::Error)]
#[error(
    "summary.json would be {bytes} bytes, more than the {cap} that `report` and `compare` read back: run fewer cases, sweep points or repeats at once"
)]
pub(crate) struct TooLarge {
    bytes: usize,
    cap: u64,
}

/// summary.json's bytes: indented, or compact when that would pass
/// [`PRETTY_SUMMARY_BYTES`]; never more than [`MAX_SUMMARY_BYTES`], what every reader
/// of a run directory takes.
pub(crate) fn render(summary: &Summary) -> Result<Vec<u8>, TooLarge> {
    render_within(summary, MAX_SUMMARY_BYTES)
}

fn render_within(summary: &Summary, cap: u64) -> Result<Vec<u8>, TooLarge> {
    let mut v = serde_json::to_vec_pretty(summary).expect("a summary always serializes");
    if v.len() > PRETTY_SUMMARY_BYTES {
        v = serde_json::to_vec(summary).expect("a summary always serializes");
    }
    v.push(b'\n');
    if v.len() as u64 > cap {
        return Err(TooLarge { bytes: v.len(), cap });
    }
    Ok(v)
}

/// Writes it: what [`crate::report::publish::RunOutput::Json`] renders.
pub(crate) fn write(input: &Input<'_>, out: &mut Staged) -> Result<(), WriteError> {
    out.put("summary.json", &render(input.summary()).map_err(WriteError::render)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::summary::repeats::combine;

    /// The writer's own bounds at once: the most cases a scenario holds, each repeated the
    /// most times `--repeat` allows, with every figure a case reports. What it writes, the
    /// reader reads.
    #[test]
    fn the_largest_run_relay_bench_can_write_is_read_back() {
        let fixture = crate::report::export::fixture::realistic();
        let repeats = crate::scenario::overrides::MAX_REPEAT as usize;
        // Each of the fixture's cases repeated once over (the medians' bootstraps are slow),
        // then as many times as a scenario may hold cases.
        let repeated: Vec<_> = fixture
            .results
            .iter()
            .map(|one| combine(vec![one.clone(); repeats], (0..repeats as u64).collect()))
            .collect();
        let mut summary = fixture.clone();
        summary.results = (0..crate::scenario::MAX_CASES)
            .map(|i| {
                let mut r = repeated[i % repeated.len()].clone();
                r.case = format!("case-{i}");
                r
            })
            .collect();
        let bytes = render(&summary).expect("within the cap");
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("summary.json"), &bytes).unwrap();
        let back = Summary::read(t.path()).expect("read back");
        assert_eq!(back.results.len(), crate::scenario::MAX_CASES);
        assert_eq!(back.results[7].repeat.as_ref().unwrap().seeds.len(), repeats);
    }

    #[test]
    fn a_summary_past_the_cap_is_refused_by_the_writer_as_by_the_reader() {
        let summary = crate::report::export::fixture::realistic();
        let whole = render_within(&summary, u64::MAX).unwrap();
        assert!(render_within(&summary, whole.len() as u64).is_ok(), "at the cap: written");
        let e = render_within(&summary, whole.len() as u64 - 1).unwrap_err();
        assert!(e.to_string().contains("run fewer cases, sweep points or repeats at once"), "{e}");
    }
}
