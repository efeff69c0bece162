//! The CI workflow (`.github/workflows/bench.yml`) parses and stays in step with what it
//! calls: the README's test command, `scripts/ci-bench.sh` (which `.ci/run` runs too, so a
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
