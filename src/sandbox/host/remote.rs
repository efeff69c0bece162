//! The `remote` host: a sandbox reached through its daemon, emulated.
//!
//! The sandbox side is a [`RelayDir`]: a real local directory, or its in-memory twin in
//! virtual time (the writer, being inside the sandbox,
//! touches it directly). Every runner operation goes through an emulated [`Daemon`]: it
//! waits for a slot under the sandbox's concurrency limit, pays a request leg, does the
//! real operation on the real directory, and pays a response leg. Legs are drawn from a
//! named [`LatencyProfile`] with a seeded generator. A list is an exec of `ls -1 DIR` in
//! production, counted here as `list`, with its semantics: a missing directory lists as
//! empty (`ls` fails with nothing on stdout, and production ignores its exit code). A
//! program run is an `exec` whose timeout the daemon enforces (it kills the program and
//! answers `timedOut`).
//!
//! Latency is injected in user space with tokio timers (this kernel offers no netem), so a
//! leg is rounded up to tokio's 1 ms timer resolution; the daemon records every leg it
//! actually paid, and the report shows those, not the profile's nominal figures.

use std::ffi::OsString;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Semaphore};
use tokio::time::Instant;

use super::org::{Limits, Org, Ticket};
pub use super::profile::LatencyProfile;
pub(crate) use super::profile::{parse_profile, Profiles};
use super::read_fault::{Mark, ReadFault, ReadStorm};
use super::{BuiltHost, Busy, Host, HostTables, Kind, Purpose, RequestCounter, RequestCounts, Seat};
use crate::base::clock;
use crate::base::fields::{Fields, ScenarioError};
use crate::base::fsio;
use crate::base::rng::Rng;
use crate::base::units::human;
use crate::base::BoxFut;
use crate::sandbox::dir::{ExecOutput, LineDelay, Lines, RelayDir};

/// What is wrong with a daemon right now (faults of SPEC §6), broadcast to its requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Outage {
    /// Bumped on a restart: every request in flight fails.
    restarts: u64,
    /// Bumped on a proxy disconnect: every exec in flight (held or streamed) fails.
    disconnects: u64,
    /// Until then new requests are refused (the daemon is coming back up).
    down_until: Option<Instant>,
    /// Until then requests stall, in flight or new (the sandbox is paused).
    paused_until: Option<Instant>,
}

/// One sandbox's emulated daemon: a concurrency limit, latency legs, request counters, a
/// record of the delays it actually paid, and its faults (restart, proxy disconnect, pause).
pub struct Daemon {
    profile: LatencyProfile,
    slots: Semaphore,
    rng: Mutex<Rng>,
    counter: RequestCounter,
    outage: watch::Sender<Outage>,
    /// The organisation its requests are admitted by, and its sandbox's index there.
    org: Arc<Org>,
    sandbox: u32,
    /// Whether a restart or a disconnect can strike it: only then does each request listen
    /// for one (a listener costs a registration per request, and most cases strike none).
    struck: bool,
    /// The `read-fails` fault: request reads that fail, and the storm they set off.
    reads: ReadFault,
}

impl Daemon {
    /// A daemon alone in an organisation of its own, with no limits.
    #[cfg(test)]
    pub(crate) fn new(profile: LatencyProfile, seed: u64, busy: Arc<Busy>) -> Daemon {
        Daemon::in_org(profile, seed, busy, Org::unlimited(1), 0)
    }

    /// The daemon of sandbox `sandbox` of `org`.
    pub fn in_org(profile: LatencyProfile, seed: u64, busy: Arc<Busy>, org: Arc<Org>, sandbox: u32) -> Daemon {
        Daemon {
            slots: Semaphore::new(profile.concurrency.max(1)),
            rng: Mutex::new(Rng::new(seed)),
            counter: RequestCounter::new(busy),
            profile,
            outage: watch::Sender::new(Outage::default()),
            org,
            sandbox,
            struck: true,
            reads: ReadFault::default(),
        }
    }

    /// Says whether the case's schedule restarts or disconnects this daemon; a daemon never
    /// struck fails no request for it (its requests do not listen).
    pub fn struck(mut self, struck: bool) -> Daemon {
        self.struck = struck;
        self
    }

    fn leg(&self) -> Duration {
        self.profile.leg.draw(&mut self.rng.lock().expect("daemon rng poisoned"))
    }

    async fn pay(&self, leg: Duration) {
        let t0 = clock::now();
        clock::sleep(leg).await;
        self.org.paid(clock::since(t0));
    }

    /// Waits out a sandbox pause, if one is on.
    async fn unpaused(&self) {
        loop {
            let until = self.outage.borrow().paused_until;
            match until {
                Some(t) if t > clock::now() => tokio::time::sleep_until(t).await,
                _ => return,
            }
        }
    }

    /// What the daemon has counted now (a storm's edge).
    fn mark(&self) -> Mark {
        let (rejected, others_rejected) = self.org.rejected_ever(self.sandbox);
        Mark { at: clock::now(), counts: self.counter.snapshot(), rejected, others_rejected }
    }

    /// One request: admitted by the organisation (or queued, or refused), a slot, the
    /// request leg, `op` on the sandbox side, the response leg. A held exec that outlasts
    /// the proxy's idle timeout is cut.
    pub async fn request<T>(
        &self,
        purpose: Purpose,
        kind: Kind,
        op: impl std::future::Future<Output = io::Result<T>>,
    ) -> io::Result<T> {
        // A struck request deleted since the last request ends a read-fails storm.
        self.reads.observe(|| self.mark());
        self.counter.count(purpose, kind);
        let ticket: Ticket = self.org.admit(self.sandbox, kind).await?;
        // The execs the daemon holds besides this one slow its answer (measured).
        let held_cost = self.profile.held_exec_cost * ticket.held_besides();
        let mut outage = self.struck.then(|| self.outage.subscribe());
        let at_start = outage.as_mut().map(|o| *o.borrow_and_update()).unwrap_or_default();
        let cut = async {
            match self.org.idle_timeout().filter(|_| kind == Kind::Exec) {
                Some(t) => {
                    clock::sleep(t).await;
                    self.org.note_cut();
                    io::Error::new(
                        io::ErrorKind::ConnectionReset,
                        format!("the proxy cut the held request after {} without bytes", human(t)),
                    )
                }
                None => std::future::pending().await,
            }
        };
        let work = async {
            let _slot = self.slots.acquire().await.map_err(|_| io::Error::other("daemon closed"))?;
            self.unpaused().await;
            self.pay(self.leg()).await;
            let down = self.outage.borrow().down_until.is_some_and(|t| t > clock::now());
            let out = if down {
                Err(io::Error::new(io::ErrorKind::ConnectionRefused, "daemon restarting: connection refused"))
            } else {
                op.await
            };
            self.pay(self.leg() + held_cost).await;
            self.unpaused().await;
            out
        };
        // In this order (no random draw per request): the answer, then a fault that broke
        // it, then the proxy's cut.
        let out = tokio::select! {
            biased;
            out = work => out,
            why = broken(outage.as_mut(), at_start, kind) => Err(why),
            why = cut => Err(why),
        };
        self.reads.observe(|| self.mark());
        out
    }

    /// The requests counted so far.
    pub fn counts(&self) -> RequestCounts {
        self.counter.snapshot()
    }

    /// The legs actually paid so far by every daemon of its organisation (one leg each, not
    /// a round trip).
    #[cfg(test)]
    pub(crate) fn paid_legs(&self) -> hdrhistogram::Histogram<u64> {
        self.org.legs()
    }
}

/// Resolves when a fault breaks a request of `kind` that started under `at_start` (never,
/// with no listener: the daemon is never struck).
async fn broken(outage: Option<&mut watch::Receiver<Outage>>, at_start: Outage, kind: Kind) -> io::Error {
    let Some(outage) = outage else { return std::future::pending().await };
    loop {
        if outage.changed().await.is_err() {
            return std::future::pending().await;
        }
        let now = *outage.borrow_and_update();
        if now.restarts != at_start.restarts {
            return io::Error::new(io::ErrorKind::ConnectionReset, "daemon restarted: connection reset");
        }
        if kind == Kind::Exec && now.disconnects != at_start.disconnects {
            return io::Error::new(io::ErrorKind::ConnectionAborted, "proxy disconnected the exec");
        }
    }
}

/// The runner's view of a remote sandbox's relay dir.
pub struct RemoteHost {
    dir: Arc<dyn RelayDir>,
    daemon: Arc<Daemon>,
}

impl RemoteHost {
    /// A real directory on this machine behind `daemon`.
    #[cfg(test)]
    pub(crate) fn new(dir: impl Into<std::path::PathBuf>, daemon: Arc<Daemon>) -> RemoteHost {
        Self::over(Arc::new(crate::sandbox::dir::RealDir::new(dir)), daemon)
    }

    /// A host over `dir`, its requests made through `daemon`.
    pub fn over(dir: Arc<dyn RelayDir>, daemon: Arc<Daemon>) -> RemoteHost {
        daemon.reads.bind(dir.clone());
        RemoteHost { dir, daemon }
    }
}

impl Host for RemoteHost {
    fn list(&self) -> BoxFut<'_, io::Result<Vec<String>>> {
        Box::pin(self.daemon.request(Purpose::Discovery, Kind::List, async {
            match self.dir.list() {
                // `ls -1 DIR` of a missing dir prints nothing; production ignores its exit code.
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
                other => other,
            }
        }))
    }

    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>> {
        let daemon = &self.daemon;
        Box::pin(daemon.request(Purpose::Data, Kind::Read, async move {
            if daemon.reads.fails(name, || daemon.mark()) {
                // The daemon's answer to a GET of a file it cannot read (the fault).
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("GET /v1/fs/file {name}: the daemon cannot read it (read-fails fault)"),
                ));
            }
            self.dir.read(name)
        }))
    }

    fn stat<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<u64>> {
        Box::pin(self.daemon.request(Purpose::Data, Kind::Stat, async { self.dir.stat(name) }))
    }

    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>> {
        Box::pin(async move {
            // Upload to a fresh temp name (a taken one is tried again under another, as
            // `publish_now` does), then rename onto the final name: two requests.
            let mut tries = 0;
            let tmp = loop {
                let tmp = fsio::temp_name(name);
                let write = async {
                    if self.daemon.reads.write_fails(&tmp) {
                        let why = format!("PUT /v1/fs/file {tmp}: the daemon cannot write it (read-fails fault)");
                        return Err(io::Error::new(io::ErrorKind::PermissionDenied, why));
                    }
                    self.dir.write(&tmp, bytes)
                };
                match self.daemon.request(Purpose::Data, Kind::Write, write).await {
                    Ok(()) => break tmp,
                    Err(e) if fsio::is_taken(&e) && tries + 1 < fsio::TEMP_TRIES => tries += 1,
                    Err(e) if fsio::is_taken(&e) => return Err(fsio::taken_every_time(Some(e))),
                    Err(e) => {
                        let _ = self.dir.remove(&tmp);
                        return Err(e);
                    }
                }
            };
            let renamed = self.daemon.request(Purpose::Data, Kind::Rename, async { self.dir.rename(&tmp, name) });
            if let Err(e) = renamed.await {
                let _ = self.dir.remove(&tmp);
                return Err(e);
            }
            Ok(())
        })
    }

    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>> {
        Box::pin(self.daemon.request(Purpose::Data, Kind::Delete, async { self.dir.remove(name) }))
    }

    fn exec<'a>(&'a self, argv: &'a [OsString], timeout: Duration) -> BoxFut<'a, io::Result<ExecOutput>> {
        Box::pin(self.daemon.request(Purpose::Discovery, Kind::Exec, self.dir.exec(argv, timeout)))
    }

    fn exec_follow<'a>(&'a self, argv: &'a [OsString]) -> BoxFut<'a, io::Result<Lines>> {
        let daemon = self.daemon.clone();
        // Every streamed line pays a response leg on its way to the runner (after a pause).
        let delay: LineDelay = Arc::new(move || {
            let d = daemon.clone();
            Box::pin(async move {
                d.pay(d.leg()).await;
                d.unpaused().await;
            })
        });
        let (dir, argv) = (self.dir.clone(), argv.to_vec());
        let daemon = self.daemon.clone();
        let mut outage = daemon.outage.subscribe();
        let at_start = *outage.borrow_and_update();
        Box::pin(async move {
            let op = async { dir.exec_follow(&argv, Some(delay)) };
            let mut inner = daemon.request(Purpose::Discovery, Kind::Exec, op).await?;
            // The stream rides the daemon's connection: a restart or disconnect drops it.
            let (tx, rx) = tokio::sync::mpsc::channel(64);
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        line = inner.recv() => {
                            let Some(l) = line else { return };
                            if tx.send(l).await.is_err() {
                                return;
                            }
                        }
                        _ = broken(Some(&mut outage), at_start, Kind::Exec) => return,
                        _ = tx.closed() => return,
                    }
                }
            });
            Ok(rx)
        })
    }

    fn counts(&self) -> RequestCounts {
        self.daemon.counts()
    }

    fn label(&self) -> String {
        format!("remote:{}", self.daemon.profile.name)
    }
}

/// A parsed `host = "remote"`: the latency profile its emulated daemon pays, and the
/// limits its organisation enforces.
#[derive(Debug)]
pub struct RemoteSpec {
    pub(super) profile: LatencyProfile,
    pub(super) limits: Limits,
}

// The faults a scenario strikes an emulated daemon with.
impl super::DaemonControl for Daemon {
    /// Restarts the daemon: requests in flight fail, new ones are refused for `down`.
    fn restart(&self, down: Duration) -> Result<(), super::NotApplied> {
        debug_assert!(self.struck, "a daemon told it is never struck was restarted: its requests do not listen");
        self.outage.send_modify(|o| {
            o.restarts += 1;
            o.down_until = Some(clock::now() + down);
        });
        Ok(())
    }
    /// Drops the proxy connections of every exec in flight (a held window, a stream).
    fn disconnect(&self) -> Result<(), super::NotApplied> {
        debug_assert!(self.struck, "a daemon told it is never struck was disconnected: its requests do not listen");
        self.outage.send_modify(|o| o.disconnects += 1);
        Ok(())
    }
    /// Pauses the sandbox for `d`: requests stall until it resumes.
    fn pause(&self, d: Duration) -> Result<(), super::NotApplied> {
        self.outage.send_modify(|o| o.paused_until = Some(clock::now() + d));
        Ok(())
    }
    /// Fails the reads of request files for `d`; a request whose read failed keeps failing
    /// while it is on disk, and with `answers` so does every write of its answer
    /// ([`ReadFault`]).
    fn fail_reads(&self, d: Duration, answers: bool) -> Result<(), super::NotApplied> {
        self.reads.strike(d, answers, self.mark());
        Ok(())
    }
    /// The `read-fails` storm so far, if the fault struck this daemon.
    fn read_storm(&self) -> Option<ReadStorm> {
        self.reads.storm(self.mark())
    }
}

/// Reads `host = "remote"`'s keys: a profile (required) and limits.
pub(super) fn parse(case: &mut Fields<'_>, tables: &HostTables) -> Result<RemoteSpec, ScenarioError> {
    let profile = case_profile(case, &tables.profiles)?.ok_or_else(|| {
        let allowed = profile_names(&tables.profiles);
        case.err("profile", format!("is required with host = \"remote\"; allowed: {allowed}"))
    })?;
    let limits = super::org::case_limits(case, &tables.limits)?.unwrap_or_default();
    Ok(RemoteSpec { profile, limits })
}

/// The profile a case names (`profile = "..."`: shipped, or a `[profile.NAME]` of the
/// scenario), if it names one.
pub(crate) fn case_profile(
    case: &mut Fields<'_>,
    profiles: &Profiles,
) -> Result<Option<LatencyProfile>, ScenarioError> {
    let Some(name) = case.string("profile")? else { return Ok(None) };
    let profile = profiles.get(name).cloned().or_else(|| LatencyProfile::shipped(name));
    let unknown = || case.err("profile", format!("unknown profile {name:?}; allowed: {}", profile_names(profiles)));
    profile.map(Some).ok_or_else(unknown)
}

fn profile_names(profiles: &Profiles) -> String {
    let mut allowed: Vec<&str> = LatencyProfile::SHIPPED.to_vec();
    allowed.extend(profiles.keys().map(String::as_str));
    allowed.join(", ")
}

impl RemoteSpec {
    pub(super) fn params(&self) -> String {
        let limits = if self.limits.any() { format!("; limits: {}", self.limits.describe()) } else { String::new() };
        format!("{}; latency injected in user space (tokio timers, no netem){limits}", self.profile.describe())
    }

    pub(super) fn build(&self, seat: Seat) -> io::Result<BuiltHost> {
        let daemon = Daemon::in_org(self.profile.clone(), seat.seed, seat.busy, seat.org, seat.sandbox);
        let daemon = Arc::new(daemon.struck(seat.struck));
        let host = Arc::new(RemoteHost::over(seat.dir, daemon.clone()));
        Ok(BuiltHost { host, daemon: Some(daemon), sandbox: None })
    }
}
