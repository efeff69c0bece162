//! The `poll` writer's waiter: the answer is checked for every `interval`, nothing else
//! wakes a waiting call.

use std::time::Duration;

use crate::relay::writer::{Armed, ResponseWaiter, Slots};

/// Poll-only writer: check every `interval`.
pub(crate) struct PollWaiter {
    interval: Duration,
    slots: Slots,
}

impl PollWaiter {
    pub(crate) fn new(interval: Duration) -> PollWaiter {
        PollWaiter { interval, slots: Slots::default() }
    }
}

impl ResponseWaiter for PollWaiter {
    fn arm(&self, res_name: &str) -> Armed {
        self.slots.arm(res_name)
    }
    fn interval(&self) -> Duration {
        self.interval
    }
    fn close(&self) {
        self.slots.close();
    }
    fn park(&self, res_name: &str) {
        self.slots.park(res_name);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::time::Instant;

    use super::*;
    use crate::base::protocol::res_name;
    use crate::events::EventSink;
    use crate::relay::writer::{CallEnd, CallSpec, Writer};
    use crate::sandbox::dir::{publish_now, SimDir};

    #[tokio::test(start_paused = true)]
    async fn a_polling_writer_finds_every_answer_by_its_timer_and_says_nothing_of_it() {
        let dir = SimDir::new("/sb/relay");
        let (sink, mut rx) = EventSink::channel();
        let w = Writer::new(0, Arc::new(dir.clone()), Box::new(PollWaiter::new(Duration::from_millis(300))), sink);
        let (answers, name) = (dir.clone(), res_name("p1"));
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            publish_now(&answers, &name, br#"{"ok":true,"text":"x"}"#).unwrap();
        });
        let call = CallSpec {
            id: "p1".into(),
            tool: "t".into(),
            args: None,
            intended: Instant::now(),
            warmup: false,
            deadline: Duration::from_secs(5),
        };
        assert!(matches!(w.call(call).await, CallEnd::Answered(_)));
        drop(w);
        let notices: Vec<_> = rx.try_iter().filter(|m| matches!(m, crate::events::Msg::Notice(_))).collect();
        assert!(notices.is_empty(), "{} notices", notices.len());
    }
}
