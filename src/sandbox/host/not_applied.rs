//! Why a fault of the schedule could not be applied to a sandbox, its daemon or its wire:
//! each says what would let it apply. The fault schedule reports it as a notice and the case
//! goes on.

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum NotApplied {
    #[error("the daemon is already down (restarting): let the restart end before striking again")]
    Restarting,
    #[error("the daemon is down: strike it once it is back")]
    Down,
    #[error("a daemon relay-bench did not start (url = ...) is not {action} by it: leave url out to have it started")]
    NotStarted { action: &'static str },
    #[error("no proxy on this host to {action}: give it a profile")]
    NoProxy { action: &'static str },
    #[error("no delay proxy on a real TCP path to blackhole: use host = \"sandbox-agent\" with a profile")]
    NoRealPath,
    #[error("no daemon on this host: use host = \"remote\" or \"sandbox-agent\"")]
    NoDaemon,
    #[error("a real daemon's file reads are its own: use host = \"remote\" to fail them")]
    RealReads,
    #[error("no sandbox {0} in this case")]
    NoSuchSandbox(u32),
    #[error("no program switch in this case: the watch program is not switchable here")]
    NoProgramSwitch,
    #[error("{0} cannot be produced on the real clock: run the case on the virtual clock")]
    VirtualOnly(String),
    #[error("the sandbox is reached through its daemon only: {0}")]
    DaemonOnly(&'static str),
    #[error("cannot {what}: {source}")]
    Io { what: String, source: io::Error },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::host::DelayProxy;

    #[test]
    fn a_fault_that_cannot_apply_says_what_would_let_it() {
        let e = DelayProxy::disconnect_any(None).unwrap_err();
        assert!(matches!(e, NotApplied::NoProxy { action: "disconnect" }));
        assert_eq!(e.to_string(), "no proxy on this host to disconnect: give it a profile");
        let io = NotApplied::Io { what: "replace /x".into(), source: io::Error::from(io::ErrorKind::PermissionDenied) };
        assert_eq!(io.to_string(), "cannot replace /x: permission denied");
    }
}
