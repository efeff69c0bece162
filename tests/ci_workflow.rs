//! The CI workflows (`.github/workflows/bench.yml` and `decision-map.yml`) parse and stay in
//! step with what they call: the README's test command, `scripts/ci-bench.sh` (which `.ci/run` runs too, so a
//! broken script fails our own CI), its baseline flags, its JUnit and report paths.

use std::path::Path;

use yaml_rust2::{Yaml, YamlLoader};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn workflow() -> Yaml {
    let text = std::fs::read_to_string(root().join(".github/workflows/bench.yml")).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

/// Every `run:` script and `uses:` action of a job, in order.
fn steps(job: &Yaml) -> (Vec<String>, Vec<String>) {
    let mut runs = Vec::new();
    let mut uses = Vec::new();
    for s in job["steps"].as_vec().expect("steps") {
        if let Some(r) = s["run"].as_str() {
            runs.push(r.to_owned());
        }
        if let Some(u) = s["uses"].as_str() {
            uses.push(u.to_owned());
        }
    }
    (runs, uses)
}

#[test]
fn the_workflow_runs_on_main_and_pull_requests_and_tests_first() {
    let w = workflow();
    assert!(w["on"]["push"]["branches"].as_vec().unwrap().iter().any(|b| b.as_str() == Some("main")));
    assert!(!w["on"]["pull_request"].is_badvalue(), "pull requests are compared with main");
    let (runs, _) = steps(&w["jobs"]["test"]);
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    assert!(
        readme.lines().any(|l| l == "cargo test" || l.starts_with("cargo test  ")),
        "the README's test command, `cargo test` alone on its line"
    );
    assert!(runs.iter().any(|r| r.trim() == "cargo test --locked"), "{runs:?}");
    assert_eq!(w["jobs"]["bench"]["needs"].as_str(), Some("test"));
}

#[test]
fn the_bench_job_calls_the_script_ci_runs_saves_main_and_compares_pull_requests() {
    let w = workflow();
    let (runs, uses) = steps(&w["jobs"]["bench"]);
    let script = runs.iter().find(|r| r.contains("scripts/ci-bench.sh")).expect("the bench script");
    assert!(script.contains("--save-baseline main") && script.contains("--baseline main"), "{script}");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(ci.contains("scripts/ci-bench.sh"), "our own CI runs the same script");
    let path = root().join("scripts/ci-bench.sh");
    let body = std::fs::read_to_string(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o111 != 0, "executable");
    for flag in ["--save-baseline|--baseline", "--junit", "GITHUB_STEP_SUMMARY", "--quick", "cargo bench"] {
        assert!(body.contains(flag), "ci-bench.sh handles {flag}");
    }
    // The baseline travels in a cache saved on main and restored on pull requests.
    assert!(uses.iter().any(|u| u.starts_with("actions/cache/save")));
    assert!(uses.iter().any(|u| u.starts_with("actions/cache/restore")));
    let text = std::fs::read_to_string(root().join(".github/workflows/bench.yml")).unwrap();
    assert!(text.contains("reports/baselines/main"), "the cache holds relay-bench's baseline");
}

#[test]
fn gates_and_reports_are_published() {
    let w = workflow();
    let bench = w["jobs"]["bench"]["steps"].as_vec().unwrap();
    let with = |action: &str| {
        bench.iter().find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with(action))).map(|s| s["with"].clone())
    };
    let junit = with("mikepenz/action-junit-report").expect("JUnit gates");
    assert_eq!(junit["report_paths"].as_str(), Some("target/ci-bench/junit.xml"));
    let upload = with("actions/upload-artifact").expect("artifacts");
    let paths = upload["path"].as_str().unwrap();
    for want in ["summary.md", "charts/", ".hgrm", "junit.xml"] {
        assert!(paths.contains(want), "uploads {want}: {paths}");
    }
}

/// The decision map's workflow: a part per matrix entry, every part from 1 to N, each
/// uploaded under the name the merge job downloads, merged, posted and uploaded.
#[test]
fn the_decision_map_runs_as_a_matrix_of_parts_and_one_merge() {
    let text = std::fs::read_to_string(root().join(".github/workflows/decision-map.yml")).unwrap();
    let w = YamlLoader::load_from_str(&text).unwrap().remove(0);
    let part = &w["jobs"]["part"];
    let shards: Vec<i64> =
        part["strategy"]["matrix"]["shard"].as_vec().unwrap().iter().filter_map(Yaml::as_i64).collect();
    let n = shards.len() as i64;
    assert_eq!(shards, (1..=n).collect::<Vec<_>>(), "every part from 1 to N once");
    let (runs, _) = steps(part);
    let run = runs.iter().find(|r| r.contains("relay-bench run")).expect("the part's run");
    assert!(run.contains(&format!("run decision-map --shard ${{{{ matrix.shard }}}}/{n} ")), "{run}");
    assert!(run.contains("|| [ $? -eq 1 ]"), "a gate failed is the map's own, not the job's: {run}");
    let upload = part["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| s["uses"].as_str().is_some_and(|u| u.starts_with("actions/upload-artifact")))
        .unwrap();
    assert_eq!(upload["with"]["name"].as_str(), Some("decision-map-part-${{ matrix.shard }}"));
    let merge = &w["jobs"]["merge"];
    assert_eq!(merge["needs"].as_str(), Some("part"));
    let (runs, _) = steps(merge);
    let script = runs.iter().find(|r| r.contains("relay-bench merge")).expect("the merge");
    assert!(script.contains("merge parts/decision-map-part-* --out decision-map"), "{script}");
    assert!(script.contains("decision-map/summary.md >> \"$GITHUB_STEP_SUMMARY\""), "{script}");
    let download = merge["steps"].as_vec().unwrap().iter().find(|s| s["with"]["pattern"].as_str().is_some()).unwrap();
    assert_eq!(download["with"]["pattern"].as_str(), Some("decision-map-part-*"));
    assert!(text.contains("decision-map/report.html"), "the report is uploaded");
    // The scenario it names is shipped, and `--shard` and `merge` are what the binary takes.
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_relay-bench")).args(["run", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--shard <K/N>"));
    let help =
        std::process::Command::new(env!("CARGO_BIN_EXE_relay-bench")).args(["merge", "--help"]).output().unwrap();
    assert!(help.status.success());
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_relay-bench")).arg("list").output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).lines().any(|l| l.starts_with("decision-map ")));
}
