//! One `POST /v1/processes/run` on a TCP connection of its own, as each runner's held window
//! is (a pooled client would hide how many connections the daemon holds): connect, HTTP/1.1
//! handshake, the request, the whole answer. Dropping the future closes the connection (the
//! held request is cancelled; the daemon's child is not, which the cleanup sees to).
//! Failures keep what a report must say: the status and body, or the errno of the socket.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde::Deserialize;

use crate::results::capacity::How;

/// Where the daemon listens, and its token.
#[derive(Debug, Clone)]
pub(super) struct Endpoint {
    pub addr: SocketAddr,
    /// `HOST:PORT`, for the Host header.
    pub authority: String,
    /// Never written anywhere: sent as a bearer token only.
    pub token: Option<String>,
}

/// `/v1/processes/run`'s answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RunAnswer {
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    #[serde(default)]
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
}

/// How one exec failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum ExecError {
    #[error("cannot connect: {0}")]
    Connect(io::Error),
    #[error("{stage}: {}", hyper_detail(.error))]
    Http { stage: &'static str, error: hyper::Error },
    #[error("HTTP {status}: {body}")]
    Status { status: u16, body: String },
    #[error("unexpected answer: {0}")]
    Answer(String),
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
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return Some(io);
        }
        src = s.source();
    }
    None
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
pub(super) fn errno_name(n: i32) -> Option<&'static str> {
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
pub(super) fn errno_label(n: i32) -> String {
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

    pub fn how(&self) -> How {
        match self {
            ExecError::Status { status, body } => How::HttpStatus { status: *status, body: body.clone() },
            ExecError::Answer(why) => How::Connection { errno: None, error: format!("unexpected answer: {why}") },
            other => How::Connection { errno: other.errno().map(errno_label), error: other.to_string() },
        }
    }
}

/// Aborts the connection's task when the exec is dropped (its socket closes with it).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `argv` through `POST /v1/processes/run` (the daemon's bound: `timeout_ms`) on a new
/// connection; `connected` is counted up once the connection is made.
pub(super) async fn exec(
    ep: &Endpoint,
    argv: &[String],
    timeout_ms: u64,
    connected: Option<&AtomicU32>,
) -> Result<RunAnswer, ExecError> {
    let (command, args) = argv.split_first().ok_or_else(|| ExecError::Answer("empty argv".into()))?;
    let stream = tokio::net::TcpStream::connect(ep.addr).await.map_err(ExecError::Connect)?;
    let _ = stream.set_nodelay(true);
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| ExecError::Http { stage: "handshake", error })?;
    let _conn = AbortOnDrop(tokio::spawn(async move {
        let _ = conn.await;
    }));
    if let Some(c) = connected {
        c.fetch_add(1, Ordering::AcqRel);
    }
    let body = serde_json::json!({ "command": command, "args": args, "timeoutMs": timeout_ms }).to_string();
    let mut req = hyper::Request::post("/v1/processes/run")
        .header("host", &ep.authority)
        .header("content-type", "application/json");
    if let Some(t) = &ep.token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let req = req.body(Full::new(Bytes::from(body))).map_err(|e| ExecError::Answer(e.to_string()))?;
    let res = send.send_request(req).await.map_err(|error| ExecError::Http { stage: "request", error })?;
    let status = res.status();
    let bytes = res.into_body().collect().await.map_err(|error| ExecError::Http { stage: "answer", error })?.to_bytes();
    if !status.is_success() {
        return Err(ExecError::Status { status: status.as_u16(), body: kept(&bytes) });
    }
    serde_json::from_slice(&bytes).map_err(|e| ExecError::Answer(format!("{e}: {}", kept(&bytes))))
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
        match e.how() {
            How::Connection { errno: Some(n), error } => {
                assert!(n.starts_with("ECONNREFUSED"), "{n}");
                assert!(error.starts_with("cannot connect"), "{error}");
            }
            other => panic!("{other:?}"),
        }
        assert!(ExecError::Connect(io::Error::from_raw_os_error(libc::EMFILE)).client_limit());
        let s = ExecError::Status { status: 502, body: "spawn failed".into() };
        assert_eq!(s.how(), How::HttpStatus { status: 502, body: "spawn failed".into() });
        assert_eq!(kept(&vec![b'x'; BODY_KEPT + 5]).len(), BODY_KEPT + " ( bytes)".len() + 4 + "…".len());
    }
}
