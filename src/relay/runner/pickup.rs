//! One pickup of the runner's loop, as production's does it: read the request (unless the
//! source carried it), start its stat and delete and its handler in the background, and the
//! handler's answer published under the call's file id. The loop awaits the pickups; the
//! handlers run on ([`Handlers`]), each answer announced before it is published.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::{delete, LoopOptions, ParkFn, PauseAnswer, ReadFailure};
use crate::base::clock;
use crate::base::notice::Say;
use crate::base::protocol::{file_id_of, res_name, Outcome, Request, Response};
use crate::events::{CallId, EventKind, EventSink, RunnerSide};
use crate::relay::answer::publish_answer;
use crate::relay::handler::HandlerModel;
use crate::relay::source::Reporter;
use crate::sandbox::dir::UnsafeEntry;
use crate::sandbox::host::Host;

/// What one pickup needs (cheap to clone into the handler tasks).
#[derive(Clone)]
pub(super) struct Ctx {
    pub(super) sandbox: u32,
    pub(super) host: Arc<dyn Host>,
    pub(super) handler: Arc<HandlerModel>,
    pub(super) events: EventSink,
    pub(super) reporter: Reporter,
    pub(super) opts: Arc<LoopOptions>,
    pub(super) on_park: Option<ParkFn>,
    pub(super) counters: Arc<Counters>,
}

#[derive(Default)]
pub(super) struct Counters {
    pub(super) requests: AtomicU64,
    pub(super) malformed: AtomicU64,
}

/// How one pickup ended, for the loop's bookkeeping.
pub(super) struct Picked {
    pub(super) name: String,
    pub(super) how: Settled,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Settled {
    /// Read and deleted.
    Deleted,
    /// Read, but its delete failed: retried on later lists while it is listed.
    DeleteFailed,
    /// Not read (answered with the error, or refused as no relay file) and left on disk:
    /// never read again this turn.
    Unread,
    /// Not read; to be read again on the next list (`read_failure = "retry"`).
    Forget,
}

/// Starts the handlers (and error answers) in the background; the loop awaits them all
/// when it ends, through the [`Handlers`] [`HandlerSpawner::new`] returns.
#[derive(Clone)]
pub(super) struct HandlerSpawner {
    tx: tokio::sync::mpsc::UnboundedSender<JoinHandle<()>>,
    live: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

/// The handlers a runner started: awaited when its loop ends ([`Handlers::finish`]), and
/// aborted if the runner itself is (a runner that did not stop in time): a handler left
/// running past its runner would hold the case's event channel open.
pub(super) struct Handlers {
    collector: Option<JoinHandle<()>>,
    live: Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl HandlerSpawner {
    pub(super) fn new() -> (HandlerSpawner, Handlers) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<JoinHandle<()>>();
        let collector = tokio::spawn(async move {
            while let Some(h) = rx.recv().await {
                let _ = h.await;
            }
        });
        let live = Arc::default();
        (HandlerSpawner { tx, live: Arc::clone(&live) }, Handlers { collector: Some(collector), live })
    }

    fn spawn(&self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        let h = tokio::spawn(f);
        let mut live = self.live.lock().expect("handler list poisoned");
        if live.len() >= 1024 {
            live.retain(|a| !a.is_finished());
        }
        live.push(h.abort_handle());
        drop(live);
        let _ = self.tx.send(h);
    }
}

impl Handlers {
    /// Waits for every handler started (once every spawner is gone).
    pub(super) async fn finish(mut self) {
        if let Some(c) = self.collector.take() {
            let _ = c.await;
        }
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        if let Some(c) = self.collector.take() {
            c.abort();
            self.live.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter().for_each(|a| a.abort());
        }
    }
}

/// One new request: read it (unless the source carried its bytes), start its stat and
/// delete and, in the background, its handler; await the stat and the delete.
pub(super) async fn pickup(
    ctx: Ctx,
    name: String,
    bytes: Option<Vec<u8>>,
    woke: Instant,
    handlers: HandlerSpawner,
) -> Picked {
    let file_id = file_id_of(&name).unwrap_or(&name).to_owned();
    let bytes = match bytes {
        Some(b) => b,
        None => match ctx.host.read(&name).await {
            Ok(b) => b,
            Err(e) => return read_failed(&ctx, name, file_id, e, &handlers),
        },
    };
    let picked = clock::now();
    ctx.counters.requests.fetch_add(1, Ordering::Relaxed);
    match Request::decode(&bytes) {
        Ok(req) => {
            let call: CallId = Arc::from(req.call_id_or(&file_id));
            // The handler is invoked here, as production's loop invokes it (its task then
            // runs on the runtime: that scheduling is the handler's time, not the relay's).
            let input = ctx.handler.command.is_some().then(|| bytes.clone());
            handlers.spawn(execute(ctx.clone(), call, file_id, input, woke, picked, clock::now()));
        }
        Err(e) => {
            ctx.counters.malformed.fetch_add(1, Ordering::Relaxed);
            ctx.reporter.say(Say::Malformed { name: name.clone(), bytes: bytes.len(), error: e.to_string() });
            let body = Response::Error(format!("relay-bench runner: {e}")).encode();
            handlers.spawn(answer_error(ctx.clone(), file_id, body));
        }
    }
    let stat = async {
        if ctx.opts.stat {
            let _ = ctx.host.stat(&name).await;
        }
    };
    let (_, how) = tokio::join!(stat, delete(&*ctx.host, &ctx.reporter, &name));
    Picked { name, how }
}

fn read_failed(ctx: &Ctx, name: String, file_id: String, e: std::io::Error, h: &HandlerSpawner) -> Picked {
    if e.kind() == std::io::ErrorKind::NotFound {
        // Gone between the list and the read (its writer withdrew it, another runner took
        // it): nobody waits for an answer to it, so none is published.
        return Picked { name, how: Settled::Forget };
    }
    if let Some(why) = UnsafeEntry::of(&e) {
        // Not a relay file whatever its name (a FIFO, a link, a huge file): said once (the
        // name stays seen), never answered, never read again.
        ctx.reporter.say(Say::Skipped { name: name.clone(), why: why.to_string() });
        return Picked { name, how: Settled::Unread };
    }
    match ctx.opts.read_failure {
        ReadFailure::Answer => {
            ctx.reporter.say(Say::ReadFailed { name: name.clone(), error: e.to_string(), answered: true });
            h.spawn(answer_error(ctx.clone(), file_id, Response::Error(e.to_string()).encode()));
            Picked { name, how: Settled::Unread }
        }
        ReadFailure::Retry => {
            ctx.reporter.say(Say::ReadFailed { name: name.clone(), error: e.to_string(), answered: false });
            Picked { name, how: Settled::Forget }
        }
    }
}

/// An error answer under a file id whose request could not be read or parsed. No call can
/// be named for it but by its file id (the pairing finds the request it answers, if a
/// writer made one); a writer waiting on that file id reads it and ends its own call.
async fn answer_error(ctx: Ctx, file_id: String, body: Vec<u8>) {
    ctx.events.emit(ctx.sandbox, &CallId::from(file_id.as_str()), EventKind::AnsweringUnread);
    publish_answer(&*ctx.host, &ctx.reporter, ctx.opts.answer_retry, &file_id, &res_name(&file_id), &body).await;
}

/// Runs the handler for one call and publishes its answer (a pause without an answer ends
/// the call's turn instead).
/// With a handler command, the command is the tool (`input`: the request's bytes).
async fn execute(
    ctx: Ctx,
    call: CallId,
    file_id: String,
    input: Option<Vec<u8>>,
    woke: Instant,
    picked: Instant,
    handler_start: Instant,
) {
    let (outcome, answer) = match (&ctx.handler.command, input) {
        (Some(program), Some(input)) => {
            let r = crate::relay::handler::run_command(program, &input, ctx.handler.command_timeout).await;
            (r.outcome(), Some(r))
        }
        _ => {
            let plan = ctx.handler.plan(&call);
            clock::sleep(plan.duration).await;
            (plan.outcome, None)
        }
    };
    let handler_end = clock::now();
    let mut side =
        RunnerSide { woke, picked, handler_start, handler_end, answered: None, observed: false, handler_known: true };
    if outcome == Outcome::Paused && ctx.opts.pause_answer == PauseAnswer::None {
        ctx.events.emit(ctx.sandbox, &call, EventKind::Parked);
        if let Some(park) = &ctx.on_park {
            park(&file_id);
        }
        ctx.events.emit_at(handler_end, ctx.sandbox, &call, EventKind::Runner(side));
        return;
    }
    let body = answer.unwrap_or_else(|| ctx.handler.respond(&call, outcome)).encode();
    ctx.events.emit(ctx.sandbox, &call, EventKind::Answering);
    // One try, as production's (held and tried again with `answer_retry`, or when this
    // machine failed it).
    let every_failure = ctx.opts.answer_retry;
    side.answered = publish_answer(&*ctx.host, &ctx.reporter, every_failure, &call, &res_name(&file_id), &body).await;
    let at = side.answered.unwrap_or(handler_end);
    ctx.events.emit_at(at, ctx.sandbox, &call, EventKind::Runner(side));
}
