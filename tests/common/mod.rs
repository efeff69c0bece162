//! Shared by the integration tests: run a scenario in-process on fresh temp dirs.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use relay_bench::bench::{run_scenario, RunOptions};
use relay_bench::scenario::Scenario;
use relay_bench::signal::Signal;
use relay_bench::summary::Summary;

pub const BIN: &str = env!("CARGO_BIN_EXE_relay-bench");

/// Options for a quiet run writing to `out`, with relay dirs under `relay`.
pub fn options(out: &Path, relay: &Path, calibrate: bool, calls_csv: bool) -> RunOptions {
    RunOptions {
        out_dir: out.to_path_buf(),
        relay_root: relay.to_path_buf(),
        quiet: true,
        calibrate,
        watch_program: BIN.into(),
        calls_csv,
    }
}

/// Runs `text` (named `name` in errors); returns the summary and the dirs (reports, relay
/// root) so the caller can inspect them.
pub async fn run(
    name: &str,
    text: &str,
    calibrate: bool,
    calls_csv: bool,
) -> (Summary, tempfile::TempDir, tempfile::TempDir) {
    let out = tempfile::tempdir().unwrap();
    let relay = tempfile::tempdir().unwrap();
    let s = Scenario::parse(name, text).unwrap();
    let opts = options(out.path(), relay.path(), calibrate, calls_csv);
    let summary = run_scenario(&s, &opts, "2026-01-01T00:00:00Z", Arc::new(Signal::new())).await.unwrap();
    (summary, out, relay)
}
