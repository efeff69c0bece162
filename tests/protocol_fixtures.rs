//! SPEC §2 against fixture files: the golden request bytes, the three answer shapes, and
//! files from other writers (other whitespace, other key order) read correctly.

use relay_bench::{Outcome, Request, Response};

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)).unwrap()
}

#[test]
fn the_golden_request_is_written_byte_for_byte() {
    let golden = fixture("request.golden.json");
    let req = Request::new("x", "call-1", Some(r#"{"b":2,"a":"1"}"#)).unwrap();
    assert_eq!(req.encode(), golden);
    let back = Request::decode(&golden).unwrap();
    assert_eq!(back.encode(), golden, "decode then encode keeps the bytes, args order included");
}

#[test]
fn a_foreign_request_reads_the_same() {
    let r = Request::decode(&fixture("request.foreign.json")).unwrap();
    assert_eq!((r.tool_name.as_str(), r.tool_call_id.as_deref().unwrap_or("")), ("x", "call-1"));
    let args: serde_json::Value = serde_json::from_str(r.args.get()).unwrap();
    assert_eq!(args, serde_json::json!({"b": 2, "a": "1"}));
}

#[test]
fn the_three_answer_shapes() {
    for (file, outcome) in [
        ("response.ok.json", Outcome::Ok),
        ("response.error.json", Outcome::Error),
        ("response.paused.json", Outcome::Paused),
        ("response.paused.foreign.json", Outcome::Paused),
    ] {
        let bytes = fixture(file);
        let r = Response::decode(&bytes).unwrap();
        assert_eq!(r.outcome(), outcome, "{file}");
        if !file.contains("foreign") {
            assert_eq!(r.encode(), bytes, "{file} is written byte for byte");
        }
    }
}
