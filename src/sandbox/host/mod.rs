//! The host: the runner's view of one relay directory, wherever it lives.
//!
//! Every operation the runner performs on a relay dir goes through [`Host`] and is counted
//! by kind (list, read, write, rename, delete, stat, exec) and purpose (discovery = looking
//! for work, data = moving a call's bytes), even on a local directory, so that every case
//! reports the same request budget (SPEC §5). The hosts are a closed set ([`HostKind`],
//! parsed into a [`HostSpec`]): a new one is a file here and a variant of each.

mod agent;
mod busy;
mod local;
mod not_applied;
pub(crate) mod org;
mod profile;
mod read_fault;
mod remote;
#[cfg(test)]
mod remote_tests;
mod wire;

pub use agent::AgentProcess;
pub(crate) use agent::{
    check_binary as check_sandbox_agent, BinaryError as SandboxAgentBinaryError, Url, AGENT_BINARY,
    TOKEN_ENV as AGENT_TOKEN_ENV,
};
pub(crate) use agent::{errno_label, is_not_a_daemon, Endpoint, ExecError, RunAnswer};
pub use agent::{
    find_binary as find_sandbox_agent, request_kind as sandbox_agent_request_kind, AgentHost, BenchRequest,
};
pub(crate) use agent::{
    version_of as sandbox_agent_version, BenchRequests, ClockReading, ProcessState, SandboxControl,
};
pub(crate) use busy::Busy;
pub use local::LocalHost;
pub(crate) use not_applied::NotApplied;
#[cfg(test)]
pub(crate) use profile::Leg;
pub use read_fault::{Mark, ReadStorm};
pub(crate) use remote::{parse_profile, Profiles};
pub use remote::{Daemon, LatencyProfile, RemoteHost};
pub use wire::{DelayProxy, Gate};

use std::ffi::OsString;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::base::fields::{Fields, ScenarioError};
use crate::base::BoxFut;
use crate::sandbox::dir::{ExecOutput, Lines, RelayDir};

/// Why a request was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Looking for work (a list, a watch exec).
    Discovery,
    /// Moving one call's bytes (read, delete, answer write and rename).
    Data,
}

crate::base::named! {
/// What a request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Lists the relay dir.
    List,
    /// Reads a file.
    Read,
    /// Writes a file.
    Write,
    /// Renames a file.
    Rename,
    /// Deletes a file.
    Delete,
    /// Reads a file's metadata.
    Stat,
    /// Runs a process in the sandbox.
    Exec,
}
names ["list", "read", "write", "rename", "delete", "stat", "exec"]
}

/// Lock-free request counters, one per (busy or idle, purpose, kind). A request counts as
/// busy when the relay dir has calls in flight at the moment it is made.
#[derive(Debug, Default)]
pub(crate) struct RequestCounter {
    counts: [[[AtomicU64; 7]; 2]; 2],
    busy: Arc<Busy>,
}

impl RequestCounter {
    pub(crate) fn new(busy: Arc<Busy>) -> Self {
        RequestCounter { counts: Default::default(), busy }
    }

    #[inline]
    pub(crate) fn count(&self, purpose: Purpose, kind: Kind) {
        let idle = usize::from(!self.busy.is_busy());
        self.counts[idle][purpose as usize][kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> RequestCounts {
        let mut out = RequestCounts::default();
        let get = |idle: usize, p: Purpose, k: Kind| self.counts[idle][p as usize][k as usize].load(Ordering::Relaxed);
        for k in Kind::ALL {
            let i = k as usize;
            out.discovery_idle[i] = get(1, Purpose::Discovery, k);
            out.data_idle[i] = get(1, Purpose::Data, k);
            out.discovery[i] = get(0, Purpose::Discovery, k) + out.discovery_idle[i];
            out.data[i] = get(0, Purpose::Data, k) + out.data_idle[i];
        }
        out.busy_time = self.busy.busy_time();
        out.alive_time = self.busy.alive_time();
        out
    }
}

/// A copy of the counters at one moment; counters of several hosts add up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RequestCounts {
    /// Discovery requests (finding work: lists, watch windows), by kind.
    pub discovery: [u64; 7],
    /// Data requests (reading, answering, deleting calls), by kind.
    pub data: [u64; 7],
    /// The part of the discovery requests made while the relay dir had no call in flight.
    pub discovery_idle: [u64; 7],
    /// The part of the data requests made while the relay dir had no call in flight.
    pub data_idle: [u64; 7],
    /// How long the relay dir had calls in flight (summed over dirs).
    pub busy_time: Duration,
    /// How long a relay was alive on the dir (summed over dirs): the whole case for one
    /// long-lived relay, the turns alone for agent turns.
    pub alive_time: Duration,
}

impl RequestCounts {
    /// Applies `f` to each count (every kind of the four arrays) and the same count of `other`.
    fn each_count(&mut self, other: &RequestCounts, f: impl Fn(&mut u64, u64)) {
        let mine = [&mut self.discovery, &mut self.data, &mut self.discovery_idle, &mut self.data_idle];
        let theirs = [&other.discovery, &other.data, &other.discovery_idle, &other.data_idle];
        for (mine, theirs) in mine.into_iter().zip(theirs) {
            mine.iter_mut().zip(theirs).for_each(|(a, b)| f(a, *b));
        }
    }

    pub(crate) fn add(&mut self, other: &RequestCounts) {
        self.each_count(other, |a, b| *a += b);
        self.busy_time += other.busy_time;
        self.alive_time += other.alive_time;
    }

    /// What was counted since `earlier`.
    pub fn minus(&self, earlier: &RequestCounts) -> RequestCounts {
        let mut out = *self;
        out.each_count(earlier, |a, b| *a -= b);
        out.busy_time = out.busy_time.saturating_sub(earlier.busy_time);
        out.alive_time = out.alive_time.saturating_sub(earlier.alive_time);
        out
    }

    /// Discovery requests of every kind.
    pub fn discovery_total(&self) -> u64 {
        self.discovery.iter().sum()
    }

    pub(crate) fn data_total(&self) -> u64 {
        self.data.iter().sum()
    }

    pub(crate) fn discovery_idle_total(&self) -> u64 {
        self.discovery_idle.iter().sum()
    }

    pub(crate) fn data_idle_total(&self) -> u64 {
        self.data_idle.iter().sum()
    }

    /// Per kind, both purposes: `{"list": 12, ...}` in a fixed order.
    pub fn by_kind(&self) -> ByKind {
        ByKind::of(|k| self.discovery[k as usize] + self.data[k as usize])
    }
}

/// Counts per kind, serialized as a JSON object in a fixed order (and read back in the
/// order written).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ByKind(pub Vec<(String, u64)>);

impl ByKind {
    /// Each request kind's count, in [`Kind::ALL`]'s order.
    pub(crate) fn of(count: impl Fn(Kind) -> u64) -> ByKind {
        ByKind(Kind::ALL.iter().map(|k| (k.name().to_owned(), count(*k))).collect())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<'de> serde::Deserialize<'de> for ByKind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ByKind;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object of counts")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<ByKind, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = m.next_entry::<String, u64>()? {
                    out.push((k, v));
                }
                Ok(ByKind(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl Serialize for ByKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

/// The runner's access to one relay directory. Names are plain file names inside the dir;
/// a host never accepts a path. Every call is one request, counted by kind and purpose:
/// lists and execs look for work (discovery), the rest move a call's bytes (data).
pub trait Host: Send + Sync {
    /// Names of every entry in the relay dir (the caller filters).
    fn list(&self) -> BoxFut<'_, io::Result<Vec<String>>>;
    /// The bytes of one file.
    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>>;
    /// One file's metadata (the runner's pickup telemetry).
    fn stat<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<u64>>;
    /// Publishes `bytes` under `name` atomically (temp write + rename: two requests).
    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>>;
    /// Deletes one file; a file already gone is not an error.
    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>>;
    /// Runs a program in the sandbox (argv, never a shell string), killed after `timeout`
    /// (the answer says `timed_out`). Dropping the future abandons it.
    fn exec<'a>(&'a self, argv: &'a [OsString], timeout: Duration) -> BoxFut<'a, io::Result<ExecOutput>>;
    /// Starts a program in the sandbox and follows its stdout (one request); dropping the
    /// receiver kills the program.
    fn exec_follow<'a>(&'a self, argv: &'a [OsString]) -> BoxFut<'a, io::Result<Lines>>;
    /// The requests made so far.
    fn counts(&self) -> RequestCounts;
    /// The latency legs injected so far (nanoseconds), if this host emulates any.
    fn injected_legs(&self) -> Option<hdrhistogram::Histogram<u64>> {
        None
    }
    /// A short label for reports ("local", "remote:proxy").
    fn label(&self) -> String;
}

/// What the fault schedule can do to a host's daemon (the emulated one, or a real process
/// and the proxy in front of it). An `Err` says why this host cannot take the fault.
pub trait DaemonControl: Send + Sync {
    /// Down for `down` (requests in flight fail, new ones are refused), then back.
    fn restart(&self, down: Duration) -> Result<(), NotApplied>;
    /// Every open connection cut.
    fn disconnect(&self) -> Result<(), NotApplied>;
    /// Frozen for `d`: requests stall until it resumes.
    fn pause(&self, d: Duration) -> Result<(), NotApplied>;
    /// The wire to it goes dark for `d` (a delay proxy on a real TCP path only).
    fn blackhole(&self, _d: Duration) -> Result<(), NotApplied> {
        Err(NotApplied::NoRealPath)
    }
    /// Reads of request files fail for `d`, and each struck request keeps failing while it
    /// is on disk; with `answers`, the writes of their answers fail too (the emulated daemon
    /// only).
    fn fail_reads(&self, _d: Duration, _answers: bool) -> Result<(), NotApplied> {
        Err(NotApplied::RealReads)
    }
    /// The storm a `read-fails` fault set off, as the daemon counted it (if one struck).
    fn read_storm(&self) -> Option<ReadStorm> {
        None
    }
}

/// What a daemon fault acts on: the host's daemon, or the wire in front of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DaemonFault {
    Restart,
    Pause,
    Disconnect,
    Blackhole,
    /// Its reads of request files fail (`/v1/fs/file` GET).
    ReadFails,
}

impl DaemonFault {
    /// Whether it breaks the requests in flight (a restart resets them, a disconnect drops
    /// held execs): a daemon that no such fault strikes need not listen for one per request.
    pub(crate) fn breaks_requests(self) -> bool {
        matches!(self, DaemonFault::Restart | DaemonFault::Disconnect)
    }
}

/// Where a host is built: one relay dir of one sandbox of a case's organisation.
pub struct Seat {
    pub dir: Arc<dyn RelayDir>,
    /// The dir's in-flight gauge.
    pub busy: Arc<Busy>,
    /// Drives any latency draws.
    pub seed: u64,
    /// The sandbox's index in the case.
    pub sandbox: u32,
    /// The organisation every sandbox of the case shares (its limits and gauges).
    pub org: Arc<org::Org>,
    /// Whether the case's fault schedule holds a fault that breaks daemon requests in flight
    /// ([`DaemonFault::breaks_requests`]).
    pub struck: bool,
}

/// A host built for one relay dir, and what the fault schedule can act on through it.
pub struct BuiltHost {
    pub host: Arc<dyn Host>,
    /// The daemon, if the host has one (restart, disconnect, pause).
    pub daemon: Option<Arc<dyn DaemonControl>>,
    /// relay-bench's own way into the sandbox (its in-sandbox side), if the host has one.
    pub(crate) sandbox: Option<Arc<SandboxControl>>,
}

/// What a scenario defines for its hosts to name — latency profiles (`[profile.NAME]`) and
/// limits (`[limits.NAME]`) — and what the command line chose for them.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostTables {
    pub profiles: Profiles,
    pub limits: org::NamedLimits,
    /// The sandbox-agent binary `run --sandbox-agent PATH` named (a case's `binary` wins).
    pub sandbox_agent: Option<std::path::PathBuf>,
}

crate::base::named! {
/// A kind of host, as a scenario names it (`host = "..."`): a file each. It reads its own
/// keys from the case table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostKind {
    Local,
    Remote,
    SandboxAgent,
}
names ["local", "remote", agent::AGENT_BINARY]
}

impl HostKind {
    /// One line for `--help` and the README.
    pub fn about(self) -> &'static str {
        match self {
            HostKind::Local => "the relay dir on this machine, touched directly (every operation still counted)",
            HostKind::Remote => {
                "a sandbox behind an emulated daemon: every request pays two latency legs from a profile"
            }
            HostKind::SandboxAgent => {
                "the real sandbox-agent daemon over HTTP, one per sandbox on loopback (or yours: url), optionally behind a delay proxy; in_sandbox = true runs the writer there (real clock)"
            }
        }
    }

    pub(crate) fn parse(self, case: &mut Fields<'_>, tables: &HostTables) -> Result<Arc<HostSpec>, ScenarioError> {
        Ok(Arc::new(match self {
            HostKind::Local => local::parse(case).map(|()| HostSpec::Local)?,
            HostKind::Remote => HostSpec::Remote(remote::parse(case, tables)?),
            HostKind::SandboxAgent => HostSpec::SandboxAgent(agent::parse(case, tables)?),
        }))
    }
}

/// Why a host cannot take a daemon or wire fault, said after the fault's name when the
/// scenario is read (`restart needs ...`): each says which host, or which setting, would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotTaken {
    #[error("needs host = \"sandbox-agent\" with a profile (a real TCP path)")]
    NoRealPath,
    #[error("needs host = \"remote\" or \"sandbox-agent\" (a daemon to act on)")]
    NoDaemon,
    #[error("needs a real TCP path: host = \"sandbox-agent\" with a profile (the emulated daemon has no wire)")]
    EmulatedWire,
    #[error("acts on the delay proxy: give the case a latency profile")]
    NoProxy,
    #[error("is not for a daemon relay-bench did not start (url = ...): it is not restarted or paused by it")]
    NotStarted,
    #[error(
        "is not produced with in_sandbox = true: relay-bench acts on the wire, not on the daemon its writers run under"
    )]
    InSandbox,
    #[error("fails the emulated daemon's file reads: use host = \"remote\" (a real daemon's reads are its own)")]
    RealReads,
}

/// A parsed host: what it models, and how to build it over one relay dir.
#[derive(Debug)]
pub enum HostSpec {
    Local,
    Remote(remote::RemoteSpec),
    SandboxAgent(agent::AgentSpec),
}

impl HostSpec {
    pub fn name(&self) -> &'static str {
        match self {
            HostSpec::Local => HostKind::Local,
            HostSpec::Remote(_) => HostKind::Remote,
            HostSpec::SandboxAgent(_) => HostKind::SandboxAgent,
        }
        .name()
    }

    /// What the host models, as a person reads it.
    pub fn params(&self) -> String {
        match self {
            HostSpec::Local => "local directory, no injected latency".into(),
            HostSpec::Remote(r) => r.params(),
            HostSpec::SandboxAgent(a) => a.params(),
        }
    }

    /// The host of one relay dir (see [`Seat`]).
    pub fn build(&self, seat: Seat) -> io::Result<BuiltHost> {
        match self {
            HostSpec::Local => local::build(seat),
            HostSpec::Remote(r) => r.build(seat),
            HostSpec::SandboxAgent(a) => a.build(seat),
        }
    }

    /// Whether it can take `fault` on its daemon or wire; `Err` says why not (checked when
    /// the scenario is read).
    pub fn takes(&self, fault: DaemonFault) -> Result<(), NotTaken> {
        match (self, fault) {
            (HostSpec::SandboxAgent(a), _) => a.takes(fault),
            (HostSpec::Remote(_), DaemonFault::Blackhole) => Err(NotTaken::EmulatedWire),
            (HostSpec::Remote(_), _) => Ok(()),
            (HostSpec::Local, DaemonFault::Blackhole) => Err(NotTaken::NoRealPath),
            (HostSpec::Local, DaemonFault::ReadFails) => Err(NotTaken::RealReads),
            (HostSpec::Local, _) => Err(NotTaken::NoDaemon),
        }
    }

    /// Whether the relay dir is on the runner's side, readable without the host (a runner
    /// that watches the dir itself needs it).
    pub fn dir_is_local(&self) -> bool {
        match self {
            HostSpec::Local => true,
            HostSpec::Remote(_) | HostSpec::SandboxAgent(_) => false,
        }
    }

    /// Whether it can start a process and follow its output (a persistent watcher's stream):
    /// the real daemon's process API is not followed.
    pub fn can_follow(&self) -> bool {
        match self {
            HostSpec::Local | HostSpec::Remote(_) => true,
            HostSpec::SandboxAgent(_) => false,
        }
    }

    /// Why it cannot run on this machine, if it cannot (checked before a run starts).
    pub fn missing_here(&self) -> Option<String> {
        match self {
            HostSpec::SandboxAgent(a) => a.missing_here(),
            HostSpec::Local | HostSpec::Remote(_) => None,
        }
    }

    /// The latency it emulates for every request (a profile's legs), as a person reads it;
    /// `None` for a host whose latency is real (a local dir, a real daemon).
    pub fn emulated_latency(&self) -> Option<String> {
        match self {
            HostSpec::Remote(r) => Some(r.profile.describe()),
            HostSpec::Local | HostSpec::SandboxAgent(_) => None,
        }
    }

    /// The limits of the remote side it enforces (none: every request is only counted).
    pub fn limits(&self) -> org::Limits {
        match self {
            HostSpec::Local => org::Limits::default(),
            HostSpec::Remote(r) => r.limits.clone(),
            HostSpec::SandboxAgent(a) => a.limits.clone().unwrap_or_default(),
        }
    }

    /// Whether its requests pass through the case's organisation ([`org::Org::admit`]): its
    /// gauges and limits (and an `org-limit` fault) mean something for this host. A real
    /// daemon's do only behind the delay proxy that enforces its limits.
    pub fn admits(&self) -> bool {
        match self {
            HostSpec::Local => false,
            HostSpec::Remote(_) => true,
            HostSpec::SandboxAgent(a) => a.limits.is_some(),
        }
    }

    /// Whether it needs the real clock (a real daemon cannot run in simulated time).
    pub fn needs_real_clock(&self) -> bool {
        match self {
            HostSpec::SandboxAgent(_) => true,
            HostSpec::Local | HostSpec::Remote(_) => false,
        }
    }

    /// Where in the sandbox the case's files go when the in-sandbox side (writer, watch
    /// program) runs in the sandbox itself, reached through the host's daemon; `None`: it
    /// runs on this machine.
    pub fn in_sandbox(&self) -> Option<&str> {
        match self {
            HostSpec::SandboxAgent(a) => a.in_sandbox.as_deref(),
            HostSpec::Local | HostSpec::Remote(_) => None,
        }
    }

    /// relay-bench's own requests to the host's daemons so far (its checks before the run,
    /// the in-sandbox side's uploads and readings), by name: none of them is in the rates.
    pub fn bench_requests(&self) -> Vec<(&'static str, u64)> {
        match self {
            HostSpec::SandboxAgent(a) => a.bench.by_name(),
            HostSpec::Local | HostSpec::Remote(_) => Vec::new(),
        }
    }
}

/// Every host kind. The first is a case's host when it names none.
pub const HOSTS: &[HostKind] = &HostKind::ALL;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_split_by_purpose_and_kind() {
        let busy = Arc::new(Busy::default());
        let c = RequestCounter::new(busy.clone());
        c.count(Purpose::Discovery, Kind::List);
        c.count(Purpose::Discovery, Kind::List);
        busy.begin();
        c.count(Purpose::Data, Kind::Read);
        busy.end();
        let s = c.snapshot();
        assert_eq!(s.discovery_idle_total(), 2, "no call was in flight");
        assert_eq!(s.data_idle_total(), 0, "the read was made while busy");
        assert_eq!(s.discovery_total(), 2);
        assert_eq!(s.data_total(), 1);
        let by = s.by_kind();
        assert_eq!(by.0[0], ("list".to_owned(), 2));
        assert_eq!(by.0[1], ("read".to_owned(), 1));
        assert_eq!(
            serde_json::to_string(&by).unwrap(),
            r#"{"list":2,"read":1,"write":0,"rename":0,"delete":0,"stat":0,"exec":0}"#
        );
    }
}
