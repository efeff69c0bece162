//! The runner: the host-side loop that discovers requests and answers them.
//!
//! One runner serves one relay dir: wait on its activity source (or its poll timer), list,
//! and for every new request read it, delete it (delete-on-pickup), run the handler and
//! publish the answer atomically. Nothing here knows which strategy or host it runs on.
//!
//! What it survives, and says: a malformed or truncated request file is answered with
//! `{"ok":false,...}` under the file's own id (so a waiting writer is released) and reported;
//! a request that vanishes between list and read is skipped; a failed delete is retried on
//! later passes (each bounded at 10 s) without answering the request twice; a relay dir that
//! vanishes is reported once and the loop keeps polling until it returns or the runner stops.

use std::collections::HashSet;
use std::sync::Arc;
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
    /// Scans started by activity rather than the timer.
    pub woken_by_activity: u64,
    pub requests: u64,
    pub malformed: u64,
    pub delete_retries: u64,
    pub list_errors: u64,
    pub health: SourceHealth,
}

pub struct Runner {
    pub sandbox: u32,
    pub host: Arc<dyn Host>,
    pub source: Arc<dyn ActivitySource>,
    pub schedule: PollSchedule,
    pub handler: Arc<HandlerModel>,
    pub events: EventSink,
}

impl Runner {
    /// Runs until the source is closed, then waits for in-flight handlers.
    pub async fn run(mut self) -> RunnerReport {
        let mut report = RunnerReport::default();
        let mut undeleted: HashSet<String> = HashSet::new();
        let mut handlers = JoinSet::new();
        let mut last_list_error: Option<String> = None;
        let mut woke_at = Instant::now();
        loop {
            report.scans += 1;
            let found = match self.host.list(Purpose::Discovery).await {
                Ok(names) => {
                    if last_list_error.take().is_some() {
                        self.events
                            .notice(self.sandbox, "relay dir readable again".into());
                    }
                    self.scan(names, woke_at, &mut undeleted, &mut handlers, &mut report)
                        .await
                }
                Err(e) => {
                    report.list_errors += 1;
                    let msg = format!("cannot list relay dir: {e}");
                    if last_list_error.as_deref() != Some(&msg) {
                        self.events
                            .notice(self.sandbox, format!("{msg}; still polling"));
                        last_list_error = Some(msg);
                    }
                    0
                }
            };
            while handlers.try_join_next().is_some() {}
            let timeout = self.schedule.next(found > 0);
            let wake = self.source.wait(timeout).await;
            woke_at = Instant::now();
            match wake {
                Wake::Closed => break,
                Wake::Activity => report.woken_by_activity += 1,
                Wake::Timeout => {}
            }
        }
        while handlers.join_next().await.is_some() {}
        report.health = self.source.health();
        report
    }

    /// Handles one listing; returns how many new requests it found.
    async fn scan(
        &self,
        names: Vec<String>,
        woke_at: Instant,
        undeleted: &mut HashSet<String>,
        handlers: &mut JoinSet<()>,
        report: &mut RunnerReport,
    ) -> usize {
        let listed: HashSet<&str> = names.iter().map(String::as_str).collect();
        undeleted.retain(|n| listed.contains(n.as_str()));
        let mut found = 0;
        for name in &names {
            if classify(name) != FileKind::Request {
                continue;
            }
            if undeleted.contains(name) {
                // Already answered; only its delete is pending.
                report.delete_retries += 1;
                if self.delete(name).await {
                    undeleted.remove(name);
                }
                continue;
            }
            let bytes = match self.host.read(name).await {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    self.events.notice(
                        self.sandbox,
                        format!("cannot read {name:?}: {e}; will retry"),
                    );
                    continue;
                }
            };
            let picked = Instant::now();
            found += 1;
            report.requests += 1;
            if !self.delete(name).await {
                undeleted.insert(name.clone());
            }
            match Request::decode(&bytes) {
                Ok(req) => {
                    let id: CallId = Arc::from(req.tool_call_id.as_str());
                    let file_id = file_id_of(name).unwrap_or(name).to_owned();
                    handlers.spawn(answer(
                        self.sandbox,
                        self.host.clone(),
                        self.handler.clone(),
                        self.events.clone(),
                        id,
                        file_id,
                        (woke_at, picked),
                    ));
                }
                Err(e) => {
                    report.malformed += 1;
                    self.events.notice(
                        self.sandbox,
                        format!(
                            "malformed request {name:?} ({} bytes): {e}; answered with an error",
                            bytes.len()
                        ),
                    );
                    let file_id = file_id_of(name).unwrap_or(name);
                    let body = Response::Error(format!("relay-bench runner: {e}")).encode();
                    if let Err(e) = self.host.publish(&res_name(file_id), &body).await {
                        self.events.notice(
                            self.sandbox,
                            format!("cannot answer malformed {name:?}: {e}"),
                        );
                    }
                }
            }
        }
        found
    }

    /// Deletes a picked-up request within [`DELETE_BOUND`]; false if it must be retried.
    async fn delete(&self, name: &str) -> bool {
        match tokio::time::timeout(DELETE_BOUND, self.host.delete(name)).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                self.events.notice(
                    self.sandbox,
                    format!("delete of {name:?} failed: {e}; retrying next pass"),
                );
                false
            }
            Err(_) => {
                self.events.notice(
                    self.sandbox,
                    format!("delete of {name:?} exceeded 10 s; retrying next pass"),
                );
                false
            }
        }
    }
}

/// Runs the handler for one call and publishes its answer.
async fn answer(
    sandbox: u32,
    host: Arc<dyn Host>,
    model: Arc<HandlerModel>,
    events: EventSink,
    call_id: CallId,
    file_id: String,
    (woke, picked): (Instant, Instant),
) {
    let plan = model.plan(&call_id);
    let handler_start = Instant::now();
    tokio::time::sleep(plan.duration).await;
    let body = model.respond(&call_id, plan.outcome).encode();
    let handler_end = Instant::now();
    events.emit(sandbox, &call_id, EventKind::Answering);
    let answered = match host.publish(&res_name(&file_id), &body).await {
        Ok(()) => Some(Instant::now()),
        Err(e) => {
            events.notice(
                sandbox,
                format!("cannot publish answer for {call_id:?}: {e}"),
            );
            None
        }
    };
    let at = answered.unwrap_or(handler_end);
    events.emit_at(
        at,
        sandbox,
        &call_id,
        EventKind::Runner(RunnerSide {
            woke,
            picked,
            handler_start,
            handler_end,
            answered,
        }),
    );
}
