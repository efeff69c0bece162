//! `reports/schema.json` describes `summary.json`: real output of real runs is validated
//! against it with the `jsonschema` crate, which knows every keyword of the schema's draft
//! (2020-12). The schema declares every key the suite writes (`additionalProperties:
//! false`), so it cannot fall behind the code.

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

mod common;

fn validator() -> jsonschema::Validator {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    jsonschema::validator_for(&schema).expect("reports/schema.json is a valid JSON Schema")
}

fn check(summary: &Value) {
    common::check_schema(summary);
}

async fn run(text: &str, calibrate: bool) -> Value {
    let (_, out, _relay) = common::run("schema.toml", text, calibrate, false).await;
    serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_output_matches_the_schema() {
    // Virtual cases with faults and a baseline: faults[] (a storm among them), vs_baseline,
    // injected legs.
    let virtual_run = run(
        r#"
name = "schema-virtual"
baseline = "poll"
gates = ["lost == 0", "pickup.p50 < 10s"]
[workload]
sandboxes = 2
duration = "3m"
turns_per_sec = 1
[[case]]
name = "poll"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "poll"
writer = "poll"
[[case]]
name = "window"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "exec-fail"
at = "60s"
[[case]]
name = "storm"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "read-fails"
at = "60s"
duration = "2s"
"#,
        false,
    )
    .await;
    check(&virtual_run);
    assert!(virtual_run["results"][1]["faults"].as_array().unwrap().len() == 1);
    assert!(virtual_run["results"][2]["faults"][0]["storm"]["from_secs"].is_number(), "a storm was counted");
    // A real case with the calibration, and a gate that fails (observed values, pass false).
    let real_run = run(
        r#"
name = "schema-real"
gates = ["pickup.p50 < 1us"]
[workload]
duration = "500ms"
turns_per_sec = 10
[[case]]
name = "watch"
runner = "watch"
writer = "watch"
"#,
        true,
    )
    .await;
    check(&real_run);
    assert!(!real_run["calibration"].is_null());
    // Agent turns under a limit that rejects, with a fleet-wide fault: the fleet's figures.
    let fleet_run = run(
        r#"
name = "schema-fleet"
[workload]
sandboxes = 6
duration = "4m"
[workload.agent]
think = { min = "2s", max = "6s" }
user_think = { mean = "10s" }
[limits.some]
org_held_execs = 2
on_limit = "queue"
queue_wait = "3s"
idle_timeout = "20s"
[[case]]
name = "limited"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
limits = "some"
[[case.fault]]
kind = "org-limit"
at = "2m"
duration = "30s"
held_execs = 0
"#,
        false,
    )
    .await;
    check(&fleet_run);
    let f = &fleet_run["results"][0]["fleet"];
    assert!(f["turns"]["started"].as_u64().unwrap() >= 4 && f["queued"].as_u64().unwrap() > 0, "{f}");
    assert!(!fleet_run["results"][0]["faults"][0]["fleet_recovery"].is_null());
}

#[test]
fn the_validator_rejects_what_it_should() {
    let v = validator();
    let bad = serde_json::json!({"schema_version": 2, "surprise": true});
    let errors: Vec<_> = v.iter_errors(&bad).collect();
    let any = |f: &dyn Fn(&ValidationErrorKind) -> bool| errors.iter().any(|e| f(e.kind()));
    assert!(
        any(&|k| matches!(k, ValidationErrorKind::Constant { expected_value } if **expected_value == 1)),
        "{errors:?}"
    );
    assert!(
        any(&|k| matches!(k, ValidationErrorKind::AdditionalProperties { unexpected } if unexpected == &["surprise"])),
        "{errors:?}"
    );
    assert!(any(&|k| matches!(k, ValidationErrorKind::Required { .. })), "{errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_json_reads_back_into_the_same_summary() {
    let v = run(
        r#"
name = "round-trip"
baseline = "a"
gates = ["lost == 0"]
[workload]
duration = "2m"
turns_per_sec = 1
[[case]]
name = "a"
host = "remote"
profile = "lan"
clock = "virtual"
runner = "poll"
writer = "poll"
[[case]]
name = "b"
host = "remote"
profile = "lan"
clock = "virtual"
runner = "window-exec"
writer = "watch"
[[case.fault]]
kind = "daemon-restart"
at = "30s"
"#,
        false,
    )
    .await;
    let s: relay_bench::Summary = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&s).unwrap(), v, "what `report` reads is what `run` wrote");
}
