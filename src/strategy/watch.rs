//! `watch`: watch-assisted discovery on a local host, as production's local source does it.
//!
//! One directory watch (inotify) armed when the runner starts; any change in the dir wakes
//! the loop (temp names and the runner's own answers included); the wait is raced by the
//! poll delay, so a dead watch degrades to polling, never to a hang. A dir that cannot be
//! watched means plain polling for the turn; a watch that fails later leaves its waits to
//! the timer. It is never demoted and never re-armed.
//!
//! Options: `wake_on = "requests"` wakes only on a request name appearing;
//! `rearm_on_miss = true` arms the watch again when a list after a timed-out wait finds a
//! request it did not announce (the directory may have been replaced under it).

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{loop_departures, loop_params, parse_loop, Parts};
use crate::base::fields::{Fields, ScenarioError};
use crate::base::notice::{Recovery, Say, StrategyNotice};
use crate::base::BoxFut;
use crate::relay::runner::{LoopOptions, Started};
use crate::relay::source::{ActivitySource, Reporter, Signal, Wake};
use crate::sandbox::dir::{EventFilter, RelayDir, Seen, WatchHandle};

/// The local watch's own options (production: any event, never re-armed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WatchConfig {
    pub wake_on: EventFilter,
    pub rearm_on_miss: bool,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig { wake_on: EventFilter::Any, rearm_on_miss: false }
    }
}

/// What a directory watch says (the runner's, and the watch writer's on its responses).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WatchNotice {
    /// A local watch could not be armed: plain polling for the turn.
    WatchUnavailable(String),
    /// A local watch failed after arming: waits end by their timer alone.
    WatchFailed,
    /// A watch was armed again on the directory now at its path.
    WatchRearmed,
    /// ... or could not be.
    RearmFailed(String),
}

impl WatchNotice {
    /// One of each, for the registry.
    pub(crate) fn samples() -> Vec<Say> {
        [
            WatchNotice::WatchUnavailable("ENOSPC".into()),
            WatchNotice::WatchFailed,
            WatchNotice::WatchRearmed,
            WatchNotice::RearmFailed("ENOENT".into()),
        ]
        .into_iter()
        .map(Say::strategy)
        .collect()
    }
}

impl StrategyNotice for WatchNotice {
    fn recovery(&self) -> Option<Recovery> {
        match self {
            WatchNotice::WatchRearmed => Some(Recovery::WatchRearmed),
            WatchNotice::RearmFailed(_) => Some(Recovery::RearmFailed),
            WatchNotice::WatchUnavailable(_) | WatchNotice::WatchFailed => None,
        }
    }

    fn degraded(&self) -> bool {
        matches!(self, WatchNotice::WatchUnavailable(_) | WatchNotice::WatchFailed)
    }
}

impl fmt::Display for WatchNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchNotice::WatchUnavailable(e) => write!(f, "cannot watch the relay dir: {e}; plain polling"),
            WatchNotice::WatchFailed => f.write_str("the watch failed; waits end by their timer"),
            WatchNotice::WatchRearmed => f.write_str("watch re-armed on the directory now at the path"),
            WatchNotice::RearmFailed(e) => write!(f, "could not re-arm the watch: {e}; polling"),
        }
    }
}

/// The local watch source.
pub(crate) struct LocalWatch {
    dir: Arc<dyn RelayDir>,
    cfg: WatchConfig,
    signal: Arc<Signal>,
    live: Mutex<Option<Box<dyn WatchHandle>>>,
    reporter: Reporter,
}

impl LocalWatch {
    /// Arms the watch; `None` (said) when the dir cannot be watched: the runner polls.
    pub(crate) fn arm(dir: Arc<dyn RelayDir>, cfg: WatchConfig, reporter: Reporter) -> Option<LocalWatch> {
        let w = LocalWatch { dir, cfg, signal: Arc::new(Signal::new()), live: Mutex::new(None), reporter };
        match w.arm_watch() {
            Ok(h) => {
                *w.live.lock().expect("watch lock poisoned") = Some(h);
                Some(w)
            }
            Err(e) => {
                w.reporter.say(Say::strategy(WatchNotice::WatchUnavailable(e.to_string())));
                None
            }
        }
    }

    fn arm_watch(&self) -> std::io::Result<Box<dyn WatchHandle>> {
        let (signal, filter, reporter) = (self.signal.clone(), self.cfg.wake_on, self.reporter.clone());
        self.dir.watch(Box::new(move |seen| match seen {
            // A failed watch goes quiet; the waits end by their timer.
            Seen::Failed => reporter.say(Say::strategy(WatchNotice::WatchFailed)),
            s if filter.wants(s) => signal.raise(),
            _ => {}
        }))
    }
}

impl ActivitySource for LocalWatch {
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake> {
        // A closed signal ends the wait at once.
        Box::pin(self.signal.wait(timeout))
    }

    fn close(&self) {
        self.signal.close();
        if let Some(w) = self.live.lock().expect("watch lock poisoned").take() {
            w.disarm();
        }
    }

    fn is_healthy(&self) -> bool {
        !self.signal.is_closed()
    }

    fn note_miss(&self) -> bool {
        if !self.cfg.rearm_on_miss || !self.is_healthy() {
            return false;
        }
        match self.arm_watch() {
            Ok(h) => {
                if let Some(old) = self.live.lock().expect("watch lock poisoned").replace(h) {
                    old.disarm();
                }
                self.reporter.say(Say::strategy(WatchNotice::WatchRearmed));
            }
            Err(e) => self.reporter.say(Say::strategy(WatchNotice::RearmFailed(e.to_string()))),
        }
        true
    }
}

pub(crate) const WATCH_NAME: &str = "watch";
pub(super) const ABOUT: &str =
    "an inotify watch on the relay dir wakes the loop; the poll delay races it (local hosts)";

/// A parsed `watch`: production's loop woken by an inotify watch on the relay dir.
#[derive(Debug)]
pub struct WatchSpec {
    opts: LoopOptions,
    cfg: WatchConfig,
}

pub(super) fn parse(table: Option<&mut Fields<'_>>) -> Result<WatchSpec, ScenarioError> {
    let mut cfg = WatchConfig::default();
    let opts = match table {
        None => LoopOptions::default(),
        Some(t) => {
            cfg.wake_on =
                t.choice("wake_on", &["any", "requests"])?.and_then(EventFilter::from_name).unwrap_or(cfg.wake_on);
            cfg.rearm_on_miss = t.boolean("rearm_on_miss")?.unwrap_or(false);
            parse_loop(Some(t))?
        }
    };
    Ok(WatchSpec { opts, cfg })
}

impl WatchSpec {
    pub(super) fn params(&self) -> String {
        format!("inotify, wakes on {} events; {}", self.cfg.wake_on.name(), loop_params(&self.opts))
    }

    pub(super) fn departures(&self) -> Vec<super::Departure> {
        let mut d = loop_departures(&self.opts);
        if self.cfg.wake_on != EventFilter::Any {
            d.push(super::Departure::code(format!("wake_on = {}", self.cfg.wake_on.name())));
        }
        if self.cfg.rearm_on_miss {
            d.push(super::Departure::code("rearm_on_miss = true"));
        }
        d
    }

    pub(super) fn start(&self, parts: &Parts<'_>) -> Started {
        let source = LocalWatch::arm(parts.dir.clone(), self.cfg, parts.reporter.clone())
            .map(|w| Arc::new(w) as Arc<dyn ActivitySource>);
        parts.runner(source, None, &self.opts).start()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::dir::{RealDir, SimDir};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn any_change_wakes_it_and_close_ends_it() {
        let dir = tempfile::tempdir().unwrap();
        let real: Arc<dyn RelayDir> = Arc::new(RealDir::new(dir.path()));
        let src = LocalWatch::arm(real, WatchConfig::default(), Reporter::default()).unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"x").unwrap();
        // Generous bound: the event normally arrives in microseconds.
        assert_eq!(src.wait(Duration::from_secs(20)).await, Wake::Activity, "any name wakes production's watch");
        src.close();
        assert_eq!(src.wait(Duration::from_secs(20)).await, Wake::Closed);
        assert!(!src.is_healthy());
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_filter_ignores_other_changes() {
        let sim = SimDir::new("/sb/relay");
        let cfg = WatchConfig { wake_on: EventFilter::Requests, rearm_on_miss: false };
        let src = LocalWatch::arm(Arc::new(sim.clone()), cfg, Reporter::default()).unwrap();
        sim.write("a.res.json", b"{}").unwrap();
        sim.write("x.req.json.tmp.1", b"{}").unwrap();
        assert_eq!(src.wait(Duration::from_millis(300)).await, Wake::Timeout);
        sim.rename("x.req.json.tmp.1", "x.req.json").unwrap();
        assert_eq!(src.wait(Duration::from_millis(300)).await, Wake::Activity);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dir_that_cannot_be_watched_means_polling() {
        let sim = SimDir::new("/sb/relay");
        sim.delete_dir();
        assert!(LocalWatch::arm(Arc::new(sim), WatchConfig::default(), Reporter::default()).is_none());
    }
}
