//! The suite's reference peers on a real relay dir, for relays written by others:
//! `relay-bench serve` (the reference runner) and `relay-bench call` (the reference writer
//! for one call). Both are the same runner and writer the benchmark measures.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use tokio::time::Instant;

use crate::base::clock;
use crate::base::fields::{Fields, ScenarioError};
use crate::base::fsio::remove_if_present;
use crate::base::notice::Say;
use crate::base::protocol::{req_name, res_name, sanitize_id, Response};
use crate::base::signal::Signal;
use crate::base::units::human;
use crate::events::{EventInbox, EventKind, EventSink, FailKind, Msg};
use crate::relay::handler::HandlerModel;
use crate::relay::runner::RunnerReport;
use crate::relay::source::Reporter;
use crate::relay::writer::{writer_deadline, CallEnd, CallSpec, Writer};
use crate::sandbox::dir::claim::{Claim, ClaimError, ClaimNote, ClaimedDir};
use crate::sandbox::dir::{RealDir, RelayDir};
use crate::sandbox::host::{Host, LocalHost};
use crate::strategy::{writer_by_name, Parts, RunnerKind, RunnerSpec, WriterKind, WriterSpec};

/// A line `serve` or `call` says as it goes: for stdout (stat lines) or stderr (notices).
/// The caller prints it (the CLI: a closed pipe is not a panic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Said<'a> {
    Out(&'a str),
    Err(&'a str),
}

/// Where `serve` and `call` say their lines.
pub(crate) type SayTo<'a> = &'a (dyn Fn(Said<'_>) + Sync);

/// What `serve` needs.
pub(crate) struct ServeOptions {
    pub dir: PathBuf,
    /// The runner strategy; `serve` sweeps only with `--sweep` (the dir may be shared with other writers).
    pub strategy: Arc<RunnerSpec>,
    pub handler: HandlerModel,
    /// How often a stat line is printed.
    pub every: Duration,
    /// The watch program (this binary), for window-exec.
    pub watch_program: PathBuf,
    /// Request files past this size are skipped, not read.
    pub max_file_bytes: u64,
    /// When the runner's turn ends and a new one starts.
    pub turns: Turns,
}

/// The runner `serve --strategy NAME --interval D` stands for: the strategy's defaults
/// (production's), polling every `interval` (growing to 5x when idle, as production's
/// does), and a stale sweep only when asked (the dir may be shared with other writers). Read through the
/// scenario parser's registry, as a case's table would be.
pub(crate) fn serve_runner(strategy: &str, interval: Duration, sweep: bool) -> Result<Arc<RunnerSpec>, ScenarioError> {
    let mut table = toml::Table::new();
    let ms = |d: Duration| toml::Value::String(format!("{}ms", d.as_millis()));
    table.insert("interval".into(), ms(interval));
    table.insert("max_interval".into(), ms(interval * 5));
    table.insert("sweep".into(), toml::Value::Boolean(sweep));
    let mut fields = Fields::new("--strategy", "", &table);
    let kind = RunnerKind::from_name(strategy)
        .ok_or_else(|| fields.err("strategy", format!("unknown strategy {strategy:?}")))?;
    kind.parse(Some(&mut fields))
}

/// Why `serve` stopped short.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServeError {
    /// The dir is not this runner's to serve (or stopped being: [`ClaimNote::Lost`]).
    #[error("--dir {0}")]
    Claim(#[from] ClaimError),
    #[error("the runner task failed: {0}")]
    Runner(String),
}

impl ServeError {
    /// Whether the user can fix it (the dir), rather than something broken inside.
    pub(crate) fn is_bad_input(&self) -> bool {
        matches!(self, ServeError::Claim(_))
    }
}

/// What `serve` did, for its last line (and for tests).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ServeReport {
    pub answered: u64,
    pub malformed: u64,
    pub scans: u64,
    pub notices: u64,
    /// Turns begun (1 without turn bounds).
    pub turns: u32,
}

/// Runs the reference runner on `opts.dir` until `stop` is closed, saying a stat line every
/// `opts.every` ([`Said::Out`]) and each notice ([`Said::Err`]).
///
/// The dir is claimed first ([`Claim::take`]): a second runner is refused, and a dir
/// replaced while it serves is claimed again or, when another runner took it first, given
/// up (said, and returned as [`ServeError::Claim`]).
pub(crate) async fn serve(opts: ServeOptions, stop: Arc<Signal>, say: SayTo<'_>) -> Result<ServeReport, ServeError> {
    let (claim, mut claim_notes) = Claim::take(&opts.dir)?;
    let real = RealDir::new(&opts.dir).with_max_bytes(opts.max_file_bytes);
    let dir: Arc<dyn RelayDir> = Arc::new(ClaimedDir::new(real, Arc::new(claim)));
    let host: Arc<dyn Host> = Arc::new(LocalHost::over(dir.clone(), Arc::default()));
    let (sink, inbox) = EventSink::channel();
    let stderr_to = std::env::temp_dir().join("relay-bench-serve.stderr");
    let parts = Parts {
        sandbox: 0,
        dir: &dir,
        host: &host,
        watch_program: &opts.watch_program,
        seed: opts.handler.seed,
        handler: Arc::new(opts.handler.clone()),
        sink: &sink,
        reporter: Reporter::new(sink.clone(), 0),
        on_park: None,
        stderr_to: &stderr_to,
    };
    let mut started = opts.strategy.start(&parts);
    say(Said::Out(&serving_line(&opts)));
    let mut tally = Tally::new(inbox, say, opts.every);
    let t0 = tally.t0;
    // Notices and turn ends are seen at every pump; a stat line is said every `every`.
    let mut pump = tokio::time::interval(PUMP);
    let (mut turn, mut turn_start, mut last_call) = (1u32, clock::now(), None);
    let mut totals = RunnerReport::default();
    let mut lost = None;
    loop {
        let turn_end = opts.turns.end(turn_start, last_call);
        let turn_over = async {
            match turn_end {
                Some((at, _)) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = pump.tick() => {
                if tally.pump() {
                    last_call = Some(clock::now());
                }
            }
            Some(note) = claim_notes.recv() => {
                lost = claim_noted(note, &opts, say);
                if lost.is_some() {
                    break;
                }
            }
            () = turn_over => {
                let before = tally.report.answered;
                totals.add(stop_runner(started, say).await?);
                tally.drain();
                let why = turn_end.map(|(_, why)| why).unwrap_or_default();
                say(Said::Err(&format!(
                    "  turn {turn} ended after {} ({why}; {} answered since): a new turn starts, its seen set empty",
                    human(turn_start.elapsed()),
                    tally.report.answered - before,
                )));
                started = opts.strategy.start(&parts);
                (turn, turn_start, last_call) = (turn + 1, clock::now(), None);
            }
            () = stop.closed() => break,
        }
    }
    totals.add(stop_runner(started, say).await?);
    tally.drain();
    let mut report = tally.report;
    report.scans = totals.scans;
    report.turns = turn;
    say(Said::Out(&stopped_line(t0, &report, &totals)));
    lost.map_or(Ok(report), |e| Err(e.into()))
}

/// Says what a change of the dir's claim means; the error when the dir is lost to another
/// runner (`serve` stops).
fn claim_noted(note: ClaimNote, opts: &ServeOptions, say: SayTo<'_>) -> Option<ClaimError> {
    match note {
        ClaimNote::Retaken { old, new } => {
            say(Said::Err(&format!(
                "  {}: the directory was replaced (inode {old} -> {new}); its lock is taken again, serving the new one",
                opts.dir.display()
            )));
            None
        }
        ClaimNote::Lost(e) => {
            say(Said::Err(&format!("  {e}")));
            Some(e)
        }
    }
}

/// `serve`'s first line.
fn serving_line(opts: &ServeOptions) -> String {
    format!(
        "serving {} with runner {} ({}){}; Ctrl-C to stop",
        opts.dir.display(),
        opts.strategy.name(),
        opts.strategy.params(),
        opts.turns.describe()
    )
}

/// `serve`'s last line.
fn stopped_line(t0: Instant, report: &ServeReport, totals: &RunnerReport) -> String {
    format!(
        "stopped after {}: {} answered, {} malformed, {} scans, {} delete retries, {} turn(s){}",
        human(t0.elapsed()),
        report.answered,
        report.malformed,
        totals.scans,
        totals.delete_retries,
        report.turns,
        totals.degraded.last().map(|d| format!("; wakes degraded: {d}")).unwrap_or_default()
    )
}

/// What `serve` has counted of its runner's messages, and when its next stat line is due.
struct Tally<'s> {
    inbox: EventInbox,
    report: ServeReport,
    say: SayTo<'s>,
    t0: Instant,
    next_stat: Instant,
    /// Answered since the last stat line.
    since_stat: u64,
    every: Duration,
    /// Error answers under a file id (a request not read or not parsed) counted as published
    /// but whose publication may still be given up.
    unread: std::collections::HashSet<String>,
}

impl<'s> Tally<'s> {
    fn new(inbox: EventInbox, say: SayTo<'s>, every: Duration) -> Self {
        let t0 = clock::now();
        let (report, unread) = (ServeReport::default(), Default::default());
        Tally { inbox, report, say, t0, next_stat: t0 + every, since_stat: 0, every, unread }
    }

    /// Counts what the runner sent, saying each notice; the answers counted, and whether any
    /// call was handled.
    fn drain(&mut self) -> (u64, bool) {
        let (report, say, unread) = (&mut self.report, self.say, &mut self.unread);
        let (before, mut active) = (report.answered, false);
        self.inbox.take(|m| match m {
            // Counted once the answer is out (a failed publish is a notice, not an answer);
            // an error answer to a request it could not read or parse is one too, counted
            // as it goes out and taken back if its publication is given up.
            Msg::Call(ev) => {
                active = true;
                report.answered += u64::from(matches!(&ev.kind, EventKind::Runner(side) if side.answered.is_some()));
                if ev.kind == EventKind::AnsweringUnread {
                    report.answered += 1;
                    // Its publication ends within its retries (~20 s): a long serve keeps no
                    // more than the last few thousand.
                    if unread.len() >= 4096 {
                        unread.clear();
                    }
                    unread.insert(ev.call.to_string());
                }
            }
            Msg::Turn(_) => {}
            Msg::Notice(n) => {
                report.notices += 1;
                report.malformed += u64::from(matches!(n.what, Say::Malformed { .. }));
                if let Say::AnswerDropped { call, .. } = &n.what {
                    if unread.remove(call) {
                        report.answered -= 1;
                    }
                }
                say(Said::Err(&format!("  {}", n.what)));
            }
        });
        (report.answered.saturating_sub(before), active)
    }

    /// A pump: drains, and says the stat line when it is due; whether a call was handled.
    fn pump(&mut self) -> bool {
        let (new, active) = self.drain();
        self.since_stat += new;
        if clock::now() >= self.next_stat {
            let line = format!(
                "[{:>8}] answered {:>5} (total {}), malformed {}",
                human(self.t0.elapsed()),
                self.since_stat,
                self.report.answered,
                self.report.malformed
            );
            (self.say)(Said::Out(&line));
            self.since_stat = 0;
            while self.next_stat <= clock::now() {
                self.next_stat += self.every;
            }
        }
        active
    }
}

/// How often `serve` looks at what its runner said and whether its turn is over.
const PUMP: Duration = Duration::from_millis(100);

/// How long a stopped runner has to end its loop and let its handlers finish before it is
/// cut off (its handlers aborted, a handler command's process group killed): a signal ends
/// `serve` within about a second, whatever a handler does.
const STOP_BOUND: Duration = Duration::from_millis(700);

/// Stops a runner and collects its report; a runner still busy after [`STOP_BOUND`] (a
/// handler still running) is aborted, said, and reported as what was counted so far (none).
async fn stop_runner(mut started: crate::relay::runner::Started, say: SayTo<'_>) -> Result<RunnerReport, ServeError> {
    started.control.stop();
    match clock::timeout(STOP_BOUND, &mut started.task).await {
        Ok(done) => done.map_err(|e| ServeError::Runner(e.to_string())),
        Err(_) => {
            started.task.abort();
            let _ = started.task.await;
            say(Said::Err(&format!(
                "  the runner was still busy {} after the stop (a handler running): its handlers are killed, their calls unanswered",
                human(STOP_BOUND)
            )));
            Ok(RunnerReport::default())
        }
    }
}

/// How `serve` splits its time into turns. Production runs one relay per agent turn: it
/// starts when the turn starts and stops when the turn ends, and its seen set, backoff and
/// demotion are the turn's (SPEC §9). `serve` cannot see an agent's turns; without either
/// bound it is one turn until it is stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Turns {
    /// A turn ends this long after it started.
    pub length: Option<Duration>,
    /// A turn that handled a call ends once no call came for this long.
    pub idle: Option<Duration>,
}

impl Turns {
    /// When the turn started at `start`, whose last call was handled at `last`, ends, and why.
    fn end(&self, start: Instant, last: Option<Instant>) -> Option<(Instant, String)> {
        let by_length = self.length.map(|l| (start + l, format!("--turn {}", human(l))));
        let by_idle = self.idle.zip(last).map(|(i, at)| (at + i, format!("--turn-idle {}: no call since", human(i))));
        by_length.into_iter().chain(by_idle).min_by_key(|(at, _)| *at)
    }

    fn describe(&self) -> String {
        match (self.length, self.idle) {
            (None, None) => String::new(),
            (l, i) => {
                let l = l.map(|l| format!("at most {}", human(l)));
                let i = i.map(|i| format!("ending {} after its last call", human(i)));
                format!(", turns {}", l.into_iter().chain(i).collect::<Vec<_>>().join(" and "))
            }
        }
    }
}

/// One call through a real relay dir, as the reference writer makes it: `call`'s flags.
#[derive(Debug, clap::Args)]
pub(crate) struct CallOptions {
    /// The relay directory.
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The tool name.
    #[arg(long)]
    pub tool: String,
    /// The args, as JSON (default {}).
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// The call id (default: call-<pid>-<time>).
    #[arg(long)]
    pub id: Option<String>,
    /// The tool timeout: the writer waits it plus 10 s (60 s without one).
    #[arg(long, value_name = "DURATION", value_parser = crate::base::units::parse_duration)]
    pub timeout: Option<Duration>,
    /// How to wait for the answer: watch (inotify + 300 ms safety check) or poll (every 300 ms).
    #[arg(long, default_value = crate::strategy::WRITER_DEFAULT, value_parser = PossibleValuesParser::new(WriterKind::NAMES).map(|n| writer_by_name(&n).expect("a writer's name")))]
    pub wait: WriterSpec,
    /// An answer larger than this is not read.
    #[arg(long, value_name = "BYTES", default_value_t = crate::sandbox::dir::RealDir::DEFAULT_MAX_BYTES)]
    pub max_file_bytes: u64,
}

/// Publishes one request, waits for its answer and cleans up. Returns how it ended, or
/// `None` when `stop` closed first. A call that ends unanswered (stopped, or at its
/// deadline) withdraws its request: no runner that starts later runs a call nobody waits
/// for, and the id is free again. At the deadline it says whether a runner ever picked the
/// request up (none did: is a runner serving the dir?).
///
/// A request already under the call's file id means another call with that id is in
/// flight: refused, never replaced (its caller would get this call's answer). An answer
/// already there is taken as stale: removed, never returned. What this cannot see: a call
/// with the same id whose request a runner already picked up, or one published between
/// this check and this call's own publish. Ids are the callers' to keep unique (the
/// default id, `call-<pid>-<time>`, is). `id` is the call's: `opts.id`, or the caller's
/// default for it.
pub(crate) async fn call(
    opts: CallOptions,
    id: String,
    stop: Arc<Signal>,
    say: SayTo<'_>,
) -> std::io::Result<Option<CallEnd>> {
    if !opts.dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("--dir {}: {}", opts.dir.display(), crate::base::fsio::not_a_dir(&opts.dir)),
        ));
    }
    crate::base::fsio::probe_write(&opts.dir, 4096).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "{}: not a relay dir this writer can write (a call publishes its request there): {e}",
                opts.dir.display()
            ),
        )
    })?;
    if let Some(a) = &opts.args {
        serde_json::from_str::<serde::de::IgnoredAny>(a)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("--args is not JSON: {e}")))?;
    }
    let file_id = sanitize_id(&id);
    let (req, res) = (opts.dir.join(req_name(&file_id)), opts.dir.join(res_name(&file_id)));
    if req.symlink_metadata().is_ok() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("a call with id {id:?} is in flight ({} exists); use another --id", req.display()),
        ));
    }
    if res.symlink_metadata().is_ok() {
        remove_if_present(&res)?;
        say(Said::Err(&format!("removed a stale answer left from an earlier call: {}", res.display())));
    }
    let dir: Arc<dyn RelayDir> = Arc::new(RealDir::new(&opts.dir).with_max_bytes(opts.max_file_bytes));
    let (sink, mut inbox) = EventSink::channel();
    let reporter = Reporter::new(sink.clone(), 0);
    let writer = Writer::new(0, dir.clone(), opts.wait.build(&dir, reporter.clone()), sink).with_reporter(reporter);
    let deadline = writer_deadline(opts.timeout);
    let spec = CallSpec { id, tool: opts.tool, args: opts.args, intended: clock::now(), warmup: false, deadline };
    let end = tokio::select! {
        end = writer.call(spec) => Some(end),
        () = stop.closed() => None,
    };
    writer.close();
    let unreadable = say_notices(&mut inbox, say);
    match &end {
        None => remove_if_present(&req)?,
        Some(CallEnd::Failed(FailKind::Timeout)) if unreadable => {
            remove_if_present(&req)?;
            say(Said::Err(&format!(
                "no answer read: one appeared at {} but was never a regular file within the cap (see the notice above); \
                 it is left where it is",
                res.display()
            )));
        }
        Some(CallEnd::Failed(FailKind::Timeout)) => {
            let unpicked = req.symlink_metadata().is_ok();
            remove_if_present(&req)?;
            let waited =
                if deadline.subsec_nanos() == 0 { format!("{} s", deadline.as_secs()) } else { human(deadline) };
            say(Said::Err(&if unpicked {
                format!(
                    "no answer in {waited}; is a runner serving {}? (no runner picked the request up; it is withdrawn)",
                    opts.dir.display()
                )
            } else {
                format!("no answer in {waited}: a runner picked the request up but did not answer it")
            }));
        }
        Some(_) => {}
    }
    Ok(end)
}

/// Says what the writer said on the way, once each (an answer it could not read: a link, a
/// FIFO, a directory, a file past the cap); whether it found an answer it could not read.
fn say_notices(inbox: &mut crate::events::EventInbox, say: SayTo<'_>) -> bool {
    let mut unreadable = false;
    let mut said: Vec<String> = Vec::new();
    for msg in inbox.try_iter() {
        if let crate::events::Msg::Notice(n) = msg {
            unreadable |= matches!(n.what, crate::base::notice::Say::AnswerReadFailed { .. });
            let line = n.what.to_string().trim_end_matches("; retrying").to_owned();
            if !said.contains(&line) {
                say(Said::Err(&format!("notice: {line}")));
                said.push(line);
            }
        }
    }
    unreadable
}

/// The answer as `call` prints it: the response's JSON, one line.
pub(crate) fn answer_line(r: &Response) -> String {
    String::from_utf8_lossy(&r.encode()).into_owned()
}
