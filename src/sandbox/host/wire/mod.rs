//! A delay proxy on a real TCP path: what a network adds between the runner and a real
//! daemon. Every message, in each direction, is held for one leg drawn from a latency
//! profile (seeded); bytes that arrive while the message before them is still held go with
//! it, in order. So an HTTP round trip pays a request leg and a response leg, as the
//! emulated daemon charges them. It can cut every live connection (a proxy disconnect), or go
//! dark for a while (a blackhole): connections stay up, nothing crosses; what was sent crosses
//! at TCP's first retransmission after the wire heals (Linux's 200 ms minimum RTO, doubling
//! from when it was sent), behind which the rest of the stream waits, in order.
//!
//! Given a [`Gate`] (a case's limits), it also plays the provider's proxy in front of the
//! daemon: it reads each HTTP request ([`http`]) and admits it through the case's
//! organisation as the emulated daemon does ([`gate`]).

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

use super::LatencyProfile;
use crate::base::clock;
use crate::base::rng::Rng;

mod gate;
#[cfg(test)]
mod gate_tests;
pub(crate) mod http;

pub use gate::Gate;

/// A running proxy; it stops when dropped.
pub struct DelayProxy {
    /// Where the proxy listens.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

struct Shared {
    profile: LatencyProfile,
    seed: u64,
    connections: AtomicU64,
    /// Bumped to cut every live connection.
    cut: watch::Sender<u64>,
    legs: Mutex<Histogram<u64>>,
    /// The dark spell, if one was struck: (from, to).
    dark: Mutex<Option<(Instant, Instant)>>,
    /// The limits its requests are admitted under, if any.
    gate: Option<Gate>,
}

/// TCP's first retransmission timeout on Linux (`TCP_RTO_MIN`); it doubles with each retry.
const RTO: std::time::Duration = std::time::Duration::from_millis(200);

/// When bytes sent at `sent`, due across at `due`, do cross given the dark spell `dark`: at
/// `due` if the wire is lit then, else at the first retransmission (sent + RTO·(2^k − 1),
/// k = 1, 2, ...) that falls after the spell.
fn crossing(sent: Instant, due: Instant, dark: Option<(Instant, Instant)>) -> Instant {
    match dark {
        Some((from, to)) if due >= from && due < to => {
            let mut retry = sent;
            let mut rto = RTO;
            while retry < to {
                retry += rto;
                rto *= 2;
            }
            retry.max(due)
        }
        _ => due,
    }
}

impl DelayProxy {
    /// Listens on a free loopback port and forwards to `upstream` (inside a tokio runtime).
    pub fn start(upstream: SocketAddr, profile: LatencyProfile, seed: u64) -> io::Result<DelayProxy> {
        DelayProxy::start_gated(upstream, profile, seed, None)
    }

    /// As [`DelayProxy::start`], admitting every HTTP request through `gate` when given.
    pub fn start_gated(
        upstream: SocketAddr,
        profile: LatencyProfile,
        seed: u64,
        gate: Option<Gate>,
    ) -> io::Result<DelayProxy> {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let listener = TcpListener::from_std(std_listener)?;
        let shared = Arc::new(Shared {
            profile,
            seed,
            connections: AtomicU64::new(0),
            cut: watch::channel(0).0,
            legs: Mutex::new(Histogram::new(3).expect("a histogram")),
            dark: Mutex::new(None),
            gate,
        });
        let s = shared.clone();
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let n = s.connections.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(serve(client, upstream, s.clone(), n));
            }
        });
        Ok(DelayProxy { addr, shared, accept })
    }

    /// Cuts every live connection (new ones are accepted).
    pub fn disconnect(&self) {
        self.shared.cut.send_modify(|n| *n += 1);
    }

    /// A proxy-disconnect fault on a host that may have no proxy (then it cannot be struck).
    pub(crate) fn disconnect_any(proxy: Option<&DelayProxy>) -> Result<(), super::NotApplied> {
        proxy.ok_or(super::NotApplied::NoProxy { action: "disconnect" })?.disconnect();
        Ok(())
    }

    /// The wire goes dark for `d` from now.
    pub fn blackhole(&self, d: std::time::Duration) {
        let now = clock::now();
        *self.shared.dark.lock().expect("dark lock") = Some((now, now + d));
    }

    /// A proxy-blackhole fault on a host that may have no proxy.
    pub(crate) fn blackhole_any(proxy: Option<&DelayProxy>, d: std::time::Duration) -> Result<(), super::NotApplied> {
        proxy.ok_or(super::NotApplied::NoProxy { action: "blackhole" })?.blackhole(d);
        Ok(())
    }

    /// The legs injected so far, in nanoseconds.
    pub fn legs(&self) -> Histogram<u64> {
        self.shared.legs.lock().expect("legs lock").clone()
    }
}

impl Drop for DelayProxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.disconnect();
    }
}

/// One client connection: two pumps, each delaying what it reads before writing it on (or,
/// with a gate, the HTTP-aware pair of [`gate::serve`]).
async fn serve(client: TcpStream, upstream: SocketAddr, shared: Arc<Shared>, n: u64) {
    let Ok(server) = TcpStream::connect(upstream).await else { return };
    let _ = (client.set_nodelay(true), server.set_nodelay(true));
    if shared.gate.is_some() {
        return gate::serve(client, server, shared, n).await;
    }
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let mut cut = shared.cut.subscribe();
    let up = pump(cr, sw, shared.clone(), Rng::new(shared.seed ^ (n << 1)));
    let down = pump(sr, cw, shared.clone(), Rng::new(shared.seed ^ (n << 1 | 1)));
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = cut.changed() => {} // dropping both halves resets the connection
    }
}

/// Reads chunks from `from` and writes each to `to` one leg after it arrived, in order.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    to: tokio::net::tcp::OwnedWriteHalf,
    shared: Arc<Shared>,
    mut rng: Rng,
) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, Instant, Vec<u8>)>();
    let writer = async {
        let mut to = to;
        while let Some((sent, due, bytes)) = rx.recv().await {
            shared.cross(sent, due).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    // The closure owns the sender: when the reader ends, the writer learns it and shuts `to` down.
    let reader = shared.read_chunks(&mut from, &mut rng, move |sent, due, bytes| tx.send((sent, due, bytes)).is_ok());
    tokio::join!(reader, writer);
}

impl Shared {
    /// Reads chunks from `from` until it ends (or `each` says stop), giving each chunk the
    /// instant it arrived and the one it is due across: one leg later, or with the chunk
    /// before it when that one is still on the way.
    async fn read_chunks(
        &self,
        from: &mut tokio::net::tcp::OwnedReadHalf,
        rng: &mut Rng,
        mut each: impl FnMut(Instant, Instant, Vec<u8>) -> bool,
    ) {
        let mut buf = vec![0u8; 64 * 1024];
        let mut last = clock::now();
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            // A chunk that arrives while the one before it is still on the way is the same
            // message (a response in two reads): it goes with it, not one more leg later.
            let now = clock::now();
            if last <= now {
                last = now + self.leg(rng);
            }
            if !each(now, last, buf[..n].to_vec()) {
                break;
            }
        }
    }

    /// One leg drawn from the profile, and recorded.
    fn leg(&self, rng: &mut Rng) -> std::time::Duration {
        let leg = self.profile.leg.draw(rng);
        let _ = self.legs.lock().expect("legs lock").record(leg.as_nanos() as u64);
        leg
    }

    /// Waits until bytes sent at `sent`, due at `due`, have crossed the wire.
    async fn cross(&self, sent: Instant, due: Instant) {
        tokio::time::sleep_until(due).await;
        // A spell struck while these bytes were held still catches them.
        let dark = *self.dark.lock().expect("dark lock");
        tokio::time::sleep_until(crossing(sent, due, dark)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::host::Leg;

    #[test]
    fn bytes_due_in_the_dark_cross_at_the_first_retransmission_after_it() {
        let t = clock::now();
        let ms = |n: u64| t + std::time::Duration::from_millis(n);
        let dark = Some((ms(100), ms(1_100)));
        assert_eq!(crossing(ms(0), ms(50), dark), ms(50), "before the spell: on time");
        assert_eq!(crossing(ms(0), ms(1_200), dark), ms(1_200), "after it: on time");
        // Sent at 0, due at 150 (dark): retries at 200, 600, 1400 -> 1400.
        assert_eq!(crossing(ms(0), ms(150), dark), ms(1_400));
        // Sent at 900: retries at 1100 -> the spell has ended by then.
        assert_eq!(crossing(ms(900), ms(950), dark), ms(1_100));
        assert_eq!(crossing(ms(0), ms(150), None), ms(150));
    }

    fn fixed(ms: u64) -> LatencyProfile {
        let d = std::time::Duration::from_millis(ms);
        let leg = Leg { min: d, max: d, tail_ratio: 0.0, tail_mean: d, tail_max: d };
        LatencyProfile { name: "fixed".into(), leg, concurrency: 1, held_exec_cost: std::time::Duration::ZERO }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_direction_pays_a_leg_in_order_and_a_disconnect_cuts() {
        // An echo server behind a proxy of 40 ms legs: a round trip takes two legs at least.
        let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = echo.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        let proxy = DelayProxy::start(upstream, fixed(40), 1).unwrap();
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        let t0 = clock::now();
        for chunk in [&b"one "[..], b"two ", b"three"] {
            c.write_all(chunk).await.unwrap();
        }
        let mut got = Vec::new();
        while got.len() < 13 {
            let mut buf = [0u8; 64];
            let n = c.read(&mut buf).await.unwrap();
            assert!(n > 0, "closed early");
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, b"one two three", "in order");
        assert!(t0.elapsed() >= std::time::Duration::from_millis(80), "two legs at least: {:?}", t0.elapsed());
        assert!(proxy.legs().len() >= 2 && proxy.legs().min() >= 39_000_000, "legs recorded (3 significant digits)");
        proxy.disconnect();
        let mut buf = [0u8; 8];
        let cut = clock::timeout(std::time::Duration::from_secs(10), c.read(&mut buf)).await.unwrap();
        assert!(matches!(cut, Ok(0) | Err(_)), "the connection is cut: {cut:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_close_by_the_server_crosses_to_the_client() {
        // A server that reads a little, then closes: its client must see the close (a
        // daemon restarted under a held request), not hang.
        let server = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let upstream = server.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = server.accept().await {
                let mut buf = [0u8; 16];
                let _ = s.read(&mut buf).await;
            }
        });
        let proxy = DelayProxy::start(upstream, fixed(5), 1).unwrap();
        let mut c = TcpStream::connect(proxy.addr).await.unwrap();
        c.write_all(b"hello").await.unwrap();
        let mut buf = [0u8; 8];
        let closed = clock::timeout(std::time::Duration::from_secs(5), c.read(&mut buf)).await;
        assert!(matches!(closed, Ok(Ok(0) | Err(_))), "the close crossed: {closed:?}");
    }
}
