//! The writer battery: relay-bench is the runner, the implementation under test the writer.
//!
//! A writer is started once per call (`{dir}`, `{tool}`, `{id}`, `{args}`, `{timeout_ms}`)
//! and is expected to publish the request, wait for the answer, delete both files, print
//! the answer it read on stdout as a response's JSON (one line) and exit. Printing no answer
//! and exiting non-zero is how it reports an error. Each case plays the runner's part (reads
//! the request, deletes it, publishes an answer) as the case needs, and grades the request's
//! bytes, what the writer printed, its timing and what it left in the dir. At every case's
//! end the record is checked for a request published again after the battery picked it up.

use std::cell::RefCell;
use std::path::Path;
use std::time::{Duration, Instant};

use super::observe::{Ev, What};
use super::pace::Pace;
use super::proc::{Place, Proc};
use super::{left_in, left_line, ms, publish, rm, try_g, Case, ConformOptions, Graded, Halt, World, MAX_BOUND};
use crate::base::protocol::{req_name, res_name, sanitize_id, FileKind, Response};
use crate::results::conform::Verdict;

mod cases;
mod ids;

use cases::*;
use ids::*;

/// The golden request of SPEC §2, byte for byte.
pub(crate) const GOLDEN: &[u8] = include_bytes!("../../../../tests/fixtures/request.golden.json");

/// The tool timeout every call but the deadline cases' is made with: long enough that a
/// writer whose deadline is wrong fails only the deadline case, even on a loaded machine.
const TIMEOUT_MS: u64 = 8000;

pub struct Ctx {
    w: World,
    /// The requests the battery took (deleted, as a runner's pickup does), and when.
    picked: RefCell<Vec<(String, Instant)>>,
}

pub(crate) fn play(opts: &ConformOptions, pace: Pace, base: &Path, i: usize, stop: Halt) -> std::io::Result<Graded> {
    let ctx = Ctx { w: World::new(opts, pace, base, stop, FileKind::Request)?, picked: RefCell::new(Vec::new()) };
    let g = (CASES[i].play)(&ctx);
    Ok(match ctx.republished() {
        Some(again) if g.verdict != Verdict::Failed => again,
        _ => g,
    })
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
    /// Starts one writer call; `args` and `timeout_ms` absent leave their placeholders out.
    fn call(&self, id: &str, tool: &str, args: Option<&str>, timeout_ms: Option<u64>) -> Result<Call, Graded> {
        let (dir, timeout) = (self.w.dir.to_string_lossy(), timeout_ms.map(|t| t.to_string()));
        let places = [
            Place { name: "dir", var: "RELAY_DIR", value: Some(&dir) },
            Place { name: "tool", var: "RELAY_CALL_TOOL", value: Some(tool) },
            Place { name: "id", var: "RELAY_CALL_ID", value: Some(id) },
            Place { name: "args", var: "RELAY_CALL_ARGS", value: args },
            Place { name: "timeout_ms", var: "RELAY_CALL_TIMEOUT_MS", value: timeout.as_deref() },
        ];
        let proc = Proc::start(&self.w.command, &places)
            .map_err(|e| Graded::new(Verdict::Failed, format!("the writer never started: {e}"), vec![]))?;
        Ok(Call { id: id.to_owned(), proc })
    }

    /// Starts one writer call (as [`Ctx::call`]) and waits for its request, 5 s at this
    /// machine's pace: the call, and the request as it appeared if it did.
    fn begin(
        &self,
        id: &str,
        tool: &str,
        args: Option<&str>,
        timeout_ms: Option<u64>,
    ) -> Result<(Call, Option<Ev>), Graded> {
        let t0 = Instant::now();
        let call = self.call(id, tool, args, timeout_ms)?;
        let name = req_name(&sanitize_id(id));
        Ok((call, self.w.obs.wait_appeared(&name, t0, self.w.within(Duration::from_secs(5)))))
    }

    /// A plain call (args `{}`, the usual timeout) whose request must appear: the call and
    /// its request, or the grade for a request not published ([`Ctx::not_published`]).
    fn published(&self, id: &str, what: impl Into<String>) -> Result<(Call, Ev), Graded> {
        match self.begin(id, "conform", Some("{}"), Some(TIMEOUT_MS))? {
            (call, Some(req)) => Ok((call, req)),
            (mut call, None) => Err(self.not_published(&mut call, what, vec![left_line(&self.w.dir)])),
        }
    }

    /// A request `call` was to publish, not seen: FAILED when the writer ended on its own
    /// without it (an exit is no slowness of this machine, as a runner that exits is graded
    /// on the runner side), else [`super::World::unseen`] (INCONCLUSIVE when the machine was
    /// too slow to tell).
    fn not_published(&self, call: &mut Call, what: impl Into<String>, evidence: Vec<String>) -> Graded {
        // Still running: given what is left of the case's bound to publish (a machine loaded
        // after its pace was measured runs it slower than any wait scaled by that pace).
        let name = req_name(&sanitize_id(&call.id));
        let end = Instant::now() + self.w.within(MAX_BOUND);
        while Instant::now() < end && call.proc.exited().is_none() {
            if self.w.obs.wait_appeared(&name, call.proc.started, Duration::from_millis(50)).is_some() {
                break;
            }
        }
        if let Some(late) = self.late(&call.id, call.proc.started) {
            return late;
        }
        match call.proc.exited() {
            Some(code) => exited_unpublished(code, what, evidence),
            None => self.w.unseen(what, evidence),
        }
    }

    /// When the request of `id` appeared after the wait for it had ended (the record holds
    /// it): the writer published, more slowly than this machine's pace allowed for: a loaded
    /// machine's doing, not the writer's fault. INCONCLUSIVE, saying how late.
    fn late(&self, id: &str, since: Instant) -> Option<Graded> {
        let name = req_name(&sanitize_id(id));
        let seen = self.w.obs.events().into_iter().find(|e| e.at >= since && e.name == name && e.bytes.is_some())?;
        Some(Graded::new(
            Verdict::Inconclusive,
            format!(
                "{name} appeared only {} after the writer started, after the wait for it",
                super::ms(seen.at - since)
            ),
            vec!["the writer published, more slowly than this machine's measured pace allowed for".into()],
        ))
    }

    /// The runner's pickup: the request deleted (it was read, by the observer).
    fn pick(&self, id: &str) {
        rm(&self.w.dir.join(req_name(id)));
        self.picked.borrow_mut().push((id.to_owned(), Instant::now()));
    }

    /// The runner's part: the request read (it was, by the observer) and deleted, `answer`
    /// published.
    fn answer(&self, id: &str, answer: &[u8], delete: bool) -> Instant {
        if delete {
            self.pick(id);
        }
        publish(&self.w.dir, &res_name(id), answer).unwrap_or_else(|_| Instant::now())
    }

    fn clear(&self) {
        for n in left_in(&self.w.dir) {
            rm(&self.w.dir.join(n));
        }
    }

    /// A request the battery picked up that came back: the writer published it again.
    fn republished(&self) -> Option<Graded> {
        let evs = self.w.obs.events();
        let again: Vec<String> = self
            .picked
            .borrow()
            .iter()
            .filter_map(|(id, at)| {
                let name = req_name(id);
                evs.iter()
                    .find(|e| e.at > *at && e.name == name && matches!(e.what, What::MovedIn { .. } | What::Created))
                    .map(|e| format!("{name} published again {} after the battery picked it up", ms(e.at - *at)))
            })
            .collect();
        (!again.is_empty()).then(|| {
            Graded::new(
                Verdict::Failed,
                "a request was published again after the runner picked it up: it would run twice",
                again,
            )
        })
    }
}

/// A writer that exited (`code`) without publishing its request: FAILED.
fn exited_unpublished(code: Option<i32>, what: impl Into<String>, mut evidence: Vec<String>) -> Graded {
    let how = code.map_or_else(|| "by a signal".to_owned(), |c| format!("with code {c}"));
    evidence.push(format!("the writer exited {how} without publishing its request"));
    Graded::new(Verdict::Failed, format!("{}: the writer exited without publishing it", what.into()), evidence)
}

/// Every writer case, in the order they run.
pub const CASES: &[Case<Ctx>] = &[
    Case { name: "request-bytes", section: "§2", expectation: "the request is `<id>.req.json` holding exactly {\"toolName\":..,\"toolCallId\":..,\"args\":..} in that key order, args in theirs (the golden fixture)", play: request_bytes },
    Case { name: "request-args-default", section: "§2", expectation: "a call without args (`{args}` left out, $RELAY_CALL_ARGS unset) is published with \"args\":{}", play: args_default },
    Case { name: "request-atomic", section: "§2", expectation: "the request is written under a `.tmp.` name in the relay dir and renamed onto its final name", play: request_atomic },
    Case { name: "answer-ok", section: "§2", expectation: "{\"ok\":true,\"text\":…} is read as a success with its text", play: |c| shape(c, "w-ok-1", Response::Ok("conform ✓ \"quoted\"\nline 2".into())) },
    Case { name: "answer-error", section: "§2", expectation: "{\"ok\":false,\"error\":…} is read as a failure with its error", play: |c| shape(c, "w-error-1", Response::Error("tool failed: ✗".into())) },
    Case { name: "answer-pause", section: "§2", expectation: "{\"ok\":true,\"paused\":true} is read as a pause (`paused` checked before `ok`), never an empty success", play: |c| shape(c, "w-pause-1", Response::Paused) },
    Case { name: "answer-malformed", section: "§2", expectation: "an answer that is not JSON is an error, never an empty success", play: |c| answered(c, "w-malformed-1", br#"{"ok":tru"#, must_error) },
    Case { name: "answer-without-ok", section: "§2", expectation: "an answer with no boolean `ok` is an error, never an empty success", play: |c| answered(c, "w-no-ok-1", br#"{"text":"no ok field"}"#, must_error) },
    Case { name: "late-answer", section: "§2, §3", expectation: "an answer published 1.5 s after the runner picked the request up is read; the request is not published again meanwhile", play: late_answer },
    Case { name: "cleanup-after-answer", section: "§2", expectation: "after an answer the writer deletes both files (the request too, when the runner's delete failed)", play: |c| cleanup(c, "w-clean-1", Response::Ok("x".into())) },
    Case { name: "cleanup-after-pause", section: "§2", expectation: "after a pause answer the writer deletes both files too", play: |c| cleanup(c, "w-clean-pause-1", Response::Paused) },
    Case { name: "temp-ignored", section: "§2", expectation: "a complete answer under a `.tmp.` name is ignored; the answer renamed onto the final name is the one read", play: temp_ignored },
    Case { name: "stale-answer", section: "§2", expectation: "an answer already under the call's id before it starts is stale: never returned for the fresh call", play: stale_answer },
    Case { name: "hostile-ids", section: "§2, §8", expectation: "ids with an astral character, path parts, shell metacharacters and a newline, a 120-unit cut inside a surrogate pair, and an empty id are each published under their file id (SPEC §2's sanitization), toolCallId unchanged, and told their answer", play: hostile_ids },
    Case { name: "id-collision", section: "§2", expectation: "a call whose id sanitizes like one in flight (`coll:1` while `coll/1` waits) is refused: it publishes nothing and never tells the other's answer", play: id_collision },
    Case { name: "deadline", section: "§2", expectation: "with no answer, the writer gives up at the tool's timeout + 10 s (here 10.1 s) and removes its request", play: deadline },
    Case { name: "deadline-no-timeout", section: "§2", expectation: "a call without a timeout (`{timeout_ms}` left out) waits 60 s: still waiting 12.5 s after publishing its request, it reads the answer published then", play: deadline_no_timeout },
    Case { name: "parallel-8", section: "§7", expectation: "8 parallel calls, answered one at a time in reverse order, each get their own answer; a decoy answer under an id no call has is left alone", play: parallel_8 },
    Case { name: "answer-latency", section: "§4", expectation: "figure: answer published -> the writer deleted it (its read), over 5 calls", play: answer_latency },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_golden_fixture_is_the_golden_request_of_the_protocol() {
        let r = crate::base::protocol::Request::new("x", "call-1", Some(r#"{"b":2,"a":"1"}"#)).unwrap();
        assert_eq!(r.encode(), GOLDEN);
    }
}
