//! What the remote side allows ([`Limits`]: per sandbox and for the organisation, held
//! execs, requests at once, a request rate; what a request meets at a full limit; the
//! proxy's idle timeout and keep-alive), how a scenario states it (`[limits.NAME]`, or a
//! case's `limits`), and one side's admission under it ([`Side`]: counts and a GCRA token
//! bucket).

use std::time::Duration;

use tokio::time::Instant;

use crate::base::fields::{Fields, ScenarioError};
use crate::base::units::human;

/// A request rate: `per_sec` on average, `burst` at once (a token bucket).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub per_sec: f64,
    pub burst: u32,
}

/// What one side allows at once.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    /// Execs held at once (watch windows, followed streams).
    pub held_execs: Option<u32>,
    /// Requests in flight at once, of every kind.
    pub requests: Option<u32>,
    /// Requests of every kind admitted per second on average and at once (a token bucket).
    pub rate: Option<Rate>,
}

impl Caps {
    fn describe(&self, whose: &str) -> Option<String> {
        let parts: Vec<String> = [
            self.held_execs.map(|n| format!("{n} held execs")),
            self.requests.map(|n| format!("{n} requests at once")),
            self.rate.map(|r| format!("{}/s (burst {})", r.per_sec, r.burst)),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| format!("{whose}: {}", parts.join(", ")))
    }
}

/// What a request meets at a full limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnLimit {
    /// It waits, at most this long, then is rejected.
    Queue(Duration),
    /// It is rejected at once (HTTP 429).
    Reject,
}

/// The remote side's limits in a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// What each sandbox may hold.
    pub sandbox: Caps,
    /// What the organisation may hold across its sandboxes.
    pub org: Caps,
    /// What a request over a limit meets: a wait in line, or a refusal.
    pub on_limit: OnLimit,
    /// A held request that sends no bytes for this long is cut by the proxy.
    pub idle_timeout: Option<Duration>,
    /// How long an idle pooled connection stays open.
    pub keepalive: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            sandbox: Caps::default(),
            org: Caps::default(),
            on_limit: OnLimit::Reject,
            idle_timeout: None,
            keepalive: Duration::from_secs(70),
        }
    }
}

impl Limits {
    /// Whether anything is limited (else admission only counts).
    pub fn any(&self) -> bool {
        self.sandbox != Caps::default() || self.org != Caps::default() || self.idle_timeout.is_some()
    }

    pub(crate) fn describe(&self) -> String {
        let mut parts: Vec<String> =
            [self.org.describe("organisation"), self.sandbox.describe("per sandbox")].into_iter().flatten().collect();
        if parts.is_empty() {
            parts.push("no limits".into());
        } else {
            parts.push(match self.on_limit {
                OnLimit::Reject => "rejected at a limit (429)".into(),
                OnLimit::Queue(w) => format!("queued at a limit up to {}, then rejected", human(w)),
            });
        }
        if let Some(t) = self.idle_timeout {
            parts.push(format!("held requests cut after {} without bytes", human(t)));
        }
        parts.join("; ")
    }
}

/// Why a request was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    HeldExecs,
    Requests,
    Rate,
}

impl Refusal {
    /// The proxy's answer to a request refused for this limit (written out, not formatted:
    /// a fleet under a rate limit is refused millions of times).
    pub(super) fn answer(self) -> &'static str {
        match self {
            Refusal::HeldExecs => "429 too many requests: the held-exec limit is reached",
            Refusal::Requests => "429 too many requests: the concurrent-request limit is reached",
            Refusal::Rate => "429 too many requests: the request-rate limit is reached",
        }
    }
}

/// One side's admission state: what it holds now, its caps (which a fault may lower for a
/// spell), and its rate's next free instant (a GCRA token bucket).
#[derive(Debug, Default)]
pub(super) struct Side {
    pub(super) caps: Caps,
    held: u32,
    requests: u32,
    /// The theoretical arrival time of the next request at the rate (GCRA).
    tat: Option<Instant>,
}

impl Side {
    /// A side under `caps`, holding nothing.
    pub(super) fn new(caps: Caps) -> Side {
        Side { caps, ..Side::default() }
    }

    /// Admits one request now, or says which limit is full.
    pub(super) fn try_take(&mut self, held: bool, now: Instant) -> Result<(), Refusal> {
        if held && self.caps.held_execs.is_some_and(|c| self.held >= c) {
            return Err(Refusal::HeldExecs);
        }
        if self.caps.requests.is_some_and(|c| self.requests >= c) {
            return Err(Refusal::Requests);
        }
        if let Some(r) = self.caps.rate {
            let interval = Duration::from_secs_f64(1.0 / r.per_sec.max(1e-9));
            let tolerance = interval.saturating_mul(r.burst.max(1) - 1);
            let tat = self.tat.unwrap_or(now).max(now);
            if tat.saturating_duration_since(now) > tolerance {
                return Err(Refusal::Rate);
            }
            self.tat = Some(tat + interval);
        }
        self.requests += 1;
        self.held += u32::from(held);
        Ok(())
    }

    pub(super) fn give_back(&mut self, held: bool) {
        self.requests = self.requests.saturating_sub(1);
        self.held = self.held.saturating_sub(u32::from(held));
    }
}

/// Limits a scenario defines (`[limits.NAME]`), by name.
pub(crate) type NamedLimits = std::collections::BTreeMap<String, Limits>;

/// Reads a limits table: `org_held_execs`, `org_requests`, `org_rate` (requests per
/// second), `org_burst`, the same with `sandbox_`, `on_limit` (`reject` or `queue`),
/// `queue_wait` (with `queue`), `idle_timeout` (a duration, or `"none"`), `keepalive`.
pub(crate) fn parse_limits(f: &mut Fields<'_>) -> Result<Limits, ScenarioError> {
    let d = Limits::default();
    let caps = |f: &mut Fields<'_>, held: &'static str, req: &'static str, rate: &'static str, burst: &'static str| {
        let per_sec = f.float(rate, 0.001, 1e9)?;
        let b = f.int(burst, 1, 1_000_000)?;
        if b.is_some() && per_sec.is_none() {
            return Err(f.err(burst, format!("needs `{rate}`")));
        }
        Ok::<Caps, ScenarioError>(Caps {
            held_execs: f.int(held, 0, 10_000_000)?.map(|n| n as u32),
            requests: f.int(req, 1, 10_000_000)?.map(|n| n as u32),
            rate: per_sec.map(|per_sec| Rate { per_sec, burst: b.map_or(1, |b| b as u32) }),
        })
    };
    let org = caps(f, "org_held_execs", "org_requests", "org_rate", "org_burst")?;
    let sandbox = caps(f, "sandbox_held_execs", "sandbox_requests", "sandbox_rate", "sandbox_burst")?;
    let wait = f.duration("queue_wait")?;
    let on_limit = match (f.choice("on_limit", &["reject", "queue"])?, wait) {
        (Some("queue"), w) => OnLimit::Queue(w.unwrap_or(Duration::from_secs(10))),
        (_, Some(_)) => return Err(f.err("queue_wait", "applies only with on_limit = \"queue\"")),
        _ => OnLimit::Reject,
    };
    // "none": no idle timeout, said out loud (a sweep's value beside durations).
    let idle_timeout = match f.raw_peek("idle_timeout") {
        Some(toml::Value::String(s)) if s == "none" => f.string("idle_timeout").map(|_| None)?,
        _ => f.duration("idle_timeout")?,
    };
    if idle_timeout.is_some_and(|t| t.is_zero()) {
        return Err(f.err("idle_timeout", "must be longer than 0s"));
    }
    let keepalive = f.duration("keepalive")?.unwrap_or(d.keepalive);
    Ok(Limits { sandbox, org, on_limit, idle_timeout, keepalive })
}

/// The limits a case names (`limits = "NAME"` of a `[limits.NAME]`, or an inline table).
pub(crate) fn case_limits(case: &mut Fields<'_>, named: &NamedLimits) -> Result<Option<Limits>, ScenarioError> {
    match case.raw_peek("limits") {
        None => {
            let _ = case.raw("limits");
            Ok(None)
        }
        Some(toml::Value::String(_)) => {
            let name = case.string("limits")?.expect("a string");
            named.get(name).cloned().map(Some).ok_or_else(|| {
                let known: Vec<&str> = named.keys().map(String::as_str).collect();
                case.err("limits", format!("no [limits.{name}] table; defined: {}", known.join(", ")))
            })
        }
        Some(_) => case.table("limits")?.expect("checked: present").read(parse_limits).map(Some),
    }
}
