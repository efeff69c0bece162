//! Publishing an answer. Production's loop tries once: a failed write or rename is dropped
//! (`writeResponse` swallows it) and the writer waits out its deadline. The suite's runner
//! does the same unless `answer_retry` asks it to hold the answer and try again on a bounded
//! schedule ([`retry_delay`]). A failure of this machine (a full disk, a read-only or failing
//! filesystem) is tried again either way and said as the machine's: the run's failure, not
//! the relay's (it never answers sooner, and never twice: a retry follows a publish that
//! failed, and the rename that publishes is atomic).

use std::time::Duration;

use tokio::time::Instant;

use crate::base::clock;
use crate::base::notice::Say;
use crate::relay::source::{backoff, Reporter};
use crate::sandbox::host::Host;

/// Tries of a failed answer publish after the first one, each after [`retry_delay`]'s delay:
/// 250 ms doubling to 4 s, 8 retries: about 20 s in all, inside the writer's deadline (a
/// tool's timeout + 10 s, 60 s without one).
const RETRIES: u32 = 8;

/// The delay before retry `n` (1-based).
fn retry_delay(n: u32) -> Duration {
    backoff(n, Duration::from_millis(250), Duration::from_secs(4))
}

/// Publishes `body` as `name` (the answer to `call`), retrying ([`RETRIES`] times,
/// [`retry_delay`] apart) every failure (`every_failure`: the loop's `answer_retry`) or only this
/// machine's; when it is out, the moment it was. `None`: it never was (every try failed,
/// said).
pub(crate) async fn publish_answer(
    host: &dyn Host,
    reporter: &Reporter,
    every_failure: bool,
    call: &str,
    name: &str,
    body: &[u8],
) -> Option<Instant> {
    let tries = RETRIES + 1;
    for n in 1..=tries {
        let (error, environment, permanent) = match host.publish(name, body).await {
            Ok(()) => return Some(clock::now()),
            Err(e) => (e.to_string(), crate::base::fsio::environment_failure(&e), crate::base::fsio::is_permanent(&e)),
        };
        let wait = retry_delay(n);
        // The machine's failure is said as such (one notice a failure either way).
        if let Some(why) = environment {
            let then = if n == tries {
                format!("; given up after {tries} tries, the call is unanswered")
            } else {
                format!("; retrying in {} (try {n} of {tries})", crate::base::units::human(wait))
            };
            let what = format!("the answer to {call:?} was not published");
            reporter.say(Say::Environment { what, why, error, then });
            if n == tries {
                return None;
            }
            clock::sleep(wait).await;
            continue;
        }
        if n == tries || permanent || !every_failure {
            reporter.say(Say::AnswerDropped { call: call.to_owned(), tries: n, error });
            return None;
        }
        reporter.say(Say::AnswerFailed { call: call.to_owned(), error, retry_in: wait, n, of: tries });
        clock::sleep(wait).await;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{EventSink, Msg};
    use crate::sandbox::dir::{RelayDir, SimDir, SimFault};
    use crate::sandbox::host::LocalHost;
    use std::sync::Arc;

    /// A local host over a read-only in-memory dir, with a reporter and its inbox.
    fn read_only() -> (LocalHost, Reporter, crate::events::EventInbox) {
        let sim = SimDir::new("/relay");
        let host = LocalHost::over(Arc::new(sim.clone()), Arc::default());
        let (sink, inbox) = EventSink::channel();
        sim.set_fault(SimFault::ReadOnly, true);
        (host, Reporter::new(sink, 0), inbox)
    }

    fn said(inbox: &mut crate::events::EventInbox) -> Vec<String> {
        let mut out = Vec::new();
        inbox.take(|m| {
            if let Msg::Notice(n) = m {
                out.push(n.what.to_string());
            }
        });
        out
    }

    #[test]
    fn retries_double_up_to_the_cap() {
        let d: Vec<u128> = (1..=8).map(|n| retry_delay(n).as_millis()).collect();
        assert_eq!(d, [250, 500, 1000, 2000, 4000, 4000, 4000, 4000]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_is_held_while_the_dir_is_read_only_or_full_and_published_when_it_heals() {
        for fault in [SimFault::ReadOnly, SimFault::DiskFull] {
            let sim = SimDir::new("/relay");
            let host = LocalHost::over(Arc::new(sim.clone()), Arc::default());
            let (sink, mut inbox) = EventSink::channel();
            let reporter = Reporter::new(sink, 0);
            sim.set_fault(fault, true);
            let healer = {
                let sim = sim.clone();
                tokio::spawn(async move {
                    clock::sleep(Duration::from_secs(3)).await;
                    sim.set_fault(fault, false);
                })
            };
            let t0 = clock::now();
            let at = publish_answer(&host, &reporter, true, "c-1", "c-1.res.json", b"{}").await;
            healer.await.unwrap();
            let at = at.unwrap_or_else(|| panic!("{fault:?}: published once the dir healed"));
            assert!(at - t0 >= Duration::from_secs(3) && at - t0 < Duration::from_secs(5), "{fault:?}");
            assert_eq!(sim.read("c-1.res.json").unwrap(), b"{}");
            assert_eq!(sim.relay_files().unwrap(), ["c-1.res.json"], "{fault:?}: no temp file left");
            let lines = said(&mut inbox);
            assert_eq!(lines.len(), 4, "{fault:?}: one notice per failure (at 0, .25, .75, 1.75 s): {lines:?}");
            let first = &lines[0];
            assert!(
                first.starts_with("cannot publish answer for \"c-1\": ")
                    || first.starts_with("this machine failed the run, not the relay: the answer to \"c-1\""),
                "{lines:?}"
            );
            assert!(lines[0].ends_with("; retrying in 250.0ms (try 1 of 9)"), "{lines:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_that_cannot_be_published_is_given_up_after_the_last_retry_and_said() {
        let (host, reporter, mut inbox) = read_only();
        let t0 = clock::now();
        let at = publish_answer(&host, &reporter, true, "c-1", "c-1.res.json", b"{}");
        assert_eq!(at.await, None);
        assert!(t0.elapsed() < Duration::from_secs(30), "bounded: {:?}", t0.elapsed());
        let lines = said(&mut inbox);
        assert_eq!(lines.len(), 9, "{lines:?}");
        assert!(lines[8].starts_with("gave up publishing the answer for \"c-1\" after 9 tries: "), "{lines:?}");
        assert!(lines[8].contains("Permission denied"), "{lines:?}");
    }

    /// Production's loop: one try; a failure drops the answer at once and says so.
    #[tokio::test(start_paused = true)]
    async fn production_tries_an_answer_once() {
        let (host, reporter, mut inbox) = read_only();
        let t0 = clock::now();
        let at = publish_answer(&host, &reporter, false, "c-1", "c-1.res.json", b"{}").await;
        assert_eq!((at, t0.elapsed()), (None, Duration::ZERO));
        let lines = said(&mut inbox);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("gave up publishing the answer for \"c-1\" after 1 try: "), "{lines:?}");
    }
}
