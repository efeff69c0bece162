//! relay-bench's own way into a sandbox, beside the runner's requests: what the in-sandbox
//! side of a case (its writers and watch program, run in the sandbox) is laid out, uploaded,
//! started, timed and brought back through. A host that reaches a sandbox brings one
//! ([`super::BuiltHost::sandbox`]); the sandbox-agent daemon's is its HTTP API.

use std::io;
use std::path::Path;

use crate::base::BoxFut;

/// One reading of the sandbox's clock: this machine's monotonic clock before the request
/// went and after its answer came, and the sandbox's in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockReading {
    pub sent_ns: u64,
    pub back_ns: u64,
    pub sandbox_ns: u64,
}

/// A background process in the sandbox, as the daemon reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    Running,
    /// Exited (`None`: by a signal, or the daemon does not know its code).
    Exited(Option<i32>),
}

/// The operations on a sandbox the in-sandbox side needs, each one request to its daemon.
pub trait SandboxAccess: Send + Sync {
    /// `path` and its parents made.
    fn mkdir<'a>(&'a self, path: &'a str) -> BoxFut<'a, io::Result<()>>;
    /// A small file written whole.
    fn put<'a>(&'a self, path: &'a str, bytes: Vec<u8>) -> BoxFut<'a, io::Result<()>>;
    /// A file's bytes.
    fn get<'a>(&'a self, path: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>>;
    /// `path` and all under it removed (gone already is fine).
    fn remove_tree<'a>(&'a self, path: &'a str) -> BoxFut<'a, io::Result<()>>;
    /// The names in a dir.
    fn names<'a>(&'a self, path: &'a str) -> BoxFut<'a, io::Result<Vec<String>>>;
    /// The executable `local` uploaded to `remote`, made executable; its size.
    fn upload_program<'a>(&'a self, local: &'a Path, remote: &'a str) -> BoxFut<'a, io::Result<u64>>;
    /// What the daemon's own binary says to `--version`.
    fn version(&self) -> BoxFut<'_, io::Result<String>>;
    /// One reading of the sandbox's clock through `program sandbox-clock`.
    fn read_clock<'a>(&'a self, program: &'a str) -> BoxFut<'a, io::Result<ClockReading>>;
    /// `argv` started in the background; its id.
    fn spawn<'a>(&'a self, argv: &'a [String]) -> BoxFut<'a, io::Result<String>>;
    /// Where a background process stands.
    fn state<'a>(&'a self, id: &'a str) -> BoxFut<'a, io::Result<ProcessState>>;
    /// A background process killed (one that has exited already is fine).
    fn kill<'a>(&'a self, id: &'a str) -> BoxFut<'a, io::Result<()>>;
}
