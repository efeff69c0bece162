//! The runner: the host-side loop that discovers requests and answers them.
//!
//! One runner serves one relay dir: wait on its activity source (or its poll timer), list,
//! and hand every new request to its own task, which reads it, starts the handler and
//! deletes the request at the same time (delete-on-pickup, off the handler's critical path),
//! then publishes the answer atomically. Requests found together are picked up together, so
//! a batch of N parallel calls pays one round of host requests, not N in a row. Nothing here
//! knows which strategy or host it runs on.
//!
//! What it survives, and says: a malformed or truncated request file is answered with
//! `{"ok":false,...}` under the file's own id (so a waiting writer is released) and reported;
//! a request that vanishes between list and read is skipped; a failed delete is retried on
//! later passes (each bounded at 10 s) without answering the request twice; a relay dir that
//! vanishes is reported once and the loop keeps polling until it returns or the runner stops.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::events::{CallId, EventKind, EventSink, RunnerSide};
use crate::handler::HandlerModel;
use crate::host::{Host, Purpose};
use crate::protocol::{classify, file_id_of, res_name, FileKind, Request, Response};
use crate::schedule::PollSchedule;
use crate::source::{ActivitySource, SourceHealth, Wake};

/// Bound on one delete (SPEC §2).
pub const DELETE_BOUND: Duration = Duration::from_secs(10);

/// What a runner did, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunnerReport {
    /// Scans (lists) made.
    pub scans: u64,
    /// Waits that ended in activity rather than the timer.
    pub woken_by_activity: u64,
    /// Requests picked up (read), malformed ones included.
    pub requests: u64,
    /// Requests handed over by the source itself (no list, no read).
    pub inline: u64,
    pub malformed: u64,
    pub delete_retries: u64,
    pub list_errors: u64,
    /// Timer-driven scans that found work the source had not signalled.
    pub missed_by_source: u64,
    pub health: SourceHealth,
}

/// Where a request name stands in this runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// Its pickup task is running.
    InFlight,
    /// Answered (or being answered), but its delete failed: retried on later passes.
    Undeleted,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    malformed: AtomicU64,
}

pub struct Runner {
    pub sandbox: u32,
    pub host: Arc<dyn Host>,
    pub source: Arc<dyn ActivitySource>,
    pub schedule: PollSchedule,
    pub handler: Arc<HandlerModel>,
    pub events: EventSink,
}

/// What one pickup task needs.
#[derive(Clone)]
struct Ctx {
    sandbox: u32,
    host: Arc<dyn Host>,
    handler: Arc<HandlerModel>,
    events: EventSink,
    pending: Arc<Mutex<HashMap<String, Pending>>>,
    counters: Arc<Counters>,
}

impl Runner {
    /// Runs until the source is closed, then waits for in-flight pickups and handlers.
    pub async fn run(mut self) -> RunnerReport {
        let mut report = RunnerReport::default();
        let ctx = Ctx {
            sandbox: self.sandbox,
            host: self.host.clone(),
            handler: self.handler.clone(),
            events: self.events.clone(),
            pending: Arc::default(),
            counters: Arc::default(),
        };
        let mut tasks = JoinSet::new();
        let mut last_list_error: Option<String> = None;
        let mut woke_at = Instant::now();
        // How the last wait ended; `None` before the first scan.
        let mut wake: Option<Wake> = None;
        // Whether that wait was a suspended poll's safety wait.
        let mut suspended = false;
        loop {
            let inline = self.source.take_inline();
            let found = if !inline.is_empty() {
                report.inline += inline.len() as u64;
                inline
                    .into_iter()
                    .filter(|(name, _)| claim(&ctx, name))
                    .map(|(name, bytes)| tasks.spawn(pickup(ctx.clone(), name, Some(bytes), woke_at)))
                    .count()
            } else {
                report.scans += 1;
                // A list after a wake fetches work known to be there (data); a list the timer
                // started is looking for work (discovery).
                let purpose = if wake == Some(Wake::Activity) { Purpose::Data } else { Purpose::Discovery };
                match self.host.list(purpose).await {
                    Ok(names) => {
                        if last_list_error.take().is_some() {
                            ctx.events.notice(self.sandbox, "relay dir readable again".into());
                        }
                        self.scan(&ctx, names, woke_at, &mut tasks, &mut report).await
                    }
                    Err(e) => {
                        report.list_errors += 1;
                        let msg = format!("cannot list relay dir: {e}");
                        if last_list_error.as_deref() != Some(&msg) {
                            ctx.events.notice(self.sandbox, format!("{msg}; still polling"));
                            last_list_error = Some(msg);
                        }
                        0
                    }
                }
            };
            if found > 0 && wake == Some(Wake::Timeout) && self.source.missed(suspended) {
                report.missed_by_source += 1;
                ctx.events.notice(self.sandbox, format!("a timed list found {found} request(s) the source missed"));
            }
            while tasks.try_join_next().is_some() {}
            let delay = self.schedule.next(found > 0);
            let safety = self.source.suspended_polling();
            suspended = safety.is_some();
            let timeout = safety.unwrap_or(delay);
            let w = self.source.wait(timeout).await;
            woke_at = Instant::now();
            wake = Some(w);
            match w {
                Wake::Closed => break,
                Wake::Activity => report.woken_by_activity += 1,
                Wake::Timeout => {}
            }
        }
        while tasks.join_next().await.is_some() {}
        report.requests = ctx.counters.requests.load(Ordering::Relaxed);
        report.malformed = ctx.counters.malformed.load(Ordering::Relaxed);
        report.health = self.source.health();
        report
    }

    /// Handles one listing; returns how many new requests it found.
    async fn scan(
        &self,
        ctx: &Ctx,
        names: Vec<String>,
        woke_at: Instant,
        tasks: &mut JoinSet<()>,
        report: &mut RunnerReport,
    ) -> usize {
        let mut retry = Vec::new();
        {
            let mut pending = ctx.pending.lock().expect("pending poisoned");
            // An undeleted request that is no longer listed is gone (the writer removed it).
            if pending.values().any(|p| *p == Pending::Undeleted) {
                let listed: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
                pending.retain(|n, p| *p == Pending::InFlight || listed.contains(n.as_str()));
            }
            for (n, p) in pending.iter() {
                if *p == Pending::Undeleted {
                    retry.push(n.clone());
                }
            }
        }
        for name in retry {
            report.delete_retries += 1;
            if delete(ctx, &name).await {
                ctx.pending.lock().expect("pending poisoned").remove(&name);
            }
        }
        let mut found = 0;
        for name in names {
            if classify(&name) == FileKind::Request && claim(ctx, &name) {
                found += 1;
                tasks.spawn(pickup(ctx.clone(), name, None, woke_at));
            }
        }
        found
    }
}

/// Marks `name` in flight; false if it already is (or awaits its delete).
fn claim(ctx: &Ctx, name: &str) -> bool {
    let mut pending = ctx.pending.lock().expect("pending poisoned");
    if pending.contains_key(name) {
        return false;
    }
    pending.insert(name.to_owned(), Pending::InFlight);
    true
}

fn settle(ctx: &Ctx, name: &str, deleted: bool) {
    let mut pending = ctx.pending.lock().expect("pending poisoned");
    if deleted {
        pending.remove(name);
    } else {
        pending.insert(name.to_owned(), Pending::Undeleted);
    }
}

/// Deletes a picked-up request within [`DELETE_BOUND`]; false if it must be retried.
async fn delete(ctx: &Ctx, name: &str) -> bool {
    match tokio::time::timeout(DELETE_BOUND, ctx.host.delete(name)).await {
        Ok(Ok(())) => true,
        Ok(Err(e)) => {
            ctx.events.notice(ctx.sandbox, format!("delete of {name:?} failed: {e}; retrying next pass"));
            false
        }
        Err(_) => {
            ctx.events.notice(ctx.sandbox, format!("delete of {name:?} exceeded 10 s; retrying next pass"));
            false
        }
    }
}

/// Reads one request (unless the source already carried its bytes), then starts the handler
/// and deletes the request concurrently, and publishes the answer.
async fn pickup(ctx: Ctx, name: String, bytes: Option<Vec<u8>>, woke: Instant) {
    let bytes = match bytes {
        Some(b) => b,
        None => match ctx.host.read(&name).await {
            Ok(b) => b,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound {
                    ctx.events.notice(ctx.sandbox, format!("cannot read {name:?}: {e}; will retry"));
                }
                ctx.pending.lock().expect("pending poisoned").remove(&name);
                return;
            }
        },
    };
    let picked = Instant::now();
    ctx.counters.requests.fetch_add(1, Ordering::Relaxed);
    let file_id = file_id_of(&name).unwrap_or(&name).to_owned();
    match Request::decode(&bytes) {
        Ok(req) => {
            let id: CallId = Arc::from(req.tool_call_id.as_str());
            let (deleted, ()) = tokio::join!(delete(&ctx, &name), answer(&ctx, id, &file_id, woke, picked));
            settle(&ctx, &name, deleted);
        }
        Err(e) => {
            ctx.counters.malformed.fetch_add(1, Ordering::Relaxed);
            ctx.events.notice(
                ctx.sandbox,
                format!("malformed request {name:?} ({} bytes): {e}; answered with an error", bytes.len()),
            );
            let deleted = delete(&ctx, &name).await;
            let body = Response::Error(format!("relay-bench runner: {e}")).encode();
            if let Err(e) = ctx.host.publish(&res_name(&file_id), &body).await {
                ctx.events.notice(ctx.sandbox, format!("cannot answer malformed {name:?}: {e}"));
            }
            settle(&ctx, &name, deleted);
        }
    }
}

/// Runs the handler for one call and publishes its answer.
async fn answer(ctx: &Ctx, call_id: CallId, file_id: &str, woke: Instant, picked: Instant) {
    let plan = ctx.handler.plan(&call_id);
    let handler_start = Instant::now();
    tokio::time::sleep(plan.duration).await;
    let body = ctx.handler.respond(&call_id, plan.outcome).encode();
    let handler_end = Instant::now();
    ctx.events.emit(ctx.sandbox, &call_id, EventKind::Answering);
    let answered = match ctx.host.publish(&res_name(file_id), &body).await {
        Ok(()) => Some(Instant::now()),
        Err(e) => {
            ctx.events.notice(ctx.sandbox, format!("cannot publish answer for {call_id:?}: {e}"));
            None
        }
    };
    let at = answered.unwrap_or(handler_end);
    let side = RunnerSide { woke, picked, handler_start, handler_end, answered, observed: false, handler_known: true };
    ctx.events.emit_at(at, ctx.sandbox, &call_id, EventKind::Runner(side));
}
