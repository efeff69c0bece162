//! `window-exec` (and `window-exec-inline`): bounded-window execs of the in-sandbox watch
//! program, for remote hosts (SPEC §3, §8). The source's state machine is in [`source`];
//! here are its settings, their parsing, and its construction.
//!
//! Production's constants: window 25 s (clamped to [5 s, 120 s], jittered 0.8–1.0 per
//! window), the daemon's timeout at window + 5 s grace, the runner's outer bound 2 s after
//! that, the program's re-list every 2 s, failures backing off 1 s doubling to 30 s, demotion
//! at the 3rd consecutive failure for the rest of the turn, the loop's wait bounded by 30 s
//! while healthy. Options, each one behaviour (defaults are production's):
//!
//! - `idle_wake = false` — an idle window (nothing found, no event) is no wake: the next one
//!   starts inside the same wait, and the runner lists only on its 30 s safety wait;
//! - `window_events = "requests"` — only a request name appearing ends a window (not temp
//!   files, not the runner's own answers);
//! - `after_demotion = "retry"` — a demoted dir keeps trying windows with backoff while it
//!   polls, and is promoted back when one succeeds;
//! - `failure_wake = "every"` — every failure wakes the runner (production: only a non-zero
//!   exit does);
//! - `on_close = "abort"` — `close()` kills a held exec (production abandons it);
//! - `backoff_before_demotion = false` — failures before the demotion are retried at once;
//!   the backoff starts with the demotion (1 s, 2 s, ... for `after_demotion = "retry"`);
//! - `inline = true` (the `window-exec-inline` strategy) — the program prints the requests it
//!   found, so the runner skips its list and read.

pub(crate) mod arithmetic;
pub(crate) mod notice;
pub(crate) mod source;

pub use notice::{WindowFailure, WindowNotice};
pub use source::{WindowExec, WindowSource};

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::{loop_departures, loop_params, positive, Departure, Parts};
use crate::base::fields::{Fields, ScenarioError};
use crate::base::units::human;
use crate::base::BoxFut;
use crate::relay::runner::{LoopOptions, Started};
use crate::relay::source::{ActivitySource, Inbox};
use crate::sandbox::dir::program::WatchArgs;
use crate::sandbox::dir::{EventFilter, ExecOutput};
use crate::sandbox::host::Host;

pub(crate) const WINDOW_MIN: Duration = Duration::from_secs(5);
pub(crate) const WINDOW_MAX: Duration = Duration::from_secs(120);

/// What follows a demotion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterDemotion {
    /// Classic polling for the rest of the turn (production).
    Poll,
    /// Windows retried with backoff while polling; promoted back on a good one.
    Retry,
}

/// Which failures wake the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureWake {
    /// Only a non-zero exit (production).
    NonZeroExit,
    /// Every failure.
    Every,
}

/// What `close()` does with a held exec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnClose {
    /// Leaves it to end by itself; its result is ignored (production).
    Abandon,
    /// Kills it.
    Abort,
}

/// Every constant of the source, settable per case; defaults are production's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowConfig {
    /// How long one exec watches for activity.
    pub window: Duration,
    /// The daemon's timeout is window + grace.
    pub grace: Duration,
    /// The runner's outer bound is window + grace + margin.
    pub margin: Duration,
    /// The program's re-list period inside the sandbox.
    pub relist: Duration,
    /// Failed windows in a row before the source demotes itself to polling.
    pub max_failures: u32,
    /// The first backoff after a failed window.
    pub backoff_min: Duration,
    /// The longest backoff.
    pub backoff_max: Duration,
    /// Scale each window and backoff by a factor drawn from [0.8, 1.0] (off: all exact).
    pub jitter: bool,
    /// A window that ends idle wakes the loop (for a list) as well.
    pub idle_wake: bool,
    /// Which watch events end a window.
    pub events: EventFilter,
    /// The program prints the requests it found (the runner skips its list and read).
    pub inline: bool,
    /// What the source does once demoted.
    pub after_demotion: AfterDemotion,
    /// Which failed windows wake the loop (production: only a non-zero exit).
    pub failure_wake: FailureWake,
    /// What `close()` does to a held exec.
    pub on_close: OnClose,
    /// Failures before the demotion back off, as production's do (off: they are retried at once).
    pub backoff_before_demotion: bool,
    /// The window runs our Node script under `node -e` (production's way, with its start-up
    /// cost) instead of `relay-bench sandbox-watch`.
    pub node: bool,
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            window: Duration::from_secs(25),
            grace: Duration::from_secs(5),
            margin: Duration::from_secs(2),
            relist: Duration::from_secs(2),
            max_failures: 3,
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            jitter: true,
            idle_wake: true,
            events: EventFilter::Any,
            inline: false,
            after_demotion: AfterDemotion::Poll,
            failure_wake: FailureWake::NonZeroExit,
            on_close: OnClose::Abandon,
            backoff_before_demotion: true,
            node: false,
        }
    }
}

impl WindowConfig {
    /// The window actually used: clamped to [5 s, 120 s].
    pub(crate) fn clamped_window(&self) -> Duration {
        self.window.clamp(WINDOW_MIN, WINDOW_MAX)
    }

    /// Whether the program must say why it finished.
    pub fn reports(&self) -> bool {
        !self.idle_wake || self.inline
    }

    /// The program's argv for one window over `dir`.
    pub(crate) fn program_args(&self, dir: PathBuf, window: Duration) -> WatchArgs {
        let mut a = WatchArgs::window(dir, window, self.relist);
        (a.events, a.report, a.inline) = (self.events, self.reports(), self.inline);
        a
    }

    /// Where these settings depart from production's: the window is a setting production
    /// reads (and leaves its envelope when it reaches `safety_wait`); the program's and the
    /// backoff's timings are constants of its code; the rest changes what its code does.
    pub fn departures(&self, safety_wait: Duration) -> Vec<Departure> {
        let p = WindowConfig::default();
        let mut d = Vec::new();
        if self.window != p.window {
            let text = format!("window = {}", human(self.window));
            let mut w = Departure::setting(text, "REMOTE_WATCH_WINDOW_MS", self.clamped_window().as_millis());
            if self.clamped_window() >= safety_wait {
                w = w.outside(format!(
                    "a window of {} reaches the {} safety wait: production's notes keep it below (the safety \
                     list runs while a window is held, and a request it finds is a watch miss)",
                    human(self.clamped_window()),
                    human(safety_wait)
                ));
            }
            d.push(w);
        }
        let constants = [
            ("grace", self.grace, p.grace, "RELAY_REMOTE_WATCH_GRACE_MS"),
            ("margin", self.margin, p.margin, "RELAY_WATCH_OUTER_BOUND_MARGIN_MS"),
            ("relist", self.relist, p.relist, "RELAY_WATCH_READDIR_POLL_MS"),
            ("backoff_min", self.backoff_min, p.backoff_min, "RELAY_WATCH_BACKOFF_BASE_MS"),
            ("backoff_max", self.backoff_max, p.backoff_max, "RELAY_WATCH_BACKOFF_CAP_MS"),
        ];
        for (k, v, _, name) in constants.iter().filter(|(_, v, p, _)| v != p) {
            d.push(Departure::default_value(format!("{k} = {}", human(*v)), name, "relay-watch.ts"));
        }
        if self.max_failures != p.max_failures {
            let text = format!("max_failures = {}", self.max_failures);
            d.push(Departure::default_value(text, "RELAY_WATCH_DEMOTION_THRESHOLD", "relay-watch.ts"));
        }
        for (k, v, p) in [
            ("jitter", self.jitter, p.jitter),
            ("idle_wake", self.idle_wake, p.idle_wake),
            ("backoff_before_demotion", self.backoff_before_demotion, p.backoff_before_demotion),
        ] {
            if v != p {
                d.push(Departure::code(format!("{k} = {v}")));
            }
        }
        if self.events != p.events {
            d.push(Departure::code(format!("window_events = {}", self.events.name())));
        }
        if self.after_demotion != p.after_demotion {
            d.push(Departure::code("after_demotion = retry"));
        }
        if self.failure_wake != p.failure_wake {
            d.push(Departure::code("failure_wake = every"));
        }
        if self.on_close != p.on_close {
            d.push(Departure::code("on_close = abort"));
        }
        d
    }
}

/// Runs the watch program through the host: `PROGRAM sandbox-watch [...] -- DIR WINDOW RELIST`.
pub(crate) struct ProgramExec {
    pub host: Arc<dyn Host>,
    pub program: PathBuf,
    pub dir: PathBuf,
    pub cfg: WindowConfig,
}

impl ProgramExec {
    pub(crate) fn argv(&self, window: Duration) -> Vec<OsString> {
        if self.cfg.node {
            return crate::sandbox::dir::program::node_argv(&self.dir, window, self.cfg.relist);
        }
        self.cfg.program_args(self.dir.clone(), window).argv(&self.program)
    }
}

impl WindowExec for ProgramExec {
    fn run(&self, window: Duration, timeout: Duration) -> BoxFut<'static, io::Result<ExecOutput>> {
        let (host, argv) = (self.host.clone(), self.argv(window));
        Box::pin(async move { host.exec(&argv, timeout).await })
    }
}

pub(crate) const NAME: &str = "window-exec";
pub(crate) const NAME_INLINE: &str = "window-exec-inline";
pub(super) const ABOUT: &str = "bounded-window execs of an in-sandbox watch program wake the loop (remote hosts)";
pub(super) const ABOUT_INLINE: &str =
    "window-exec whose watch program prints the requests it found (no list, no read after a wake)";

/// A parsed `window-exec` (or `window-exec-inline`): production's loop woken by bounded
/// windows of the watch program.
#[derive(Debug)]
pub struct WindowSpec {
    pub(super) name: &'static str,
    pub(super) cfg: WindowConfig,
    opts: LoopOptions,
}

/// Reads a window strategy's table: `name` is the strategy's, `inline` whether its program
/// prints the requests it found.
pub(super) fn parse(
    name: &'static str,
    inline: bool,
    table: Option<&mut Fields<'_>>,
) -> Result<WindowSpec, ScenarioError> {
    let mut cfg = WindowConfig { inline, ..WindowConfig::default() };
    let Some(t) = table else {
        return Ok(WindowSpec { name, cfg, opts: LoopOptions::default() });
    };
    if let Some(w) = t.duration("window")? {
        if !(WINDOW_MIN..=WINDOW_MAX).contains(&w) {
            return Err(t.err("window", "must be between 5s and 120s (production clamps it there)"));
        }
        cfg.window = w;
    }
    for (key, slot) in [
        ("grace", &mut cfg.grace),
        ("margin", &mut cfg.margin),
        ("relist", &mut cfg.relist),
        ("backoff_min", &mut cfg.backoff_min),
        ("backoff_max", &mut cfg.backoff_max),
    ] {
        *slot = t.duration(key)?.unwrap_or(*slot);
    }
    positive(t, "relist", cfg.relist)?;
    if cfg.backoff_max < cfg.backoff_min {
        return Err(t.err("backoff_max", "must not be shorter than `backoff_min`"));
    }
    cfg.max_failures = t.int("max_failures", 1, 1000)?.map_or(cfg.max_failures, |v| v as u32);
    cfg.jitter = t.boolean("jitter")?.unwrap_or(cfg.jitter);
    cfg.idle_wake = t.boolean("idle_wake")?.unwrap_or(cfg.idle_wake);
    cfg.backoff_before_demotion = t.boolean("backoff_before_demotion")?.unwrap_or(cfg.backoff_before_demotion);
    cfg.events =
        t.choice("window_events", &["any", "requests"])?.and_then(EventFilter::from_name).unwrap_or(cfg.events);
    // not a kind: "poll" is the option's value, the classic polling production falls back to
    if t.choice("after_demotion", &["poll", "retry"])? == Some("retry") {
        cfg.after_demotion = AfterDemotion::Retry;
    }
    if t.choice("failure_wake", &["non-zero-exit", "every"])? == Some("every") {
        cfg.failure_wake = FailureWake::Every;
    }
    if t.choice("on_close", &["abandon", "abort"])? == Some("abort") {
        cfg.on_close = OnClose::Abort;
    }
    if t.choice("program", &["relay-bench", "node"])? == Some("node") {
        if cfg.reports() || cfg.events != EventFilter::Any {
            let why =
                "the node script is production's window only: idle_wake, window_events and inline keep their defaults";
            return Err(t.err("program", why));
        }
        cfg.node = true;
    }
    let opts = super::parse_suspending_loop(t)?;
    Ok(WindowSpec { name, cfg, opts })
}

impl WindowSpec {
    pub(super) fn missing_here(&self) -> Option<String> {
        let missing = self.cfg.node && crate::base::fsio::on_path("node").is_none();
        missing.then(|| {
            "program = \"node\": node is not on PATH here (install Node.js, or use program = \"relay-bench\")".into()
        })
    }

    pub(super) fn params(&self) -> String {
        let c = &self.cfg;
        format!(
            "{}window {}{} + grace {} (+ {} outer bound), relist {}, safety wait {}, demote at {} failures ({}), backoff {}-{}; {}",
            if c.node { "node -e (our watch.js), " } else { "" },
            human(c.clamped_window()),
            if c.jitter { " (x0.8-1.0)" } else { " (no jitter)" },
            human(c.grace),
            human(c.margin),
            human(c.relist),
            human(self.opts.safety_wait),
            c.max_failures,
            if c.after_demotion == AfterDemotion::Poll { "for the turn" } else { "retried" },
            human(c.backoff_min),
            human(c.backoff_max),
            loop_params(&self.opts)
        )
    }

    pub(super) fn departures(&self) -> Vec<Departure> {
        let mut d = self.cfg.departures(self.opts.safety_wait);
        if self.cfg.inline {
            d.insert(0, Departure::code("inline = true"));
        }
        d.extend(loop_departures(&self.opts));
        d
    }

    pub(super) fn start(&self, parts: &Parts<'_>) -> Started {
        let exec = ProgramExec {
            host: parts.host.clone(),
            program: parts.watch_program.to_path_buf(),
            dir: parts.dir.path().to_path_buf(),
            cfg: self.cfg.clone(),
        };
        let inbox = self.cfg.inline.then(Inbox::default);
        let src =
            WindowSource::new(self.cfg.clone(), Arc::new(exec), parts.seed, parts.reporter.clone(), inbox.clone());
        let src: Arc<dyn ActivitySource> = Arc::new(src);
        parts.runner(Some(src), inbox, &self.opts).start()
    }
}

#[cfg(test)]
mod tests {
    use crate::strategy::runner_from_toml;

    #[test]
    fn the_node_program_is_productions_window_only_and_needs_the_real_clock() {
        let e = runner_from_toml(r#"{ strategy = "window-exec", program = "node", idle_wake = false }"#).unwrap_err();
        assert_eq!(e.key, "program", "{e}");
        assert!(e.msg.contains("production's window only"), "{e}");
        let e = runner_from_toml(r#"{ strategy = "window-exec-inline", program = "node" }"#).unwrap_err();
        assert_eq!(e.key, "program", "{e}");
        let e = runner_from_toml(r#"{ strategy = "window-exec", program = "python" }"#).unwrap_err();
        assert!(e.msg.contains("relay-bench, node"), "{e}");
        let ours = runner_from_toml(r#""window-exec""#).unwrap();
        assert!(!ours.needs_real_clock() && ours.departures().is_empty());
        if let Ok(node) = runner_from_toml(r#"{ strategy = "window-exec", program = "node" }"#) {
            assert!(node.needs_real_clock(), "the in-memory sandbox runs only our program");
            assert!(node.params().starts_with("node -e"), "{}", node.params());
        }
    }
}
