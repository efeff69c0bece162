//! A sandbox-agent daemon already running (`url = "http://HOST:PORT"`, a token from the
//! environment): relay-bench starts none, checks before the run that it answers and takes
//! the token, and can strike only the wire in front of it.

use std::io;
use std::time::Duration;

use std::sync::Arc;

use super::api::Api;
use super::control::{BenchRequest, BenchRequests, SandboxControl};
use crate::base::clock;

/// `http://HOST:PORT` of a running daemon (no TLS in this build, no path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    host: String,
    port: u16,
}

/// A daemon's URL this build cannot reach, saying the form it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum UrlError {
    #[error("{0:?}: only http://HOST:PORT (this build has no TLS; put a TLS-terminating tunnel in front)")]
    NoTls(String),
    #[error("{0:?}: expected http://HOST:PORT")]
    Syntax(String),
}

/// A check of a running daemon before the run that got no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckError {
    #[error("{0}")]
    Runtime(io::Error),
    #[error("no answer within {}", crate::base::units::human(CHECK_BOUND))]
    NoAnswer,
    #[error("the check panicked")]
    Panicked,
}

/// A running daemon that failed its health check before the run: the URL, and what to fix.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HealthError {
    #[error(
        "{base}: the daemon refused the token (its token goes in ${token_env}, or name another variable with token_env)"
    )]
    TokenRefused { base: String, token_env: String },
    #[error("{base}: {why}")]
    Failed { base: String, why: io::Error },
    #[error("{base}: {why}")]
    Unchecked { base: String, why: CheckError },
}

/// Why a running daemon's version is not known.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VersionError {
    #[error(transparent)]
    Unchecked(#[from] CheckError),
    #[error(transparent)]
    Daemon(#[from] io::Error),
}

impl Url {
    pub(crate) fn parse(url: &str) -> Result<Url, UrlError> {
        let rest = url.strip_prefix("http://").ok_or_else(|| UrlError::NoTls(url.to_owned()))?;
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest.rsplit_once(':').map_or((rest, Ok(80)), |(h, p)| (h, p.parse::<u16>()));
        match port {
            Ok(port) if !host.is_empty() && !host.contains('/') => Ok(Url { host: host.to_owned(), port }),
            _ => Err(UrlError::Syntax(url.to_owned())),
        }
    }

    pub(crate) fn host_port(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.host_port())
    }

    pub(crate) fn addr(&self) -> io::Result<std::net::SocketAddr> {
        use std::net::ToSocketAddrs;
        (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{}: no address", self.host)))
    }

    /// `GET /v1/health` before the run: the daemon answers and takes the token.
    pub(crate) fn health(
        &self,
        token: Option<&str>,
        token_env: &str,
        counts: &BenchRequests,
    ) -> Result<(), HealthError> {
        counts.count(BenchRequest::Health);
        let api = Api::new(self.base(), token.map(str::to_owned));
        let uri = format!("{}/v1/health", self.base());
        match before_the_run(api.send(hyper::Method::GET, uri, None)) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if e.kind() == io::ErrorKind::PermissionDenied => {
                Err(HealthError::TokenRefused { base: self.base(), token_env: token_env.to_owned() })
            }
            Ok(Err(why)) => Err(HealthError::Failed { base: self.base(), why }),
            Err(why) => Err(HealthError::Unchecked { base: self.base(), why }),
        }
    }

    /// What the daemon's own binary says to `--version` ([`SandboxControl::version`]).
    pub(crate) fn version(&self, token: Option<&str>, counts: &Arc<BenchRequests>) -> Result<String, VersionError> {
        let control = SandboxControl::new(Api::new(self.base(), token.map(str::to_owned)), counts.clone());
        Ok(before_the_run(control.version())??)
    }

    /// Writes `bytes` at `path` through the daemon (`PUT /v1/fs/file`), before a run: how a
    /// caller tells whether the daemon's filesystem is the one it can read.
    pub(crate) fn put_before_the_run(&self, path: &str, bytes: Vec<u8>, counts: &Arc<BenchRequests>) -> io::Result<()> {
        let control = SandboxControl::new(Api::new(self.base(), None), counts.clone());
        before_the_run(control.put(path, bytes)).map_err(io::Error::other)?
    }
}

/// How long a check before the run may take.
const CHECK_BOUND: Duration = Duration::from_secs(10);

/// Runs a request to the daemon from the checks before a run, which are sync code (the plan,
/// a host's report line) that may itself run inside a runtime: on a thread of its own, with
/// a runtime of its own, at most [`CHECK_BOUND`].
fn before_the_run<T: Send>(request: impl std::future::Future<Output = T> + Send) -> Result<T, CheckError> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(CheckError::Runtime)?;
            rt.block_on(async { clock::timeout(CHECK_BOUND, request).await }).map_err(|_| CheckError::NoAnswer)
        })
        .join()
        .map_err(|_| CheckError::Panicked)?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_http_host_and_port_only() {
        assert_eq!(Url::parse("http://10.0.0.5:2468/").unwrap().host_port(), "10.0.0.5:2468");
        assert_eq!(Url::parse("http://sandbox.local").unwrap().host_port(), "sandbox.local:80");
        assert!(Url::parse("https://x:1").unwrap_err().to_string().contains("no TLS"));
        assert!(Url::parse("http://x:port").is_err());
        assert!(Url::parse("http://x:1/v1").is_err(), "no path");
    }
}
