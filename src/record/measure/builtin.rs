//! The measures relay-bench takes of every call: SPEC §4's three (wake, pickup, completion)
//! with completion's uncorrected twin, the relay's own overhead, the pacer's lag, and the
//! three parts a call's time after its pickup splits into (handler, answer publish, hop 1).
//! Each is one unit struct and one line of [`super::MEASURES`].

use super::{CallMeasure, CallTimes};

/// Request published -> the runner's wait returned. A black-box runner's wake is not seen.
pub(super) struct Wake;
impl CallMeasure for Wake {
    fn name(&self) -> &'static str {
        "wake"
    }
    fn about(&self) -> &'static str {
        "request published -> the runner's wait returned (not seen for a black-box runner)"
    }
    fn row(&self) -> Option<&'static str> {
        Some("wake")
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        CallTimes::between(c.published, Some(c.woke)).filter(|_| !c.observed)
    }
}

/// Request published -> the handler started (SPEC's pickup).
pub(super) struct Pickup;
impl CallMeasure for Pickup {
    fn name(&self) -> &'static str {
        "pickup"
    }
    fn about(&self) -> &'static str {
        "request published -> the handler started (SPEC §4)"
    }
    fn row(&self) -> Option<&'static str> {
        Some("pickup")
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        CallTimes::between(c.published, Some(c.handler_start))
    }
}

/// The call's intended start -> its answer read (open loop: the pacer's lag counts).
pub(super) struct Completion;
impl CallMeasure for Completion {
    fn name(&self) -> &'static str {
        "completion"
    }
    fn about(&self) -> &'static str {
        "the call's intended start -> its answer read (open loop)"
    }
    fn row(&self) -> Option<&'static str> {
        Some("completion")
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        CallTimes::between(Some(0), c.read)
    }
}

/// The writer's actual start -> its answer read.
pub(super) struct CompletionUncorrected;
impl CallMeasure for CompletionUncorrected {
    fn name(&self) -> &'static str {
        "completion_uncorrected"
    }
    fn about(&self) -> &'static str {
        "the writer's actual start -> its answer read"
    }
    fn row(&self) -> Option<&'static str> {
        Some("completion (uncorrected)")
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        c.uncorrected()
    }
}

/// Uncorrected completion minus the handler's own time: what the relay adds.
pub(super) struct RelayOverhead;
impl CallMeasure for RelayOverhead {
    fn name(&self) -> &'static str {
        "relay_overhead"
    }
    fn about(&self) -> &'static str {
        "uncorrected completion minus the handler's time: what the relay adds"
    }
    fn row(&self) -> Option<&'static str> {
        Some("relay overhead")
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        c.uncorrected().zip(c.handler()).map(|(u, h)| u.saturating_sub(h)).filter(|_| c.handler_known)
    }
}

/// The call's intended start -> the writer's actual start: the pacer's lag, not the relay's.
pub(super) struct ScheduleLag;
impl CallMeasure for ScheduleLag {
    fn name(&self) -> &'static str {
        "schedule_lag"
    }
    fn about(&self) -> &'static str {
        "the call's intended start -> the writer's actual start (the pacer's lag)"
    }
    fn row(&self) -> Option<&'static str> {
        Some("schedule lag")
    }
    fn in_latency_us(&self) -> bool {
        false
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        CallTimes::between(Some(0), Some(c.started))
    }
}

/// The handler's own time (its start -> its end).
pub(super) struct Handler;
impl CallMeasure for Handler {
    fn name(&self) -> &'static str {
        "handler"
    }
    fn about(&self) -> &'static str {
        "the handler's start -> its end"
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        c.handler().filter(|_| c.handler_known)
    }
}

/// The handler's end -> the answer's rename completed.
pub(super) struct AnswerPublish;
impl CallMeasure for AnswerPublish {
    fn name(&self) -> &'static str {
        "answer_publish"
    }
    fn about(&self) -> &'static str {
        "the handler's end -> the answer's rename completed"
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        CallTimes::between(Some(c.handler_end), c.answered).filter(|_| c.handler_known)
    }
}

/// The answer's rename -> the writer has read it (hop 1).
pub(super) struct Hop1;
impl CallMeasure for Hop1 {
    fn name(&self) -> &'static str {
        "hop1"
    }
    fn about(&self) -> &'static str {
        "the answer's rename -> the writer read it (hop 1)"
    }
    fn of(&self, c: &CallTimes) -> Option<u64> {
        CallTimes::between(c.answered, c.read)
    }
}
