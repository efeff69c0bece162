//! The one HTTP client of a sandbox-agent daemon, as relay-bench speaks to it. [`Api`] is a
//! keep-alive pooled HTTP/1.1 client (as production's `fetch` keeps its connections) over a
//! base URL (the daemon's, or a delay proxy's in front of it) and an optional bearer token:
//! the runner's host ([`super::AgentHost`]) and relay-bench's own requests
//! ([`super::SandboxControl`]) each hold one. [`Endpoint::run_alone`] is one
//! `POST /v1/processes/run` on a connection of its own (`daemon-capacity`'s held execs: a
//! pooled client would hide how many connections the daemon holds).
//!
//! Every wait is bounded, whatever the daemon does: a connect within [`CONNECT_TIMEOUT`], an
//! answer within [`REQUEST_TIMEOUT`] (a process run: its own timeout plus [`RUN_GRACE`]), and
//! a body of at most [`BODY_CAP`] bytes. A daemon that accepts and never answers, or answers
//! without end, is an error that says which bound it hit.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::Method;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use serde::Deserialize;

use crate::base::clock;
use crate::sandbox::dir::ExecOutput;

/// How long a connection to a daemon may take to open.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a request that runs nothing (a file read, a stat, a move) may wait for its
/// whole answer.
pub(super) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// How much longer than its own `timeoutMs` a process run may take to answer (the daemon
/// kills the program at `timeoutMs`, then answers).
pub(super) const RUN_GRACE: Duration = Duration::from_secs(10);
/// The most bytes of a daemon's answer read; a longer one is an error.
pub(super) const BODY_CAP: usize = 64 << 20;

/// How long a process run bounded by the daemon at `timeout_ms` may wait for its answer.
pub(crate) fn run_bound(timeout_ms: u64) -> Duration {
    Duration::from_millis(timeout_ms) + RUN_GRACE
}

#[derive(Clone)]
pub(crate) struct Api {
    http: Client<HttpConnector, Full<Bytes>>,
    pub base: String,
    /// Never written anywhere: sent as a bearer token only.
    token: Option<String>,
}

/// `/v1/processes/run`'s answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAnswer {
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
}

impl Api {
    pub(crate) fn new(base: String, token: Option<String>) -> Api {
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(CONNECT_TIMEOUT));
        let http = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .build(connector);
        Api { http, base, token }
    }

    /// `route?path=<path>`.
    pub(crate) fn at(&self, route: &str, path: &str) -> String {
        format!("{}{route}?path={}", self.base, percent_encode(path))
    }

    /// One request; an answer that is not 2xx is an error carrying the daemon's detail
    /// ("path not found" becomes NotFound, 401 PermissionDenied).
    /// `body`: its content type and bytes, for the requests that carry one.
    pub(crate) async fn send(&self, method: Method, uri: String, body: Option<(&str, Vec<u8>)>) -> io::Result<Vec<u8>> {
        self.send_within(REQUEST_TIMEOUT, method, uri, body).await
    }

    /// [`Api::send`], its whole answer bounded by `bound`.
    async fn send_within(
        &self,
        bound: Duration,
        method: Method,
        uri: String,
        body: Option<(&str, Vec<u8>)>,
    ) -> io::Result<Vec<u8>> {
        let answer = clock::timeout(bound, self.send_unbounded(method, uri, body)).await;
        answer.unwrap_or_else(|_| Err(no_answer_in(bound)))
    }

    async fn send_unbounded(&self, method: Method, uri: String, body: Option<(&str, Vec<u8>)>) -> io::Result<Vec<u8>> {
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
        let body = read_capped(res.into_body()).await.map_err(|e| io::Error::other(format!("sandbox-agent: {e}")))?;
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
        self.post_json_within(REQUEST_TIMEOUT, route, body).await
    }

    async fn post_json_within(&self, bound: Duration, route: &str, body: serde_json::Value) -> io::Result<Vec<u8>> {
        let body = Some(("application/json", body.to_string().into_bytes()));
        self.send_within(bound, Method::POST, format!("{}{route}", self.base), body).await
    }

    /// `POST /v1/processes/run` of `argv`, bounded by the daemon at `timeout_ms` (and its
    /// answer waited for at most [`run_bound`]).
    pub(crate) async fn run(&self, argv: &[String], timeout_ms: u64) -> io::Result<ExecOutput> {
        let body = run_body(argv, timeout_ms).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let bytes = self.post_json_within(run_bound(timeout_ms), "/v1/processes/run", body).await?;
        let a: RunAnswer = decode(&bytes)?;
        Ok(ExecOutput {
            code: a.exit_code,
            stdout: a.stdout.into_bytes(),
            stderr: a.stderr.into_bytes(),
            timed_out: a.timed_out,
        })
    }

    /// `DELETE /v1/fs/entry?path=` (with `recursive`, and all under it); an entry gone
    /// already is fine.
    pub(crate) async fn delete_entry(&self, path: &str, recursive: bool) -> io::Result<()> {
        let uri = self.at("/v1/fs/entry", path) + if recursive { "&recursive=true" } else { "" };
        match self.send(Method::DELETE, uri, None).await {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other.map(drop),
        }
    }

    /// `PUT /v1/fs/file?path=` of `bytes` (octet-stream).
    pub(crate) async fn put_file(&self, path: &str, bytes: Vec<u8>) -> io::Result<()> {
        self.send(Method::PUT, self.at("/v1/fs/file", path), Some(("application/octet-stream", bytes))).await.map(drop)
    }
}

/// `/v1/processes/run`'s request body for `argv`.
fn run_body(argv: &[String], timeout_ms: u64) -> Result<serde_json::Value, &'static str> {
    let (command, args) = argv.split_first().ok_or("empty argv")?;
    Ok(serde_json::json!({ "command": command, "args": args, "timeoutMs": timeout_ms }))
}

/// The error of a daemon that did not answer within `bound`.
fn no_answer_in(bound: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "sandbox-agent: no answer in {} (the daemon accepted the request and never answered)",
            crate::base::units::human(bound)
        ),
    )
}

/// A body read whole, at most [`BODY_CAP`] bytes.
async fn read_capped(body: hyper::body::Incoming) -> Result<Bytes, Box<dyn std::error::Error + Send + Sync>> {
    match Limited::new(body, BODY_CAP).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            Err(format!("an answer longer than the {BODY_CAP}-byte cap (not read further)").into())
        }
        Err(e) => Err(e),
    }
}

/// A daemon's JSON answer as `T`.
pub(crate) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> io::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| io::Error::other(format!("sandbox-agent: unexpected answer: {e}")))
}

/// Where a daemon listens, and its token, for requests on connections of their own
/// ([`Endpoint::run_alone`]).
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub addr: SocketAddr,
    /// `HOST:PORT`, for the Host header.
    pub authority: String,
    /// Never written anywhere: sent as a bearer token only.
    pub token: Option<String>,
}

/// How one process run on a connection of its own failed: what a report must say (the
/// status and body, or the errno of the socket, or the bound it hit).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExecError {
    #[error("cannot connect: {0}")]
    Connect(io::Error),
    #[error("{stage}: {}", hyper_detail(.error))]
    Http { stage: &'static str, error: hyper::Error },
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("unexpected answer: {0}")]
    Answer(String),
    /// The connect or the answer took longer than its bound.
    #[error("{what} in {}: the daemon {why}", crate::base::units::human(*.bound))]
    TimedOut { what: &'static str, bound: Duration, why: &'static str },
}

/// A daemon's error body is kept up to this many bytes.
const BODY_KEPT: usize = 2048;

fn kept(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(BODY_KEPT)]).into_owned();
    if bytes.len() > BODY_KEPT {
        format!("{text}… ({} bytes)", bytes.len())
    } else {
        text
    }
}

/// The io error under a hyper error, if there is one.
fn io_cause(e: &hyper::Error) -> Option<&io::Error> {
    std::iter::successors(std::error::Error::source(e), |s| s.source()).find_map(|s| s.downcast_ref::<io::Error>())
}

fn hyper_detail(e: &hyper::Error) -> String {
    let what = if e.is_incomplete_message() {
        "the daemon closed the connection before answering".to_owned()
    } else {
        e.to_string()
    };
    match io_cause(e) {
        Some(io) => format!("{what} ({io})"),
        None => what,
    }
}

/// `ECONNREFUSED`, `EMFILE`, ...: the errnos a socket or a spawn fails with under load.
pub(crate) fn errno_name(n: i32) -> Option<&'static str> {
    Some(match n {
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ECONNRESET => "ECONNRESET",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::EPIPE => "EPIPE",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::ENOBUFS => "ENOBUFS",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ENETUNREACH => "ENETUNREACH",
        _ => return None,
    })
}

/// `ECONNREFUSED (errno 111)`.
pub(crate) fn errno_label(n: i32) -> String {
    match errno_name(n) {
        Some(name) => format!("{name} (errno {n})"),
        None => format!("errno {n}"),
    }
}

impl ExecError {
    /// The errno of the socket, when the failure had one.
    pub(crate) fn errno(&self) -> Option<i32> {
        match self {
            ExecError::Connect(e) => e.raw_os_error(),
            ExecError::Http { error, .. } => io_cause(error).and_then(io::Error::raw_os_error),
            _ => None,
        }
    }

    /// relay-bench's own descriptors ran out (EMFILE or ENFILE making its socket): its limit,
    /// not the daemon's.
    pub(crate) fn client_limit(&self) -> bool {
        matches!(self, ExecError::Connect(_)) && matches!(self.errno(), Some(libc::EMFILE | libc::ENFILE))
    }
}

/// Aborts the connection's task when the exec is dropped (its socket closes with it).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Endpoint {
    /// Runs `argv` through `POST /v1/processes/run` (the daemon's bound: `timeout_ms`) on a
    /// new connection: connect, HTTP/1.1 handshake, the request, the whole answer (within
    /// [`CONNECT_TIMEOUT`], then [`run_bound`], at most [`BODY_CAP`] bytes). `connected` is
    /// counted up once the connection is made. Dropping the future closes the connection
    /// (the held request is cancelled; the daemon's child is not).
    pub(crate) async fn run_alone(
        &self,
        argv: &[String],
        timeout_ms: u64,
        connected: Option<&AtomicU32>,
    ) -> Result<RunAnswer, ExecError> {
        self.run_alone_within(run_bound(timeout_ms), argv, timeout_ms, connected).await
    }

    async fn run_alone_within(
        &self,
        bound: Duration,
        argv: &[String],
        timeout_ms: u64,
        connected: Option<&AtomicU32>,
    ) -> Result<RunAnswer, ExecError> {
        let body = run_body(argv, timeout_ms).map_err(|e| ExecError::Answer(e.into()))?.to_string();
        let stream = clock::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(self.addr))
            .await
            .map_err(|_| ExecError::TimedOut { what: "no connection", bound: CONNECT_TIMEOUT, why: "did not accept" })?
            .map_err(ExecError::Connect)?;
        let _ = stream.set_nodelay(true);
        let answer = async {
            let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(|error| ExecError::Http { stage: "handshake", error })?;
            let conn = AbortOnDrop(tokio::spawn(async move {
                let _ = conn.await;
            }));
            if let Some(c) = connected {
                c.fetch_add(1, Ordering::AcqRel);
            }
            let mut req = hyper::Request::post("/v1/processes/run")
                .header("host", &self.authority)
                .header("content-type", "application/json");
            if let Some(t) = &self.token {
                req = req.header("authorization", format!("Bearer {t}"));
            }
            let req = req.body(Full::new(Bytes::from(body))).map_err(|e| ExecError::Answer(e.to_string()))?;
            let res = send.send_request(req).await.map_err(|error| ExecError::Http { stage: "request", error })?;
            let status = res.status();
            let bytes = read_capped(res.into_body()).await.map_err(|e| match e.downcast::<hyper::Error>() {
                Ok(error) => ExecError::Http { stage: "answer", error: *error },
                Err(e) => ExecError::Answer(e.to_string()),
            })?;
            drop(conn);
            Ok::<_, ExecError>((status, bytes))
        };
        let never = |_| ExecError::TimedOut { what: "no answer", bound, why: "accepted and never answered" };
        let (status, bytes) = clock::timeout(bound, answer).await.map_err(never)??;
        if !status.is_success() {
            return Err(ExecError::Status { status: status.as_u16(), body: kept(&bytes) });
        }
        serde_json::from_slice(&bytes).map_err(|e| ExecError::Answer(format!("{e}: {}", kept(&bytes))))
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_are_named_and_a_refused_connect_says_so() {
        assert_eq!(errno_label(libc::ECONNREFUSED), format!("ECONNREFUSED (errno {})", libc::ECONNREFUSED));
        assert_eq!(errno_label(9999), "errno 9999");
        let e = ExecError::Connect(io::Error::from_raw_os_error(libc::ECONNREFUSED));
        assert!(!e.client_limit());
        assert_eq!(e.errno(), Some(libc::ECONNREFUSED));
        assert!(e.to_string().starts_with("cannot connect"), "{e}");
        assert!(ExecError::Connect(io::Error::from_raw_os_error(libc::EMFILE)).client_limit());
        assert_eq!(kept(&vec![b'x'; BODY_KEPT + 5]).len(), BODY_KEPT + " ( bytes)".len() + 4 + "…".len());
    }

    /// A listener that accepts every connection and never answers (its sockets kept open),
    /// or answers each with `answer` and then `endless` bytes without end.
    fn server(answer: Option<&'static str>) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let h = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut held = Vec::new();
            for _ in 0..2 {
                let Ok((mut s, _)) = l.accept() else { return };
                let _ = s.read(&mut [0u8; 4096]);
                if let Some(head) = answer {
                    let _ = s.write_all(head.as_bytes());
                    let chunk = vec![b'x'; 1 << 20];
                    while s.write_all(&chunk).is_ok() {}
                }
                held.push(s);
            }
            std::thread::sleep(Duration::from_secs(120));
        });
        (addr, h)
    }

    fn endpoint(addr: SocketAddr) -> Endpoint {
        Endpoint { addr, authority: addr.to_string(), token: None }
    }

    #[tokio::test]
    async fn a_daemon_that_never_answers_is_an_error_at_the_bound() {
        let (addr, _server) = server(None);
        let bound = Duration::from_millis(300);
        let e = endpoint(addr).run_alone_within(bound, &["true".into()], 1000, None).await.unwrap_err();
        assert!(matches!(e, ExecError::TimedOut { what: "no answer", .. }), "{e}");
        assert!(e.to_string().contains("accepted and never answered"), "{e}");
        let api = Api::new(format!("http://{addr}"), None);
        let e = api.send_within(bound, Method::GET, api.at("/v1/fs/stat", "/x"), None).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
    }

    #[tokio::test]
    async fn an_endless_answer_is_read_no_further_than_the_cap() {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1073741824\r\n\r\n";
        let (addr, _server) = server(Some(head));
        let e = endpoint(addr).run_alone(&["true".into()], 1000, None).await.unwrap_err();
        assert!(e.to_string().contains(&format!("longer than the {BODY_CAP}-byte cap")), "{e}");
        let api = Api::new(format!("http://{addr}"), None);
        let e = api.send(Method::GET, api.at("/v1/fs/file", "/x"), None).await.unwrap_err();
        assert!(e.to_string().contains("-byte cap"), "{e}");
    }
}
