//! The relay file protocol of SPEC §2, byte-compatible with the production relay.
//!
//! This module owns the bytes and the names: request and response encoding, decoding that
//! accepts any valid JSON from foreign writers, call-id sanitization and collision detection,
//! and the rules that tell a relay file (and its temp names) from anything else in a relay
//! directory. It does no I/O; publication lives in [`crate::base::fsio`].

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// Suffix of a request file: `<id>.req.json`.
pub(crate) const REQ_SUFFIX: &str = ".req.json";
/// Suffix of a response file: `<id>.res.json`.
pub(crate) const RES_SUFFIX: &str = ".res.json";
/// Marker of a temp name: `<final>.tmp.<nonce>`. Readers and watchers ignore such names.
pub(crate) const TMP_MARKER: &str = ".tmp.";
/// Longest sanitized id, in UTF-16 code units (as production's JavaScript counts them).
pub(crate) const MAX_ID_LEN: usize = 120;

/// A call id, shared by every event of the call (one allocation per call, not per event).
pub type CallId = std::sync::Arc<str>;

/// A tool call handed from the writer to the runner.
///
/// `args` is kept as raw JSON so the bytes a writer chose (key order included) travel
/// unchanged: `{"b":2,"a":"1"}` stays in that order.
///
/// `toolCallId` is what the writer chose; a request from a foreign writer that has none (or
/// `null`, or not a string) runs under its file id, as production's runner does: see
/// [`Request::call_id_or`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Request {
    /// The tool to run (`toolName`).
    #[serde(rename = "toolName")]
    pub tool_name: String,
    /// The writer's call id (`toolCallId`), if it gave one as a string.
    #[serde(rename = "toolCallId", default, deserialize_with = "lenient_id")]
    pub tool_call_id: Option<String>,
    /// The tool's arguments, as the writer wrote them (`args`; `{}` when absent).
    #[serde(default = "empty_args")]
    pub args: Box<RawValue>,
}

/// A `toolCallId` that is missing, `null` or not a string reads as none.
fn lenient_id<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(if let serde_json::Value::String(s) = serde_json::Value::deserialize(d)? { Some(s) } else { None })
}

fn empty_args() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).expect("{} is valid JSON")
}

impl Request {
    /// A request with the given args JSON (`None` means `{}`).
    pub fn new(tool_name: &str, tool_call_id: &str, args: Option<&str>) -> Result<Self, ProtocolError> {
        let args = match args {
            None => empty_args(),
            Some(a) => RawValue::from_string(a.to_owned()).map_err(|e| ProtocolError::BadArgs(e.to_string()))?,
        };
        Ok(Request { tool_name: tool_name.to_owned(), tool_call_id: Some(tool_call_id.to_owned()), args })
    }

    /// The call id the handler runs under: the request's own, else `file_id`.
    pub(crate) fn call_id_or<'a>(&'a self, file_id: &'a str) -> &'a str {
        self.tool_call_id.as_deref().unwrap_or(file_id)
    }

    /// The exact bytes of the production relay: `{"toolName":..,"toolCallId":..,"args":..}`.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a request always serializes")
    }

    /// Reads a request written by any writer (any whitespace, any key order).
    pub fn decode(bytes: &[u8]) -> Result<Self, ProtocolError> {
        serde_json::from_slice(bytes).map_err(|e| ProtocolError::Malformed(e.to_string()))
    }
}

/// The runner's answer: one of the three shapes of SPEC §2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// `{"ok":true,"text":"..."}`
    Ok(String),
    /// `{"ok":false,"error":"..."}`
    Error(String),
    /// `{"ok":true,"paused":true}`: a client tool parked; the turn ends and resumes later.
    Paused,
}

crate::base::named! {
/// What kind of answer a call got, without its payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `{"ok":true,"text":...}`: the tool ran and answered.
    Ok,
    /// `{"ok":false,"error":...}`: the call failed.
    Error,
    /// `{"ok":true,"paused":true}`: the turn paused on this call.
    Paused,
}
names ["ok", "error", "paused"]
}

#[derive(Serialize)]
struct OkWire<'a> {
    ok: bool,
    text: &'a str,
}
#[derive(Serialize)]
struct ErrWire<'a> {
    ok: bool,
    error: &'a str,
}
#[derive(Deserialize)]
struct AnyWire {
    ok: Option<bool>,
    #[serde(default)]
    paused: Option<bool>,
    text: Option<String>,
    error: Option<String>,
}

impl Response {
    /// What kind of answer this is.
    pub fn outcome(&self) -> Outcome {
        match self {
            Response::Ok(_) => Outcome::Ok,
            Response::Error(_) => Outcome::Error,
            Response::Paused => Outcome::Paused,
        }
    }

    /// The answer's bytes as production's runner writes them.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Response::Ok(text) => serde_json::to_vec(&OkWire { ok: true, text }),
            Response::Error(error) => serde_json::to_vec(&ErrWire { ok: false, error }),
            Response::Paused => Ok(br#"{"ok":true,"paused":true}"#.to_vec()),
        }
        .expect("a response always serializes")
    }

    /// Reads an answer. `paused` is checked before `ok`: a pause is never an empty success.
    pub fn decode(bytes: &[u8]) -> Result<Self, ProtocolError> {
        let w: AnyWire = serde_json::from_slice(bytes).map_err(|e| ProtocolError::Malformed(e.to_string()))?;
        if w.paused == Some(true) {
            return Ok(Response::Paused);
        }
        match w.ok {
            Some(true) => Ok(Response::Ok(w.text.unwrap_or_default())),
            Some(false) => Ok(Response::Error(w.error.unwrap_or_default())),
            None => Err(ProtocolError::Malformed("response has no boolean `ok` field".into())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("malformed relay file: {0}")]
    Malformed(String),
    #[error("args are not valid JSON: {0}")]
    BadArgs(String),
    #[error("call id {new:?} sanitizes to {file_id:?}, which call {existing:?} already uses in this relay dir")]
    IdCollision { new: String, existing: String, file_id: String },
}

/// The file id of a call id, as production's writer names it: every UTF-16 code unit outside
/// `[A-Za-z0-9_-]` becomes `_` (so an astral character, two units, becomes `__`), cut to 120
/// units, `tool` if empty. The result is ASCII and can never name a path outside the dir.
pub(crate) fn sanitize_id(call_id: &str) -> String {
    let mut out = String::with_capacity(call_id.len().min(MAX_ID_LEN));
    for c in call_id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else {
            out.extend(std::iter::repeat_n('_', c.len_utf16()));
        }
        if out.len() >= MAX_ID_LEN {
            out.truncate(MAX_ID_LEN);
            break;
        }
    }
    if out.is_empty() {
        out.push_str("tool");
    }
    out
}

/// What a name in a relay dir is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Request,
    Response,
    /// A temp name of a request or response (`x.req.json.tmp.123`).
    Temp,
    /// Anything else: never touched by the sweep.
    Other,
}

pub(crate) fn classify(name: &str) -> FileKind {
    if let Some(pos) = name.find(TMP_MARKER) {
        let base = &name[..pos];
        if base.ends_with(REQ_SUFFIX) || base.ends_with(RES_SUFFIX) {
            return FileKind::Temp;
        }
        return FileKind::Other;
    }
    if name.ends_with(REQ_SUFFIX) {
        FileKind::Request
    } else if name.ends_with(RES_SUFFIX) {
        FileKind::Response
    } else {
        FileKind::Other
    }
}

/// `<file_id>.req.json`
pub(crate) fn req_name(file_id: &str) -> String {
    format!("{file_id}{REQ_SUFFIX}")
}

/// `<file_id>.res.json`
pub(crate) fn res_name(file_id: &str) -> String {
    format!("{file_id}{RES_SUFFIX}")
}

/// The file id of a request or response name (`abc.req.json` -> `abc`).
pub(crate) fn file_id_of(name: &str) -> Option<&str> {
    name.strip_suffix(REQ_SUFFIX).or_else(|| name.strip_suffix(RES_SUFFIX))
}

/// Tracks the call ids in flight in one relay dir and refuses a second call whose id
/// sanitizes to a file id already in use (the two would overwrite each other's files).
#[derive(Debug, Default)]
pub(crate) struct IdRegistry {
    in_flight: HashMap<String, String>,
}

impl IdRegistry {
    /// Claims the file id of `call_id`, or reports the collision.
    pub(crate) fn claim(&mut self, call_id: &str) -> Result<String, ProtocolError> {
        let file_id = sanitize_id(call_id);
        if let Some(existing) = self.in_flight.get(&file_id) {
            return Err(ProtocolError::IdCollision { new: call_id.to_owned(), existing: existing.clone(), file_id });
        }
        self.in_flight.insert(file_id.clone(), call_id.to_owned());
        Ok(file_id)
    }

    pub(crate) fn release(&mut self, file_id: &str) {
        self.in_flight.remove(file_id);
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.in_flight.len()
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_request_bytes() {
        let r = Request::new("x", "call-1", Some(r#"{"b":2,"a":"1"}"#)).unwrap();
        assert_eq!(r.encode(), br#"{"toolName":"x","toolCallId":"call-1","args":{"b":2,"a":"1"}}"#.to_vec());
    }

    #[test]
    fn args_default_to_empty_object() {
        let r = Request::new("x", "c", None).unwrap();
        assert_eq!(r.encode(), br#"{"toolName":"x","toolCallId":"c","args":{}}"#.to_vec());
        let d = Request::decode(br#"{"toolCallId":"c","toolName":"x"}"#).unwrap();
        assert_eq!(d.args.get(), "{}");
    }

    #[test]
    fn foreign_whitespace_and_key_order_decode() {
        let d = Request::decode(
            b"{ \"args\" : {\"b\": 2, \"a\": \"1\"},\n \"toolCallId\": \"call-1\", \"toolName\": \"x\" }\n",
        )
        .unwrap();
        assert_eq!(d.tool_name, "x");
        assert_eq!(d.tool_call_id.as_deref(), Some("call-1"));
        assert_eq!(d.args.get(), r#"{"b": 2, "a": "1"}"#);
    }

    #[test]
    fn a_missing_or_non_string_call_id_runs_under_the_file_id() {
        for body in [
            r#"{"toolName":"x","args":{}}"#,
            r#"{"toolName":"x","toolCallId":null}"#,
            r#"{"toolName":"x","toolCallId":42}"#,
            r#"{"toolName":"x","toolCallId":{"a":1}}"#,
        ] {
            let r = Request::decode(body.as_bytes()).unwrap();
            assert_eq!(r.call_id_or("file-7"), "file-7", "{body}");
        }
        let r = Request::decode(br#"{"toolName":"x","toolCallId":"c-1"}"#).unwrap();
        assert_eq!(r.call_id_or("file-7"), "c-1");
    }

    #[test]
    fn truncated_request_is_malformed() {
        let full = Request::new("x", "c", Some(r#"{"k":"v"}"#)).unwrap().encode();
        for cut in 0..full.len() {
            assert!(Request::decode(&full[..cut]).is_err(), "prefix of {cut} bytes decoded");
        }
    }

    #[test]
    fn response_shapes_round_trip() {
        assert_eq!(Response::Ok("hi \"x\"".into()).encode(), br#"{"ok":true,"text":"hi \"x\""}"#.to_vec());
        assert_eq!(Response::Error("bad".into()).encode(), br#"{"ok":false,"error":"bad"}"#.to_vec());
        assert_eq!(Response::Paused.encode(), br#"{"ok":true,"paused":true}"#.to_vec());
        for r in [Response::Ok("t".into()), Response::Error("e".into()), Response::Paused] {
            assert_eq!(Response::decode(&r.encode()).unwrap(), r);
        }
    }

    #[test]
    fn pause_is_checked_before_ok() {
        assert_eq!(Response::decode(br#"{"paused":true,"ok":true}"#).unwrap(), Response::Paused);
        assert_eq!(Response::decode(br#"{"ok":true}"#).unwrap(), Response::Ok(String::new()));
        assert!(Response::decode(br#"{"text":"no ok"}"#).is_err());
    }

    #[test]
    fn sanitize_hostile_ids() {
        assert_eq!(sanitize_id("../../etc/passwd"), "______etc_passwd");
        assert_eq!(sanitize_id(""), "tool");
        assert_eq!(sanitize_id("héllo wörld"), "h_llo_w_rld");
        assert_eq!(sanitize_id("a\nb;rm -rf $(x)"), "a_b_rm_-rf___x_");
        let long = "x".repeat(500);
        assert_eq!(sanitize_id(&long).len(), MAX_ID_LEN);
        let emoji = "🦀".repeat(200);
        let s = sanitize_id(&emoji);
        assert_eq!(s.chars().count(), MAX_ID_LEN);
        assert!(s.chars().all(|c| c == '_'));
        // UTF-16 code units, as production's JavaScript counts them: an astral character is
        // two units (two `_`), a BMP one is one; the 120 cut counts units too.
        assert_eq!(sanitize_id("a🦀b"), "a__b");
        assert_eq!(sanitize_id("é🦀"), "___");
        let mixed = format!("{}🦀z", "x".repeat(119));
        assert_eq!(sanitize_id(&mixed), format!("{}_", "x".repeat(119)), "the cut falls inside the pair");
        for hostile in ["../../etc/passwd", "/abs", "a/b", ".", ".."] {
            let id = sanitize_id(hostile);
            assert!(!id.contains('/') && !id.contains('.'), "{hostile} -> {id}");
        }
    }

    #[test]
    fn collisions_are_detected_and_released() {
        let mut reg = IdRegistry::default();
        let a = reg.claim("call/1").unwrap();
        let err = reg.claim("call:1").unwrap_err();
        assert!(matches!(err, ProtocolError::IdCollision { ref file_id, .. } if file_id == "call_1"));
        reg.release(&a);
        assert_eq!(reg.claim("call:1").unwrap(), "call_1");
        // 500-char ids that differ only after char 120 collide too.
        let base = "y".repeat(120);
        reg.claim(&format!("{base}A")).unwrap();
        assert!(reg.claim(&format!("{base}B")).is_err());
    }

    #[test]
    fn classify_names() {
        assert_eq!(classify("a.req.json"), FileKind::Request);
        assert_eq!(classify("a.res.json"), FileKind::Response);
        assert_eq!(classify("a.req.json.tmp.77"), FileKind::Temp);
        assert_eq!(classify("a.res.json.tmp.x"), FileKind::Temp);
        assert_eq!(classify("notes.txt"), FileKind::Other);
        assert_eq!(classify("a.json.tmp.1"), FileKind::Other);
        assert_eq!(file_id_of("abc.req.json"), Some("abc"));
        assert_eq!(file_id_of("abc.txt"), None);
    }
}
