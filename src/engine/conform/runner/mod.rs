//! The runner battery: relay-bench is the writer, the implementation under test the runner.
//!
//! Each case makes a fresh relay dir, starts the runner (`{dir}`, `{handler}`), waits until
//! it answers a probe call (re-sent after 100, 200 and 400 ms, then every 500 ms, so a
//! start-up sweep cannot eat the only one), plays its calls and grades what the dir and the
//! handler's log show. A call is a request for tool `conform` whose args carry a `tag` (what
//! the handler logs), the `reply` the handler prints, and a `sleep_ms`. "Seen by the runner"
//! is decided by a follow-up call: once a call published after a file is answered, the
//! runner has listed past that file.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime};

use super::handler::{execs, handler_script, instant_of, Exec};
use super::observe::Ev;
use super::pace::Pace;
use super::proc::{poll, Place, Proc};
use super::{left_line, ms, publish, rm, setup_failed, Case, ConformOptions, Graded, Halt, World};
use crate::base::indir::InDir;
use crate::base::protocol::{req_name, res_name, sanitize_id, FileKind, Response};
use crate::results::conform::Verdict;

/// How long a case is watched after its grade for a second answer or a second run (at an
/// unloaded machine's pace).
const QUIET: Duration = Duration::from_secs(1);

/// A request the battery published: its file id, the tag its tool run logs (if it is a call)
/// and when.
struct Published {
    fid: String,
    tag: Option<String>,
    at: Instant,
}

/// A runner case's world.
pub struct Ctx {
    w: World,
    log: PathBuf,
    handler: PathBuf,
    pair: (Instant, SystemTime),
    proc: RefCell<Option<Proc>>,
    seq: AtomicU32,
    published: RefCell<Vec<Published>>,
    /// The daemon the runner reaches its dir through, and its URL.
    daemon: Option<remote::CaseDaemon>,
}

pub(crate) fn play(opts: &ConformOptions, pace: Pace, base: &Path, i: usize, stop: Halt) -> std::io::Result<Graded> {
    let w = World::new(opts, pace, base, stop, FileKind::Response)?;
    let log = w.scratch.join("handler.log");
    let handler = w.scratch.join("handler");
    handler_script(&opts.handler_program, &log, &handler)?;
    let daemon = opts.daemon.as_ref().map(remote::CaseDaemon::up).transpose()?;
    let ctx = Ctx {
        w,
        log,
        handler,
        pair: (Instant::now(), SystemTime::now()),
        proc: RefCell::new(None),
        seq: AtomicU32::new(0),
        published: RefCell::new(Vec::new()),
        daemon,
    };
    let mut g = (CASES[i].play)(&ctx);
    if g.verdict != Verdict::Failed && ctx.started() {
        g = ctx.settle().unwrap_or(g);
    }
    if g.verdict == Verdict::Failed {
        if let Some(tail) = ctx.stderr_tail().filter(|t| !g.evidence.contains(t)) {
            g.evidence.push(tail);
        }
    }
    if let Some(p) = ctx.proc.borrow().as_ref() {
        let (out, err) = p.printed();
        if out > super::proc::STDOUT_CAP as u64 || err > super::proc::STDERR_CAP as u64 {
            g.evidence.push(format!(
                "the runner printed {out} bytes on stdout, {err} on stderr (kept: their first 1 MiB, last 64 KiB)"
            ));
        }
    }
    Ok(g)
}

impl Ctx {
    fn started(&self) -> bool {
        self.proc.borrow().is_some()
    }

    /// Whether the runner has exited; its exit code then.
    fn exit_code(&self) -> Option<Option<i32>> {
        self.proc.borrow_mut().as_mut().and_then(Proc::exited)
    }

    fn stderr_tail(&self) -> Option<String> {
        self.proc.borrow().as_ref().and_then(Proc::stderr_tail)
    }

    /// Starts the runner and waits until it answers a probe; the start-up time.
    fn start(&self) -> Result<Duration, Graded> {
        let (dir, handler) = (self.w.dir.to_string_lossy(), self.handler.to_string_lossy());
        let places = [
            Place { name: "dir", var: "RELAY_DIR", value: Some(&dir) },
            Place { name: "handler", var: "RELAY_CONFORM_HANDLER", value: Some(&handler) },
            Place { name: "url", var: "RELAY_SANDBOX_URL", value: self.daemon.as_ref().map(|d| d.url.as_str()) },
        ];
        let proc = Proc::start(&self.w.command, &places)
            .map_err(|e| Graded::new(Verdict::Failed, format!("the runner never started: {e}"), vec![]))?;
        let t0 = proc.started;
        *self.proc.borrow_mut() = Some(proc);
        let mut k = 0;
        let mut ready = None;
        while t0.elapsed() < self.w.bound && ready.is_none() && !self.w.halted() {
            k += 1;
            let id = format!("{PROBE}{k}");
            let body = request(Some(&id), &format!("probe-{k}"), OK_REPLY, 0);
            let at = publish(&self.w.dir, &req_name(&id), &body).map_err(|e| setup_failed(&e))?;
            self.published.borrow_mut().push(Published { fid: id.clone(), tag: None, at });
            // Re-sent soon at first (a start-up sweep eats the probes before it), then every 500 ms.
            let until = at + self.w.pace.wait(Duration::from_millis((100u64 << (k - 1).min(3)).min(500)));
            while Instant::now() < until && ready.is_none() {
                ready = (1..=k).find(|j| {
                    self.w.obs.events().iter().any(|e| e.name == res_name(&format!("{PROBE}{j}")) && e.bytes.is_some())
                });
                if ready.is_some() {
                    break;
                }
                // The exit code is read first: the borrow ends before the evidence borrows again.
                let exited = self.exit_code();
                if let Some(code) = exited {
                    let mut ev = vec![format!("exit code {code:?}, {} after it started", ms(t0.elapsed()))];
                    ev.extend(self.stderr_tail());
                    return Err(Graded::new(Verdict::Failed, "the runner exited before answering a probe call", ev));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        let Some(answered) = ready else {
            let mut ev = vec![left_line(&self.w.dir)];
            ev.extend(self.stderr_tail());
            return Err(self
                .w
                .unseen(format!("no probe call answered in {} (the case's bound)", ms(self.w.bound)), ev));
        };
        let startup = t0.elapsed();
        // Probes still in flight are answered or withdrawn, so the case starts clean: one
        // the runner picked up is waited for (a second at most), one it did not is removed.
        // One gone before the answered probe was published whose tool has not run by now was
        // swept at start-up, unrun: no answer is coming, so none is waited for.
        let answered_at = self.published.borrow().iter().find(|p| p.fid == format!("{PROBE}{answered}")).map(|p| p.at);
        for j in 1..=k {
            let id = format!("{PROBE}{j}");
            let (req, res) = (self.w.dir.join(req_name(&id)), self.w.dir.join(res_name(&id)));
            let gone = self.w.obs.wait_gone(&req_name(&id), t0, Duration::ZERO);
            let swept =
                gone.zip(answered_at).is_some_and(|(g, a)| g < a) && self.runs(&format!("probe-{j}")).is_empty();
            rm(&req);
            if gone.is_some() && !swept && !res.exists() {
                let _ = self.w.obs.wait_appeared(&res_name(&id), t0, self.w.pace.wait(Duration::from_secs(1)));
            }
            rm(&res);
        }
        self.w.begun.set(Instant::now());
        Ok(startup)
    }

    /// Publishes a call; its file id, tag and the moment of the rename.
    fn call(&self, id: &str, reply: &str, sleep_ms: u64) -> (String, String, Instant) {
        let tag = format!("{id}#{}", self.seq.fetch_add(1, Ordering::Relaxed));
        let file_id = sanitize_id(id);
        let at = self
            .put(&file_id, Some(&tag), &request(Some(id), &tag, reply, sleep_ms))
            .unwrap_or_else(|_| Instant::now());
        (file_id, tag, at)
    }

    /// Publishes `bytes` as the request of `fid`, kept for the check at the case's end.
    fn put(&self, fid: &str, tag: Option<&str>, bytes: &[u8]) -> std::io::Result<Instant> {
        if self.w.halted() {
            return Err(std::io::Error::other("the battery stopped"));
        }
        let at = publish(&self.w.dir, &req_name(fid), bytes)?;
        self.published.borrow_mut().push(Published { fid: fid.to_owned(), tag: tag.map(str::to_owned), at });
        Ok(at)
    }

    /// Keeps a request the case made itself (a link, a FIFO, a slow publication) for the
    /// check at the case's end.
    fn note(&self, fid: &str, tag: Option<&str>, at: Instant) {
        let mut p = self.published.borrow_mut();
        match p.iter_mut().find(|p| p.fid == fid && p.at >= at) {
            Some(known) => known.tag = known.tag.take().or_else(|| tag.map(str::to_owned)),
            None => p.push(Published { fid: fid.to_owned(), tag: tag.map(str::to_owned), at }),
        }
    }

    fn answer(&self, file_id: &str, since: Instant, wait: Duration) -> Option<Ev> {
        self.w.obs.wait_appeared(&res_name(file_id), since, self.w.within(wait))
    }

    /// Every appearance of an answer under `file_id` since `since`.
    fn answers(&self, file_id: &str, since: Instant) -> Vec<Ev> {
        let name = res_name(file_id);
        self.w.obs.events().into_iter().filter(|e| e.at >= since && e.name == name && e.bytes.is_some()).collect()
    }

    /// The writer's part after an answer: both files removed.
    fn done_with(&self, file_id: &str) {
        rm(&self.w.dir.join(req_name(file_id)));
        rm(&self.w.dir.join(res_name(file_id)));
    }

    /// The handler's runs of a tag, with their start.
    fn runs(&self, tag: &str) -> Vec<Instant> {
        self.runs_in(&execs(&self.log), tag)
    }

    /// The runs of a tag in a log already read.
    fn runs_in(&self, log: &[Exec], tag: &str) -> Vec<Instant> {
        log.iter().filter(|e| e.tag.as_deref() == Some(tag)).map(|e| instant_of(e.t_ns, self.pair)).collect()
    }

    fn wait_run(&self, tag: &str, wait: Duration) -> Option<Instant> {
        poll(self.w.within(wait), || self.runs(tag).first().copied())
    }

    fn alive(&self) -> bool {
        self.exit_code().is_none() && self.started()
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

    /// The follow-up's failure as a grade: the runner exited (FAILED), or was not seen to
    /// answer in time ([`World::unseen`]).
    fn stopped(&self, why: Unanswered, reason: &str, mut evidence: Vec<String>) -> Graded {
        evidence.push(why.to_string());
        match why {
            Unanswered::Exited => Graded::new(Verdict::Failed, reason, evidence),
            Unanswered::Stopped => self.w.unseen(reason, evidence),
        }
    }

    /// Watches a quiet while more for a second answer or a second run of anything the case
    /// published; the grade that says so, if one came.
    fn settle(&self) -> Option<Graded> {
        std::thread::sleep(self.w.pace.wait(QUIET).min(self.w.bound));
        let published = self.published.borrow();
        let first = published.iter().map(|p| p.at).min()?;
        let (mut wrong, log) = (Vec::new(), execs(&self.log));
        for p in published.iter() {
            if let Some(tag) = &p.tag {
                let runs = self.runs_in(&log, tag);
                if runs.len() > 1 {
                    let gap = runs[1].saturating_duration_since(runs[0]);
                    wrong.push(format!(
                        "{}: its tool ran {} times, the second {} after the first",
                        p.fid,
                        runs.len(),
                        ms(gap)
                    ));
                }
            }
        }
        let mut fids: Vec<&str> = published.iter().map(|p| p.fid.as_str()).collect();
        fids.sort();
        fids.dedup();
        for fid in fids {
            let times = published.iter().filter(|p| p.fid == fid).count();
            let answers = self.answers(fid, first);
            if answers.len() > times {
                let gap = answers[times].at.saturating_duration_since(answers[times - 1].at);
                wrong.push(format!(
                    "{}: answered {} times for {times} request(s), the extra one {} after the one before",
                    res_name(fid),
                    answers.len(),
                    ms(gap)
                ));
            }
        }
        if wrong.is_empty() {
            return None;
        }
        let mut evidence = vec![format!("watched until {} after the grade", ms(self.w.pace.wait(QUIET)))];
        evidence.extend(wrong.into_iter().take(6));
        Some(Graded::new(Verdict::Failed, "a second answer or a second run came before the case's end", evidence))
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

mod calls;
mod figures;
mod hostile;
pub(crate) mod remote;

use calls::*;
use figures::*;
use hostile::*;

/// Every runner case, in the order they run.
pub const CASES: &[Case<Ctx>] = &[
    Case { name: "answer-ok", section: "§2", expectation: "a call whose tool succeeds is answered {\"ok\":true,\"text\":…} with the tool's text, under the call's file id, once", play: |c| shape(c, "shape-ok-1", &ok_reply(OK_TEXT), Response::Ok(OK_TEXT.into())) },
    Case { name: "answer-error", section: "§2", expectation: "a call whose tool fails is answered {\"ok\":false,\"error\":…} with the tool's error, once", play: |c| shape(c, "shape-error-1", r#"{"ok":false,"error":"tool failed: ✗"}"#, Response::Error("tool failed: ✗".into())) },
    Case { name: "answer-pause", section: "§2, §8", expectation: "a tool that parks is answered {\"ok\":true,\"paused\":true} (one integration) or not at all (production's default); never an ok answer", play: answer_pause },
    Case { name: "atomic-answers", section: "§2", expectation: "every answer is written under a `.tmp.` name in the relay dir and renamed onto its final name: no final name ever holds partial bytes", play: atomic_answers },
    Case { name: "delete-on-pickup", section: "§2, §8", expectation: "a request is deleted right after it is read, while its tool still runs", play: delete_on_pickup },
    Case { name: "stale-sweep", section: "§2, §8", expectation: "before its first pickup the runner removes stale requests, answers and their temp names, never running them; other files are untouched", play: stale_sweep },
    Case { name: "reused-id", section: "§8, §9", expectation: "a request under a file id already handled this turn is never run again", play: reused_id },
    Case { name: "parallel-1", section: "§7", expectation: "1 call in, 1 answer out, each its own, each run once", play: |c| parallel(c, 1) },
    Case { name: "parallel-8", section: "§7", expectation: "8 parallel calls in, 8 answers out, each its own, each run once", play: |c| parallel(c, 8) },
    Case { name: "parallel-64", section: "§7", expectation: "64 parallel calls in, 64 answers out, each its own, each run once", play: |c| parallel(c, 64) },
    Case { name: "malformed-request", section: "§8", expectation: "a request that is not JSON is answered {\"ok\":false} or left; never run, never answered twice, no crash", play: |c| bad(c, "bad-json", |c| c.put("bad-json", None, b"this is not { json"), None, Verdict::Failed) },
    Case { name: "truncated-request", section: "§8", expectation: "a request cut short is answered {\"ok\":false} or left; never run, never answered twice, no crash", play: truncated },
    Case { name: "non-utf8-request", section: "§2, §8", expectation: "a request whose bytes are not UTF-8 is answered {\"ok\":false} or left (NON-STRICT: run once, its bytes replaced); never twice, no crash", play: non_utf8 },
    Case { name: "oversized-request", section: "§8", expectation: "a 17 MiB request is run once, answered {\"ok\":false} or left; never twice, no crash", play: oversized },
    Case { name: "symlinked-request", section: "§8", expectation: "a request name that is a symbolic link to a file outside the dir is answered {\"ok\":false} or left (NON-STRICT: followed and run once); never twice, no crash", play: symlinked },
    Case { name: "fifo-request", section: "§8", expectation: "a FIFO under a request name is answered {\"ok\":false} or left; the runner does not block on it and still answers", play: |c| bad(c, "fifo-1", |c| InDir::open(&c.w.dir)?.mkfifo("fifo-1.req.json"), None, Verdict::Failed) },
    Case { name: "hostile-ids", section: "§2, §8", expectation: "calls whose ids hold astral characters, path parts, shell metacharacters, a 120-unit cut inside a surrogate pair, an empty id and no id are each answered under their file id; the tool gets the id unchanged", play: hostile_ids },
    Case { name: "id-collision", section: "§2", expectation: "two call ids that sanitize alike (`coll/1`, `coll:1`) share one file id: the writer must refuse the second; how often the runner runs them is reported", play: id_collision },
    Case { name: "slow-publication", section: "§2, §6", expectation: "a request whose temp name is written in chunks over 800 ms is run once, only after its rename", play: slow_publication },
    Case { name: "dir-recreated", section: "§6", expectation: "after the relay dir is deleted and made anew (a new inode), a call is answered within 3 s (NON-STRICT: within 8 s)", play: dir_recreated },
    Case { name: "wake-latency", section: "§4", expectation: "figures: request published -> first opened by the runner (pickup) and -> answer published, over 10 sequential calls", play: wake_latency },
    Case { name: "idle-list-rate", section: "§5", expectation: "figure: lists of the relay dir (opens of the dir) per minute while idle, over 5 s", play: idle_rate },
];
