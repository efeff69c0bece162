//! `follow`: a persistent watcher, the alternative production's design rejected, measured so
//! users can see why. One long-lived exec of the watch program in follow mode streams a line
//! per event back to the runner; every line is a wake. The stream is reopened at once when
//! its lifetime ends, and with backoff when it drops (a failure); after `max_failures` drops
//! in a row the dir is demoted to polling until a stream holds again. While a stream is up,
//! the runner's polling is suspended behind the safety wait.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;

use super::window::{WindowFailure, WindowNotice};
use super::{loop_departures, loop_params, positive, Parts};
use crate::base::clock;
use crate::base::fields::{Fields, ScenarioError};
use crate::base::notice::Say;
use crate::base::rng::Rng;
use crate::base::units::human;
use crate::base::BoxFut;
use crate::relay::runner::{LoopOptions, Started};
use crate::relay::source::{backoff, jitter, ActivitySource, Reporter, Signal, Wake};
use crate::sandbox::dir::program::WatchArgs;
use crate::sandbox::host::Host;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FollowConfig {
    /// How long one follow exec stays up before it is reopened.
    pub lifetime: Duration,
    pub relist: Duration,
    pub max_failures: u32,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

impl Default for FollowConfig {
    fn default() -> Self {
        FollowConfig {
            lifetime: Duration::from_secs(600),
            relist: Duration::from_secs(2),
            max_failures: 3,
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
        }
    }
}

#[derive(Default)]
struct Health {
    failures: u32,
    demoted: bool,
    closed: bool,
}

/// The follow source: a supervising task keeps a stream open and raises the signal per line.
pub(crate) struct FollowSource {
    signal: Arc<Signal>,
    health: Arc<Mutex<Health>>,
    task: JoinHandle<()>,
    reporter: Reporter,
    max_failures: u32,
}

impl FollowSource {
    pub(super) fn start(
        cfg: FollowConfig,
        host: Arc<dyn Host>,
        argv: Vec<OsString>,
        seed: u64,
        reporter: Reporter,
    ) -> Self {
        let signal = Arc::new(Signal::new());
        let health = Arc::new(Mutex::new(Health::default()));
        let task =
            tokio::spawn(supervise(cfg.clone(), host, argv, signal.clone(), health.clone(), seed, reporter.clone()));
        FollowSource { signal, health, task, reporter, max_failures: cfg.max_failures }
    }
}

/// Counts a failure; demotes at the limit.
fn fail(health: &Mutex<Health>, reporter: &Reporter, max: u32, why: WindowFailure) -> u32 {
    let mut h = health.lock().expect("health poisoned");
    h.failures += 1;
    reporter.say(Say::strategy(WindowNotice::WindowFailed { n: h.failures, why: why.clone() }));
    if h.failures >= max && !h.demoted {
        h.demoted = true;
        reporter.say(Say::strategy(WindowNotice::Demoted { n: h.failures, why, for_the_turn: false }));
    }
    h.failures
}

fn succeed(health: &Mutex<Health>, reporter: &Reporter) {
    let mut h = health.lock().expect("health poisoned");
    let had_failed = std::mem::take(&mut h.failures) > 0;
    if std::mem::take(&mut h.demoted) {
        reporter.say(Say::strategy(WindowNotice::Promoted));
    } else if had_failed {
        reporter.say(Say::strategy(WindowNotice::Recovered));
    }
}

async fn supervise(
    cfg: FollowConfig,
    host: Arc<dyn Host>,
    argv: Vec<OsString>,
    signal: Arc<Signal>,
    health: Arc<Mutex<Health>>,
    seed: u64,
    reporter: Reporter,
) {
    let mut rng = Rng::new(seed);
    loop {
        let clean = match host.exec_follow(&argv).await {
            Err(e) => {
                fail(&health, &reporter, cfg.max_failures, WindowFailure::Rejected(e.to_string()));
                false
            }
            Ok(mut lines) => {
                let mut clean = false;
                while let Some(line) = lines.recv().await {
                    match line.as_str() {
                        "event" | "found" => {
                            succeed(&health, &reporter);
                            signal.raise();
                        }
                        "end" => clean = true,
                        _ => {}
                    }
                }
                if !clean {
                    fail(&health, &reporter, cfg.max_failures, WindowFailure::StreamDropped);
                }
                clean
            }
        };
        if !clean {
            // Wake the runner: it may be waiting on a suspended poll.
            signal.raise();
            let n = health.lock().expect("health poisoned").failures.max(1);
            clock::sleep(jitter(backoff(n, cfg.backoff_min, cfg.backoff_max), &mut rng)).await;
        }
    }
}

impl ActivitySource for FollowSource {
    fn wait(&self, timeout: Duration) -> BoxFut<'_, Wake> {
        Box::pin(self.signal.wait(timeout))
    }

    fn close(&self) {
        self.health.lock().expect("health poisoned").closed = true;
        self.task.abort();
        self.signal.close();
    }

    fn suspends_polling(&self) -> bool {
        true
    }

    fn is_healthy(&self) -> bool {
        let h = self.health.lock().expect("health poisoned");
        !h.demoted && !h.closed
    }

    fn note_miss(&self) -> bool {
        if !self.is_healthy() {
            return false;
        }
        fail(&self.health, &self.reporter, self.max_failures, WindowFailure::Missed);
        true
    }
}

impl Drop for FollowSource {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub(crate) const NAME: &str = "follow";
pub(super) const ABOUT: &str = "a persistent watcher streaming a line per event (the design production rejected)";

/// A parsed `follow`: production's loop woken by a persistent watcher's stream.
#[derive(Debug)]
pub struct FollowSpec {
    cfg: FollowConfig,
    opts: LoopOptions,
}

pub(super) fn parse(table: Option<&mut Fields<'_>>) -> Result<FollowSpec, ScenarioError> {
    let mut cfg = FollowConfig::default();
    let Some(t) = table else {
        return Ok(FollowSpec { cfg, opts: LoopOptions::default() });
    };
    for (key, slot) in [
        ("lifetime", &mut cfg.lifetime),
        ("relist", &mut cfg.relist),
        ("backoff_min", &mut cfg.backoff_min),
        ("backoff_max", &mut cfg.backoff_max),
    ] {
        *slot = t.duration(key)?.unwrap_or(*slot);
        positive(t, key, *slot)?;
    }
    if cfg.backoff_max < cfg.backoff_min {
        return Err(t.err("backoff_max", "must not be shorter than `backoff_min`"));
    }
    cfg.max_failures = t.int("max_failures", 1, 1000)?.map_or(cfg.max_failures, |v| v as u32);
    let opts = super::parse_suspending_loop(t)?;
    Ok(FollowSpec { cfg, opts })
}

impl FollowSpec {
    pub(super) fn params(&self) -> String {
        let f = &self.cfg;
        format!(
            "streamed watch reopened every {}, relist {}, safety wait {}, demote after {} drops, backoff {}-{}; {}",
            human(f.lifetime),
            human(f.relist),
            human(self.opts.safety_wait),
            f.max_failures,
            human(f.backoff_min),
            human(f.backoff_max),
            loop_params(&self.opts)
        )
    }

    pub(super) fn departures(&self) -> Vec<super::Departure> {
        let mut d = vec![super::Departure::design("strategy = follow (a design production rejected)")];
        d.extend(loop_departures(&self.opts));
        d
    }

    pub(super) fn start(&self, parts: &Parts<'_>) -> Started {
        let mut args = WatchArgs::window(parts.dir.path(), self.cfg.lifetime, self.cfg.relist);
        args.follow = true;
        let argv = args.argv(parts.watch_program);
        let src = FollowSource::start(self.cfg.clone(), parts.host.clone(), argv, parts.seed, parts.reporter.clone());
        parts.runner(Some(Arc::new(src)), None, &self.opts).start()
    }
}
