//! The `local` host: the relay dir touched directly, with no latency of its own (a real
//! directory with plain syscalls, or its in-memory twin in virtual time).

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{BuiltHost, Busy, Host, Kind, Purpose, RequestCounter, RequestCounts, Seat};
use crate::base::fields::{Fields, ScenarioError};
use crate::base::BoxFut;
use crate::sandbox::dir::{ExecOutput, Lines, RealDir, RelayDir};

/// A relay directory reached directly. Every call is counted like a remote request would
/// be, so local and remote cases share one request budget.
pub struct LocalHost {
    dir: Arc<dyn RelayDir>,
    counter: RequestCounter,
}

impl LocalHost {
    /// A real directory on this machine.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::over(Arc::new(RealDir::new(dir)), Arc::default())
    }

    /// A host over `dir` whose requests are split busy/idle by `busy`, the dir's in-flight
    /// gauge.
    pub fn over(dir: Arc<dyn RelayDir>, busy: Arc<Busy>) -> Self {
        LocalHost { dir, counter: RequestCounter::new(busy) }
    }
}

impl Host for LocalHost {
    fn list(&self) -> BoxFut<'_, io::Result<Vec<String>>> {
        self.counter.count(Purpose::Discovery, Kind::List);
        Box::pin(std::future::ready(self.dir.list()))
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>> {
        self.counter.count(Purpose::Data, Kind::Read);
        Box::pin(std::future::ready(self.dir.read(name)))
    }

    fn stat<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<u64>> {
        self.counter.count(Purpose::Data, Kind::Stat);
        Box::pin(std::future::ready(self.dir.stat(name)))
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        self.counter.count(Purpose::Data, Kind::Write);
        self.counter.count(Purpose::Data, Kind::Rename);
        self.dir.publish(name, bytes)
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>> {
        self.counter.count(Purpose::Data, Kind::Delete);
        Box::pin(std::future::ready(self.dir.remove(name)))
    }

    fn exec<'a>(&'a self, argv: &'a [OsString], timeout: Duration) -> BoxFut<'a, io::Result<ExecOutput>> {
        self.counter.count(Purpose::Discovery, Kind::Exec);
        self.dir.exec(argv, timeout)
    }

    fn exec_follow<'a>(&'a self, argv: &'a [OsString]) -> BoxFut<'a, io::Result<Lines>> {
        self.counter.count(Purpose::Discovery, Kind::Exec);
        Box::pin(std::future::ready(self.dir.exec_follow(argv, None)))
    }

    fn counts(&self) -> RequestCounts {
        self.counter.snapshot()
    }

    fn label(&self) -> String {
        "local".into()
    }
}

/// Reads `host = "local"`'s keys (it has none: a daemon's are refused).
pub(super) fn parse(case: &mut Fields<'_>) -> Result<(), ScenarioError> {
    for key in ["profile", "limits"] {
        if case.raw_peek(key).is_some() {
            return Err(case.err(key, "applies only to a host with a daemon (host = \"remote\")"));
        }
    }
    Ok(())
}

/// The local host of one relay dir.
pub(super) fn build(seat: Seat) -> io::Result<BuiltHost> {
    Ok(BuiltHost { host: Arc::new(LocalHost::over(seat.dir, seat.busy)), daemon: None, sandbox: None })
}
