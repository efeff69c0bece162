//! The runner's relay dir inside a sandbox-agent daemon's filesystem, the rollout's own path:
//! the runner is given the daemon's URL (`{url}`, `$RELAY_SANDBOX_URL`) and reaches the dir
//! through it, as production's `sandboxRelayHost` does (list, read, publish and delete over
//! HTTP, held window execs). The battery plays the writer in the dir itself, as a writer in
//! the sandbox does, and records it with its own watch: so the daemon must run on this
//! machine, its filesystem the battery's.
//!
//! With [`Daemon::Start`] the battery starts a daemon for each case (a fresh one, on a free
//! loopback port; killed with the case's other processes); with [`Daemon::At`] the runner
//! reaches a daemon already running, checked first to share this machine's filesystem.

use std::path::Path;
use std::sync::Arc;

use super::super::{ConformError, Daemon};
use crate::sandbox::host::{sandbox_agent_version, AgentProcess, BenchRequests, Url};

/// A case's daemon: its URL, and the process when the battery started it.
pub(crate) struct CaseDaemon {
    pub url: String,
    _process: Option<AgentProcess>,
}

impl CaseDaemon {
    pub(crate) fn up(d: &Daemon) -> std::io::Result<CaseDaemon> {
        match d {
            Daemon::Start(bin) => {
                let p = AgentProcess::start(bin)?;
                Ok(CaseDaemon { url: p.base.clone(), _process: Some(p) })
            }
            Daemon::At(url) => Ok(CaseDaemon { url: url.trim_end_matches('/').to_owned(), _process: None }),
        }
    }
}

/// The report's line for a daemon the battery starts.
pub(crate) fn describe(bin: &Path) -> String {
    let version = sandbox_agent_version(bin).unwrap_or_else(|_| crate::sandbox::host::AGENT_BINARY.into());
    format!("inside a {version} daemon's filesystem, started for each case on a loopback port; the runner reaches it through the daemon ({{url}})")
}

/// Checks that the daemon at `url` answers and shares this machine's filesystem: a file it
/// writes under `root` must be here. The report's line.
pub(crate) fn check_url(url: &str, root: &Path) -> Result<String, ConformError> {
    let fail = |why: String| ConformError::Daemon { url: url.to_owned(), why };
    let parsed = Url::parse(url).map_err(|e| fail(e.to_string()))?;
    let counts = Arc::new(BenchRequests::default());
    let version = parsed.version(None, &counts).map_err(|e| fail(e.to_string()))?;
    let marker = root.join("daemon-check");
    let token = format!("relay-bench conform {}", std::process::id());
    parsed
        .put_before_the_run(&marker.to_string_lossy(), token.clone().into_bytes(), &counts)
        .map_err(|e| fail(format!("cannot write {} through it: {e}", marker.display())))?;
    match std::fs::read_to_string(&marker) {
        Ok(t) if t == token => {
            let _ = std::fs::remove_file(&marker);
            Ok(format!("inside the filesystem of the {version} daemon at {url}; the runner reaches it through the daemon ({{url}})"))
        }
        _ => Err(fail(format!(
            "a file it wrote at {} is not on this machine: the battery records the relay dir with its own watch, so the daemon must run here",
            marker.display()
        ))),
    }
}
