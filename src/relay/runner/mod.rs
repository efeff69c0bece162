//! The runner: the host-side loop that discovers requests and answers them, as
//! production's relay loop does it (SPEC §8).
//!
//! Before the loop, a stale sweep through the host (up to 3 lists 150 ms apart; requests,
//! responses and their temp names removed, never read, never other files). Then, while
//! active: list; retry the deletes that failed earlier (while the name is still listed);
//! for every new `*.req.json` not in the turn's seen set: read it, start its stat and its
//! delete, start the handler in the background; await every read, stat and delete (the
//! handlers run on); note a miss when a list after a timed-out wait found work; then wait:
//! on a healthy source that suspends polling, the 30 s safety bound; on a healthy source
//! that does not, the poll delay; otherwise sleep the poll delay (the source is never waited
//! on again). The poll delay after `n` consecutive idle lists is 300 ms while n < 5, then
//! 300 ms · 2^(n−4), capped at 1500 ms. A failed read is answered `{ok:false}` (and left on
//! disk); a request without a usable `toolCallId` runs under its file id. An answer whose
//! publish fails is held and tried again, bounded ([`crate::relay::answer`]).
//!
//! Each place where the suite can run the loop otherwise is a named option of
//! [`LoopOptions`] whose default is production's. Nothing here knows which strategy or host
//! it runs on.

use std::collections::BTreeSet;

use foldhash::{HashSet, HashSetExt};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::base::clock;
use crate::base::notice::Say;
use crate::base::protocol::{classify, FileKind};
use crate::base::BoxFut;
use crate::events::EventSink;
use crate::relay::handler::HandlerModel;
pub use crate::relay::options::{LoopOptions, PauseAnswer, SeenScope};
pub(crate) use crate::relay::options::{PollDelay, ReadFailure};
use crate::relay::source::{ActivitySource, Inbox, Reporter, Signal, Wake};
use crate::sandbox::host::Host;

mod pickup;

use pickup::{pickup, Ctx, HandlerSpawner, Picked, Settled};

/// Bound on one delete (SPEC §2).
pub(crate) const DELETE_BOUND: Duration = Duration::from_secs(10);

/// How a runner tells the writer that a call parked with no answer (the turn ends): the
/// file id of the call.
pub(crate) type ParkFn = Arc<dyn Fn(&str) + Send + Sync>;

/// What a runner did, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunnerReport {
    /// Lists made (the sweep's included).
    pub scans: u64,
    /// Waits that ended in activity rather than the timer.
    pub woken_by_activity: u64,
    /// Requests picked up (read), malformed ones included.
    pub requests: u64,
    /// Requests handed over by the source itself (no list, no read).
    pub inline: u64,
    /// Requests that were not valid requests (answered with an error).
    pub malformed: u64,
    /// Deletes on pickup that failed and were tried again.
    pub delete_retries: u64,
    /// Lists that failed.
    pub list_errors: u64,
    /// Lists after a timed-out wait that found work the source had not signalled.
    pub missed_by_source: u64,
    /// Waits of a healthy source that suspends polling (a window exec) which the safety
    /// wait ended: each is followed by a safety list. A window that outlasts the safety
    /// wait makes one per window, idle or not.
    pub safety_lists: u64,
    /// How long the start-up (the stale sweep) took (summed reports: the longest).
    pub startup: Duration,
    /// Why the source stopped waking the loop, if it did (summed reports: each runner's, in
    /// order).
    pub degraded: Vec<String>,
}

impl RunnerReport {
    /// Adds a later runner's counts to this one's (a relay that ran several turns): the
    /// longest start-up, every degradation.
    pub(crate) fn add(&mut self, mut later: RunnerReport) {
        self.scans += later.scans;
        self.woken_by_activity += later.woken_by_activity;
        self.requests += later.requests;
        self.inline += later.inline;
        self.malformed += later.malformed;
        self.delete_retries += later.delete_retries;
        self.list_errors += later.list_errors;
        self.missed_by_source += later.missed_by_source;
        self.safety_lists += later.safety_lists;
        self.startup = self.startup.max(later.startup);
        self.degraded.append(&mut later.degraded);
    }
}

/// A started runner: stop it, wait until it is ready, and collect its report.
pub struct Started {
    /// Stops the runner, and tells when it is ready.
    pub control: Arc<Control>,
    /// The runner's loop; its report when it ends.
    pub task: JoinHandle<RunnerReport>,
}

/// Stops a runner (its source closed, its loop ended after the current iteration) and
/// tells when it is ready (its start-up done).
pub struct Control {
    active: AtomicBool,
    ready: Signal,
    /// Kept alive with the control, so a closed source's abandoned exec runs on until the
    /// case ends (the relay keeps the controls of runners it stopped).
    source: Option<Arc<dyn ActivitySource>>,
    stop_extra: Option<Box<dyn Fn() + Send + Sync>>,
    /// Why the runner could not start, if it could not.
    start_failure: std::sync::OnceLock<String>,
}

impl Control {
    pub fn new(source: Option<Arc<dyn ActivitySource>>) -> Control {
        Control {
            active: AtomicBool::new(true),
            ready: Signal::new(),
            source,
            stop_extra: None,
            start_failure: Default::default(),
        }
    }

    /// Also runs `f` on stop (a black-box runner's program is killed).
    pub(crate) fn on_stop(mut self, f: impl Fn() + Send + Sync + 'static) -> Control {
        self.stop_extra = Some(Box::new(f));
        self
    }

    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Production's stop(): inactive first, then the source closed (a held wait resolves
    /// `Closed`); the loop ends after its current iteration and awaits its handlers.
    pub fn stop(&self) {
        self.active.store(false, Ordering::Release);
        if let Some(s) = &self.source {
            s.close();
        }
        if let Some(f) = &self.stop_extra {
            f();
        }
        self.ready.close();
    }

    pub(crate) fn mark_ready(&self) {
        self.ready.close();
    }

    /// The runner cannot start (`why`): whoever waits for it to be ready hears it at once.
    pub(crate) fn fail_start(&self, why: String) {
        let _ = self.start_failure.set(why); // the first reason is the one
        self.active.store(false, Ordering::Release);
        self.ready.close();
    }

    pub(crate) fn start_failure(&self) -> Option<String> {
        self.start_failure.get().cloned()
    }

    /// Stopped, and its source (if any) runs nothing on: the control need not be kept.
    pub(crate) fn settled(&self) -> bool {
        !self.is_active() && self.source.as_ref().is_none_or(|s| s.finished())
    }

    /// Waits until the runner is ready (or stopped), at most `bound`; false if it was not.
    pub async fn ready(&self, bound: Duration) -> bool {
        self.ready.wait(bound).await == Wake::Closed && self.is_active()
    }
}

/// Production's runner loop, over one relay dir.
pub struct Runner {
    /// The sandbox this runner serves.
    pub sandbox: u32,
    /// The runner's view of the dir: every request through it is counted.
    pub host: Arc<dyn Host>,
    /// `None`: classic polling (poll-only, or a watch that could not be armed).
    pub source: Option<Arc<dyn ActivitySource>>,
    /// Requests carried by the source (the inline window variant).
    pub inbox: Option<Inbox>,
    /// How the loop runs.
    pub opts: LoopOptions,
    /// The tool the runner calls.
    pub handler: Arc<HandlerModel>,
    /// Where the runner's half of each call goes.
    pub events: EventSink,
    /// Where the runner's notices go.
    pub reporter: Reporter,
    /// Where a call parked with no answer is told (`None`: nobody listens).
    pub on_park: Option<ParkFn>,
}

impl Runner {
    /// Starts the loop (inside a tokio runtime).
    pub fn start(self) -> Started {
        let control = Arc::new(Control::new(self.source.clone()));
        let task = tokio::spawn(self.run(control.clone()));
        Started { control, task }
    }

    async fn run(self, control: Arc<Control>) -> RunnerReport {
        let ctx = Ctx {
            sandbox: self.sandbox,
            host: self.host.clone(),
            handler: self.handler.clone(),
            events: self.events.clone(),
            reporter: self.reporter.clone(),
            opts: Arc::new(self.opts.clone()),
            on_park: self.on_park.clone(),
            counters: Arc::default(),
        };
        let mut report = RunnerReport::default();
        let t0 = clock::now();
        if self.opts.sweep {
            report.scans += sweep(&*self.host, &self.reporter).await;
        }
        report.startup = t0.elapsed();
        control.mark_ready();

        let mut st = LoopState {
            seen: HashSet::new(),
            remove_failed: BTreeSet::new(),
            removed: HashSet::new(),
            said_reused: HashSet::new(),
            idle: 0,
            last: None,
            woke_at: clock::now(),
            list_error: None,
        };
        let (handlers, collector) = HandlerSpawner::new();
        // Pickups the loop does not await (`await_pickups = false`) run as tasks here.
        let mut background: JoinSet<Picked> = JoinSet::new();
        while control.is_active() {
            let found = self.pass(&ctx, &mut st, &mut report, &handlers, &mut background).await;
            self.wait(&mut st, found, &mut report).await;
        }
        while let Some(done) = background.join_next().await {
            settle_joined(done, &mut st, self.opts.seen);
        }
        drop(handlers);
        collector.finish().await;
        report.requests = ctx.counters.requests.load(Ordering::Relaxed);
        report.malformed = ctx.counters.malformed.load(Ordering::Relaxed);
        report.degraded = self.reporter.degraded().into_iter().collect();
        report
    }

    /// One pass of the loop: list (or take what the source carried), retry failed deletes,
    /// pick up every new request, and settle the pickups; how many new requests it found.
    async fn pass(
        &self,
        ctx: &Ctx,
        st: &mut LoopState,
        report: &mut RunnerReport,
        handlers: &HandlerSpawner,
        background: &mut JoinSet<Picked>,
    ) -> usize {
        let carried = self.inbox.as_ref().map(Inbox::take).unwrap_or_default();
        // Deletes that failed earlier are retried while a list still shows them (or with
        // carried requests, when there is no list); a failed list retries and forgets
        // nothing, as in production.
        let listed = carried.is_empty();
        let (names, retry_deletes) = if listed {
            report.scans += 1;
            match self.list(st, report).await {
                Some(names) => (names, true),
                None => (Vec::new(), false),
            }
        } else {
            report.inline += carried.len() as u64;
            (Vec::new(), true)
        };
        let mut batch: Vec<BoxFut<'static, Picked>> = Vec::new();
        for name in st.remove_failed.iter().filter(|_| retry_deletes).cloned() {
            report.delete_retries += 1;
            let host = self.host.clone();
            let reporter = self.reporter.clone();
            batch.push(Box::pin(async move {
                let how = delete(&*host, &reporter, &name).await;
                Picked { name, how }
            }));
        }
        let mut found = 0usize;
        let new = names
            .into_iter()
            .map(|n| (n, None))
            .chain(carried.into_iter().map(|(n, b)| (n, Some(b))))
            .filter(|(n, _)| classify(n) == FileKind::Request);
        let mut reused_now = HashSet::new();
        for (name, bytes) in new {
            if !st.seen.insert(name.clone()) {
                if st.removed.contains(&name) {
                    if st.said_reused.insert(name.clone()) {
                        self.reporter.say(Say::AlreadySeen { name: name.clone() });
                    }
                    reused_now.insert(name);
                }
                continue;
            }
            found += 1;
            batch.push(Box::pin(pickup(ctx.clone(), name, bytes, st.woke_at, handlers.clone())));
        }
        // Gone since it was said (a list shows it no more): said again if it comes back.
        if listed && retry_deletes {
            st.said_reused.retain(|n| reused_now.contains(n));
        }
        if self.opts.await_pickups {
            // Concurrently, on this task: no task hop between the wake and the pickups.
            for done in join_all(batch).await {
                settle(done, st, self.opts.seen);
            }
        } else {
            batch.into_iter().for_each(|p| drop(background.spawn(p)));
            while let Some(done) = background.try_join_next() {
                settle_joined(done, st, self.opts.seen);
            }
        }
        found
    }

    /// Lists the dir; the names, or `None` when the list failed (said once per distinct
    /// error, and once when the dir is readable again).
    async fn list(&self, st: &mut LoopState, report: &mut RunnerReport) -> Option<Vec<String>> {
        match self.host.list().await {
            Ok(listed) => {
                if st.list_error.take().is_some() {
                    self.reporter.say(Say::DirReadable);
                }
                if !st.remove_failed.is_empty() {
                    let listed: HashSet<&str> = listed.iter().map(String::as_str).collect();
                    st.remove_failed.retain(|n| listed.contains(n.as_str()));
                }
                Some(listed)
            }
            Err(e) => {
                report.list_errors += 1;
                let msg = e.to_string();
                if st.list_error.as_deref() != Some(&msg) {
                    self.reporter.say(Say::ListFailed(msg.clone()));
                    st.list_error = Some(msg);
                }
                None
            }
        }
    }

    /// After a pass that `found` new requests: a miss noted when a timed-out wait let them
    /// wait for the list, then the wait for the next pass (the source, or the poll delay).
    async fn wait(&self, st: &mut LoopState, found: usize, report: &mut RunnerReport) {
        let healthy = self.source.as_ref().filter(|s| s.is_healthy());
        if let (true, Some(Wake::Timeout), Some(s)) = (found > 0, st.last, healthy) {
            if s.note_miss() {
                report.missed_by_source += 1;
                self.reporter.say(Say::Missed { found, counted: true });
            }
        }
        st.idle = if found > 0 { 0 } else { st.idle.saturating_add(1) };
        st.last = match self.source.as_ref().filter(|s| s.is_healthy()) {
            Some(s) => {
                let t = if s.suspends_polling() { self.opts.safety_wait } else { self.opts.poll.after(st.idle) };
                let w = clock::timeout(t + self.opts.wait_margin, s.wait(t)).await.unwrap_or(Wake::Timeout);
                match w {
                    Wake::Activity => report.woken_by_activity += 1,
                    Wake::Timeout if s.suspends_polling() => report.safety_lists += 1,
                    _ => {}
                }
                Some(w)
            }
            None => {
                clock::sleep(self.opts.poll.after(st.idle)).await;
                None
            }
        };
        st.woke_at = clock::now();
    }
}

/// The loop's memory from one pass to the next.
struct LoopState {
    seen: HashSet<String>,
    /// Deletes that failed, retried in name order, pass after pass.
    remove_failed: BTreeSet<String>,
    /// Handled and removed this turn: a request listed again under one of these names is a
    /// new file with a reused id, skipped (the seen set) and said once while it stays.
    removed: HashSet<String>,
    said_reused: HashSet<String>,
    /// Passes in a row that found nothing (the poll delay grows with them).
    idle: u32,
    /// How the last wait ended (`None`: a poll sleep).
    last: Option<Wake>,
    woke_at: Instant,
    /// The last list error said (said again only when it changes).
    list_error: Option<String>,
}

fn settle_joined(done: Result<Picked, tokio::task::JoinError>, st: &mut LoopState, scope: SeenScope) {
    if let Ok(p) = done {
        settle(p, st, scope);
    }
}

/// Books a settled pickup in the loop's sets of names: seen this turn, deletes to retry,
/// handled and removed.
fn settle(p: Picked, st: &mut LoopState, scope: SeenScope) {
    let LoopState { seen, remove_failed: failed, removed, .. } = st;
    match p.how {
        Settled::Deleted => {
            failed.remove(&p.name);
            if scope == SeenScope::InFlight {
                seen.remove(&p.name);
            } else {
                removed.insert(p.name);
            }
        }
        Settled::DeleteFailed => {
            failed.insert(p.name);
        }
        // Left on disk and in the seen set, whatever the scope: it is not in flight, and
        // reading it again would answer it again.
        Settled::Unread => {}
        Settled::Forget => {
            seen.remove(&p.name);
        }
    }
}

/// The stale sweep: up to 3 lists 150 ms apart; every relay-owned name found is removed
/// (concurrently, each bounded), never read. Returns the lists made.
pub(crate) async fn sweep(host: &dyn Host, reporter: &Reporter) -> u64 {
    for attempt in 1..=3u64 {
        match host.list().await {
            Ok(names) => {
                let stale: Vec<String> = names.into_iter().filter(|n| classify(n) != FileKind::Other).collect();
                if !stale.is_empty() {
                    let removals = stale.iter().map(|n| clock::timeout(DELETE_BOUND, host.delete(n)));
                    join_all(removals.collect()).await;
                    reporter.say(Say::Swept { removed: stale.len() });
                }
                return attempt;
            }
            Err(_) if attempt < 3 => clock::sleep(Duration::from_millis(150)).await,
            Err(_) => reporter.say(Say::SweepSkipped),
        }
    }
    3
}

/// Awaits every future, running them concurrently on this task; their outputs in order.
pub(crate) async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, out) in futures.iter_mut().zip(outputs.iter_mut()).filter(|(_, o)| o.is_none()) {
            match f.as_mut().poll(cx) {
                std::task::Poll::Ready(v) => *out = Some(v),
                std::task::Poll::Pending => pending = true,
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future finished")).collect()
}

/// Deletes a picked-up request within [`DELETE_BOUND`]: deleted, or a delete to retry.
async fn delete(host: &dyn Host, reporter: &Reporter, name: &str) -> Settled {
    let error = match clock::timeout(DELETE_BOUND, host.delete(name)).await {
        Ok(Ok(())) => return Settled::Deleted,
        Ok(Err(e)) => e.to_string(),
        Err(_) => "exceeded 10 s".to_owned(),
    };
    reporter.say(Say::DeleteFailed { name: name.to_owned(), error });
    Settled::DeleteFailed
}
