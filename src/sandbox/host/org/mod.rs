//! The remote side as a fleet meets it: one organisation shared by every sandbox of a case,
//! its limits and those of each sandbox ([`Limits`]), and what every request does to them
//! (gauges of requests in flight, held execs and open connections, per sandbox and for the
//! organisation; requests per second by kind; what was queued, rejected or cut).
//!
//! Every request of an emulated daemon is admitted here before it reaches the daemon
//! ([`Org::admit`]): counted in its second's bucket, then let through, queued for at most a
//! stated wait, or rejected as the daemon's proxy would (an HTTP 429, which production's
//! runner reads as a rejected exec), per the case's policy. A held exec (a watch window) with
//! no bytes for the proxy's idle timeout is cut (a reset). Nobody has published a vendor's
//! held-exec limit (Daytona documents organisation request rates only): every limit is the
//! scenario's to state or sweep, and none is on by default.
//!
//! Open connections follow production's HTTP/1.1 client: a request takes an idle pooled
//! connection to its sandbox if one is open, else opens one; an idle connection closes after
//! the keep-alive (70 s: Daytona's preview proxy closes idle keep-alive connections then),
//! at that moment to within a second (one sweep a second at most closes the ones due).
//! In front of a real daemon the delay proxy counts its real client connections instead
//! ([`Org::count_real_connections`], [`Org::connect`]), and closes them itself.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::base::clock;

mod limits;
mod rates;
mod state;

#[cfg(test)]
use limits::Rate;
pub(crate) use limits::{case_limits, parse_limits, NamedLimits, OnLimit, Refusal};
pub use limits::{Caps, Limits};
pub(crate) use rates::RateStats;

use limits::Side;
use rates::Rates;
use state::{SandboxState, State, Tallies, CONNS, HELD, IN_FLIGHT};

use super::Kind;
use crate::base::gauge::{GaugeStats, Level};
use crate::base::units::{new_histogram, record};

/// The organisation of a case: every sandbox's requests pass through it.
#[derive(Debug)]
pub struct Org {
    limits: Limits,
    state: Mutex<State>,
    /// Wakes queued requests when a request ends or a cap is raised.
    freed: Notify,
    /// Wakes the connection sweep when a connection goes idle.
    idle: Arc<Notify>,
}

/// One real connection to a sandbox, in the connection gauges while it lives.
pub struct Connection {
    org: Arc<Org>,
    sandbox: usize,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.org.lock().step(self.sandbox, CONNS, false, clock::now());
    }
}

/// A request let through: its place under the limits and in the gauges, given back when it
/// drops.
pub struct Ticket {
    org: Arc<Org>,
    sandbox: usize,
    held: bool,
    /// Execs the sandbox held when this request was let through, itself aside.
    held_besides: u32,
}

impl Ticket {
    /// Execs the sandbox held when this request was let through, this one aside.
    pub(crate) fn held_besides(&self) -> u32 {
        self.held_besides
    }
}

impl Drop for Org {
    fn drop(&mut self) {
        // The sweep, if waiting for an idle connection, learns the organisation is gone.
        self.idle.notify_one();
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        Org::release(&self.org, self.sandbox, self.held);
    }
}

impl Org {
    /// An organisation of `sandboxes` sandboxes under `limits`, its clock starting now.
    pub fn new(limits: Limits, sandboxes: u32) -> Org {
        let now = clock::now();
        let sandbox = |_| SandboxState {
            side: Side::new(limits.sandbox),
            levels: std::array::from_fn(|_| Level::new(now)),
            idle: Vec::new(),
            rejected_ever: 0,
        };
        Org {
            state: Mutex::new(State {
                side: Side::new(limits.org),
                sandboxes: (0..sandboxes).map(sandbox).collect(),
                levels: std::array::from_fn(|_| Level::new(now)),
                tallies: Tallies::default(),
                rates: Rates::new(false),
                start: now,
                rejected: 0,
                queued: 0,
                cut: 0,
                queue_wait: new_histogram(),
                legs: new_histogram(),
                expiries: Default::default(),
                sweeping: false,
                real_conns: false,
            }),
            limits,
            freed: Notify::new(),
            idle: Arc::new(Notify::new()),
        }
    }

    /// An organisation with no limits (every request only counted).
    pub fn unlimited(sandboxes: u32) -> Arc<Org> {
        Arc::new(Org::new(Limits::default(), sandboxes))
    }

    /// The limits this organisation enforces.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().expect("organisation state poisoned")
    }

    /// Starts the gauges', rates' and counts' clock again (at the case's epoch: the runners'
    /// start-up is not the steady state). The latency legs paid stay counted from the start.
    pub(crate) fn restart_clock(&self, at: Instant) {
        self.lock().restart(at);
    }

    /// The warm-up is over at `at`: what the organisation saw during it, and its clock
    /// started again (the fleet's ramp is not its steady state), in one step, so no request
    /// falls between the two.
    pub(crate) fn warmup_over(&self, at: Instant) -> OrgStats {
        let mut s = self.lock();
        let seen = s.stats(at, self.limits.keepalive);
        s.restart(at);
        seen
    }

    /// Lets one request of `kind` from `sandbox` through, queues it, or refuses it (an
    /// `Err` the caller returns as the daemon's answer).
    pub async fn admit(self: &Arc<Self>, sandbox: u32, kind: Kind) -> std::io::Result<Ticket> {
        let held = kind == Kind::Exec;
        let i = sandbox as usize;
        let arrived = clock::now();
        let mut now = arrived;
        let mut queued = false;
        loop {
            // Registered before the check, so a release between the two is not missed.
            let freed = self.freed.notified();
            let refused = {
                let mut s = self.lock();
                if !queued {
                    s.count(kind, arrived);
                }
                match s.take(i, held, now) {
                    Ok(()) => {
                        if queued {
                            record(&mut s.queue_wait, now - arrived);
                        }
                        s.opened(i, held, now, self.limits.keepalive);
                        let held_now = s.sandboxes[i].levels[HELD].value() as u32;
                        let held_besides = held_now.saturating_sub(u32::from(held));
                        return Ok(Ticket { org: self.clone(), sandbox: i, held, held_besides });
                    }
                    Err(r) => r,
                }
            };
            let wait = match self.limits.on_limit {
                OnLimit::Queue(w) => w.saturating_sub(now - arrived),
                OnLimit::Reject => Duration::ZERO,
            };
            if wait.is_zero() {
                let mut s = self.lock();
                s.rejected += 1;
                s.sandboxes[i].rejected_ever += 1;
                drop(s);
                return Err(std::io::Error::other(refused.answer()));
            }
            if !queued {
                queued = true;
                self.lock().queued += 1;
            }
            // A rate frees by time, the others when a request ends.
            let retry = if refused == Refusal::Rate { Duration::from_millis(1).max(wait / 64) } else { wait };
            let _ = clock::timeout(retry, freed).await;
            now = clock::now();
        }
    }

    fn release(self: &Arc<Self>, sandbox: usize, held: bool) {
        let start_sweep = {
            let mut s = self.lock();
            s.closed(sandbox, held, clock::now(), self.limits.keepalive);
            !std::mem::replace(&mut s.sweeping, true)
        };
        self.freed.notify_waiters();
        self.idle.notify_one();
        if start_sweep {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(sweep(Arc::downgrade(self), self.idle.clone()));
            }
        }
    }

    /// A latency leg an emulated daemon paid.
    pub fn paid(&self, leg: Duration) {
        record(&mut self.lock().legs, leg);
    }

    /// The legs paid so far (ns).
    pub fn legs(&self) -> Histogram<u64> {
        self.lock().legs.clone()
    }

    /// From now on the connection gauges count the real connections opened with
    /// [`Org::connect`] (a proxy on a real TCP path), not the pool the emulated daemon
    /// models; set before the first request.
    pub fn count_real_connections(&self) {
        self.lock().real_conns = true;
    }

    /// A real connection to `sandbox` opened: counted until the guard drops.
    pub fn connect(self: &Arc<Self>, sandbox: u32) -> Connection {
        let i = sandbox as usize;
        self.lock().step(i, CONNS, true, clock::now());
        Connection { org: self.clone(), sandbox: i }
    }

    /// Every request counted since the clock's start (rejected ones too), by kind.
    pub fn counts_by_kind(&self) -> super::ByKind {
        let all = self.lock().rates.all;
        super::ByKind::of(|k| all[k as usize])
    }

    /// Keeps each second's total of requests from now on (four bytes a second), for
    /// [`Org::peak_10s_between`]: a case with fleet-wide faults reads its storms from them.
    pub(crate) fn keep_seconds(&self) {
        self.lock().rates = Rates::new(true);
    }

    /// The case is over now: the requests of the seconds after this one (its teardown's)
    /// are counted, not rated. Returns the case's end.
    pub(crate) fn close_rates(&self) -> Instant {
        let end = clock::now();
        let mut s = self.lock();
        let secs = end.saturating_duration_since(s.start).as_secs_f64().ceil() as usize;
        s.rates.close(secs);
        end
    }

    /// Requests rejected since the organisation began (the clock's restarts aside): those of
    /// `sandbox`, and those of every other sandbox.
    pub(crate) fn rejected_ever(&self, sandbox: u32) -> (u64, u64) {
        let s = self.lock();
        let all: u64 = s.sandboxes.iter().map(|sb| sb.rejected_ever).sum();
        let own = s.sandboxes.get(sandbox as usize).map_or(0, |sb| sb.rejected_ever);
        (own, all - own)
    }

    /// A held request cut by the proxy's idle timeout.
    pub(crate) fn note_cut(&self) {
        self.lock().cut += 1;
    }

    /// The proxy's idle timeout for held requests, if any.
    pub fn idle_timeout(&self) -> Option<Duration> {
        self.limits.idle_timeout
    }

    /// Lowers (or restores, with `None`) the organisation's held-exec cap for a spell.
    pub(crate) fn set_org_held_execs(&self, cap: Option<u32>) {
        self.lock().side.caps.held_execs = cap;
        self.freed.notify_waiters();
    }

    /// The organisation's held-exec cap now.
    pub fn org_held_execs(&self) -> Option<u32> {
        self.lock().side.caps.held_execs
    }

    /// A sample for the timeline: the gauges now, and the most held and in flight since the
    /// last sample.
    pub(crate) fn sample(&self) -> OrgSample {
        let mut s = self.lock();
        let [in_flight, held, conns] = s.levels.each_ref().map(Level::value);
        let held_max = s.tallies.org[HELD].take_window_max(held);
        let in_flight_max = s.tallies.org[IN_FLIGHT].take_window_max(in_flight);
        OrgSample { held, held_max, in_flight, in_flight_max, conns }
    }

    /// The busiest ten seconds between `from` and `to`, in requests per second (the seconds
    /// before the clock's last start are not counted). Read from the seconds kept since
    /// [`Org::keep_seconds`].
    pub(crate) fn peak_10s_between(&self, from: Instant, to: Instant) -> f64 {
        let s = self.lock();
        let peak = s.rates.peak_10s_between(s.second(from), s.second(to) + 1);
        (peak.expect("a case with fleet-wide faults keeps its seconds") * 10.0).round() / 10.0
    }

    /// Everything measured, settled up to now.
    pub fn finish(&self, until: Instant) -> OrgStats {
        self.lock().stats(until, self.limits.keepalive)
    }
}

/// Closes idle connections as their keep-alive runs out, at most once a second, for as long
/// as the organisation lives.
async fn sweep(org: std::sync::Weak<Org>, idle: Arc<Notify>) {
    let mut last = clock::now();
    loop {
        let next = {
            let Some(org) = org.upgrade() else { return };
            let front = org.lock().expiries.front().map(|e| e.0);
            front
        };
        match next {
            None => idle.notified().await,
            Some(due) => {
                tokio::time::sleep_until(due.max(last + Duration::from_secs(1))).await;
                last = clock::now();
                let Some(org) = org.upgrade() else { return };
                let keepalive = org.limits.keepalive;
                let mut s = org.lock();
                while s.expiries.front().is_some_and(|e| e.0 <= last) {
                    let (_, i) = s.expiries.pop_front().expect("checked");
                    s.prune(i, last, keepalive);
                }
            }
        }
    }
}

/// One timeline sample of the organisation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct OrgSample {
    pub held: u64,
    pub held_max: u64,
    pub in_flight: u64,
    pub in_flight_max: u64,
    pub conns: u64,
}

/// What the organisation saw over a case.
#[derive(Debug, Clone)]
pub struct OrgStats {
    pub held_execs: GaugeStats,
    pub sandbox_held_execs: GaugeStats,
    pub in_flight: GaugeStats,
    pub sandbox_in_flight: GaugeStats,
    pub connections: GaugeStats,
    pub sandbox_connections: GaugeStats,
    pub rates: RateStats,
    pub rejected: u64,
    pub queued: u64,
    pub cut: u64,
    /// How long queued requests waited (ns).
    pub queue_wait: Histogram<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_held_exec_limit_rejects_and_counts() {
        let limits = Limits { org: Caps { held_execs: Some(2), ..Caps::default() }, ..Limits::default() };
        let org = Arc::new(Org::new(limits, 3));
        let a = org.admit(0, Kind::Exec).await.unwrap();
        let _b = org.admit(1, Kind::Exec).await.unwrap();
        let e = org.admit(2, Kind::Exec).await.err().expect("the third held exec is over the limit");
        assert!(e.to_string().starts_with("429"), "{e}");
        let _list = org.admit(2, Kind::List).await.expect("a list holds nothing");
        drop(a);
        let _c = org.admit(2, Kind::Exec).await.expect("a place was given back");
        tokio::time::advance(s(10)).await;
        let st = org.finish(clock::now());
        assert_eq!((st.rejected, st.queued, st.held_execs.max), (1, 0, 2));
        assert_eq!(st.sandbox_held_execs.max, 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_queue_waits_for_a_place_then_gives_up() {
        let limits = Limits {
            sandbox: Caps { requests: Some(1), ..Caps::default() },
            on_limit: OnLimit::Queue(s(5)),
            ..Limits::default()
        };
        let org = Arc::new(Org::new(limits, 1));
        let first = org.admit(0, Kind::Read).await.unwrap();
        let o = org.clone();
        let waiter = tokio::spawn(async move { o.admit(0, Kind::Read).await.map(|_| clock::now()) });
        clock::sleep(s(2)).await;
        let t = clock::now();
        drop(first);
        let got = waiter.await.unwrap().unwrap();
        assert_eq!(got, t, "let through when the place was freed");
        let _held = org.admit(0, Kind::Read).await.unwrap();
        let t0 = clock::now();
        assert!(org.admit(0, Kind::Read).await.is_err());
        assert_eq!(t0.elapsed(), s(5), "rejected once the stated wait ran out");
        let st = org.finish(clock::now());
        assert_eq!((st.queued, st.rejected), (2, 1));
        assert_eq!(st.queue_wait.len(), 1, "only what got through has a wait");
    }

    #[tokio::test(start_paused = true)]
    async fn a_rate_admits_its_burst_then_one_per_interval() {
        let limits = Limits {
            org: Caps { rate: Some(Rate { per_sec: 10.0, burst: 5 }), ..Caps::default() },
            ..Limits::default()
        };
        let org = Arc::new(Org::new(limits, 1));
        let mut ok = 0;
        for _ in 0..8 {
            ok += usize::from(org.admit(0, Kind::List).await.is_ok());
        }
        assert_eq!(ok, 5, "the burst");
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(org.admit(0, Kind::List).await.is_ok(), "one more per 100 ms");
        assert!(org.admit(0, Kind::List).await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn the_warmup_is_kept_apart_from_what_follows() {
        let limits = Limits { sandbox: Caps { held_execs: Some(1), ..Caps::default() }, ..Limits::default() };
        let org = Arc::new(Org::new(limits, 2));
        let (a, b) = (org.admit(0, Kind::Exec).await.unwrap(), org.admit(1, Kind::Exec).await.unwrap());
        assert!(org.admit(0, Kind::Exec).await.is_err(), "one held exec per sandbox");
        tokio::time::advance(s(5)).await;
        let warm = org.warmup_over(clock::now());
        assert_eq!((warm.held_execs.max, warm.sandbox_held_execs.max, warm.rejected), (2, 1, 1));
        assert_eq!(warm.rates.peak_1s, 3.0, "the rejected request counted too");
        drop((a, b));
        tokio::time::advance(s(5)).await;
        let steady = org.finish(clock::now());
        let got = (steady.held_execs.max, steady.sandbox_held_execs.max, steady.rejected, steady.rates.peak_1s);
        assert_eq!(got, (2, 1, 0, 0.0), "the execs held across the warm-up's end are the steady state's too");
    }

    #[tokio::test(start_paused = true)]
    async fn connections_are_reused_and_close_after_the_keepalive() {
        let org = Org::unlimited(1);
        let (a, b) = (org.admit(0, Kind::Exec).await.unwrap(), org.admit(0, Kind::List).await.unwrap());
        drop(b);
        let c = org.admit(0, Kind::Read).await.unwrap();
        assert_eq!(org.sample().conns, 2, "the list's connection was reused");
        drop((a, c));
        tokio::time::advance(s(100)).await;
        let st = org.finish(clock::now());
        assert_eq!(st.connections.max, 2);
        assert!(st.connections.mean < 2.0 && st.connections.mean > 1.0, "{:?}", st.connections);
    }

    #[tokio::test(start_paused = true)]
    async fn real_connections_replace_the_modelled_pool() {
        let org = Org::unlimited(2);
        org.count_real_connections();
        let c = org.connect(1);
        let (a, b) = (org.admit(1, Kind::Exec).await.unwrap(), org.admit(1, Kind::List).await.unwrap());
        assert_eq!(org.sample().conns, 1, "two requests on the one real connection");
        drop((a, b));
        tokio::time::advance(s(10)).await;
        drop(c);
        tokio::time::advance(s(10)).await;
        let st = org.finish(clock::now());
        assert_eq!((st.connections.max, st.sandbox_connections.max), (1, 1));
        assert!((st.connections.mean - 0.5).abs() < 0.01, "closed when the connection was: {:?}", st.connections);
        let by = org.counts_by_kind().0;
        assert_eq!((by[0].1, by[6].1), (1, 1), "{by:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn rates_are_counted_per_second_with_their_peaks() {
        let org = Org::unlimited(1);
        for _ in 0..30 {
            drop(org.admit(0, Kind::List).await.unwrap());
        }
        tokio::time::advance(s(1)).await;
        drop(org.admit(0, Kind::Exec).await.unwrap());
        tokio::time::advance(s(19)).await;
        let r = org.finish(clock::now()).rates;
        assert_eq!((r.peak_1s, r.peak_10s, r.mean_per_sec), (30.0, 3.1, 1.55));
        assert_eq!(r.peak_60s, Some(0.52), "the busiest minute: 31 requests, 0.52 a second");
        assert_eq!(r.peak_1s_by_kind.0[0], ("list".to_owned(), 30));
        assert_eq!(r.peak_10s_by_kind.0[6], ("exec".to_owned(), 1));
    }
}
