//! The persistent watcher (a baseline the production design rejected, measured so users can
//! see why): one long-lived exec of the watch program in follow mode, its stdout streamed
//! back line by line; every line is a wake. The stream ends when the program's lifetime
//! does (then it is reopened at once) or when it drops (a failure: reopened with backoff,
//! and after `max_failures` in a row the dir is demoted to polling until a stream holds).
//! While a stream is up, remote polling is suspended behind the safety list.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::window::{Shared, SupervisedSource};
use super::{backoff, jitter, Signal};
use crate::host::{Host, Purpose};
use crate::rng::Rng;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowConfig {
    /// How long one follow exec stays up before it is reopened.
    pub lifetime: Duration,
    pub relist: Duration,
    pub safety: Duration,
    pub max_failures: u32,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
}

impl Default for FollowConfig {
    fn default() -> Self {
        FollowConfig {
            lifetime: Duration::from_secs(600),
            relist: Duration::from_secs(2),
            safety: Duration::from_secs(30),
            max_failures: 3,
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
        }
    }
}

impl SupervisedSource {
    /// Starts the follow loop (inside a tokio runtime).
    pub fn follow(
        cfg: FollowConfig,
        host: Arc<dyn Host>,
        program: PathBuf,
        dir: PathBuf,
        seed: u64,
    ) -> SupervisedSource {
        let signal = Arc::new(Signal::new());
        let shared = Arc::new(Shared { max_failures: cfg.max_failures.max(1), ..Shared::default() });
        shared.healthy.store(true, Ordering::Release);
        let argv: Vec<OsString> = vec![
            program.into(),
            "sandbox-watch".into(),
            "--follow".into(),
            "--".into(),
            dir.into(),
            cfg.lifetime.as_millis().to_string().into(),
            cfg.relist.as_millis().to_string().into(),
        ];
        let task = tokio::spawn(follow_loop(cfg.clone(), host, argv, signal.clone(), shared.clone(), Rng::new(seed)));
        SupervisedSource { signal, shared, task, safety: cfg.safety }
    }
}

async fn follow_loop(
    cfg: FollowConfig,
    host: Arc<dyn Host>,
    argv: Vec<OsString>,
    signal: Arc<Signal>,
    shared: Arc<Shared>,
    mut rng: Rng,
) {
    let mut retry = 0u32;
    while !shared.closed.load(Ordering::Acquire) {
        shared.execs.fetch_add(1, Ordering::Relaxed);
        let ended_cleanly = match host.exec_follow(&argv, Purpose::Discovery).await {
            Err(e) => {
                shared.fail(format!("follow exec failed: {e}"));
                false
            }
            Ok(mut lines) => {
                let mut clean = false;
                while let Some(line) = lines.recv().await {
                    match line.as_str() {
                        "event" | "found" => {
                            shared.succeed();
                            retry = 0;
                            signal.raise();
                        }
                        "end" => clean = true,
                        _ => {}
                    }
                }
                if !clean {
                    shared.fail("the followed stream dropped".into());
                }
                clean
            }
        };
        if !ended_cleanly {
            // Wake the runner: it may be waiting on a suspended poll.
            signal.raise();
            let pause = jitter(backoff(retry, cfg.backoff_min, cfg.backoff_max), &mut rng);
            retry = retry.saturating_add(1);
            tokio::time::sleep(pause).await;
        }
    }
}
