//! The runner battery: relay-bench is the writer, the implementation under test the runner.
//!
//! Each case makes a fresh relay dir, starts the runner (`{dir}`, `{handler}`), waits until
//! it answers a probe call (re-sent every 500 ms, so a start-up sweep cannot eat the only
//! one), plays its calls and grades what the dir and the handler's log show. A call is a
//! request for tool `conform` whose args carry a `tag` (what the handler logs), the `reply`
//! the handler prints, and a `sleep_ms`. "Seen by the runner" is decided by a follow-up call:
//! once a call published after a file is answered, the runner has listed past that file.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::observe::{publication, shown, Ev, Observer, What};
use super::{execs, handler_script, instant_of, left_line, ms, publish, rm, Case, ConformOptions, Graded, Place, Proc};
use crate::base::protocol::{req_name, res_name, sanitize_id, Response, TMP_MARKER};
use crate::results::conform::Verdict;

/// A runner case's world.
pub struct Ctx {
    pub dir: PathBuf,
    pub scratch: PathBuf,
    obs: Observer,
    log: PathBuf,
    handler: PathBuf,
    pair: (Instant, SystemTime),
    command: Vec<String>,
    proc: RefCell<Option<Proc>>,
    bound: Duration,
    begun: RefCell<Instant>,
    seq: AtomicU32,
}

pub fn play(opts: &ConformOptions, base: &Path, i: usize) -> std::io::Result<Graded> {
    let dir = base.join("relay");
    let scratch = base.join("scratch");
    std::fs::create_dir_all(&dir)?;
    std::fs::create_dir_all(&scratch)?;
    let log = scratch.join("handler.log");
    let handler = scratch.join("handler");
    handler_script(&opts.handler_program, &log, &handler)?;
    let ctx = Ctx {
        obs: Observer::watch(&dir, crate::base::protocol::FileKind::Response)?,
        dir,
        scratch,
        log,
        handler,
        pair: (Instant::now(), SystemTime::now()),
        command: opts.command.clone(),
        proc: RefCell::new(None),
        bound: opts.bound,
        begun: RefCell::new(Instant::now()),
        seq: AtomicU32::new(0),
    };
    let mut g = (CASES[i].play)(&ctx);
    if g.verdict == Verdict::Failed {
        if let Some(tail) = ctx.proc.borrow().as_ref().and_then(Proc::stderr_tail) {
            g.evidence.push(tail);
        }
    }
    if let Some(mut p) = ctx.proc.borrow_mut().take() {
        p.kill();
    }
    Ok(g)
}

/// What went wrong before a case could play.
type Early = Result<(), Graded>;

impl Ctx {
    /// Starts the runner and waits until it answers a probe; the start-up time.
    fn start(&self) -> Result<Duration, Graded> {
        let places = [
            Place { name: "dir", var: "RELAY_DIR", value: &self.dir.to_string_lossy() },
            Place { name: "handler", var: "RELAY_CONFORM_HANDLER", value: &self.handler.to_string_lossy() },
        ];
        let proc = Proc::start(&self.command, &places, &self.scratch.join("runner"))
            .map_err(|e| Graded::new(Verdict::Failed, e.to_string(), vec![]))?;
        let t0 = proc.started;
        *self.proc.borrow_mut() = Some(proc);
        let mut k = 0;
        let mut ready = None;
        while t0.elapsed() < self.bound && ready.is_none() {
            k += 1;
            let id = format!("{PROBE}{k}");
            let body = request(Some(&id), &format!("probe-{k}"), OK_REPLY, 0);
            let at = publish(&self.dir, &req_name(&id), &body)
                .map_err(|e| Graded::new(Verdict::Failed, e.to_string(), vec![]))?;
            let until = at + Duration::from_millis(500);
            while Instant::now() < until && ready.is_none() {
                ready = (1..=k).find(|j| {
                    self.obs.events().iter().any(|e| e.name == res_name(&format!("{PROBE}{j}")) && e.bytes.is_some())
                });
                if ready.is_none() {
                    if let Some(code) = self.proc.borrow_mut().as_mut().and_then(Proc::exited) {
                        let mut ev = vec![format!("exit code {code:?}")];
                        ev.extend(self.proc.borrow().as_ref().and_then(Proc::stderr_tail));
                        return Err(Graded::new(
                            Verdict::Failed,
                            "the runner exited before answering a probe call",
                            ev,
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        let Some(_) = ready else {
            let mut ev = vec![left_line(&self.dir)];
            ev.extend(self.proc.borrow().as_ref().and_then(Proc::stderr_tail));
            return Err(Graded::new(
                Verdict::Failed,
                format!("no probe call answered in {} (the case's bound)", ms(self.bound)),
                ev,
            ));
        };
        let startup = t0.elapsed();
        // Probes still in flight are answered or withdrawn, so the case starts clean: one
        // the runner picked up is waited for (a second at most), one it did not is removed.
        for j in 1..=k {
            let id = format!("{PROBE}{j}");
            let (req, res) = (self.dir.join(req_name(&id)), self.dir.join(res_name(&id)));
            let picked = self.obs.wait_gone(&req_name(&id), t0, Duration::ZERO).is_some();
            rm(&req);
            if picked && !res.exists() {
                let _ = self.obs.wait_appeared(&res_name(&id), t0, Duration::from_secs(1));
            }
            rm(&res);
        }
        *self.begun.borrow_mut() = Instant::now();
        Ok(startup)
    }

    fn ready(&self) -> Early {
        self.start().map(|_| ())
    }

    /// The time left of the case's bound, at most `d`.
    fn within(&self, d: Duration) -> Duration {
        d.min((*self.begun.borrow() + self.bound).saturating_duration_since(Instant::now()))
    }

    /// Publishes a call; its file id, tag and the moment of the rename.
    fn call(&self, id: &str, reply: &str, sleep_ms: u64) -> (String, String, Instant) {
        let tag = format!("{id}#{}", self.seq.fetch_add(1, Ordering::Relaxed));
        let file_id = sanitize_id(id);
        let at = publish(&self.dir, &req_name(&file_id), &request(Some(id), &tag, reply, sleep_ms))
            .unwrap_or_else(|_| Instant::now());
        (file_id, tag, at)
    }

    fn answer(&self, file_id: &str, since: Instant, wait: Duration) -> Option<Ev> {
        self.obs.wait_appeared(&res_name(file_id), since, self.within(wait))
    }

    /// Every appearance of an answer under `file_id` since `since`.
    fn answers(&self, file_id: &str, since: Instant) -> Vec<Ev> {
        let name = res_name(file_id);
        self.obs.events().into_iter().filter(|e| e.at >= since && e.name == name && e.bytes.is_some()).collect()
    }

    /// The writer's part after an answer: both files removed.
    fn done_with(&self, file_id: &str) {
        rm(&self.dir.join(req_name(file_id)));
        rm(&self.dir.join(res_name(file_id)));
    }

    /// The handler's runs of a tag, with their start.
    fn runs(&self, tag: &str) -> Vec<Instant> {
        execs(&self.log)
            .into_iter()
            .filter(|e| e.tag.as_deref() == Some(tag))
            .map(|e| instant_of(e.t_ns, self.pair))
            .collect()
    }

    fn wait_run(&self, tag: &str, wait: Duration) -> Option<Instant> {
        let end = Instant::now() + self.within(wait);
        loop {
            if let Some(t) = self.runs(tag).first() {
                return Some(*t);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn alive(&self) -> bool {
        self.proc.borrow_mut().as_mut().is_some_and(|p| p.exited().is_none())
    }

    /// A follow-up call answered: the runner has listed past everything published before
    /// it, and is alive. `Err` with the evidence when not.
    fn follow_up(&self) -> Result<Duration, String> {
        let (fid, _, at) = self.call(&format!("follow-up-{}", self.seq.load(Ordering::Relaxed)), OK_REPLY, 0);
        let got = self.answer(&fid, at, Duration::from_secs(6));
        self.done_with(&fid);
        match got {
            Some(e) => Ok(e.at - at),
            None if !self.alive() => Err("the runner exited".into()),
            None => Err("a follow-up call published after it was not answered: the runner stopped answering".into()),
        }
    }
}

/// The probe calls' ids: `conform-probe-N`.
const PROBE: &str = "conform-probe-";

const OK_REPLY: &str = r#"{"ok":true,"text":"conform"}"#;

/// A request as production's writer writes it, for tool `conform`.
fn request(id: Option<&str>, tag: &str, reply: &str, sleep_ms: u64) -> Vec<u8> {
    let q = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let id = id.map_or_else(String::new, |i| format!(r#","toolCallId":{}"#, q(i)));
    format!(r#"{{"toolName":"conform"{id},"args":{{"tag":{},"reply":{reply},"sleep_ms":{sleep_ms}}}}}"#, q(tag))
        .into_bytes()
}

fn bytes_of(e: &Ev) -> Vec<u8> {
    match &e.bytes {
        Some(Ok(b)) => b.clone(),
        _ => Vec::new(),
    }
}

macro_rules! early {
    ($e:expr) => {
        if let Err(g) = $e {
            return g;
        }
    };
}

/// Every runner case, in the order they run.
pub const CASES: &[Case<Ctx>] = &[
    Case { name: "answer-ok", section: "§2", expectation: "a call whose tool succeeds is answered {\"ok\":true,\"text\":…} with the tool's text, under the call's file id, once", play: answer_ok },
    Case { name: "answer-error", section: "§2", expectation: "a call whose tool fails is answered {\"ok\":false,\"error\":…} with the tool's error, once", play: answer_error },
    Case { name: "answer-pause", section: "§2, §8", expectation: "a tool that parks is answered {\"ok\":true,\"paused\":true} (one integration) or not at all (production's default); never an ok answer", play: answer_pause },
    Case { name: "atomic-answers", section: "§2", expectation: "every answer is written under a `.tmp.` name in the relay dir and renamed onto its final name: no final name ever holds partial bytes", play: atomic_answers },
    Case { name: "delete-on-pickup", section: "§2, §8", expectation: "a request is deleted right after it is read, while its tool still runs", play: delete_on_pickup },
    Case { name: "stale-sweep", section: "§2, §8", expectation: "before its first pickup the runner removes stale requests, answers and their temp names, never running them; other files are untouched", play: stale_sweep },
    Case { name: "reused-id", section: "§8, §9", expectation: "a request under a file id already handled this turn is never run again", play: reused_id },
    Case { name: "parallel-1", section: "§7", expectation: "1 call in, 1 answer out, each its own, each run once", play: parallel_1 },
    Case { name: "parallel-8", section: "§7", expectation: "8 parallel calls in, 8 answers out, each its own, each run once", play: parallel_8 },
    Case { name: "parallel-64", section: "§7", expectation: "64 parallel calls in, 64 answers out, each its own, each run once", play: parallel_64 },
    Case { name: "malformed-request", section: "§8", expectation: "a request that is not JSON is answered {\"ok\":false} or left; never run, never answered twice, no crash", play: malformed },
    Case { name: "truncated-request", section: "§8", expectation: "a request cut short is answered {\"ok\":false} or left; never run, never answered twice, no crash", play: truncated },
    Case { name: "non-utf8-request", section: "§2, §8", expectation: "a request whose bytes are not UTF-8 is answered {\"ok\":false} or left (NON-STRICT: run once, its bytes replaced); never twice, no crash", play: non_utf8 },
    Case { name: "oversized-request", section: "§8", expectation: "a 17 MiB request is run once, answered {\"ok\":false} or left; never twice, no crash", play: oversized },
    Case { name: "symlinked-request", section: "§8", expectation: "a request name that is a symbolic link to a file outside the dir is answered {\"ok\":false} or left (NON-STRICT: followed and run once); never twice, no crash", play: symlinked },
    Case { name: "hostile-ids", section: "§2, §8", expectation: "calls whose ids hold astral characters, path parts, shell metacharacters, a 120-unit cut inside a surrogate pair, an empty id and no id are each answered under their file id; the tool gets the id unchanged", play: hostile_ids },
    Case { name: "id-collision", section: "§2", expectation: "two call ids that sanitize alike (`coll/1`, `coll:1`) share one file id: the writer must refuse the second; how often the runner runs them is reported", play: id_collision },
    Case { name: "slow-publication", section: "§2, §6", expectation: "a request whose temp name is written in chunks over 800 ms is run once, only after its rename", play: slow_publication },
    Case { name: "dir-recreated", section: "§6", expectation: "after the relay dir is deleted and made anew (a new inode), a call is answered within 3 s (NON-STRICT: within 8 s)", play: dir_recreated },
    Case { name: "wake-latency", section: "§4", expectation: "figures: request published -> first opened by the runner (pickup) and -> answer published, over 10 sequential calls", play: wake_latency },
    Case { name: "idle-list-rate", section: "§5", expectation: "figure: lists of the relay dir (opens of the dir) per minute while idle, over 5 s", play: idle_rate },
];

fn shape(ctx: &Ctx, id: &str, reply: &str, want: Response) -> Graded {
    early!(ctx.ready());
    let (fid, tag, at) = ctx.call(id, reply, 0);
    let Some(ev) = ctx.answer(&fid, at, Duration::from_secs(5)) else {
        return Graded::new(
            Verdict::Failed,
            "no answer",
            vec![left_line(&ctx.dir), format!("tool runs: {}", ctx.runs(&tag).len())],
        );
    };
    std::thread::sleep(Duration::from_millis(150));
    let bytes = bytes_of(&ev);
    let (runs, times) = (ctx.runs(&tag).len(), ctx.answers(&fid, at).len());
    let mut evidence = vec![
        format!("answer {}: {}", res_name(&fid), shown(&bytes, 160)),
        format!("published {} after the request", ms(ev.at - at)),
        format!("tool runs: {runs}, answers: {times}"),
    ];
    ctx.done_with(&fid);
    let got = Response::decode(&bytes);
    if got.as_ref() != Ok(&want) {
        evidence.push(format!("read as {got:?}"));
        return Graded::new(
            Verdict::Failed,
            format!("the answer is not {}", String::from_utf8_lossy(&want.encode())),
            evidence,
        );
    }
    if runs != 1 || times != 1 {
        return Graded::new(Verdict::Failed, "run or answered other than once", evidence);
    }
    Graded::new(Verdict::Ok, "answered in the expected shape, once", evidence)
}

fn answer_ok(ctx: &Ctx) -> Graded {
    shape(
        ctx,
        "shape-ok-1",
        r#"{"ok":true,"text":"conform ✓ \"quoted\"\nline 2"}"#,
        Response::Ok("conform ✓ \"quoted\"\nline 2".into()),
    )
}

fn answer_error(ctx: &Ctx) -> Graded {
    shape(ctx, "shape-error-1", r#"{"ok":false,"error":"tool failed: ✗"}"#, Response::Error("tool failed: ✗".into()))
}

fn answer_pause(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let (fid, tag, at) = ctx.call("shape-pause-1", r#"{"ok":true,"paused":true}"#, 0);
    let Some(ran) = ctx.wait_run(&tag, Duration::from_secs(5)) else {
        return Graded::new(Verdict::Failed, "the tool never ran", vec![left_line(&ctx.dir)]);
    };
    let got = ctx.answer(&fid, at, Duration::from_millis(1500));
    let runs = ctx.runs(&tag).len();
    let mut evidence = vec![format!("tool ran {} after the request; runs: {runs}", ms(ran - at))];
    ctx.done_with(&fid);
    if runs != 1 {
        return Graded::new(Verdict::Failed, "the tool ran more than once", evidence);
    }
    match got {
        None => {
            evidence.push("no answer within 1.5 s of the tool's run".into());
            Graded::new(Verdict::Ok, "a pause writes no answer (production's default integration)", evidence)
        }
        Some(ev) => {
            let bytes = bytes_of(&ev);
            evidence.push(format!("answer: {}", shown(&bytes, 120)));
            let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
            if v["paused"] == serde_json::Value::Bool(true) && v["ok"] == serde_json::Value::Bool(true) {
                Graded::new(Verdict::Ok, "a pause is answered {\"ok\":true,\"paused\":true}", evidence)
            } else {
                Graded::new(Verdict::Failed, "a pause was answered, not as a pause", evidence)
            }
        }
    }
}

fn atomic_answers(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let text = crate::relay::handler::filler(256 << 10);
    let reply = format!(r#"{{"ok":true,"text":"{text}"}}"#);
    let calls: Vec<_> = (0..8).map(|i| ctx.call(&format!("atomic-{i}"), &reply, 0)).collect();
    let mut evidence = Vec::new();
    let (mut breach, mut departure) = (Vec::new(), Vec::new());
    for (fid, _, at) in &calls {
        match ctx.answer(fid, *at, Duration::from_secs(6)) {
            None => breach.push(format!("{fid}: no answer")),
            Some(ev) if Response::decode(&bytes_of(&ev)) != Ok(Response::Ok(text.clone())) => {
                breach.push(format!("{}: read {} bytes, not the whole answer", res_name(fid), bytes_of(&ev).len()))
            }
            Some(_) => {}
        }
    }
    std::thread::sleep(Duration::from_millis(100));
    let evs = ctx.obs.events();
    for (fid, _, _) in &calls {
        if let Err((hard, why)) = publication(&evs, &res_name(fid)) {
            if hard {
                breach.push(why)
            } else {
                departure.push(why)
            }
        }
    }
    let from: Vec<String> = evs
        .iter()
        .filter_map(|e| match &e.what {
            What::MovedIn { from: Some(f) } if e.name.starts_with("atomic-") => Some(f.clone()),
            _ => None,
        })
        .take(2)
        .collect();
    evidence.push(format!("8 answers of {} bytes; renamed from e.g. {from:?}", reply.len()));
    for (fid, _, _) in &calls {
        ctx.done_with(fid);
    }
    std::thread::sleep(Duration::from_millis(100));
    let temps: Vec<String> = super::left_in(&ctx.dir).into_iter().filter(|n| n.contains(TMP_MARKER)).collect();
    evidence.extend(breach.iter().chain(&departure).take(6).cloned());
    if !breach.is_empty() {
        return Graded::new(Verdict::Failed, format!("{} answers not published atomically", breach.len()), evidence);
    }
    if !departure.is_empty() || !temps.is_empty() {
        evidence.push(format!("temp names left: {temps:?}"));
        return Graded::new(
            Verdict::NonStrict,
            "atomic, but not through a `.tmp.` name in the dir, or temps left behind",
            evidence,
        );
    }
    Graded::new(Verdict::Ok, "every answer renamed onto its name from a `.tmp.` name in the dir", evidence)
}

fn delete_on_pickup(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let (fid, tag, at) = ctx.call("delete-1", OK_REPLY, 1500);
    let ran = ctx.wait_run(&tag, Duration::from_secs(5));
    let gone = ctx.obs.wait_gone(&req_name(&fid), at, ctx.within(Duration::from_millis(2500)));
    let answered = ctx.answer(&fid, at, Duration::from_secs(4));
    let gone = gone.or_else(|| ctx.obs.wait_gone(&req_name(&fid), at, ctx.within(Duration::from_millis(500))));
    let mut evidence = vec![left_line(&ctx.dir)];
    ctx.done_with(&fid);
    let Some(ran) = ran else {
        return Graded::new(Verdict::Failed, "the tool never ran", evidence);
    };
    evidence.push(format!("tool ran {} after the request, for 1.5 s", ms(ran - at)));
    if let Some(a) = &answered {
        evidence.push(format!("answer {} after the request", ms(a.at - at)));
    }
    match gone {
        Some(g) if g <= ran + Duration::from_millis(1500) => {
            evidence.push(format!("request deleted {} after it was published", ms(g - at)));
            Graded::new(Verdict::Ok, "deleted while the tool ran", evidence)
        }
        Some(g) => {
            evidence.push(format!("request deleted {} after it was published", ms(g - at)));
            Graded::new(Verdict::NonStrict, "deleted only after the tool finished", evidence)
        }
        None => Graded::new(Verdict::Failed, "the request was never deleted by the runner", evidence),
    }
}

const STALE: &[(&str, &str)] = &[
    ("stale-2.res.json", r#"{"ok":true,"text":"stale"}"#),
    ("stale-3.req.json.tmp.1", r#"{"toolName":"conf"#),
    ("stale-4.res.json.tmp.conform", r#"{"ok":tr"#),
];
const KEEP: &[(&str, &str)] =
    &[("notes.txt", "keep me"), ("keep.json", "{}"), ("keep.req.json.bak", "x"), ("keep.json.tmp.3", "y")];

fn stale_sweep(ctx: &Ctx) -> Graded {
    let stale_req = request(Some("stale-1"), "stale-1", OK_REPLY, 0);
    let mut put = vec![("stale-1.req.json".to_owned(), stale_req.clone())];
    put.extend(STALE.iter().chain(KEEP).map(|(n, b)| ((*n).to_owned(), b.as_bytes().to_vec())));
    for (n, b) in &put {
        if let Err(e) = std::fs::write(ctx.dir.join(n), b) {
            return Graded::new(Verdict::Failed, format!("cannot set the case up: {e}"), vec![]);
        }
    }
    let startup = match ctx.start() {
        Ok(s) => s,
        Err(g) => return g,
    };
    // A runner that runs stale requests late has time to.
    let _ = ctx.follow_up();
    std::thread::sleep(Duration::from_millis(300));
    let mut evidence = vec![format!("ready {} after start", ms(startup)), left_line(&ctx.dir)];
    let mut wrong = Vec::new();
    for (n, _) in put.iter().take(1 + STALE.len()) {
        if ctx.dir.join(n).symlink_metadata().is_ok() {
            wrong.push(format!("{n} left"));
        }
    }
    for (n, b) in KEEP {
        match std::fs::read(ctx.dir.join(n)) {
            Ok(got) if got == b.as_bytes() => {}
            Ok(_) => wrong.push(format!("{n} changed")),
            Err(_) => wrong.push(format!("{n} removed (not a relay file)")),
        }
    }
    let runs = ctx.runs("stale-1").len();
    if runs > 0 {
        wrong.push(format!("the stale request stale-1 was run {runs} time(s)"));
    }
    if !ctx.answers("stale-1", *ctx.begun.borrow() - Duration::from_secs(3600)).is_empty() {
        wrong.push("the stale request was answered".into());
    }
    evidence.extend(wrong.iter().cloned());
    if wrong.is_empty() {
        Graded::new(Verdict::Ok, "stale relay files removed unrun, other files untouched", evidence)
    } else {
        Graded::new(Verdict::Failed, "the stale sweep did not do what §2 says", evidence)
    }
}

fn reused_id(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let (fid, tag1, at) = ctx.call("reused-1", OK_REPLY, 0);
    if ctx.answer(&fid, at, Duration::from_secs(5)).is_none() {
        return Graded::new(Verdict::Failed, "the first call was not answered", vec![left_line(&ctx.dir)]);
    }
    ctx.done_with(&fid);
    std::thread::sleep(Duration::from_millis(50));
    let (_, tag2, at2) = ctx.call("reused-1", OK_REPLY, 0);
    let follow = ctx.follow_up();
    std::thread::sleep(Duration::from_millis(300));
    let (r1, r2) = (ctx.runs(&tag1).len(), ctx.runs(&tag2).len());
    let mut evidence = vec![
        format!("first call run {r1} time(s); the same id published again after its answer: run {r2} time(s)"),
        format!("answers to the second: {}", ctx.answers(&fid, at2).len()),
        left_line(&ctx.dir),
    ];
    ctx.done_with(&fid);
    if let Err(why) = follow {
        evidence.push(why);
        return Graded::new(Verdict::Failed, "the runner stopped answering", evidence);
    }
    if r2 > 0 {
        return Graded::new(Verdict::Failed, "a reused id was run again in the same turn", evidence);
    }
    Graded::new(Verdict::Ok, "a reused id was not run again", evidence)
}

fn parallel(ctx: &Ctx, n: usize) -> Graded {
    early!(ctx.ready());
    let t0 = Instant::now();
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let reply = format!(r#"{{"ok":true,"text":"answer-{i}"}}"#);
            ctx.call(&format!("par{n}-{i}"), &reply, 0)
        })
        .collect();
    let mut wrong = Vec::new();
    let mut last = t0;
    for (i, (fid, _, at)) in calls.iter().enumerate() {
        match ctx.answer(fid, *at, Duration::from_secs(8)) {
            None => wrong.push(format!("{fid}: no answer")),
            Some(ev) => {
                last = last.max(ev.at);
                if Response::decode(&bytes_of(&ev)) != Ok(Response::Ok(format!("answer-{i}"))) {
                    wrong.push(format!("{fid}: got {}", shown(&bytes_of(&ev), 60)));
                }
            }
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    for (fid, tag, at) in &calls {
        let (runs, answers) = (ctx.runs(tag).len(), ctx.answers(fid, *at).len());
        if runs != 1 || answers > 1 {
            let seen: Vec<String> = ctx
                .answers(fid, *at)
                .iter()
                .map(|e| format!("{:?} at +{} {}", e.what, ms(e.at - *at), shown(&bytes_of(e), 40)))
                .collect();
            wrong.push(format!("{fid}: run {runs} time(s), answered {answers} time(s): {seen:?}"));
        }
        ctx.done_with(fid);
    }
    let mut evidence = vec![format!(
        "{n} published in {}; the last answer {} after the first publication",
        ms(calls.last().map_or(t0, |c| c.2) - t0),
        ms(last - t0)
    )];
    evidence.extend(wrong.iter().take(6).cloned());
    if wrong.is_empty() {
        Graded::new(Verdict::Ok, format!("{n} in, {n} answers out, each run once"), evidence)
    } else {
        Graded::new(
            Verdict::Failed,
            format!("{} of {n} calls not answered exactly once with their own answer", wrong.len()),
            evidence,
        )
    }
}

fn parallel_1(ctx: &Ctx) -> Graded {
    parallel(ctx, 1)
}
fn parallel_8(ctx: &Ctx) -> Graded {
    parallel(ctx, 8)
}
fn parallel_64(ctx: &Ctx) -> Graded {
    parallel(ctx, 64)
}

/// A request file that is no call: published (or linked) as `name`; graded as the
/// contract says for it. `tag`: the tag a runner that runs it anyway would log; `run_once`:
/// the verdict for a runner that does.
fn bad(
    ctx: &Ctx,
    fid: &str,
    make: impl FnOnce(&Path) -> std::io::Result<()>,
    tag: Option<&str>,
    run_once: Verdict,
) -> Graded {
    early!(ctx.ready());
    let at = Instant::now();
    if let Err(e) = make(&ctx.dir) {
        return Graded::new(Verdict::Failed, format!("cannot set the case up: {e}"), vec![]);
    }
    let follow = ctx.follow_up();
    std::thread::sleep(Duration::from_millis(300));
    let answers = ctx.answers(fid, at);
    let runs = tag.map_or(0, |t| ctx.runs(t).len());
    let left = ctx.dir.join(req_name(fid)).symlink_metadata().is_ok();
    let mut evidence = vec![format!("answers: {}, tool runs: {runs}, request left: {left}", answers.len())];
    if let Some(a) = answers.first() {
        evidence.push(format!("answer: {}", shown(&bytes_of(a), 120)));
    }
    evidence.push(left_line(&ctx.dir));
    if let Err(why) = follow {
        evidence.push(why);
        return Graded::new(Verdict::Failed, "the runner stopped answering after it", evidence);
    }
    if runs > 1 || answers.len() > 1 {
        evidence
            .extend(answers.iter().map(|e| format!("{:?} at +{}: {}", e.what, ms(e.at - at), shown(&bytes_of(e), 60))));
        return Graded::new(Verdict::Failed, "run or answered more than once", evidence);
    }
    if runs == 1 {
        return Graded::new(run_once, "run once", evidence);
    }
    match answers.first().map(|a| Response::decode(&bytes_of(a))) {
        Some(Ok(Response::Error(_))) => Graded::new(Verdict::Ok, "answered {\"ok\":false}", evidence),
        Some(_) => Graded::new(Verdict::Failed, "answered, but not {\"ok\":false}", evidence),
        None if left => Graded::new(Verdict::Ok, "left in place, unanswered", evidence),
        None => Graded::new(Verdict::NonStrict, "deleted unanswered: its writer waits until its deadline", evidence),
    }
}

fn malformed(ctx: &Ctx) -> Graded {
    bad(ctx, "bad-json", |d| publish(d, "bad-json.req.json", b"this is not { json").map(drop), None, Verdict::Failed)
}

fn truncated(ctx: &Ctx) -> Graded {
    let full = request(Some("truncated-1"), "truncated-1", OK_REPLY, 0);
    let cut = full[..full.len() - 12].to_vec();
    bad(
        ctx,
        "truncated-1",
        move |d| publish(d, "truncated-1.req.json", &cut).map(drop),
        Some("truncated-1"),
        Verdict::Failed,
    )
}

fn non_utf8(ctx: &Ctx) -> Graded {
    let mut body = br#"{"toolName":"conform","toolCallId":"non-utf8-1","args":{"tag":"non-utf8-1","note":""#.to_vec();
    body.extend_from_slice(b"\xff\xfe\xc3");
    body.extend_from_slice(br#"","reply":{"ok":true,"text":"ran"}}}"#);
    bad(
        ctx,
        "non-utf8-1",
        move |d| publish(d, "non-utf8-1.req.json", &body).map(drop),
        Some("non-utf8-1"),
        Verdict::NonStrict,
    )
}

fn oversized(ctx: &Ctx) -> Graded {
    let pad = "p".repeat(17 << 20);
    let body = format!(
        r#"{{"toolName":"conform","toolCallId":"big-1","args":{{"tag":"big-1","reply":{OK_REPLY},"pad":"{pad}"}}}}"#
    );
    bad(ctx, "big-1", move |d| publish(d, "big-1.req.json", body.as_bytes()).map(drop), Some("big-1"), Verdict::Ok)
}

fn symlinked(ctx: &Ctx) -> Graded {
    let target = ctx.scratch.join("outside.req.json");
    let body = request(Some("sym-1"), "sym-1", OK_REPLY, 0);
    let t = target.clone();
    let g = bad(
        ctx,
        "sym-1",
        move |d| {
            std::fs::write(&t, body)?;
            std::os::unix::fs::symlink(&t, d.join("sym-1.req.json"))
        },
        Some("sym-1"),
        Verdict::NonStrict,
    );
    if target.exists() {
        g
    } else {
        Graded::new(Verdict::Failed, "the file the link named, outside the relay dir, was deleted", g.evidence)
    }
}

fn hostile_ids(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let cut = format!("{}🦀z", "y".repeat(119));
    let ids: Vec<String> =
        vec!["astral-🦀-id".into(), cut, "../../etc/passwd".into(), "sp ace;$(rm -rf x)\n\"q\"".into(), String::new()];
    let mut calls: Vec<(String, String, String, Instant)> = ids
        .iter()
        .map(|id| {
            let (fid, tag, at) = ctx.call(id, OK_REPLY, 0);
            (id.clone(), fid, tag, at)
        })
        .collect();
    let no_id = publish(&ctx.dir, "no-id-1.req.json", &request(None, "no-id-1", OK_REPLY, 0))
        .unwrap_or_else(|_| Instant::now());
    calls.push((String::new(), "no-id-1".into(), "no-id-1".into(), no_id));
    let (mut wrong, mut mangled, mut evidence) = (Vec::new(), Vec::new(), Vec::new());
    for (id, fid, _, at) in &calls {
        match ctx.answer(fid, *at, Duration::from_secs(6)) {
            None => wrong.push(format!("{id:?}: no answer under {}", res_name(fid))),
            Some(_) => evidence.push(format!("{id:?} -> {}", res_name(fid))),
        }
    }
    std::thread::sleep(Duration::from_millis(150));
    let log = execs(&ctx.log);
    for (id, fid, tag, at) in &calls[..calls.len() - 1] {
        let got: Vec<_> = log.iter().filter(|e| e.tag.as_deref() == Some(tag)).collect();
        if got.len() != 1 || ctx.answers(fid, *at).len() > 1 {
            wrong.push(format!("{id:?}: run {} time(s)", got.len()));
        } else if got[0].id.as_deref() != Some(id) {
            mangled.push(format!("{id:?}: the tool got {:?}", got[0].id));
        }
    }
    let stray: Vec<String> = super::left_in(&ctx.dir)
        .into_iter()
        .filter(|n| n.ends_with(".res.json") && !n.starts_with(PROBE) && !calls.iter().any(|c| res_name(&c.1) == *n))
        .collect();
    if !stray.is_empty() {
        wrong.push(format!("answers under other names: {stray:?}"));
    }
    for c in &calls {
        ctx.done_with(&c.1);
    }
    evidence.truncate(3);
    evidence.extend(wrong.iter().chain(&mangled).cloned());
    if !wrong.is_empty() {
        Graded::new(Verdict::Failed, "a hostile id was not answered once under its file id", evidence)
    } else if !mangled.is_empty() {
        Graded::new(Verdict::NonStrict, "answered, but the tool got a changed call id", evidence)
    } else {
        Graded::new(
            Verdict::Ok,
            "every hostile id answered once under its file id, the tool got it unchanged",
            evidence,
        )
    }
}

fn id_collision(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let (fid, tag1, at) = ctx.call("coll/1", OK_REPLY, 0);
    let first = ctx.answer(&fid, at, Duration::from_secs(5)).is_some();
    ctx.done_with(&fid);
    let (_, tag2, _) = ctx.call("coll:1", OK_REPLY, 0);
    let _ = ctx.follow_up();
    std::thread::sleep(Duration::from_millis(300));
    let evidence = vec![
        format!("file id {fid:?}; `coll/1` answered: {first}, run {} time(s)", ctx.runs(&tag1).len()),
        format!("`coll:1` published under the same name after it: run {} time(s)", ctx.runs(&tag2).len()),
        left_line(&ctx.dir),
    ];
    ctx.done_with(&fid);
    Graded::new(
        Verdict::Informational,
        "a runner cannot tell two ids that sanitize alike apart; the writer must refuse the second",
        evidence,
    )
}

fn slow_publication(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let body = request(Some("slow-1"), "slow-1", OK_REPLY, 0);
    let tmp = ctx.dir.join("slow-1.req.json.tmp.conform-slow");
    let written = (|| -> std::io::Result<Instant> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        for chunk in body.chunks(body.len().div_ceil(4)) {
            f.write_all(chunk)?;
            f.sync_data()?;
            std::thread::sleep(Duration::from_millis(200));
        }
        let at = Instant::now();
        std::fs::rename(&tmp, ctx.dir.join("slow-1.req.json"))?;
        Ok(at)
    })();
    let renamed = match written {
        Ok(t) => t,
        Err(e) => return Graded::new(Verdict::Failed, format!("cannot set the case up: {e}"), vec![]),
    };
    let got = ctx.answer("slow-1", renamed, Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(150));
    let runs = ctx.runs("slow-1");
    let stray: Vec<String> = super::left_in(&ctx.dir)
        .into_iter()
        .filter(|n| n.ends_with(".res.json") && n != "slow-1.res.json" && !n.starts_with(PROBE))
        .collect();
    let mut evidence = vec![
        format!("tool runs: {}; answers: {}", runs.len(), ctx.answers("slow-1", renamed).len()),
        left_line(&ctx.dir),
    ];
    ctx.done_with("slow-1");
    if let Some(a) = &got {
        evidence.push(format!("answered {} after the rename", ms(a.at - renamed)));
    }
    if runs.iter().any(|t| *t < renamed) {
        return Graded::new(Verdict::Failed, "run before its rename: a temp name was read as a request", evidence);
    }
    if runs.len() != 1 || got.is_none() || !stray.is_empty() {
        evidence.push(format!("answers under other names: {stray:?}"));
        return Graded::new(Verdict::Failed, "not run and answered exactly once after the rename", evidence);
    }
    Graded::new(Verdict::Ok, "run once, after the rename", evidence)
}

fn dir_recreated(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let (fid, _, at) = ctx.call("before-1", OK_REPLY, 0);
    if ctx.answer(&fid, at, Duration::from_secs(5)).is_none() {
        return Graded::new(Verdict::Failed, "the first call was not answered", vec![]);
    }
    ctx.done_with(&fid);
    let _ = std::fs::remove_dir_all(&ctx.dir);
    if let Err(e) = std::fs::create_dir(&ctx.dir) {
        return Graded::new(Verdict::Failed, format!("cannot make the dir again: {e}"), vec![]);
    }
    ctx.obs.rearm(&ctx.dir);
    let (fid, _, at) = ctx.call("after-1", OK_REPLY, 0);
    let got = ctx.answer(&fid, at, Duration::from_secs(8));
    let mut evidence = vec![left_line(&ctx.dir)];
    ctx.done_with(&fid);
    match got {
        Some(e) if e.at - at <= Duration::from_secs(3) => {
            evidence.push(format!("answered {} after publication in the new dir", ms(e.at - at)));
            Graded::new(Verdict::Ok, "served the new dir", evidence)
        }
        Some(e) => {
            evidence.push(format!("answered {} after publication in the new dir", ms(e.at - at)));
            Graded::new(Verdict::NonStrict, "served the new dir, slowly", evidence)
        }
        None if !ctx.alive() => Graded::new(Verdict::Failed, "the runner exited", evidence),
        None => Graded::new(Verdict::Failed, "no call answered in the new dir within 8 s", evidence),
    }
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v.get(((v.len() as f64 - 1.0) * p).round() as usize).copied().unwrap_or_default()
}

fn wake_latency(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    let (mut pickup, mut answer) = (Vec::new(), Vec::new());
    for i in 0..10 {
        std::thread::sleep(Duration::from_millis(100));
        let (fid, _, at) = ctx.call(&format!("wake-{i}"), OK_REPLY, 0);
        if let Some(a) = ctx.answer(&fid, at, Duration::from_secs(3)) {
            answer.push(a.at - at);
        }
        let req = req_name(&fid);
        if let Some(o) = ctx.obs.events().iter().find(|e| e.at >= at && e.name == req && e.what == What::Opened) {
            pickup.push(o.at - at);
        }
        ctx.done_with(&fid);
    }
    let (n, m) = (pickup.len(), answer.len());
    let evidence = vec![
        format!(
            "pickup (request first opened): p50 {} max {} over {n} calls",
            ms(pct(&mut pickup, 0.5)),
            ms(pct(&mut pickup, 1.0))
        ),
        format!(
            "answer published: p50 {} max {} over {m} calls (the tool is a process start)",
            ms(pct(&mut answer, 0.5)),
            ms(pct(&mut answer, 1.0))
        ),
    ];
    Graded::new(Verdict::Informational, format!("pickup p50 {}", ms(pct(&mut pickup, 0.5))), evidence)
}

fn idle_rate(ctx: &Ctx) -> Graded {
    early!(ctx.ready());
    std::thread::sleep(Duration::from_millis(200));
    let from = Instant::now();
    let window = Duration::from_secs(5);
    std::thread::sleep(window);
    let lists =
        ctx.obs.events().iter().filter(|e| e.at >= from && e.at < from + window && e.what == What::Listed).count();
    let per_min = lists as f64 * 60.0 / window.as_secs_f64();
    Graded::new(
        Verdict::Informational,
        format!("{per_min:.0} lists/min idle"),
        vec![format!("{lists} opens of the relay dir in {} while no call came", ms(window))],
    )
}
