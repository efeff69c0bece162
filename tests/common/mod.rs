//! Shared by the integration tests: run a scenario in-process on fresh temp dirs.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use relay_bench::{run_scenario, RunOptions, Scenario, Signal, Summary};

pub mod serve;

/// The relay-bench binary the tests run: this build's, or the one `RELAY_BENCH_TEST_BIN`
/// named when the tests were built (`.ci/run` names the release binary it has just built:
/// the black-box tests that run whole scenarios then take seconds, not minutes; the tests
/// in-process stay this build's, debug assertions on).
pub const BIN: &str = match option_env!("RELAY_BENCH_TEST_BIN") {
    Some(bin) if !bin.is_empty() => bin,
    _ => env!("CARGO_BIN_EXE_relay-bench"),
};

/// Checks a summary.json against reports/schema.json; fails naming every place it does not
/// match.
pub fn check_schema(summary: &serde_json::Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/schema.json");
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).expect("reports/schema.json is a valid JSON Schema");
    let errors: Vec<String> = v.iter_errors(summary).map(|e| format!("{}: {e}", e.instance_path())).collect();
    assert!(errors.is_empty(), "summary.json does not match reports/schema.json:\n{}", errors.join("\n"));
}

/// Options for a quiet run writing to `out`, with relay dirs under `relay`.
pub fn options(out: &Path, relay: &Path, calibrate: bool, calls_csv: bool) -> RunOptions {
    RunOptions {
        out_dir: out.to_path_buf(),
        relay_root: relay.to_path_buf(),
        quiet: true,
        calibrate,
        watch_program: BIN.into(),
        calls_csv,
        no_event_log: false,
        event_log: relay_bench::EventLogFormat::Auto,
        max_event_log: relay_bench::DEFAULT_MAX_EVENT_LOG,
        jobs: std::thread::available_parallelism().map_or(1, |n| n.get()),
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

/// A relay over the in-memory dir `sim` (a local host), with the runner strategy `runner`
/// in its scenario form, a watching writer and `handler`; its event sink must be kept.
pub fn sim_relay(
    sim: &relay_bench::SimDir,
    runner: &str,
    handler: relay_bench::HandlerModel,
) -> (relay_bench::Relay, relay_bench::EventSink) {
    use relay_bench::RelayDir;
    use relay_bench::{runner_from_toml, writer_from_toml};
    let (sink, _rx) = relay_bench::EventSink::channel();
    let dir: Arc<dyn RelayDir> = Arc::new(sim.clone());
    let spec = relay_bench::RelaySpec {
        sandbox: 0,
        dir: dir.clone(),
        host: Arc::new(relay_bench::LocalHost::over(dir, Arc::default())),
        busy: Arc::default(),
        runner: &runner_from_toml(runner).unwrap(),
        writer: Some(&writer_from_toml("watch").unwrap()),
        handler: Arc::new(handler),
        watch_program: Path::new("relay-bench"),
        seed: 1,
        stderr_to: None,
    };
    (relay_bench::Relay::start(spec, &sink), sink)
}

/// The command lines of this test process's live children (`/proc/self/task/*/children`):
/// what a test started and did not reap, and nothing of anyone else's.
pub fn live_children() -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|pids| pids.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .ok()
                .map(|c| format!("{pid}: {}", String::from_utf8_lossy(&c).replace('\0', " ")))
        })
        .collect()
}

/// Waits (generously) until `cond` holds.
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    while !cond() {
        assert!(t0.elapsed() < std::time::Duration::from_secs(60), "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Processes on this machine whose command line names `path` (a fresh temp dir: only this
/// test's processes can).
pub fn processes_naming(path: &Path) -> Vec<String> {
    let needle = path.to_string_lossy().into_owned();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| c.contains(&needle))
        .collect()
}

/// The sandbox-agent binary, or `None` after saying why the test is skipped; a panic when
/// `RELAY_BENCH_REQUIRE_DAEMON` is set (CI installs the daemon: a skip there would be a
/// pass that tested nothing).
pub fn daemon_or_skip(test: &str) -> Option<std::path::PathBuf> {
    match relay_bench::find_sandbox_agent() {
        Ok(bin) => Some(bin),
        Err(why) if std::env::var_os("RELAY_BENCH_REQUIRE_DAEMON").is_some() => {
            panic!("{test}: RELAY_BENCH_REQUIRE_DAEMON is set and {why}")
        }
        Err(why) => {
            eprintln!("{test}: skipped: {why}");
            None
        }
    }
}
