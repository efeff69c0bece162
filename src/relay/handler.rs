//! The handler model: what the tool does once the runner picks a call up.
//!
//! A call's duration and outcome are drawn from a seeded generator keyed by the call id,
//! so the same scenario gives every call the same plan whatever order the calls run in.

use std::time::Duration;

use crate::base::clock;
use crate::base::protocol::{Outcome, Response};
use crate::base::rng::Rng;

/// The tool a runner calls: how long it runs, how often it fails or pauses, what it answers.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerModel {
    /// Shortest handler time.
    pub duration: Duration,
    /// Longest handler time (uniform between the two); equal to `duration` for a fixed time.
    pub duration_max: Duration,
    /// Share of calls answered `{"ok":false,...}`.
    pub error_ratio: f64,
    /// Share of calls answered `{"ok":true,"paused":true}`.
    pub pause_ratio: f64,
    /// Size of the answer text of an ok call.
    pub payload_bytes: usize,
    /// Seeds the per-call draws, so a run is repeatable.
    pub seed: u64,
    /// A program run as the tool instead ([`run_command`]): the modelled time and mix are
    /// then unused (`serve --handler-command`).
    pub command: Option<std::path::PathBuf>,
    /// How long [`run_command`] lets the program run before it kills it.
    pub command_timeout: Duration,
}

/// How long a handler command runs before it is killed, unless told otherwise: the
/// writer's deadline for a call without a tool timeout (SPEC §2), after which nobody waits
/// for the answer.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The most a handler command may print as its answer.
pub(crate) const COMMAND_MAX_ANSWER: u64 = 16 << 20;

impl Default for HandlerModel {
    fn default() -> Self {
        HandlerModel {
            duration: Duration::from_millis(2),
            duration_max: Duration::from_millis(2),
            error_ratio: 0.0,
            pause_ratio: 0.0,
            payload_bytes: 128,
            seed: 1,
            command: None,
            command_timeout: COMMAND_TIMEOUT,
        }
    }
}

/// What the handler will do for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub duration: Duration,
    pub outcome: Outcome,
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

impl HandlerModel {
    /// What the handler does for `call_id`: drawn from the seed and the id alone.
    pub fn plan(&self, call_id: &str) -> Plan {
        let mut rng = Rng::new(self.seed ^ fnv1a(call_id));
        let span = self.duration_max.saturating_sub(self.duration);
        let duration = self.duration + span.mul_f64(rng.unit());
        let x = rng.unit();
        let outcome = if x < self.error_ratio {
            Outcome::Error
        } else if x < self.error_ratio + self.pause_ratio {
            Outcome::Paused
        } else {
            Outcome::Ok
        };
        Plan { duration, outcome }
    }

    /// The answer for a plan.
    pub(crate) fn respond(&self, call_id: &str, outcome: Outcome) -> Response {
        match outcome {
            Outcome::Ok => Response::Ok(filler(self.payload_bytes)),
            Outcome::Error => Response::Error(format!("simulated tool failure for {call_id}")),
            Outcome::Paused => Response::Paused,
        }
    }
}

/// Runs `program` as the tool of one call: the request's bytes on its stdin (written while
/// its stdout is read, so a program that answers as it reads never deadlocks on a full
/// pipe), its stdout read as the answer (at most [`COMMAND_MAX_ANSWER`] bytes). It runs in
/// a process group of its own, killed whole when it ends, after `timeout`, or when this
/// future is dropped (a runner stopped): nothing it started outlives the call. A program
/// that cannot start, fails, times out, or prints no response's JSON is answered
/// `{"ok":false,...}` saying so.
pub(crate) async fn run_command(program: &std::path::Path, request: &[u8], timeout: Duration) -> Response {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let child = tokio::process::Command::new(program)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return Response::Error(format!("the handler command {} cannot start: {e}", program.display())),
    };
    let _group = child.id().map(|pid| KilledGroup(crate::base::fsio::OwnGroup::register(pid as i32)));
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let feed = async move {
        if let Some(mut stdin) = stdin {
            // A program that stops reading early is its own business: its answer decides.
            let _ = stdin.write_all(request).await;
        }
    };
    let read = async move {
        let mut out = Vec::new();
        match stdout {
            Some(s) => s.take(COMMAND_MAX_ANSWER + 1).read_to_end(&mut out).await.map(|_| out),
            None => Ok(out),
        }
    };
    let run = async {
        let ((), out) = tokio::join!(feed, read);
        let out = out?;
        if out.len() as u64 > COMMAND_MAX_ANSWER {
            return Ok(Err(format!("the handler command printed more than {COMMAND_MAX_ANSWER} bytes")));
        }
        child.wait().await.map(|status| Ok((status, out)))
    };
    match clock::timeout(timeout, run).await {
        Err(_) => Response::Error(format!(
            "the handler command {} did not finish in {}: killed",
            program.display(),
            crate::base::units::human(timeout)
        )),
        Ok(Err(e)) => Response::Error(format!("the handler command failed: {e}")),
        Ok(Ok(Err(why))) => Response::Error(why),
        Ok(Ok(Ok((status, out)))) if status.success() => Response::decode(out.trim_ascii())
            .unwrap_or_else(|e| Response::Error(format!("the handler command printed no response: {e}"))),
        Ok(Ok(Ok((status, _)))) => Response::Error(format!("the handler command failed ({status})")),
    }
}

/// A handler command's process group, SIGKILLed when the call is done with it.
struct KilledGroup(crate::base::fsio::OwnGroup);

impl Drop for KilledGroup {
    fn drop(&mut self) {
        self.0.kill();
    }
}

/// `n` bytes of printable filler.
pub(crate) fn filler(n: usize) -> String {
    "abcdefghijklmnopqrstuvwxyz0123456789".chars().cycle().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_deterministic_and_follow_the_mix() {
        let m = HandlerModel {
            duration: Duration::from_millis(1),
            duration_max: Duration::from_millis(9),
            error_ratio: 0.2,
            pause_ratio: 0.1,
            ..Default::default()
        };
        let mut counts = [0u32; 3];
        for i in 0..10_000 {
            let id = format!("call-{i}");
            let p = m.plan(&id);
            assert_eq!(p, m.plan(&id));
            assert!(p.duration >= Duration::from_millis(1) && p.duration <= Duration::from_millis(9));
            counts[p.outcome as usize] += 1;
        }
        assert!((1500..2500).contains(&counts[Outcome::Error as usize]), "{counts:?}");
        assert!((700..1300).contains(&counts[Outcome::Paused as usize]), "{counts:?}");
    }

    #[test]
    fn ok_payload_has_the_configured_size() {
        let m = HandlerModel { payload_bytes: 1000, ..Default::default() };
        match m.respond("c", Outcome::Ok) {
            Response::Ok(t) => assert_eq!(t.len(), 1000),
            r => panic!("{r:?}"),
        }
    }
}
