//! The `sandbox-agent` host: the real daemon production's runner talks to (sandbox-agent
//! 0.4.2, over HTTP): one per sandbox started by relay-bench on loopback and stopped with its
//! case ([`process`]), or one already running at `url` ([`running`]). Every runner operation
//! is the daemon call production's `sandboxRelayHost` makes
//! (`services/runner/src/tools/relay.ts`):
//!
//! | operation | request |
//! |---|---|
//! | list | `POST /v1/processes/run` of `ls -1 DIR` (timeoutMs 10000); its exit code ignored |
//! | read | `GET /v1/fs/file?path=` |
//! | write | `PUT /v1/fs/file?path=` (octet-stream body) |
//! | rename | `POST /v1/fs/move` `{from, to, overwrite: true}` |
//! | delete | `DELETE /v1/fs/entry?path=` |
//! | stat | `GET /v1/fs/stat?path=` |
//! | a window | `POST /v1/processes/run` of the watch program, timeoutMs = window + grace |
//!
//! One HTTP/1.1 client per host with a keep-alive pool (hyper's, as production's `fetch`
//! keeps its connections). Nothing here is emulated; with a latency profile the requests
//! cross a delay proxy on a real TCP path ([`super::DelayProxy`]). With `limits` too, that
//! proxy plays the provider's proxy: it admits each request through the case's organisation
//! ([`super::Gate`], [`routes`]), as the emulated daemon admits its own, and answers a
//! refusal `429`. relay-bench's own requests ([`SandboxControl`]) go to the daemon
//! directly: never admitted, never counted.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use serde::Deserialize;

use super::org::{Limits, Org};
use super::{
    BuiltHost, Busy, DaemonFault, DelayProxy, Gate, Host, HostTables, Kind, LatencyProfile, NotTaken, Purpose,
    RequestCounter, RequestCounts, Seat,
};
use crate::base::fields::{Fields, ScenarioError};
use crate::base::BoxFut;
use crate::sandbox::dir::{ExecOutput, Lines};

mod api;
mod control;
mod process;
mod routes;
mod running;

pub(crate) use api::{errno_label, Api, Endpoint, ExecError, RunAnswer};
pub use control::BenchRequest;
pub(crate) use control::{BenchRequests, ClockReading, ProcessState, SandboxControl};

pub use process::AgentProcess;
pub(crate) use process::{is_not_a_daemon, AgentControl};
pub use routes::request_kind;
pub(crate) use running::Url;

/// The npm package that carries the daemon's Linux binary.
pub(crate) const NPM_PACKAGE: &str = "@sandbox-agent/cli-linux-x64@0.4.2";
/// Where to look for the binary first.
pub(crate) const BIN_ENV: &str = "SANDBOX_AGENT_BIN";
/// The project-local install of `scripts/install-sandbox-agent.sh`.
pub(crate) const LOCAL_INSTALL: &str =
    "tools/sandbox-agent/node_modules/@sandbox-agent/cli-linux-x64/bin/sandbox-agent";
/// How long a started daemon gets to answer.
pub(super) const START_BOUND: Duration = Duration::from_secs(10);
/// The environment variable a running daemon's token is read from, unless `token_env` names
/// another.
pub(crate) const TOKEN_ENV: &str = "SANDBOX_AGENT_TOKEN";
/// Where a case's files go in the sandbox when its in-sandbox side runs there.
pub(crate) const DEFAULT_SANDBOX_ROOT: &str = "/tmp";
/// The daemon's binary, as PATH names it (and its host kind's name).
pub(crate) const AGENT_BINARY: &str = "sandbox-agent";
/// The list's own timeout, as production asks for it.
const LIST_TIMEOUT_MS: u64 = 10_000;

/// Why there is no sandbox-agent binary to start: where it was looked for, and how to get one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinaryError {
    #[error("{0}: no such file; install it with scripts/install-sandbox-agent.sh (npm package {NPM_PACKAGE})")]
    NoSuchFile(String),
    #[error(
        "${BIN_ENV}={0}: no such file; install it with scripts/install-sandbox-agent.sh (npm package {NPM_PACKAGE})"
    )]
    EnvNoSuchFile(String),
    #[error(
        "sandbox-agent not found ({LOCAL_INSTALL}, PATH); install it with scripts/install-sandbox-agent.sh (npm package {NPM_PACKAGE})"
    )]
    NotFound,
    #[error("binary = {0:?}: no such file")]
    CaseBinary(String),
}

/// Checks the binary a command line names (`--sandbox-agent PATH`) before anything runs.
pub(crate) fn check_binary(bin: &Path) -> Result<(), BinaryError> {
    if !bin.is_file() {
        return Err(BinaryError::NoSuchFile(bin.display().to_string()));
    }
    Ok(())
}

/// Finds the daemon binary when nothing names one (a case's `binary`, `--sandbox-agent`):
/// `$SANDBOX_AGENT_BIN` when set (and nothing else then: an explicit choice is not
/// overridden), else the project-local install, else `PATH`.
pub fn find_binary() -> Result<PathBuf, BinaryError> {
    if let Some(p) = std::env::var_os(BIN_ENV).map(PathBuf::from) {
        return if p.is_file() { Ok(p) } else { Err(BinaryError::EnvNoSuchFile(p.display().to_string())) };
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join(LOCAL_INSTALL);
    Some(local)
        .filter(|p| p.is_file())
        .or_else(|| crate::base::fsio::on_path(AGENT_BINARY))
        .ok_or(BinaryError::NotFound)
}

/// What `sandbox-agent --version` says (`sandbox-agent 0.4.2`).
pub(crate) fn version_of(bin: &Path) -> io::Result<String> {
    let out = std::process::Command::new(bin).arg("--version").output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The runner's side of one relay dir, through a sandbox-agent daemon.
pub struct AgentHost {
    api: Api,
    dir: PathBuf,
    counter: RequestCounter,
    /// How reports name it (`sandbox-agent`; a case's host: the daemon's version and where it runs).
    label: String,
    /// Keeps a daemon started for the sandbox alive while this host is.
    _process: Option<Arc<AgentProcess>>,
    /// The delay proxy its requests go through, if it has one.
    proxy: Option<Arc<DelayProxy>>,
}

#[derive(Deserialize)]
struct StatAnswer {
    size: u64,
}

impl AgentHost {
    /// A host on the daemon at `base` (`http://HOST:PORT`), no token.
    pub fn new(base: String, dir: PathBuf, busy: Arc<Busy>, process: Option<Arc<AgentProcess>>) -> AgentHost {
        AgentHost::over(Api::new(base, None), dir, busy, process)
    }

    /// `api`: the daemon's (or the delay proxy's in front of it).
    pub(crate) fn over(api: Api, dir: PathBuf, busy: Arc<Busy>, process: Option<Arc<AgentProcess>>) -> AgentHost {
        let label = AGENT_BINARY.to_owned();
        let counter = RequestCounter::new(busy);
        AgentHost { api, dir, counter, label, _process: process, proxy: None }
    }

    /// Its requests go through `proxy` (to its address instead of the daemon's).
    pub fn through(mut self, proxy: Arc<DelayProxy>) -> AgentHost {
        self.api.base = format!("http://{}", proxy.addr);
        self.proxy = Some(proxy);
        self
    }

    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_string_lossy().into_owned()
    }

    async fn get(&self, route: &str, name: &str) -> io::Result<Vec<u8>> {
        self.api.send(Method::GET, self.api.at(route, &self.path(name)), None).await
    }
}

impl Host for AgentHost {
    fn list(&self) -> BoxFut<'_, io::Result<Vec<String>>> {
        self.counter.count(Purpose::Discovery, Kind::List);
        Box::pin(async move {
            let dir = self.dir.to_string_lossy().into_owned();
            let out = self.api.run(&["ls".into(), "-1".into(), dir], LIST_TIMEOUT_MS).await?;
            // Production reads stdout whatever the exit code: a missing dir lists as empty.
            Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
                .collect())
        })
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>> {
        self.counter.count(Purpose::Data, Kind::Read);
        Box::pin(self.get("/v1/fs/file", name))
    }

    fn stat<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<u64>> {
        self.counter.count(Purpose::Data, Kind::Stat);
        Box::pin(async move {
            let bytes = self.get("/v1/fs/stat", name).await?;
            Ok(api::decode::<StatAnswer>(&bytes)?.size)
        })
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        Box::pin(async move {
            // Upload to a temp name, then move onto the final name: two requests.
            let tmp = crate::base::fsio::temp_name(name);
            self.counter.count(Purpose::Data, Kind::Write);
            self.api.put_file(&self.path(&tmp), bytes.to_vec()).await?;
            self.counter.count(Purpose::Data, Kind::Rename);
            let body = serde_json::json!({ "from": self.path(&tmp), "to": self.path(name), "overwrite": true });
            if let Err(e) = self.api.post_json("/v1/fs/move", body).await {
                // Counted: a real request (production leaves the temp name to the next sweep).
                self.counter.count(Purpose::Data, Kind::Delete);
                let _ = self.api.delete_entry(&self.path(&tmp), false).await;
                return Err(e);
            }
            Ok(())
        })
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>> {
        self.counter.count(Purpose::Data, Kind::Delete);
        Box::pin(async move { self.api.delete_entry(&self.path(name), false).await })
    }

    fn exec<'a>(&'a self, argv: &'a [OsString], timeout: Duration) -> BoxFut<'a, io::Result<ExecOutput>> {
        self.counter.count(Purpose::Discovery, Kind::Exec);
        let argv: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        // A refusal (the daemon's 502 on a spawn, a proxy's 429) is an error, which the window
        // source reads as a rejected exec, as production does (and says so itself).
        Box::pin(async move { self.api.run(&argv, timeout.as_millis() as u64).await })
    }

    fn exec_follow<'a>(&'a self, _argv: &'a [OsString]) -> BoxFut<'a, io::Result<Lines>> {
        let e = io::Error::new(io::ErrorKind::Unsupported, "sandbox-agent: no followed processes in this host (yet)");
        Box::pin(std::future::ready(Err(e)))
    }

    fn counts(&self) -> RequestCounts {
        self.counter.snapshot()
    }

    fn injected_legs(&self) -> Option<hdrhistogram::Histogram<u64>> {
        self.proxy.as_ref().map(|p| p.legs())
    }

    fn label(&self) -> String {
        self.label.clone()
    }
}

/// A parsed `host = "sandbox-agent"`: the binary to start (one daemon per sandbox, as each
/// sandbox runs its own), and the latency profile of the delay proxy in front of it, if any.
#[derive(Debug)]
pub struct AgentSpec {
    /// A daemon already running (`url`): relay-bench starts none.
    url: Option<Url>,
    /// The environment variable holding its token, if any.
    token_env: String,
    /// The binary, or why there is none (said before a run starts, not when parsing, so
    /// that a scenario naming this host can be listed without it).
    bin: Result<PathBuf, BinaryError>,
    /// What `--version` says, asked once, when first needed (not when a scenario is only
    /// read, as `relay-bench list` does).
    version: std::sync::OnceLock<String>,
    profile: Option<LatencyProfile>,
    /// The limits the delay proxy enforces (only with a profile: the proxy is on the path).
    pub(super) limits: Option<Limits>,
    /// `in_sandbox = true`: where in the sandbox the case's files go (`sandbox_root`).
    pub(super) in_sandbox: Option<String>,
    /// relay-bench's own requests to the case's daemons, its checks before the run included.
    pub(super) bench: Arc<BenchRequests>,
}

/// Reads `host = "sandbox-agent"`'s keys: a daemon's url and token, or its binary; a
/// profile and limits for the delay proxy; where the in-sandbox side goes.
pub(super) fn parse(case: &mut Fields<'_>, tables: &HostTables) -> Result<AgentSpec, ScenarioError> {
    let url = case.string("url")?.map(|u| Url::parse(u).map_err(|why| case.err("url", why))).transpose()?;
    let token_env = case.string("token_env")?.unwrap_or(TOKEN_ENV).to_owned();
    let bin = match case.string("binary")? {
        Some(b) if Path::new(b).is_file() => Ok(PathBuf::from(b)),
        Some(b) => Err(BinaryError::CaseBinary(b.to_owned())),
        None => tables.sandbox_agent.clone().map_or_else(find_binary, Ok),
    };
    let profile = super::remote::case_profile(case, &tables.profiles)?;
    let limits = super::org::case_limits(case, &tables.limits)?;
    if limits.is_some() && profile.is_none() {
        let why = "needs a latency profile (e.g. profile = \"lan\"): the limits are enforced by relay-bench's delay proxy in front of the daemon, and only a profile puts that proxy on the path";
        return Err(case.err("limits", why));
    }
    let in_sandbox = match (case.boolean("in_sandbox")?.unwrap_or(false), case.string("sandbox_root")?) {
        (false, Some(_)) => return Err(case.err("sandbox_root", "is read only with in_sandbox = true")),
        (false, None) => None,
        (true, root) => {
            let root = root.unwrap_or(DEFAULT_SANDBOX_ROOT);
            if !root.starts_with('/') || root.chars().any(char::is_control) {
                return Err(case.err("sandbox_root", "must be an absolute path in the sandbox (no control characters)"));
            }
            Some(root.to_owned())
        }
    };
    let version = std::sync::OnceLock::new();
    Ok(AgentSpec { url, token_env, bin, version, profile, limits, in_sandbox, bench: Arc::default() })
}

impl AgentSpec {
    pub(super) fn params(&self) -> String {
        let wire = match (&self.profile, &self.limits) {
            (Some(p), Some(l)) => format!(
                "behind a delay proxy: {} on a real TCP path; limits enforced by the proxy: {}",
                p.describe(),
                l.describe()
            ),
            (Some(p), None) => format!("behind a delay proxy: {} on a real TCP path", p.describe()),
            (None, _) => "on loopback, no latency added".to_owned(),
        };
        if let Some(u) = &self.url {
            let token = if std::env::var_os(&self.token_env).is_some() {
                format!(", token from ${}", self.token_env)
            } else {
                String::new()
            };
            return format!(
                "{} at {} (running, not started by relay-bench{token}), {wire}{}",
                self.version(),
                u.host_port(),
                self.side()
            );
        }
        let at = self.bin.as_ref().map_or_else(|why| why.to_string(), |b| b.display().to_string());
        format!("{} ({at}), one per sandbox, {wire}{}", self.version(), self.side())
    }

    /// A host on a daemon started for the seat, or on the one already running at `url`
    /// (relay-bench's writer runs here, so that daemon must see this machine's relay dirs).
    pub(super) fn build(&self, seat: Seat) -> io::Result<BuiltHost> {
        let (process, api, upstream) = match &self.url {
            Some(u) => (None, Api::new(u.base(), std::env::var(&self.token_env).ok()), u.addr()?),
            None => {
                let bin = self.bin.as_ref().map_err(|why| io::Error::new(io::ErrorKind::NotFound, why.to_string()))?;
                let process = Arc::new(AgentProcess::start(bin)?);
                (Some(process.clone()), Api::new(process.base.clone(), None), process.addr())
            }
        };
        let proxy = self.proxy(upstream, &seat)?;
        let Seat { dir, busy, .. } = seat;
        let label = format!("{} @ {}", self.version(), api.base.trim_start_matches("http://"));
        let sandbox = Arc::new(SandboxControl::new(api.clone(), self.bench.clone()));
        let mut host = AgentHost { label, ..AgentHost::over(api, dir.path().to_path_buf(), busy, process.clone()) };
        if let Some(p) = &proxy {
            host = host.through(p.clone());
        }
        let control = AgentControl { process, proxy };
        Ok(BuiltHost { host: Arc::new(host), daemon: Some(Arc::new(control)), sandbox: Some(sandbox) })
    }

    pub(super) fn missing_here(&self) -> Option<String> {
        match &self.url {
            Some(u) => u
                .health(std::env::var(&self.token_env).ok().as_deref(), &self.token_env, &self.bench)
                .err()
                .map(|e| e.to_string()),
            None => self.bin.as_ref().err().map(BinaryError::to_string),
        }
    }

    pub(super) fn takes(&self, fault: DaemonFault) -> Result<(), NotTaken> {
        if fault == DaemonFault::ReadFails {
            return Err(NotTaken::RealReads);
        }
        let wire = matches!(fault, DaemonFault::Disconnect | DaemonFault::Blackhole);
        if wire && self.profile.is_none() {
            return Err(NotTaken::NoProxy);
        }
        if !wire && self.url.is_some() {
            return Err(NotTaken::NotStarted);
        }
        // In the sandbox, relay-bench follows its writers through the daemon's process
        // records, which a restart loses (and a pause stalls).
        if !wire && self.in_sandbox.is_some() {
            return Err(NotTaken::InSandbox);
        }
        Ok(())
    }
}

impl AgentSpec {
    fn side(&self) -> String {
        match &self.in_sandbox {
            Some(root) => {
                format!("; writer and watch program in the sandbox (uploaded through the daemon, under {root})")
            }
            None => "; writer on this machine".to_owned(),
        }
    }

    fn version(&self) -> &str {
        self.version.get_or_init(|| match (&self.url, &self.bin) {
            (Some(u), _) => u
                .version(std::env::var(&self.token_env).ok().as_deref(), &self.bench)
                .unwrap_or_else(|why| format!("sandbox-agent (version not known: {why})")),
            (None, Ok(b)) => version_of(b).unwrap_or_else(|e| format!("sandbox-agent (--version failed: {e})")),
            (None, Err(_)) => "sandbox-agent (not installed)".to_owned(),
        })
    }

    /// The delay proxy in front of the daemon at `upstream`, with a profile; with limits, it
    /// admits the seat's requests through the case's organisation.
    fn proxy(&self, upstream: std::net::SocketAddr, seat: &Seat) -> io::Result<Option<Arc<DelayProxy>>> {
        let Some(p) = &self.profile else { return Ok(None) };
        let gate = self.limits.as_ref().map(|_| gate(&seat.org, seat.sandbox));
        Ok(Some(Arc::new(DelayProxy::start_gated(upstream, p.clone(), seat.seed, gate)?)))
    }
}

/// The gate of sandbox `sandbox` of `org`: the runner's requests, told apart by route, admitted
/// there; its connection gauges count the proxy's real connections.
fn gate(org: &Arc<Org>, sandbox: u32) -> Gate {
    org.count_real_connections();
    Gate { org: org.clone(), sandbox, classify: routes::request_kind }
}
