//! Strategies: how the runner discovers requests (hop 2) and how the writer learns its
//! answer arrived (hop 1). Each runner strategy is one file here owning its settings, their
//! parsing, its one-line description and its construction, registered by one line in
//! [`RUNNERS`]; the writer strategies are one enum ([`WRITERS`] lists them). Nothing outside this module
//! branches on a strategy's kind.
//!
//! Every suite runner shares production's loop ([`crate::relay::runner`]); its options are read
//! here once for all ([`parse_loop`]). A strategy's defaults are production's relay as
//! built (SPEC §8); each knowing departure is a named option, and a case lists the options
//! it sets away from production ([`RunnerSpec::departures`]).

mod departure;
pub(crate) mod external;
mod follow;
pub(crate) mod pair;
mod poll;
mod watch;
pub(crate) mod window;
mod writers;

pub(crate) use departure::kind_of;
pub use departure::{ChangeKind, Departure};
pub(crate) use pair::Relay;
pub(crate) use watch::WatchNotice;
pub use writers::WRITERS;
pub(crate) use writers::{writer_by_name, WriterKind, WriterSpec, WRITER_DEFAULT};

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::base::fields::{Fields, ScenarioError};
use crate::base::notice::Say;
use crate::base::units::human;
use crate::events::EventSink;
use crate::relay::handler::HandlerModel;
use crate::relay::runner::{LoopOptions, ParkFn, PauseAnswer, PollDelay, ReadFailure, Runner, SeenScope, Started};
use crate::relay::source::{ActivitySource, Inbox, Reporter};
use crate::sandbox::dir::RelayDir;
use crate::sandbox::host::Host;

/// What a runner is built from, for one relay dir.
pub struct Parts<'a> {
    pub sandbox: u32,
    pub dir: &'a Arc<dyn RelayDir>,
    pub host: &'a Arc<dyn Host>,
    /// The relay-bench binary, run in the sandbox as the watch program.
    pub watch_program: &'a Path,
    pub seed: u64,
    pub handler: Arc<HandlerModel>,
    pub sink: &'a EventSink,
    /// Where the runner and its source say what happens (one per relay dir's runner).
    pub reporter: Reporter,
    /// How a call that parked without an answer is told to its writer.
    pub on_park: Option<ParkFn>,
    /// Where a black-box runner's stderr is kept.
    pub stderr_to: &'a Path,
}

impl Parts<'_> {
    /// The suite's runner over this relay dir with `source` (and the inline inbox, if the
    /// source carries requests).
    pub fn runner(&self, source: Option<Arc<dyn ActivitySource>>, inbox: Option<Inbox>, opts: &LoopOptions) -> Runner {
        Runner {
            sandbox: self.sandbox,
            host: self.host.clone(),
            source,
            inbox,
            opts: opts.clone(),
            handler: self.handler.clone(),
            events: self.sink.clone(),
            reporter: self.reporter.clone(),
            on_park: self.on_park.clone(),
        }
    }
}

/// What a runner's pickup is timed to. The two are not one measure: a ratio of one to the
/// other says nothing about a change, so reports record which one a case took.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PickupDefinition {
    /// Request published -> the tool handler starts, timed inside the suite's runner.
    HandlerStart,
    /// Request published -> its file is seen gone (or its answer seen), by the suite's
    /// watch outside a black-box runner.
    RequestGone,
}

impl PickupDefinition {
    /// The definition as a person reads it.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            PickupDefinition::HandlerStart => "from publication to the handler's start, inside the runner",
            PickupDefinition::RequestGone => {
                "from publication to the request file's removal (or its answer's appearance), seen outside a black-box runner"
            }
        }
    }
}

crate::base::named! {
/// A kind of runner strategy, as a scenario names it: a file each, in the order `list`
/// shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunnerKind {
    Poll,
    Watch,
    WindowExec,
    WindowExecInline,
    Follow,
    External,
}
names [poll::NAME, watch::WATCH_NAME, window::NAME, window::NAME_INLINE, follow::NAME, external::NAME]
}

/// Every runner strategy, in the order `list` shows them.
pub const RUNNERS: &[RunnerKind] = &RunnerKind::ALL;

impl RunnerKind {
    /// One line for `--help`, `list` and the README.
    pub fn about(self) -> &'static str {
        match self {
            RunnerKind::Poll => poll::ABOUT,
            RunnerKind::Watch => watch::ABOUT,
            RunnerKind::WindowExec => window::ABOUT,
            RunnerKind::WindowExecInline => window::ABOUT_INLINE,
            RunnerKind::Follow => follow::ABOUT,
            RunnerKind::External => external::ABOUT,
        }
    }

    /// Reads the strategy's table (`None`: the name alone, every default).
    pub(crate) fn parse(self, table: Option<&mut Fields<'_>>) -> Result<Arc<RunnerSpec>, ScenarioError> {
        Ok(Arc::new(match self {
            RunnerKind::Poll => RunnerSpec::Poll(poll::parse(table)?),
            RunnerKind::Watch => RunnerSpec::Watch(watch::parse(table)?),
            RunnerKind::WindowExec => RunnerSpec::Window(window::parse(self.name(), false, table)?),
            RunnerKind::WindowExecInline => RunnerSpec::Window(window::parse(self.name(), true, table)?),
            RunnerKind::Follow => RunnerSpec::Follow(follow::parse(table)?),
            RunnerKind::External => RunnerSpec::External(external::parse(table)?),
        }))
    }

    /// Whether `relay-bench serve` can run it on a relay dir of this machine (a black box or
    /// a followed stream cannot).
    pub(crate) fn serves(self) -> bool {
        match self {
            RunnerKind::Poll | RunnerKind::Watch | RunnerKind::WindowExec | RunnerKind::WindowExecInline => true,
            RunnerKind::Follow | RunnerKind::External => false,
        }
    }

    /// One of each notice of its own the strategy says ([`Say::Strategy`]): a strategy
    /// brings its notices (their lines, recovery steps, degraded flags) in its own module,
    /// and the layers below name none of them. A stream fails, demotes and recovers as a
    /// window does, and says so alike.
    pub fn notices(self) -> Vec<Say> {
        match self {
            RunnerKind::Poll => Vec::new(),
            RunnerKind::Watch => WatchNotice::samples(),
            RunnerKind::WindowExec | RunnerKind::WindowExecInline | RunnerKind::Follow => {
                window::WindowNotice::samples()
            }
            RunnerKind::External => external::notices(),
        }
    }
}

/// A parsed runner strategy: each fact of a strategy is one `match` here, its settings and
/// its construction in its own file.
#[derive(Debug)]
pub enum RunnerSpec {
    Poll(poll::PollSpec),
    Watch(watch::WatchSpec),
    /// `window-exec` and `window-exec-inline`.
    Window(window::WindowSpec),
    Follow(follow::FollowSpec),
    External(external::ExternalSpec),
}

impl RunnerSpec {
    pub fn name(&self) -> &'static str {
        match self {
            RunnerSpec::Poll(_) => RunnerKind::Poll.name(),
            RunnerSpec::Watch(_) => RunnerKind::Watch.name(),
            RunnerSpec::Window(w) => w.name,
            RunnerSpec::Follow(_) => RunnerKind::Follow.name(),
            RunnerSpec::External(_) => RunnerKind::External.name(),
        }
    }

    /// Its settings as a person reads them.
    pub fn params(&self) -> String {
        match self {
            RunnerSpec::Poll(s) => s.params(),
            RunnerSpec::Watch(s) => s.params(),
            RunnerSpec::Window(s) => s.params(),
            RunnerSpec::Follow(s) => s.params(),
            RunnerSpec::External(s) => s.params(),
        }
    }

    /// The options this case sets away from production's relay as built, as `key = value`.
    pub fn departures(&self) -> Vec<Departure> {
        match self {
            RunnerSpec::Poll(s) => s.departures(),
            RunnerSpec::Watch(s) => s.departures(),
            RunnerSpec::Window(s) => s.departures(),
            RunnerSpec::Follow(s) => s.departures(),
            RunnerSpec::External(s) => s.departures(),
        }
    }

    /// Starts the runner of one relay dir.
    pub fn start(&self, parts: &Parts<'_>) -> Started {
        match self {
            RunnerSpec::Poll(s) => s.start(parts),
            RunnerSpec::Watch(s) => s.start(parts),
            RunnerSpec::Window(s) => s.start(parts),
            RunnerSpec::Follow(s) => s.start(parts),
            RunnerSpec::External(s) => s.start(parts),
        }
    }

    /// Whether this is production's design, its settings aside (false: another design, such
    /// as a followed stream production rejected, or a program the suite does not model). A
    /// recommendation changes production's defaults only through cases of its design.
    pub fn production_design(&self) -> bool {
        match self {
            RunnerSpec::Poll(_) | RunnerSpec::Watch(_) | RunnerSpec::Window(_) => true,
            RunnerSpec::Follow(_) | RunnerSpec::External(_) => false,
        }
    }

    /// Whether the runner's requests go through a counted host (not a black box's).
    pub fn requests_visible(&self) -> bool {
        match self {
            RunnerSpec::External(_) => false,
            RunnerSpec::Poll(_) | RunnerSpec::Watch(_) | RunnerSpec::Window(_) | RunnerSpec::Follow(_) => true,
        }
    }

    /// What cannot be measured with this runner, and why.
    pub fn unavailable(&self) -> Vec<String> {
        match self {
            RunnerSpec::External(s) => s.unavailable(),
            RunnerSpec::Poll(_) | RunnerSpec::Watch(_) | RunnerSpec::Window(_) | RunnerSpec::Follow(_) => Vec::new(),
        }
    }

    /// What this runner's pickup is timed to.
    pub fn pickup_definition(&self) -> PickupDefinition {
        match self {
            RunnerSpec::External(_) => PickupDefinition::RequestGone,
            RunnerSpec::Poll(_) | RunnerSpec::Watch(_) | RunnerSpec::Window(_) | RunnerSpec::Follow(_) => {
                PickupDefinition::HandlerStart
            }
        }
    }

    /// Whether the runner reads the relay dir itself (a directory watch, a black box) rather
    /// than through the host's counted requests: only a host whose dir is local can serve it.
    pub fn reads_the_dir_itself(&self) -> bool {
        match self {
            RunnerSpec::Watch(_) | RunnerSpec::External(_) => true,
            RunnerSpec::Poll(_) | RunnerSpec::Window(_) | RunnerSpec::Follow(_) => false,
        }
    }

    /// Whether the runner runs on the real clock only (a child process of its own: a black
    /// box, or Node running production's watch script, which the in-memory sandbox cannot).
    pub fn needs_real_clock(&self) -> bool {
        match self {
            RunnerSpec::External(_) => true,
            RunnerSpec::Window(s) => s.cfg.node,
            RunnerSpec::Poll(_) | RunnerSpec::Watch(_) | RunnerSpec::Follow(_) => false,
        }
    }

    /// Why it cannot run on this machine, if it cannot (checked before a run starts, not when
    /// a scenario is read: `relay-bench list` reads them all).
    pub fn missing_here(&self) -> Option<String> {
        match self {
            RunnerSpec::Window(s) => s.missing_here(),
            RunnerSpec::Poll(_) | RunnerSpec::Watch(_) | RunnerSpec::Follow(_) | RunnerSpec::External(_) => None,
        }
    }

    /// Whether the runner follows a process's output through the host (a persistent watcher).
    pub fn follows_a_process(&self) -> bool {
        match self {
            RunnerSpec::Follow(_) => true,
            RunnerSpec::Poll(_) | RunnerSpec::Watch(_) | RunnerSpec::Window(_) | RunnerSpec::External(_) => false,
        }
    }
}

/// The strategy `serve` runs unless told otherwise: the local watch (its dir is local).
pub(crate) const SERVE_DEFAULT: &str = watch::WATCH_NAME;

/// Names of the runner strategies `serve` runs.
pub(crate) fn serve_names() -> Vec<&'static str> {
    RUNNERS.iter().filter(|k| k.serves()).map(|k| k.name()).collect()
}

/// A runner strategy by name, with every default.
#[cfg(test)]
pub(crate) fn runner_by_name(name: &str) -> Option<Arc<RunnerSpec>> {
    RunnerKind::from_name(name)?.parse(None).ok()
}

/// A runner strategy from its scenario form, for tests, benches and tools: a name
/// (`"poll"`) or an inline table (`{ strategy = "window-exec", jitter = false }`).
pub fn runner_from_toml(text: &str) -> Result<Arc<RunnerSpec>, ScenarioError> {
    let (name, table) = inline(text)?;
    let kind = RunnerKind::from_name(&name).ok_or_else(|| bad(format!("unknown runner strategy {name:?}")))?;
    parse_with(table, |t| kind.parse(t))
}

/// A writer strategy from its scenario form (see [`runner_from_toml`]).
pub fn writer_from_toml(text: &str) -> Result<WriterSpec, ScenarioError> {
    let (name, table) = inline(text)?;
    let kind = WriterKind::from_name(&name).ok_or_else(|| bad(format!("unknown writer {name:?}")))?;
    parse_with(table, |t| kind.parse(t))
}

/// The runner strategy a table names without `strategy`: one with a `command` is the
/// black-box runner.
pub(crate) fn implied_runner(table: &toml::Table) -> Option<&'static str> {
    table.contains_key("command").then_some(RunnerKind::External.name())
}

fn bad(msg: String) -> ScenarioError {
    ScenarioError { file: "(inline)".into(), key: "strategy".into(), msg }
}

fn inline(text: &str) -> Result<(String, Option<toml::Table>), ScenarioError> {
    let t = text.trim();
    if !t.starts_with('{') {
        return Ok((t.trim_matches('"').to_owned(), None));
    }
    let table: toml::Table = format!("x = {t}").parse().map_err(|e: toml::de::Error| bad(e.message().to_owned()))?;
    let Some(toml::Value::Table(mut inner)) = table.get("x").cloned() else { return Err(bad("not a table".into())) };
    let name = match inner.remove("strategy") {
        Some(toml::Value::String(s)) => s,
        _ => implied_runner(&inner).ok_or_else(|| bad("no `strategy`".into()))?.to_owned(),
    };
    Ok((name, Some(inner)))
}

fn parse_with<T>(
    table: Option<toml::Table>,
    parse: impl FnOnce(Option<&mut Fields<'_>>) -> Result<T, ScenarioError>,
) -> Result<T, ScenarioError> {
    match &table {
        None => parse(None),
        Some(t) => Fields::new("(inline)", "", t).read(|f| parse(Some(f))),
    }
}

/// The loop's options and `safety_wait` (the bound on a wait while the source suspends
/// polling), for the strategies whose source does.
fn parse_suspending_loop(t: &mut Fields<'_>) -> Result<LoopOptions, ScenarioError> {
    let safety = t.duration("safety_wait")?;
    let mut opts = parse_loop(Some(t))?;
    if let Some(s) = safety {
        positive(t, "safety_wait", s)?;
        opts.safety_wait = s;
    }
    Ok(opts)
}

/// Reads the loop's options (shared by every suite runner) from a strategy table, over
/// production's defaults.
pub(crate) fn parse_loop(t: Option<&mut Fields<'_>>) -> Result<LoopOptions, ScenarioError> {
    let mut o = LoopOptions::default();
    let Some(t) = t else { return Ok(o) };
    o.poll = parse_poll(t, o.poll)?;
    o.await_pickups = t.boolean("await_pickups")?.unwrap_or(o.await_pickups);
    o.stat = t.boolean("stat")?.unwrap_or(o.stat);
    o.sweep = t.boolean("sweep")?.unwrap_or(o.sweep);
    o.answer_retry = t.boolean("answer_retry")?.unwrap_or(o.answer_retry);
    o.seen = t.choice("seen", &SeenScope::NAMES)?.and_then(SeenScope::from_name).unwrap_or(o.seen);
    o.read_failure =
        t.choice("read_failure", &ReadFailure::NAMES)?.and_then(ReadFailure::from_name).unwrap_or(o.read_failure);
    o.pause_answer =
        t.choice("pause_answer", &PauseAnswer::NAMES)?.and_then(PauseAnswer::from_name).unwrap_or(o.pause_answer);
    Ok(o)
}

/// `interval`, `grow_after`, `max_interval` of a poll delay, over `base`.
pub(crate) fn parse_poll(t: &mut Fields<'_>, base: PollDelay) -> Result<PollDelay, ScenarioError> {
    let interval = t.duration("interval")?.unwrap_or(base.interval);
    let grow_after = t.int("grow_after", 0, 1_000_000)?.map_or(base.grow_after, |v| v as u32);
    let max = t.duration("max_interval")?.unwrap_or(base.max.max(interval));
    positive(t, "interval", interval)?;
    if max < interval {
        return Err(t.err("max_interval", "must not be shorter than `interval`"));
    }
    Ok(PollDelay { interval, grow_after, max })
}

/// Refuses a duration under 1 ms.
pub(crate) fn positive(t: &Fields<'_>, key: &str, d: Duration) -> Result<(), ScenarioError> {
    if d < Duration::from_millis(1) {
        return Err(t.err(key, "must be at least 1ms"));
    }
    Ok(())
}

/// The loop's options as a person reads them.
pub(crate) fn loop_params(o: &LoopOptions) -> String {
    format!(
        "poll {} (x2 per idle list from the {}th, up to {})",
        human(o.poll.interval),
        o.poll.grow_after,
        human(o.poll.max)
    )
}

/// Where the loop's options depart from production's: the poll's timings are settings
/// production reads; the safety wait a constant of its code; the rest, its code.
pub(crate) fn loop_departures(o: &LoopOptions) -> Vec<Departure> {
    let p = LoopOptions::default();
    let mut d = Vec::new();
    let ms = |x: std::time::Duration| x.as_millis();
    if o.poll.interval != p.poll.interval {
        d.push(Departure::setting(format!("interval = {}", human(o.poll.interval)), "POLLING", ms(o.poll.interval)));
    }
    if o.poll.grow_after != p.poll.grow_after {
        d.push(Departure::setting(format!("grow_after = {}", o.poll.grow_after), "IDLE_GROW_AFTER", o.poll.grow_after));
    }
    if o.poll.max != p.poll.max {
        d.push(Departure::setting(format!("max_interval = {}", human(o.poll.max)), "POLLING_MAX", ms(o.poll.max)));
    }
    let yes_no = |on: bool| if on { "true" } else { "false" };
    for (key, on, prod) in [
        ("await_pickups", yes_no(o.await_pickups), yes_no(p.await_pickups)),
        ("stat", yes_no(o.stat), yes_no(p.stat)),
        ("sweep", yes_no(o.sweep), yes_no(p.sweep)),
        ("answer_retry", yes_no(o.answer_retry), yes_no(p.answer_retry)),
        ("seen", o.seen.name(), p.seen.name()),
        ("read_failure", o.read_failure.name(), p.read_failure.name()),
        ("pause_answer", o.pause_answer.name(), p.pause_answer.name()),
    ] {
        if on != prod {
            d.push(Departure::code(format!("{key} = {on}")));
        }
    }
    if o.safety_wait != p.safety_wait {
        let text = format!("safety_wait = {}", human(o.safety_wait));
        d.push(Departure::default_value(text, "RELAY_SAFETY_POLL_MS", "relay-watch.ts"));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_registered_once_and_parses_its_defaults() {
        let mut names = RunnerKind::NAMES.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), RUNNERS.len());
        for k in RUNNERS.iter().filter(|k| k.name() != "external") {
            let spec = k.parse(None).unwrap_or_else(|e| panic!("{}: {e}", k.name()));
            assert_eq!(spec.name(), k.name());
            assert!(!k.about().is_empty());
        }
    }

    #[test]
    fn production_defaults_depart_from_nothing() {
        for name in ["poll", "watch", "window-exec"] {
            let spec = runner_by_name(name).unwrap();
            assert!(spec.departures().is_empty(), "{name}: {:?}", spec.departures());
        }
        assert!(loop_departures(&LoopOptions::default()).is_empty());
    }
}
