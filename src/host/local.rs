//! The `local` host: the relay dir touched directly, with no latency of its own (a real
//! directory with plain syscalls, or its in-memory twin in virtual time).

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Busy, ExecOutput, Host, Kind, Lines, Purpose, RequestCounter, RequestCounts};
use crate::dir::{RealDir, RelayDir};
use crate::BoxFut;

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
    fn list(&self, purpose: Purpose) -> BoxFut<'_, io::Result<Vec<String>>> {
        self.counter.count(purpose, Kind::List);
        Box::pin(std::future::ready(self.dir.list()))
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>> {
        self.counter.count(Purpose::Data, Kind::Read);
        Box::pin(std::future::ready(self.dir.read(name)))
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        self.counter.count(Purpose::Data, Kind::Write);
        self.counter.count(Purpose::Data, Kind::Rename);
        Box::pin(std::future::ready(self.dir.publish(name, bytes)))
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>> {
        self.counter.count(Purpose::Data, Kind::Delete);
        Box::pin(std::future::ready(self.dir.remove(name)))
    }

    fn exec<'a>(&'a self, argv: &'a [OsString], purpose: Purpose) -> BoxFut<'a, io::Result<ExecOutput>> {
        self.counter.count(purpose, Kind::Exec);
        self.dir.exec(argv)
    }

    fn exec_follow<'a>(&'a self, argv: &'a [OsString], purpose: Purpose) -> BoxFut<'a, io::Result<Lines>> {
        self.counter.count(purpose, Kind::Exec);
        Box::pin(std::future::ready(self.dir.exec_follow(argv, None)))
    }

    fn counts(&self) -> RequestCounts {
        self.counter.snapshot()
    }

    fn label(&self) -> String {
        "local".into()
    }
}
