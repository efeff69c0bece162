//! The `local` host: a real directory on this machine, touched with plain syscalls.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{follow_child, run_child, Busy, ExecOutput, Host, Kind, Lines, Purpose, RequestCounter, RequestCounts};
use crate::fsio;
use crate::BoxFut;

/// A relay directory on the local filesystem. Every call is counted like a remote request
/// would be, so local and remote cases share one request budget.
#[derive(Debug)]
pub struct LocalHost {
    dir: PathBuf,
    counter: RequestCounter,
}

impl LocalHost {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::with_busy(dir, Arc::default())
    }

    /// A host whose requests are split busy/idle by `busy`, the dir's in-flight gauge.
    pub fn with_busy(dir: impl Into<PathBuf>, busy: Arc<Busy>) -> Self {
        LocalHost { dir: dir.into(), counter: RequestCounter::new(busy) }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Host for LocalHost {
    fn list(&self, purpose: Purpose) -> BoxFut<'_, io::Result<Vec<String>>> {
        self.counter.count(purpose, Kind::List);
        let out = (|| {
            let mut names = Vec::new();
            for e in std::fs::read_dir(&self.dir)? {
                names.push(e?.file_name().to_string_lossy().into_owned());
            }
            Ok(names)
        })();
        Box::pin(std::future::ready(out))
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>> {
        self.counter.count(Purpose::Data, Kind::Read);
        Box::pin(std::future::ready(std::fs::read(self.dir.join(name))))
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        self.counter.count(Purpose::Data, Kind::Write);
        self.counter.count(Purpose::Data, Kind::Rename);
        Box::pin(std::future::ready(fsio::publish_atomic(&self.dir, name, bytes)))
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>> {
        self.counter.count(Purpose::Data, Kind::Delete);
        Box::pin(std::future::ready(fsio::remove_if_present(&self.dir.join(name))))
    }

    fn exec<'a>(&'a self, argv: &'a [OsString], purpose: Purpose) -> BoxFut<'a, io::Result<ExecOutput>> {
        self.counter.count(purpose, Kind::Exec);
        Box::pin(run_child(argv))
    }

    fn exec_follow<'a>(&'a self, argv: &'a [OsString], purpose: Purpose) -> BoxFut<'a, io::Result<Lines>> {
        self.counter.count(purpose, Kind::Exec);
        Box::pin(std::future::ready(follow_child(argv, None)))
    }

    fn counts(&self) -> RequestCounts {
        self.counter.snapshot()
    }

    fn label(&self) -> String {
        "local".into()
    }
}
