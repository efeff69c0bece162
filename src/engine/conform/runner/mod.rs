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

use super::observe::{Ev, Observer};
use super::{execs, handler_script, instant_of, left_line, ms, publish, rm, Case, ConformOptions, Graded, Place, Proc};
use crate::base::protocol::{req_name, res_name, sanitize_id};
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

pub(crate) fn play(opts: &ConformOptions, base: &Path, i: usize) -> std::io::Result<Graded> {
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
    fn follow_up(&self) -> Result<Duration, Unanswered> {
        let (fid, _, at) = self.call(&format!("follow-up-{}", self.seq.load(Ordering::Relaxed)), OK_REPLY, 0);
        let got = self.answer(&fid, at, Duration::from_secs(6));
        self.done_with(&fid);
        match got {
            Some(e) => Ok(e.at - at),
            None if !self.alive() => Err(Unanswered::Exited),
            None => Err(Unanswered::Stopped),
        }
    }
}

/// Why a follow-up call got no answer: evidence for the case's grade.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum Unanswered {
    #[error("the runner exited")]
    Exited,
    #[error("a follow-up call published after it was not answered: the runner stopped answering")]
    Stopped,
}

/// The probe calls' ids: `conform-probe-N`.
const PROBE: &str = "conform-probe-";

/// The plain answer. Every text the battery asks the tool for is canonical JSON (as
/// `JSON.stringify` writes it), so a runner whose tool results are JSON values carries it
/// through unchanged.
const OK_REPLY: &str = r#"{"ok":true,"text":"\"conform\""}"#;

/// The handler's reply for an ok answer whose text is `text`.
fn ok_reply(text: &str) -> String {
    serde_json::json!({"ok": true, "text": text}).to_string()
}

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

mod calls;
mod hostile;

use calls::*;
use hostile::*;

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
