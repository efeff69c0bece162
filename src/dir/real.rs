//! A relay dir on this machine: plain syscalls, inotify through `notify`, child processes.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{LineDelay, OnSeen, RelayDir, WatchHandle};
use crate::fsio;
use crate::host::{follow_child, run_child, ExecOutput, Lines};
use crate::source::{DirWatch, ErrorOnce, WatchFilter};
use crate::BoxFut;

#[derive(Debug, Clone)]
pub struct RealDir {
    dir: PathBuf,
}

impl RealDir {
    pub fn new(dir: impl Into<PathBuf>) -> RealDir {
        RealDir { dir: dir.into() }
    }
}

impl WatchHandle for DirWatch {
    fn disarm(&self) {
        DirWatch::disarm(self);
    }
}

impl RelayDir for RealDir {
    fn list(&self) -> io::Result<Vec<String>> {
        std::fs::read_dir(&self.dir)?.map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned())).collect()
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        std::fs::read(self.dir.join(name))
    }

    fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        std::fs::write(self.dir.join(name), bytes)
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.dir.join(from), self.dir.join(to))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        fsio::remove_if_present(&self.dir.join(name))
    }

    fn publish(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        fsio::publish_atomic(&self.dir, name, bytes)
    }

    fn watch(&self, filter: WatchFilter, errors: Arc<ErrorOnce>, on_seen: OnSeen) -> io::Result<Box<dyn WatchHandle>> {
        DirWatch::arm(&self.dir, filter, errors, on_seen).map(|w| Box::new(w) as Box<dyn WatchHandle>).map_err(|e| {
            match e.kind {
                notify::ErrorKind::Io(io) => io,
                other => io::Error::other(format!("{other:?}")),
            }
        })
    }

    fn exec(&self, argv: &[OsString]) -> BoxFut<'static, io::Result<ExecOutput>> {
        let argv = argv.to_vec();
        Box::pin(async move { run_child(&argv).await })
    }

    fn exec_follow(&self, argv: &[OsString], delay: Option<LineDelay>) -> io::Result<Lines> {
        follow_child(argv, delay)
    }

    fn path(&self) -> &Path {
        &self.dir
    }
}
