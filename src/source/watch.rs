//! Directory watches through `notify` (inotify on Linux): the watch-assisted strategy.
//!
//! A [`DirWatch`] owns one watcher on one relay dir and hands each relevant file name to a
//! callback; the runner's [`WatchSource`] and the writer's response hub are two callbacks.
//! Events are wake signals only: the caller's safety timer keeps racing them, so a watch
//! that cannot be created, errors, or sits on a replaced directory degrades to polling,
//! never to a hang.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use notify::event::{EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use super::{ActivitySource, ErrorOnce, Reporter, Signal, SourceHealth, Wake};
use crate::dir::{RelayDir, WatchHandle};
use crate::protocol::{classify, FileKind};
use crate::BoxFut;

/// Which relay names a watch reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFilter {
    Requests,
    Responses,
}

impl WatchFilter {
    pub fn wants(self, name: &str) -> bool {
        matches!(
            (self, classify(name)),
            (WatchFilter::Requests, FileKind::Request) | (WatchFilter::Responses, FileKind::Response)
        )
    }
}

/// What a watch callback is told.
pub enum Seen<'a> {
    /// A final relay name appeared (created or renamed onto).
    Name(&'a str),
    /// The kernel dropped events (queue overflow): anything may have happened.
    Rescan,
}

/// One live watch on one directory.
pub struct DirWatch {
    watcher: Mutex<Option<RecommendedWatcher>>,
    errors: Arc<ErrorOnce>,
}

impl DirWatch {
    /// Arms a watch on `dir`. `on_seen` runs on the watcher's thread for every relevant
    /// name; errors after arming are recorded once in `errors` and degrade the watch.
    pub fn arm(
        dir: &Path,
        filter: WatchFilter,
        errors: Arc<ErrorOnce>,
        on_seen: impl Fn(Seen<'_>) + Send + 'static,
    ) -> Result<DirWatch, notify::Error> {
        let errs = errors.clone();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            Ok(ev) => {
                if ev.need_rescan() || (ev.paths.is_empty() && !matches!(ev.kind, EventKind::Remove(_))) {
                    on_seen(Seen::Rescan);
                    return;
                }
                let appears = matches!(
                    ev.kind,
                    EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_)) | EventKind::Any | EventKind::Other
                );
                if !appears {
                    return;
                }
                for p in &ev.paths {
                    if let Some(name) = p.file_name().and_then(|n| n.to_str()) {
                        if filter.wants(name) {
                            on_seen(Seen::Name(name));
                        }
                    }
                }
            }
            Err(e) => {
                let msg = format!("watch error: {e}");
                errs.record(msg.clone());
                errs.degrade(msg);
                // Wake the waiters so they rescan now rather than at their next tick.
                on_seen(Seen::Rescan);
            }
        })?;
        watcher.watch(dir, RecursiveMode::NonRecursive)?;
        Ok(DirWatch { watcher: Mutex::new(Some(watcher)), errors })
    }

    /// Drops the watcher (and its thread). Idempotent.
    pub fn disarm(&self) {
        self.watcher.lock().expect("watcher lock poisoned").take();
    }

    pub fn health(&self) -> SourceHealth {
        self.errors.health()
    }
}

/// A watch on a relay dir that can be armed again, on the directory now at its path (a
/// watch stays on a replaced directory). A failure to arm is recorded once and degrades
/// the owner to its timer. Both sides' watches (runner and writer) are one of these.
pub struct Rearmable {
    dir: Arc<dyn RelayDir>,
    filter: WatchFilter,
    errors: Arc<ErrorOnce>,
    on_seen: Arc<dyn Fn(Seen<'_>) + Send + Sync>,
    live: Mutex<Option<Box<dyn WatchHandle>>>,
}

impl Rearmable {
    /// Arms the watch at once; `on_seen` runs for every relevant name (or a rescan).
    pub fn new(
        dir: Arc<dyn RelayDir>,
        filter: WatchFilter,
        on_seen: impl Fn(Seen<'_>) + Send + Sync + 'static,
    ) -> Self {
        let w = Rearmable {
            dir,
            filter,
            errors: Arc::new(ErrorOnce::default()),
            on_seen: Arc::new(on_seen),
            live: Mutex::new(None),
        };
        w.arm();
        w
    }

    /// Replaces the live watch with a new one; false (and recorded) if it cannot be armed.
    pub fn arm(&self) -> bool {
        let f = self.on_seen.clone();
        let armed = self.dir.watch(self.filter, self.errors.clone(), Box::new(move |seen| f(seen)));
        let mut live = self.live.lock().expect("watch lock poisoned");
        if let Some(old) = live.take() {
            old.disarm();
        }
        match armed {
            Ok(w) => {
                *live = Some(w);
                true
            }
            Err(e) => {
                let what = if self.filter == WatchFilter::Responses { "response watch" } else { "watch" };
                let msg = format!("could not arm {what} on {:?}: {e}; polling only", self.dir.path());
                self.errors.record(msg.clone());
                self.errors.degrade(msg);
                false
            }
        }
    }

    /// Drops the live watch. Idempotent.
    pub fn disarm(&self) {
        if let Some(w) = self.live.lock().expect("watch lock poisoned").take() {
            w.disarm();
        }
    }

    pub fn errors(&self) -> &ErrorOnce {
        &self.errors
    }
}

/// The runner's watch-assisted source: any new request name in the dir is activity. When
/// the safety list finds a request the watch did not signal (the directory was replaced
/// under it), the watch is re-armed on the directory as it is now.
pub struct WatchSource {
    signal: Arc<Signal>,
    watch: Rearmable,
    reporter: Reporter,
}

impl WatchSource {
    /// Arms the watch. If it cannot be armed (ENOSPC, EMFILE, missing dir) the source
    /// still works as a timer and reports itself degraded.
    pub fn new(dir: Arc<dyn RelayDir>) -> WatchSource {
        let signal = Arc::new(Signal::new());
        let s = signal.clone();
        let watch = Rearmable::new(dir, WatchFilter::Requests, move |_| s.raise());
        WatchSource { signal, watch, reporter: Reporter::default() }
    }
}

impl ActivitySource for WatchSource {
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake> {
        Box::pin(self.signal.wait(timeout))
    }

    fn close(&self) {
        self.watch.disarm();
        self.signal.close();
    }

    fn health(&self) -> SourceHealth {
        self.watch.errors().health()
    }

    fn missed(&self, _suspended: bool) -> bool {
        // A watch on a replaced directory sees nothing: arm a new one on the directory now
        // at the path; meanwhile the safety list carried discovery.
        self.watch.errors().record("the safety list found a request the watch did not signal; re-armed".into());
        if !self.signal.is_closed() && self.watch.arm() {
            self.reporter.say(|| "the safety list found a request the watch missed; watch re-armed".into());
        } else {
            self.reporter.say(|| "the safety list found a request the watch missed; re-arm failed, polling".into());
        }
        true
    }

    fn report_to(&self, sink: crate::events::EventSink, sandbox: u32) {
        self.reporter.set(sink, sandbox);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsio::publish_atomic;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_published_request_wakes_the_source() {
        let dir = tempfile::tempdir().unwrap();
        let src = WatchSource::new(Arc::new(crate::dir::RealDir::new(dir.path())));
        assert_eq!(src.health().degraded, None);
        // Responses, temp names and other files do not wake it.
        publish_atomic(dir.path(), "a.res.json", b"{}").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        assert_eq!(src.wait(Duration::from_millis(300)).await, Wake::Timeout);
        publish_atomic(dir.path(), "a.req.json", b"{}").unwrap();
        // Generous bound: the event normally arrives in microseconds.
        assert_eq!(src.wait(Duration::from_secs(20)).await, Wake::Activity);
        src.close();
        assert_eq!(src.wait(Duration::from_secs(20)).await, Wake::Closed);
    }

    #[tokio::test]
    async fn a_missing_dir_degrades_to_a_timer() {
        let dir = tempfile::tempdir().unwrap();
        let src = WatchSource::new(Arc::new(crate::dir::RealDir::new(dir.path().join("gone"))));
        let h = src.health();
        assert!(h.degraded.unwrap().contains("could not arm watch"));
        assert_eq!(h.errors, 1);
        assert_eq!(src.wait(Duration::from_millis(10)).await, Wake::Timeout);
    }
}
