//! The writer battery: relay-bench is the runner, the implementation under test the writer.
//!
//! A writer is started once per call (`{dir}`, `{tool}`, `{id}`, `{args}`, `{timeout_ms}`)
//! and is expected to publish the request, wait for the answer, delete both files, print
//! the answer it read on stdout as a response's JSON (one line) and exit. Printing no answer
//! and exiting non-zero is how it reports an error. Each case plays the runner's part (reads
//! the request, deletes it, publishes an answer) as the case needs, and grades the request's
//! bytes, what the writer printed, its timing and what it left in the dir.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::observe::{publication, shown, Ev, Observer};
use super::{left_in, left_line, ms, publish, rm, Case, ConformOptions, Graded, Place, Proc};
use crate::base::protocol::{req_name, res_name, FileKind, Response};
use crate::results::conform::Verdict;

/// The golden request of SPEC §2, byte for byte.
pub(crate) const GOLDEN: &[u8] = include_bytes!("../../../tests/fixtures/request.golden.json");

/// The tool timeout every call but the deadline case's is made with.
const TIMEOUT_MS: u64 = 2000;

pub struct Ctx {
    pub dir: PathBuf,
    pub scratch: PathBuf,
    obs: Observer,
    command: Vec<String>,
    bound: Duration,
    begun: Instant,
    seq: AtomicU32,
}

pub(crate) fn play(opts: &ConformOptions, base: &Path, i: usize) -> std::io::Result<Graded> {
    let dir = base.join("relay");
    let scratch = base.join("scratch");
    std::fs::create_dir_all(&dir)?;
    std::fs::create_dir_all(&scratch)?;
    let ctx = Ctx {
        obs: Observer::watch(&dir, FileKind::Request)?,
        dir,
        scratch,
        command: opts.command.clone(),
        bound: opts.bound,
        begun: Instant::now(),
        seq: AtomicU32::new(0),
    };
    Ok((CASES[i].play)(&ctx))
}

/// What a writer reported.
#[derive(Debug, Clone, PartialEq)]
enum Told {
    /// It printed this answer.
    Answer(Response),
    /// It exited printing none (its exit code).
    Nothing(Option<i32>),
    /// It was still running at the bound (killed).
    Waiting,
}

struct Call {
    id: String,
    proc: Proc,
}

impl Call {
    /// Waits for the writer to end, at most `wait`; what it told and when it ended.
    fn end(&mut self, wait: Duration) -> (Told, Option<Instant>) {
        let Some((code, at)) = self.proc.wait(wait) else {
            self.proc.kill();
            return (Told::Waiting, None);
        };
        let out = self.proc.stdout_text();
        let answer = out
            .lines()
            .rev()
            .filter(|l| l.trim_start().starts_with('{'))
            .find_map(|l| Response::decode(l.as_bytes()).ok());
        (answer.map_or(Told::Nothing(code), Told::Answer), Some(at))
    }
}

impl Ctx {
    fn within(&self, d: Duration) -> Duration {
        d.min((self.begun + self.bound).saturating_duration_since(Instant::now()))
    }

    /// Starts one writer call.
    fn call(&self, id: &str, tool: &str, args: &str, timeout_ms: u64) -> Result<Call, Graded> {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let (dir, timeout) = (self.dir.to_string_lossy(), timeout_ms.to_string());
        let places = [
            Place { name: "dir", var: "RELAY_DIR", value: &dir },
            Place { name: "tool", var: "RELAY_CALL_TOOL", value: tool },
            Place { name: "id", var: "RELAY_CALL_ID", value: id },
            Place { name: "args", var: "RELAY_CALL_ARGS", value: args },
            Place { name: "timeout_ms", var: "RELAY_CALL_TIMEOUT_MS", value: &timeout },
        ];
        let proc = Proc::start(&self.command, &places, &self.scratch.join(format!("writer-{n}")))
            .map_err(|e| Graded::new(Verdict::Failed, e.to_string(), vec![]))?;
        Ok(Call { id: id.to_owned(), proc })
    }

    /// The request of `id` as it appeared.
    fn request(&self, id: &str, since: Instant, wait: Duration) -> Option<Ev> {
        self.obs.wait_appeared(&req_name(id), since, self.within(wait))
    }

    /// The runner's part: the request read (it was, by the observer) and deleted, `answer`
    /// published.
    fn answer(&self, id: &str, answer: &[u8], delete: bool) -> Instant {
        if delete {
            rm(&self.dir.join(req_name(id)));
        }
        publish(&self.dir, &res_name(id), answer).unwrap_or_else(|_| Instant::now())
    }

    fn clear(&self) {
        for n in left_in(&self.dir) {
            rm(&self.dir.join(n));
        }
    }
}

macro_rules! try_g {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(g) => return g,
        }
    };
}

/// Every writer case, in the order they run.
pub const CASES: &[Case<Ctx>] = &[
    Case { name: "request-bytes", section: "§2", expectation: "the request is `<id>.req.json` holding exactly {\"toolName\":..,\"toolCallId\":..,\"args\":..} in that key order, args in theirs (the golden fixture)", play: request_bytes },
    Case { name: "request-atomic", section: "§2", expectation: "the request is written under a `.tmp.` name in the relay dir and renamed onto its final name", play: request_atomic },
    Case { name: "answer-ok", section: "§2", expectation: "{\"ok\":true,\"text\":…} is read as a success with its text", play: answer_ok },
    Case { name: "answer-error", section: "§2", expectation: "{\"ok\":false,\"error\":…} is read as a failure with its error", play: answer_error },
    Case { name: "answer-pause", section: "§2", expectation: "{\"ok\":true,\"paused\":true} is read as a pause (`paused` checked before `ok`), never an empty success", play: answer_pause },
    Case { name: "answer-malformed", section: "§2", expectation: "an answer that is not JSON is an error, never an empty success", play: answer_malformed },
    Case { name: "answer-without-ok", section: "§2", expectation: "an answer with no boolean `ok` is an error, never an empty success", play: answer_without_ok },
    Case { name: "late-answer", section: "§2, §3", expectation: "an answer published 1.5 s after the request is still read", play: late_answer },
    Case { name: "cleanup-after-answer", section: "§2", expectation: "after an answer the writer deletes both files (the request too, when the runner's delete failed)", play: cleanup_answer },
    Case { name: "cleanup-after-pause", section: "§2", expectation: "after a pause answer the writer deletes both files too", play: cleanup_pause },
    Case { name: "temp-ignored", section: "§2", expectation: "a complete answer under a `.tmp.` name is ignored; the answer renamed onto the final name is the one read", play: temp_ignored },
    Case { name: "stale-answer", section: "§2", expectation: "an answer already under the call's id before it starts is stale: never returned for the fresh call", play: stale_answer },
    Case { name: "deadline", section: "§2", expectation: "with no answer, the writer gives up at the tool's timeout + 10 s (here 10.1 s) and removes its request", play: deadline },
    Case { name: "parallel-8", section: "§7", expectation: "8 parallel calls, answered in reverse order, each get their own answer", play: parallel_8 },
    Case { name: "answer-latency", section: "§4", expectation: "figure: answer published -> the writer deleted it (its read), over 5 calls", play: answer_latency },
];

/// A call whose answer is `reply`; graded by `grade` on what the writer told.
fn answered(ctx: &Ctx, id: &str, reply: &[u8], grade: impl FnOnce(&Told) -> (Verdict, &'static str)) -> Graded {
    let t0 = Instant::now();
    let mut call = try_g!(ctx.call(id, "conform", "{}", TIMEOUT_MS));
    let Some(_) = ctx.request(id, t0, Duration::from_secs(5)) else {
        return Graded::new(Verdict::Failed, "no request appeared", vec![left_line(&ctx.dir)]);
    };
    ctx.answer(id, reply, true);
    let (told, _) = call.end(ctx.within(Duration::from_secs(6)));
    let (v, why) = grade(&told);
    std::thread::sleep(Duration::from_millis(50));
    let mut evidence = vec![
        format!("answer published: {}", shown(reply, 100)),
        format!("the writer told: {told:?}"),
        left_line(&ctx.dir),
    ];
    evidence.extend(call.proc.stderr_tail().filter(|_| v == Verdict::Failed));
    ctx.clear();
    Graded::new(v, why, evidence)
}

fn shape(ctx: &Ctx, id: &str, want: Response) -> Graded {
    let reply = want.encode();
    answered(ctx, id, &reply, |t| match t {
        Told::Answer(r) if *r == want => (Verdict::Ok, "read as sent"),
        _ => (Verdict::Failed, "not read as sent"),
    })
}

fn answer_ok(ctx: &Ctx) -> Graded {
    shape(ctx, "w-ok-1", Response::Ok("conform ✓ \"quoted\"\nline 2".into()))
}
fn answer_error(ctx: &Ctx) -> Graded {
    shape(ctx, "w-error-1", Response::Error("tool failed: ✗".into()))
}
fn answer_pause(ctx: &Ctx) -> Graded {
    shape(ctx, "w-pause-1", Response::Paused)
}

fn must_error(t: &Told) -> (Verdict, &'static str) {
    match t {
        Told::Answer(Response::Error(_)) => (Verdict::Ok, "an error"),
        Told::Nothing(Some(c)) if *c != 0 => (Verdict::Ok, "an error (no answer, a non-zero exit)"),
        Told::Nothing(_) => (Verdict::Failed, "no answer and no error: exit 0 or a signal"),
        Told::Waiting => (Verdict::NonStrict, "still waiting at the bound (it would wait out its deadline)"),
        Told::Answer(_) => (Verdict::Failed, "read as a success or a pause"),
    }
}

fn answer_malformed(ctx: &Ctx) -> Graded {
    answered(ctx, "w-malformed-1", br#"{"ok":tru"#, must_error)
}
fn answer_without_ok(ctx: &Ctx) -> Graded {
    answered(ctx, "w-no-ok-1", br#"{"text":"no ok field"}"#, must_error)
}

fn request_bytes(ctx: &Ctx) -> Graded {
    let t0 = Instant::now();
    let mut call = try_g!(ctx.call("call-1", "x", r#"{"b":2,"a":"1"}"#, TIMEOUT_MS));
    let seen = ctx.request("call-1", t0, Duration::from_secs(5));
    let mut evidence = vec![left_line(&ctx.dir)];
    let bytes = seen.as_ref().and_then(|e| e.bytes.clone()).and_then(Result::ok);
    if seen.is_some() {
        ctx.answer("call-1", &Response::Ok("x".into()).encode(), true);
    }
    let _ = call.end(ctx.within(Duration::from_secs(5)));
    ctx.clear();
    let Some(bytes) = bytes else {
        return Graded::new(Verdict::Failed, "no readable call-1.req.json appeared", evidence);
    };
    evidence.push(format!("call-1.req.json: {}", shown(&bytes, 200)));
    evidence.push(format!("golden:          {}", shown(GOLDEN, 200)));
    if bytes == GOLDEN {
        return Graded::new(Verdict::Ok, "byte for byte the golden request", evidence);
    }
    let same = serde_json::from_slice::<serde_json::Value>(&bytes).ok() == serde_json::from_slice(GOLDEN).ok();
    if same {
        Graded::new(Verdict::NonStrict, "the same request, other bytes (whitespace or key order)", evidence)
    } else {
        Graded::new(Verdict::Failed, "not the golden request", evidence)
    }
}

fn request_atomic(ctx: &Ctx) -> Graded {
    let t0 = Instant::now();
    let mut call = try_g!(ctx.call("w-atomic-1", "conform", r#"{"pad":"0123456789"}"#, TIMEOUT_MS));
    let seen = ctx.request("w-atomic-1", t0, Duration::from_secs(5));
    if seen.is_some() {
        ctx.answer("w-atomic-1", &Response::Ok("x".into()).encode(), true);
    }
    let _ = call.end(ctx.within(Duration::from_secs(5)));
    let evs = ctx.obs.events();
    let from: Vec<String> = evs
        .iter()
        .filter_map(|e| match &e.what {
            super::observe::What::MovedIn { from } if e.name == "w-atomic-1.req.json" => Some(format!("{from:?}")),
            _ => None,
        })
        .collect();
    let evidence = vec![format!("renamed onto w-atomic-1.req.json from: {from:?}")];
    ctx.clear();
    match publication(&evs, "w-atomic-1.req.json") {
        Ok(()) => Graded::new(Verdict::Ok, "renamed from a `.tmp.` name in the dir", evidence),
        Err((true, why)) => Graded::new(Verdict::Failed, why, evidence),
        Err((false, why)) => Graded::new(Verdict::NonStrict, why, evidence),
    }
}

fn late_answer(ctx: &Ctx) -> Graded {
    let t0 = Instant::now();
    let mut call = try_g!(ctx.call("w-late-1", "conform", "{}", TIMEOUT_MS));
    let Some(_) = ctx.request("w-late-1", t0, Duration::from_secs(5)) else {
        return Graded::new(Verdict::Failed, "no request appeared", vec![left_line(&ctx.dir)]);
    };
    rm(&ctx.dir.join(req_name("w-late-1")));
    std::thread::sleep(Duration::from_millis(1500));
    let at = ctx.answer("w-late-1", &Response::Ok("late".into()).encode(), false);
    let (told, end) = call.end(ctx.within(Duration::from_secs(5)));
    let mut evidence = vec![format!("the writer told: {told:?}")];
    if let Some(e) = end {
        evidence.push(format!("it ended {} after the answer", ms(e.saturating_duration_since(at))));
    }
    ctx.clear();
    if told == Told::Answer(Response::Ok("late".into())) {
        Graded::new(Verdict::Ok, "read the late answer", evidence)
    } else {
        Graded::new(Verdict::Failed, "did not read the late answer", evidence)
    }
}

fn cleanup(ctx: &Ctx, id: &str, reply: Response) -> Graded {
    let t0 = Instant::now();
    let mut call = try_g!(ctx.call(id, "conform", "{}", TIMEOUT_MS));
    let Some(_) = ctx.request(id, t0, Duration::from_secs(5)) else {
        return Graded::new(Verdict::Failed, "no request appeared", vec![left_line(&ctx.dir)]);
    };
    // The runner's delete failed: the request is still there when the answer comes.
    ctx.answer(id, &reply.encode(), false);
    let (told, _) = call.end(ctx.within(Duration::from_secs(5)));
    std::thread::sleep(Duration::from_millis(100));
    let left: Vec<String> =
        left_in(&ctx.dir).into_iter().filter(|n| n == &req_name(id) || n == &res_name(id)).collect();
    let evidence = vec![format!("the writer told: {told:?}"), left_line(&ctx.dir)];
    ctx.clear();
    if told == Told::Waiting {
        return Graded::new(Verdict::Failed, "the writer never ended", evidence);
    }
    if left.is_empty() {
        Graded::new(Verdict::Ok, "both files deleted", evidence)
    } else {
        Graded::new(Verdict::Failed, format!("left behind: {}", left.join(", ")), evidence)
    }
}

fn cleanup_answer(ctx: &Ctx) -> Graded {
    cleanup(ctx, "w-clean-1", Response::Ok("x".into()))
}
fn cleanup_pause(ctx: &Ctx) -> Graded {
    cleanup(ctx, "w-clean-pause-1", Response::Paused)
}

fn temp_ignored(ctx: &Ctx) -> Graded {
    let t0 = Instant::now();
    let id = "w-temp-1";
    let mut call = try_g!(ctx.call(id, "conform", "{}", TIMEOUT_MS));
    let Some(_) = ctx.request(id, t0, Duration::from_secs(5)) else {
        return Graded::new(Verdict::Failed, "no request appeared", vec![left_line(&ctx.dir)]);
    };
    rm(&ctx.dir.join(req_name(id)));
    let decoy = format!("{}.tmp.conform-decoy", res_name(id));
    let _ = std::fs::write(ctx.dir.join(&decoy), Response::Ok("decoy".into()).encode());
    std::thread::sleep(Duration::from_millis(400));
    ctx.answer(id, &Response::Ok("real".into()).encode(), false);
    let (told, _) = call.end(ctx.within(Duration::from_secs(5)));
    let evidence = vec![
        format!("{decoy} held a complete answer \"decoy\" for 400 ms before the real one"),
        format!("the writer told: {told:?}"),
    ];
    ctx.clear();
    match told {
        Told::Answer(Response::Ok(t)) if t == "real" => Graded::new(Verdict::Ok, "read the final name only", evidence),
        _ => Graded::new(Verdict::Failed, "did not read the real answer", evidence),
    }
}

fn stale_answer(ctx: &Ctx) -> Graded {
    let id = "w-stale-1";
    let _ = std::fs::write(ctx.dir.join(res_name(id)), Response::Ok("stale".into()).encode());
    let t0 = Instant::now();
    let mut call = try_g!(ctx.call(id, "conform", "{}", TIMEOUT_MS));
    let seen = ctx.request(id, t0, Duration::from_secs(5));
    if seen.is_some() {
        std::thread::sleep(Duration::from_millis(300));
        ctx.answer(id, &Response::Ok("fresh".into()).encode(), true);
    }
    let (told, _) = call.end(ctx.within(Duration::from_secs(5)));
    let evidence = vec![
        format!("{} held {{\"ok\":true,\"text\":\"stale\"}} before the call", res_name(id)),
        format!("the writer told: {told:?}"),
    ];
    ctx.clear();
    match told {
        Told::Answer(Response::Ok(t)) if t == "fresh" => {
            Graded::new(Verdict::Ok, "returned the fresh answer", evidence)
        }
        Told::Answer(Response::Ok(t)) if t == "stale" => {
            Graded::new(Verdict::Failed, "returned the stale answer", evidence)
        }
        _ if seen.is_none() => Graded::new(Verdict::NonStrict, "refused the call (no request published)", evidence),
        _ => Graded::new(Verdict::Failed, "did not return the fresh answer", evidence),
    }
}

fn deadline(ctx: &Ctx) -> Graded {
    let id = "w-deadline-1";
    let deadline = Duration::from_millis(100) + Duration::from_secs(10);
    let t0 = Instant::now();
    let mut call = try_g!(ctx.call(id, "conform", "{}", 100));
    let seen = ctx.request(id, t0, Duration::from_secs(5)).is_some();
    let (told, end) = call.end(deadline + Duration::from_secs(4));
    std::thread::sleep(Duration::from_millis(100));
    let left = ctx.dir.join(req_name(id)).exists();
    let mut evidence = vec![format!("request published: {seen}; the writer told: {told:?}"), left_line(&ctx.dir)];
    ctx.clear();
    let Some(end) = end else {
        return Graded::new(Verdict::Failed, "still waiting 4 s past its deadline", evidence);
    };
    let took = end - call.proc.started;
    evidence.push(format!("it gave up {} after it started (deadline {})", ms(took), ms(deadline)));
    if matches!(told, Told::Answer(_)) {
        return Graded::new(Verdict::Failed, "told an answer nobody published", evidence);
    }
    if took + Duration::from_millis(50) < deadline {
        return Graded::new(Verdict::Failed, "gave up before its deadline", evidence);
    }
    if took > deadline + Duration::from_millis(2500) {
        return Graded::new(Verdict::NonStrict, "gave up more than 2.5 s past its deadline", evidence);
    }
    if left {
        return Graded::new(
            Verdict::NonStrict,
            "gave up in time, but left its request for a runner that starts later",
            evidence,
        );
    }
    Graded::new(Verdict::Ok, "gave up at its deadline and removed its request", evidence)
}

fn parallel_8(ctx: &Ctx) -> Graded {
    let t0 = Instant::now();
    let mut calls = Vec::new();
    for i in 0..8 {
        calls.push(try_g!(ctx.call(&format!("w-par-{i}"), "conform", &format!(r#"{{"i":{i}}}"#), TIMEOUT_MS)));
    }
    let all = ctx.obs.wait_for(ctx.within(Duration::from_secs(6)), |evs| {
        calls.iter().all(|c| evs.iter().any(|e| e.at >= t0 && e.name == req_name(&c.id) && e.bytes.is_some()))
    });
    if all.is_none() {
        ctx.clear();
        return Graded::new(Verdict::Failed, "not all 8 requests appeared", vec![left_line(&ctx.dir)]);
    }
    for c in calls.iter().rev() {
        ctx.answer(&c.id, &Response::Ok(format!("answer-{}", c.id)).encode(), true);
    }
    let mut wrong = Vec::new();
    for c in &mut calls {
        let (told, _) = c.end(ctx.within(Duration::from_secs(5)));
        if told != Told::Answer(Response::Ok(format!("answer-{}", c.id))) {
            wrong.push(format!("{}: told {told:?}", c.id));
        }
    }
    ctx.clear();
    let mut evidence =
        vec![format!("8 writers, answered in reverse order {} after the first started", ms(t0.elapsed()))];
    evidence.extend(wrong.iter().cloned());
    if wrong.is_empty() {
        Graded::new(Verdict::Ok, "each got its own answer", evidence)
    } else {
        Graded::new(Verdict::Failed, format!("{} of 8 did not get their own answer", wrong.len()), evidence)
    }
}

fn answer_latency(ctx: &Ctx) -> Graded {
    let mut lat = Vec::new();
    for i in 0..5 {
        let id = format!("w-lat-{i}");
        let t0 = Instant::now();
        let Ok(mut call) = ctx.call(&id, "conform", "{}", TIMEOUT_MS) else { break };
        if ctx.request(&id, t0, Duration::from_secs(5)).is_none() {
            break;
        }
        let at = ctx.answer(&id, &Response::Ok("x".into()).encode(), true);
        if let Some(gone) = ctx.obs.wait_gone(&res_name(&id), at, ctx.within(Duration::from_secs(3))) {
            lat.push(gone - at);
        }
        let _ = call.end(ctx.within(Duration::from_secs(3)));
        ctx.clear();
    }
    lat.sort();
    let p50 = lat.get(lat.len() / 2).copied().unwrap_or_default();
    let max = lat.last().copied().unwrap_or_default();
    Graded::new(
        Verdict::Informational,
        format!("answer read p50 {}", ms(p50)),
        vec![format!(
            "answer published -> deleted by the writer: p50 {} max {} over {} calls",
            ms(p50),
            ms(max),
            lat.len()
        )],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_golden_fixture_is_the_golden_request_of_the_protocol() {
        let r = crate::base::protocol::Request::new("x", "call-1", Some(r#"{"b":2,"a":"1"}"#)).unwrap();
        assert_eq!(r.encode(), GOLDEN);
    }
}
