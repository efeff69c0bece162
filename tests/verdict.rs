//! The rollout verdict through the real binary, on the virtual clock (a second each): a
//! scenario's declared rollout gates make the verdict — typed in summary.json, first in
//! summary.md, a JUnit testsuite, the console's last lines — and a scenario that declares
//! none shows no verdict, however many gates its cases set of their own.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::BIN;

/// Production's window-exec, an option set that meets the budget, and poll-only, over a
/// minute of turns and ten idle minutes on a remote sandbox.
const DECLARED: &str = r#"
name = "verdict"
rollout = ["pickup.p50 < 150ms", "idle_phase_discovery_per_min <= 5.0"]
[workload]
sandboxes = 2
calls_per_turn = 2
[[workload.phase]]
duration = "60s"
turns_per_sec = 2
[[workload.phase]]
duration = "600s"
[[case]]
name = "window-exec"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
[[case]]
name = "quiet-idle"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = { strategy = "window-exec", idle_wake = false, jitter = false }
writer = "watch"
[[case]]
name = "poll-only"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "poll"
writer = "poll"
"#;

fn run(dir: &Path, name: &str, text: &str) -> Output {
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    Command::new(BIN)
        .current_dir(dir)
        .arg("run")
        .arg(&file)
        .args(["--no-calibration", "--out"])
        .arg(dir.join(name))
        .arg("--junit")
        .arg(dir.join(format!("{name}.xml")))
        .output()
        .unwrap()
}

#[test]
fn declared_rollout_gates_make_the_verdict_in_every_report() {
    let t = tempfile::tempdir().unwrap();
    let out = run(t.path(), "verdict", DECLARED);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // Production's window-exec misses the idle budget (about 5.3/min): the run fails.
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", String::from_utf8_lossy(&out.stderr));

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("verdict/summary.json")).unwrap()).unwrap();
    let v = &json["verdict"];
    assert_eq!(v["pass"], false, "{v:#}");
    let budget = &v["gates"][1];
    assert_eq!(budget["expr"], "idle_phase_discovery_per_min <= 5.0");
    assert_eq!(budget["production"][0]["case"], "window-exec");
    assert_eq!(budget["production"][0]["pass"], false);
    let sets: Vec<(&str, bool)> = budget["option_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["case"].as_str().unwrap(), j["pass"].as_bool().unwrap()))
        .collect();
    assert_eq!(sets, [("quiet-idle", true), ("poll-only", false)]);
    assert_eq!(v["meet_all"], serde_json::json!(["quiet-idle"]));
    // The case itself passes its own gates (the invariants): the verdict is the rollout gates'.
    assert_eq!(json["results"][0]["pass"], true);
    // ... and the rollout gate it misses is said beside it, never hidden by that pass.
    assert_eq!(json["results"][0]["rollout_pass"], false);
    assert_eq!(json["results"][1]["rollout_pass"], true);

    let md = std::fs::read_to_string(t.path().join("verdict/summary.md")).unwrap();
    let lines: Vec<&str> = md.lines().collect();
    assert!(lines[0].starts_with("# relay-bench: verdict — FAIL"), "{md}");
    assert_eq!(lines[2], "## Rollout verdict: production as built misses 1 of 2 rollout gates", "{md}");
    assert!(md.contains("Decided on the virtual clock."), "{md}");
    // ... resting on the committed clock-check run, which is there.
    let evidence = relay_bench::CLOCK_EVIDENCE;
    assert!(md.contains(&format!("{evidence} (its summary.md)")), "{md}");
    assert!(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(evidence).join("summary.md").is_file());
    assert_eq!(md.matches("Rollout verdict").count(), 1, "one verdict section: {md}");
    // The Results table's gates column and the gate list say the miss too.
    let row = lines.iter().find(|l| l.starts_with("| window-exec *virtual* |")).expect("its row");
    assert!(row.ends_with(" · rollout ❌ 1/2 |"), "{row}");
    assert!(
        md.contains("- ❌ **window-exec** rollout gate `idle_phase_discovery_per_min <= 5.0` — observed 5."),
        "{md}"
    );

    let tail: Vec<&str> = stdout.lines().rev().take_while(|l| !l.is_empty()).collect();
    let mut tail: Vec<&str> = tail.into_iter().rev().collect();
    // The report's path comes last, under the verdict.
    assert!(tail.pop().is_some_and(|l| l.starts_with("report: ")), "the report's path last: {stdout}");
    assert!(
        tail[0] == "rollout verdict: FAIL: production as built misses 1 of 2 rollout gates",
        "the verdict is the console's last lines: {stdout}"
    );
    assert!(tail.iter().any(|l| l.starts_with("  FAIL idle_phase_discovery_per_min <= 5.0: window-exec ")), "{stdout}");
    let evidence = relay_bench::CLOCK_EVIDENCE;
    assert_eq!(
        tail.last().unwrap(),
        &format!("  decided on the virtual clock ({evidence}); --clock real confirms"),
        "{stdout}"
    );

    let xml = std::fs::read_to_string(t.path().join("verdict.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc.descendants().find(|n| n.attribute("name") == Some("verdict.verdict")).expect("a verdict suite");
    assert_eq!((suite.attribute("tests"), suite.attribute("failures")), (Some("2"), Some("1")));
    let case = doc.descendants().find(|n| n.attribute("name") == Some("verdict.window-exec")).expect("its suite");
    let met = case.descendants().find(|n| n.attribute("name") == Some("rollout_gates_met")).expect("the property");
    assert_eq!(met.attribute("value"), Some("1 of 2"));
}

/// The shipped rollout-gate scenario's sweeps give each gate's boundary, measured: the
/// pickup gate along the round trip (production holds it near 20–50 ms, not past ~60 ms) and
/// the idle budget along the window (25 s misses it, a longer window meets it). The sweeps'
/// points draw the boundaries; they do not change the verdict of the stated envelope.
#[test]
fn the_rollout_gate_scenario_gives_each_gates_boundary() {
    let t = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["run", "rollout-gate", "--quiet", "--no-calibration", "--no-event-log", "--out"])
        .arg(t.path().join("r"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("r/summary.json")).unwrap()).unwrap();
    let v = &json["verdict"];
    let production: Vec<&str> =
        v["gates"][0]["production"].as_array().unwrap().iter().map(|j| j["case"].as_str().unwrap()).collect();
    assert_eq!(production, ["window-exec"], "sweep points are not the envelope's verdict");
    let b = v["boundaries"].as_array().unwrap();
    let find = |gate: &str, axis: &str| {
        b.iter().find(|x| x["gate"] == gate && x["axis"] == axis).unwrap_or_else(|| panic!("{gate} {axis}: {b:?}"))
    };
    let rtt = find("pickup.p50 < 150ms", "round_trip");
    assert_eq!((rtt["unit"].as_str(), rtt["meets"].as_str()), (Some("ms"), Some("below")), "{rtt}");
    let (at, beyond) = (rtt["boundary"].as_f64().unwrap(), rtt["beyond"].as_f64().unwrap());
    assert!(40.0 <= at && at < beyond && beyond <= 100.0, "between two measured round trips: {rtt}");
    let window = find("idle_phase_discovery_per_min <= 5.0", "runner.window");
    assert_eq!((window["unit"].as_str(), window["meets"].as_str()), (Some("s"), Some("above")), "{window}");
    assert!(window["beyond"].as_f64().unwrap() >= 25.0, "production's 25 s misses it: {window}");
    let md = std::fs::read_to_string(t.path().join("r/summary.md")).unwrap();
    assert!(md.contains("### Where each rollout gate holds"), "{md}");
    assert!(md.contains("| window-exec-rtt `round_trip` | ✅ "), "{md}");
    let html = std::fs::read_to_string(t.path().join("r/report.html")).unwrap();
    assert!(html.contains("Where each rollout gate holds"));
}

#[test]
fn a_scenario_without_rollout_gates_shows_no_verdict() {
    let t = tempfile::tempdir().unwrap();
    // The same cases, each with gates of its own: arithmetic bands, not rollout gates.
    let text = DECLARED
        .replace("rollout = [\"pickup.p50 < 150ms\", \"idle_phase_discovery_per_min <= 5.0\"]\n", "")
        .replace("writer = \"watch\"\n", "writer = \"watch\"\ngates = [\"idle_phase_discovery_per_min >= 1\", \"idle_phase_discovery_per_min <= 100\"]\n");
    let out = run(t.path(), "plain", &text.replace("name = \"verdict\"", "name = \"plain\""));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let md = std::fs::read_to_string(t.path().join("plain/summary.md")).unwrap();
    assert!(!md.contains("Rollout verdict"), "{md}");
    assert!(!stdout.contains("rollout verdict"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(t.path().join("plain/summary.json")).unwrap()).unwrap();
    assert_eq!(json["verdict"], serde_json::json!({"pass": null, "gates": [], "meet_all": []}));
    let xml = std::fs::read_to_string(t.path().join("plain.xml")).unwrap();
    assert!(!xml.contains("plain.verdict"), "{xml}");
}
