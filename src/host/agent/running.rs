//! A sandbox-agent daemon already running (`url = "http://HOST:PORT"`, a token from the
//! environment): relay-bench starts none, checks before the run that it answers and takes
//! the token, and can strike only the wire in front of it.

use std::io;
use std::time::Duration;

use crate::host::{DaemonControl, DelayProxy};
use std::sync::Arc;

/// A daemon relay-bench did not start: only the wire in front of it can be struck.
pub(super) struct RunningDaemon {
    pub proxy: Option<Arc<DelayProxy>>,
}

impl DaemonControl for RunningDaemon {
    fn restart(&self, _down: Duration) -> Result<(), String> {
        Err("a daemon relay-bench did not start (url = ...) is not restarted by it".into())
    }

    fn disconnect(&self) -> Result<(), String> {
        DelayProxy::disconnect_any(self.proxy.as_deref())
    }

    fn pause(&self, _d: Duration) -> Result<(), String> {
        Err("a daemon relay-bench did not start (url = ...) is not paused by it".into())
    }

    fn blackhole(&self, d: Duration) -> Result<(), String> {
        DelayProxy::blackhole_any(self.proxy.as_deref(), d)
    }
}

/// `http://HOST:PORT` of a running daemon (no TLS in this build, no path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    host: String,
    port: u16,
}

impl Url {
    pub fn parse(url: &str) -> Result<Url, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("{url:?}: only http://HOST:PORT (this build has no TLS; put a TLS-terminating tunnel in front)")
        })?;
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest.rsplit_once(':').map_or((rest, Ok(80)), |(h, p)| (h, p.parse::<u16>()));
        match port {
            Ok(port) if !host.is_empty() && !host.contains('/') => Ok(Url { host: host.to_owned(), port }),
            _ => Err(format!("{url:?}: expected http://HOST:PORT")),
        }
    }

    pub fn host_port(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.host_port())
    }

    pub fn addr(&self) -> io::Result<std::net::SocketAddr> {
        use std::net::ToSocketAddrs;
        (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{}: no address", self.host)))
    }

    /// One request over a plain socket (before the run, outside any runtime): the status
    /// code and the body.
    fn plain(&self, request_line: &str, token: Option<&str>, json: Option<&str>) -> Result<(String, String), String> {
        use std::io::{Read, Write};
        let say = |e: &dyn std::fmt::Display| format!("{}: {e}", self.base());
        let addr = self.addr().map_err(|e| say(&e))?;
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3)).map_err(|e| say(&e))?;
        s.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| say(&e))?;
        let auth = token.map(|t| format!("authorization: Bearer {t}\r\n")).unwrap_or_default();
        let body = json
            .map_or_else(String::new, |j| format!("content-type: application/json\r\ncontent-length: {}\r\n", j.len()));
        let req = format!(
            "{request_line} HTTP/1.1\r\nhost: {}\r\n{auth}{body}connection: close\r\n\r\n{}",
            self.host_port(),
            json.unwrap_or("")
        );
        s.write_all(req.as_bytes()).map_err(|e| say(&e))?;
        let mut answer = Vec::new();
        let _ = s.take(1 << 20).read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        let code = text.split_whitespace().nth(1).ok_or_else(|| say(&"no HTTP answer"))?.to_owned();
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_owned();
        Ok((code, body))
    }

    /// `GET /v1/health` before the run: the daemon answers and takes the token.
    pub fn health(&self, token: Option<&str>, token_env: &str) -> Result<(), String> {
        let (code, _) = self.plain("GET /v1/health", token, None)?;
        let say = |e: &str| format!("{}: {e}", self.base());
        match code.as_str() {
            "200" => Ok(()),
            "401" => Err(say(&format!("the daemon refused the token (its token goes in ${token_env}, or name another variable with token_env)"))),
            code => Err(say(&format!("GET /v1/health answered {code}"))),
        }
    }

    /// What the daemon's own binary says to `--version` (it has no version endpoint: a
    /// process it runs reads its parent's executable).
    pub fn version(&self, token: Option<&str>) -> Result<String, String> {
        let run = serde_json::json!({
            "command": "sh",
            "args": ["-c", r#"exec "$(readlink /proc/$PPID/exe)" --version"#],
            "timeoutMs": 10_000,
        });
        let (code, body) = self.plain("POST /v1/processes/run", token, Some(&run.to_string()))?;
        let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("{code}: {e}"))?;
        match (v["exitCode"].as_i64(), v["stdout"].as_str()) {
            (Some(0), Some(out)) if !out.trim().is_empty() => Ok(out.trim().to_owned()),
            _ => Err(format!("its binary did not say ({code})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_http_host_and_port_only() {
        assert_eq!(Url::parse("http://10.0.0.5:2468/").unwrap().host_port(), "10.0.0.5:2468");
        assert_eq!(Url::parse("http://sandbox.local").unwrap().host_port(), "sandbox.local:80");
        assert!(Url::parse("https://x:1").unwrap_err().contains("no TLS"));
        assert!(Url::parse("http://x:port").is_err());
        assert!(Url::parse("http://x:1/v1").is_err(), "no path");
    }
}
