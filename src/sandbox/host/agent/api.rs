//! One daemon's HTTP API as relay-bench speaks it: a keep-alive pooled HTTP/1.1 client (as
//! production's `fetch` keeps its connections), a base URL (the daemon's, or a delay proxy's
//! in front of it), and an optional bearer token. The runner's host ([`super::AgentHost`])
//! and relay-bench's own requests ([`super::SandboxControl`]) each hold one.

use std::io;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::Method;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use serde::Deserialize;

use crate::sandbox::dir::ExecOutput;

#[derive(Clone)]
pub(crate) struct Api {
    http: Client<HttpConnector, Full<Bytes>>,
    pub base: String,
    /// Never written anywhere: sent as a bearer token only.
    token: Option<String>,
}

/// `/v1/processes/run`'s answer.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RunAnswer {
    exit_code: Option<i32>,
    #[serde(default)]
    timed_out: bool,
    #[serde(default)]
    stdout: String,
    #[serde(default)]
    stderr: String,
}

impl Api {
    pub fn new(base: String, token: Option<String>) -> Api {
        let http = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build_http();
        Api { http, base, token }
    }

    /// `route?path=<path>`.
    pub fn at(&self, route: &str, path: &str) -> String {
        format!("{}{route}?path={}", self.base, percent_encode(path))
    }

    /// One request; an answer that is not 2xx is an error carrying the daemon's detail
    /// ("path not found" becomes NotFound, 401 PermissionDenied).
    /// `body`: its content type and bytes, for the requests that carry one.
    pub async fn send(&self, method: Method, uri: String, body: Option<(&str, Vec<u8>)>) -> io::Result<Vec<u8>> {
        let mut req = hyper::Request::builder().method(method).uri(uri);
        let (content_type, body) = body.map_or((None, Vec::new()), |(t, b)| (Some(t), b));
        if let Some(t) = content_type {
            req = req.header("content-type", t);
        }
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let req = req
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("sandbox-agent: {e}")))?;
        let res =
            self.http.request(req).await.map_err(|e| io::Error::other(format!("sandbox-agent: {}", cause(&e))))?;
        let status = res.status();
        let body =
            res.into_body().collect().await.map_err(|e| io::Error::other(format!("sandbox-agent: {e}")))?.to_bytes();
        if status.is_success() {
            return Ok(body.to_vec());
        }
        let detail = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|v| v.get("detail").and_then(|d| d.as_str()).map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        let kind = if status == hyper::StatusCode::UNAUTHORIZED {
            io::ErrorKind::PermissionDenied
        } else if detail.contains("path not found") {
            io::ErrorKind::NotFound
        } else {
            io::ErrorKind::Other
        };
        Err(io::Error::new(kind, format!("sandbox-agent {status}: {detail}")))
    }

    pub(crate) async fn post_json(&self, route: &str, body: serde_json::Value) -> io::Result<Vec<u8>> {
        self.send(
            Method::POST,
            format!("{}{route}", self.base),
            Some(("application/json", body.to_string().into_bytes())),
        )
        .await
    }

    /// `POST /v1/processes/run` of `argv`, bounded by the daemon at `timeout_ms`.
    pub async fn run(&self, argv: &[String], timeout_ms: u64) -> io::Result<ExecOutput> {
        let (command, args) =
            argv.split_first().ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty argv"))?;
        let body = serde_json::json!({ "command": command, "args": args, "timeoutMs": timeout_ms });
        let bytes = self.post_json("/v1/processes/run", body).await?;
        let a: RunAnswer = decode(&bytes)?;
        Ok(ExecOutput {
            code: a.exit_code,
            stdout: a.stdout.into_bytes(),
            stderr: a.stderr.into_bytes(),
            timed_out: a.timed_out,
        })
    }

    /// `PUT /v1/fs/file?path=` of `bytes` (octet-stream).
    pub(crate) async fn put_file(&self, path: &str, bytes: Vec<u8>) -> io::Result<()> {
        self.send(Method::PUT, self.at("/v1/fs/file", path), Some(("application/octet-stream", bytes))).await.map(drop)
    }
}

/// A daemon's JSON answer as `T`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> io::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| io::Error::other(format!("sandbox-agent: unexpected answer: {e}")))
}

/// A query value: unreserved bytes as they are, every other byte `%XX`.
pub(crate) fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What failed on the wire, without the URL (it holds the relay dir's path).
fn cause(e: &hyper_util::client::legacy::Error) -> String {
    let kind = if e.is_connect() { "cannot connect" } else { "request failed" };
    match std::error::Error::source(e) {
        Some(src) => format!("{kind}: {src}"),
        None => kind.to_owned(),
    }
}
