//! `reports/schema.json` describes `summary.json`: real output of real runs is validated
//! against it, with a small validator for the keywords the schema uses (type, const, enum,
//! properties, required, additionalProperties, items, anyOf, $ref). Every key the suite
//! writes must be declared, so the schema cannot fall behind the code.

use serde_json::Value;

mod common;

fn schema() -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        other => panic!("schema uses an unknown type {other}"),
    }
}

fn validate(root: &Value, s: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $defs refs only");
        return validate(root, &root["$defs"][name], v, at, errors);
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        let ok = any.iter().any(|alt| {
            let mut e = Vec::new();
            validate(root, alt, v, at, &mut e);
            e.is_empty()
        });
        if !ok {
            errors.push(format!("{at}: matches no alternative"));
        }
        return;
    }
    if let Some(c) = s.get("const") {
        if c != v {
            errors.push(format!("{at}: expected {c}, found {v}"));
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.contains(v) {
            errors.push(format!("{at}: {v} is not one of {e:?}"));
        }
    }
    match s.get("type") {
        Some(Value::String(t)) if !type_ok(t, v) => errors.push(format!("{at}: expected {t}, found {v}")),
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap(), v)) => {
            errors.push(format!("{at}: expected one of {ts:?}, found {v}"))
        }
        _ => {}
    }
    if let (Some(obj), true) = (v.as_object(), s.get("properties").is_some() || s.get("additionalProperties").is_some())
    {
        let props = s.get("properties").and_then(Value::as_object);
        for req in s.get("required").and_then(Value::as_array).into_iter().flatten() {
            if !obj.contains_key(req.as_str().unwrap()) {
                errors.push(format!("{at}: missing required {req}"));
            }
        }
        for (k, val) in obj {
            match (props.and_then(|p| p.get(k)), s.get("additionalProperties")) {
                (Some(ps), _) => validate(root, ps, val, &format!("{at}.{k}"), errors),
                (None, Some(Value::Bool(false))) => errors.push(format!("{at}: undeclared key {k:?}")),
                (None, Some(extra)) if extra.is_object() => validate(root, extra, val, &format!("{at}.{k}"), errors),
                _ => {}
            }
        }
    }
    if let (Some(arr), Some(items)) = (v.as_array(), s.get("items")) {
        for (i, x) in arr.iter().enumerate() {
            validate(root, items, x, &format!("{at}[{i}]"), errors);
        }
    }
}

fn check(summary: &Value) {
    let root = schema();
    let mut errors = Vec::new();
    validate(&root, &root, summary, "$", &mut errors);
    assert!(errors.is_empty(), "summary.json does not match reports/schema.json:\n{}", errors.join("\n"));
}

async fn run(text: &str, calibrate: bool) -> Value {
    let (_, out, _relay) = common::run("schema.toml", text, calibrate, false).await;
    serde_json::from_str(&std::fs::read_to_string(out.path().join("summary.json")).unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_output_matches_the_schema() {
    // Virtual cases with a fault and a baseline: faults[], vs_baseline, injected legs.
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
"#,
        false,
    )
    .await;
    check(&virtual_run);
    assert!(virtual_run["results"][1]["faults"].as_array().unwrap().len() == 1);
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
}

#[test]
fn the_validator_rejects_what_it_should() {
    let root = schema();
    let mut errors = Vec::new();
    let bad = serde_json::json!({"schema_version": 2, "surprise": true});
    validate(&root, &root, &bad, "$", &mut errors);
    assert!(errors.iter().any(|e| e.contains("expected 1")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("undeclared key \"surprise\"")), "{errors:?}");
    assert!(errors.iter().any(|e| e.contains("missing required")), "{errors:?}");
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
    let s: relay_bench::summary::Summary = serde_json::from_value(v.clone()).unwrap();
    assert_eq!(serde_json::to_value(&s).unwrap(), v, "what `report` reads is what `run` wrote");
}
