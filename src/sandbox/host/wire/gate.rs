//! The delay proxy as the provider's proxy in front of a real daemon, under a case's limits.
//!
//! Every HTTP request of a connection is read whole at the far end of the wire (after its
//! leg), classified by the daemon's routes ([`Classify`]: list, read, write, rename,
//! delete, stat, exec) and admitted through the case's organisation ([`Org::admit`]) before
//! it goes on to the daemon, as the emulated daemon admits its requests: counted in its
//! second's bucket, then let through, queued (held here, not forwarded) for at most the
//! stated wait, or refused. A refusal is answered here: `429 Too Many Requests` with a
//! problem-details body like the daemon's (and `Retry-After` when a queue gave up), the
//! connection kept open for the next request. A request's place is held until its
//! response's last byte has crossed back to the client. A held request (an exec) with no
//! response byte for the idle timeout is cut: both sides closed, the client's with a reset.
//! The proxy's real client connections are the organisation's connection gauge, and one
//! idle for the keep-alive is closed here, as Daytona's proxy closes them.
//!
//! Where this differs from the emulated daemon: a refusal crosses the wire back (one leg)
//! where the emulated daemon answers at once; a request that is none of the runner's
//! operations passes unadmitted and uncounted; a client that closes while its request is
//! queued takes it away (it is counted, never admitted); a stream that is not HTTP as
//! expected passes through as bytes from there on.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

use super::http::{Event, Framer, Head};
use super::Shared;
use crate::base::clock;
use crate::base::rng::Rng;
use crate::sandbox::host::org::{OnLimit, Org, Ticket};
use crate::sandbox::host::Kind;

/// Which operation a request is, from its head and body (`None`: not one to admit).
pub(crate) type Classify = fn(&Head, &[u8]) -> Option<Kind>;

/// What a gated proxy admits its requests through: the case's organisation, the sandbox it
/// stands in front of, and how to tell its requests apart.
#[derive(Clone)]
pub struct Gate {
    /// The organisation whose limits the gate enforces.
    pub org: Arc<Org>,
    /// The sandbox the gated daemon is.
    pub sandbox: u32,
    /// How a request on the wire is told apart (its kind, discovery or data).
    pub classify: Classify,
}

/// Bytes of a request body kept to classify it (a longer one is classified by its start).
const BODY_KEPT: usize = 1 << 20;

/// A request forwarded whose response has not ended yet.
struct Waiting {
    ticket: Option<Ticket>,
    held: bool,
    head_request: bool,
}

/// One connection's state, shared by its pumps.
struct Conn {
    waiting: Option<Waiting>,
    /// When a held request is cut unless a response byte crosses first.
    cut_at: Option<Instant>,
    /// Since when the connection has carried nothing (no request, no response on the way).
    idle_since: Option<Instant>,
}

/// Bytes on their way to the client; `ends`: a response ends with them (and the place it
/// held, if it held one, is given back once they have crossed); `last`: the daemon closed
/// the connection after them.
struct Down {
    sent: Instant,
    due: Instant,
    bytes: Vec<u8>,
    ends: Option<Option<Ticket>>,
    last: bool,
}

/// What becomes of one request.
enum Verdict {
    Forward(Waiting),
    Refuse(Vec<u8>),
    /// The client closed while it was queued.
    Gone,
}

/// One client connection through a gated proxy.
pub(super) async fn serve(client: TcpStream, server: TcpStream, shared: Arc<Shared>, n: u64) {
    let gate = shared.gate.clone().expect("a gated proxy");
    let _counted = gate.org.connect(gate.sandbox);
    let client_fd = client.as_raw_fd();
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let conn = Mutex::new(Conn { waiting: None, cut_at: None, idle_since: Some(clock::now()) });
    let lock = || conn.lock().expect("connection state poisoned");
    let changed = Notify::new();
    let (up_tx, mut up_rx) = mpsc::unbounded_channel::<(Instant, Instant, Vec<u8>)>();
    let (down_tx, mut down_rx) = mpsc::unbounded_channel::<Down>();
    let answers = down_tx.clone();
    let (gone_tx, mut gone) = watch::channel(false);
    let (mut up_rng, mut down_rng) = (Rng::new(shared.seed ^ (n << 1)), Rng::new(shared.seed ^ (n << 1 | 1)));
    let mut answer_rng = Rng::new(shared.seed ^ (n << 1) ^ 0x0429_0429);

    let pump = Pump { shared: &shared, gate: &gate, conn: &conn, changed: &changed };
    let up_read = async {
        let tx = up_tx;
        shared
            .read_chunks(&mut cr, &mut up_rng, |sent, due, bytes| {
                lock().idle_since = None;
                tx.send((sent, due, bytes)).is_ok()
            })
            .await;
        gone_tx.send_replace(true);
    };
    let up_write = up_write(pump, &mut up_rx, &mut sw, &mut gone, answers, &mut answer_rng);
    let down_read = down_read(pump, &mut sr, &mut down_rng, down_tx);
    let down_write = down_write(pump, &mut down_rx, &mut cw);
    let timers = timers(&conn, &changed, gate.org.limits().keepalive);
    let mut cut = shared.cut.subscribe();
    let closed = tokio::select! {
        _ = async { tokio::join!(up_read, up_write, down_read, down_write) } => None,
        _ = cut.changed() => None, // dropping both sides closes the connection
        why = timers => Some(why),
    };
    if closed == Some(Close::Cut) {
        // A reset, not a close: no FIN first (the write half is not shut down).
        gate.org.note_cut();
        reset_on_close(client_fd);
        cw.forget();
    }
    drop(cr);
}

/// What a connection's pumps share: the proxy, its gate, the connection's state and the
/// wake its timers wait on.
#[derive(Clone, Copy)]
struct Pump<'a> {
    shared: &'a Shared,
    gate: &'a Gate,
    conn: &'a Mutex<Conn>,
    changed: &'a Notify,
}

/// Responses on their way back: read as the daemon sends them, framed to see where each
/// ends (its place is given back once its last byte crosses), a held request's idle timer
/// started again by every byte; the daemon's close ends the connection after them.
async fn down_read(
    p: Pump<'_>,
    sr: &mut tokio::net::tcp::OwnedReadHalf,
    down_rng: &mut Rng,
    tx: mpsc::UnboundedSender<Down>,
) {
    let idle_timeout = p.gate.org.idle_timeout();
    let mut framer = Framer::responses();
    let (mut raw, mut final_head, mut ev) = (false, true, Vec::new());
    p.shared
        .read_chunks(sr, down_rng, |sent, due, bytes| {
            let mut c = p.conn.lock().expect("connection state poisoned");
            let mut ends = None;
            if !raw {
                if framer.between() {
                    framer.next_answers_head(c.waiting.as_ref().is_some_and(|w| w.head_request));
                }
                ev.clear();
                raw = framer.feed(&bytes, &mut ev).is_err();
                for e in &ev {
                    match e {
                        Event::Head(h, _) => final_head = !h.interim(),
                        Event::End(_) if final_head => {
                            ends = Some(c.waiting.take().and_then(|w| w.ticket));
                            c.cut_at = None;
                        }
                        _ => {}
                    }
                }
            }
            // A response byte crossed: a held request's idle timeout starts again.
            if let (Some(w), Some(t)) = (&c.waiting, idle_timeout) {
                if w.held {
                    c.cut_at = Some(sent + t);
                }
            }
            drop(c);
            p.changed.notify_one();
            tx.send(Down { sent, due, bytes, ends, last: false }).is_ok()
        })
        .await;
    // The daemon closed: a body framed by the close ends with it, a request left
    // unanswered fails; the client's side is closed after what is on its way.
    let _ = framer.close();
    let ticket = {
        let mut c = p.conn.lock().expect("connection state poisoned");
        c.cut_at = None;
        c.waiting.take().and_then(|w| w.ticket)
    };
    let now = clock::now();
    let _ = tx.send(Down { sent: now, due: now, bytes: Vec::new(), ends: Some(ticket), last: true });
}

/// Requests on their way to the daemon: each crosses the wire when due, is read whole, and is
/// admitted (forwarded, its place held until its response ends), refused (answered here,
/// through `answers`), or dropped with the connection when its client went while it queued.
async fn up_write(
    p: Pump<'_>,
    up_rx: &mut mpsc::UnboundedReceiver<(Instant, Instant, Vec<u8>)>,
    sw: &mut tokio::net::tcp::OwnedWriteHalf,
    gone: &mut watch::Receiver<bool>,
    answers: mpsc::UnboundedSender<Down>,
    answer_rng: &mut Rng,
) {
    let mut framer = Framer::requests();
    let mut raw = false;
    let (mut msg, mut body, mut head, mut ev) = (Vec::new(), Vec::new(), None, Vec::new());
    'stream: while let Some((sent, due, bytes)) = up_rx.recv().await {
        p.shared.cross(sent, due).await;
        if raw {
            if sw.write_all(&bytes).await.is_err() {
                break;
            }
            continue;
        }
        ev.clear();
        if framer.feed(&bytes, &mut ev).is_err() {
            // Not HTTP as expected: the rest passes as it came, unadmitted.
            raw = true;
            msg.extend_from_slice(&bytes);
            if sw.write_all(&std::mem::take(&mut msg)).await.is_err() {
                break;
            }
            continue;
        }
        let mut from = 0;
        for e in ev.drain(..) {
            match e {
                Event::Head(h, _) => head = Some(h),
                Event::Data(r) => {
                    let keep = r.len().min(BODY_KEPT.saturating_sub(body.len()));
                    body.extend_from_slice(&bytes[r.start..r.start + keep]);
                }
                Event::End(at) => {
                    msg.extend_from_slice(&bytes[from..at]);
                    from = at;
                    let h = head.take().expect("a head before its end");
                    let verdict = admit(p.gate, &h, &body, gone).await;
                    body.clear();
                    let request = std::mem::take(&mut msg);
                    match verdict {
                        Verdict::Forward(w) => {
                            {
                                let mut c = p.conn.lock().expect("connection state poisoned");
                                c.cut_at = p.gate.org.idle_timeout().filter(|_| w.held).map(|t| clock::now() + t);
                                c.waiting = Some(w);
                            }
                            p.changed.notify_one();
                            if sw.write_all(&request).await.is_err() {
                                break 'stream;
                            }
                        }
                        Verdict::Refuse(answer) => {
                            let now = clock::now();
                            let due = now + p.shared.leg(answer_rng);
                            let answer = Down { sent: now, due, bytes: answer, ends: Some(None), last: false };
                            let _ = answers.send(answer);
                        }
                        Verdict::Gone => break 'stream,
                    }
                }
            }
        }
        msg.extend_from_slice(&bytes[from..]);
    }
    let _ = sw.shutdown().await;
}

/// Bytes on their way back cross to the client when due; a response's end gives back the
/// place it held, and the connection is idle again once nothing waits on it.
async fn down_write(
    p: Pump<'_>,
    down_rx: &mut mpsc::UnboundedReceiver<Down>,
    cw: &mut tokio::net::tcp::OwnedWriteHalf,
) {
    while let Some(d) = down_rx.recv().await {
        p.shared.cross(d.sent, d.due).await;
        if cw.write_all(&d.bytes).await.is_err() {
            break;
        }
        if let Some(ticket) = d.ends {
            // The response's last byte has crossed back: its place is given back.
            drop(ticket);
            let mut c = p.conn.lock().expect("connection state poisoned");
            if c.waiting.is_none() {
                c.idle_since = Some(clock::now());
            }
            drop(c);
            p.changed.notify_one();
        }
        if d.last {
            break;
        }
    }
    let _ = cw.shutdown().await;
}

/// Why the connection closes on a timer: a held request's idle timeout, or the keep-alive
/// of a connection that carried nothing. Never returns while neither is due.
async fn timers(conn: &Mutex<Conn>, changed: &Notify, keepalive: std::time::Duration) -> Close {
    loop {
        let woken = changed.notified();
        let now = clock::now();
        let next = {
            let c = conn.lock().expect("connection state poisoned");
            let idle_ends = c.idle_since.filter(|_| c.waiting.is_none()).map(|t| t + keepalive);
            if c.cut_at.is_some_and(|t| t <= now) {
                return Close::Cut;
            }
            if idle_ends.is_some_and(|t| t <= now) {
                return Close::Idle;
            }
            c.cut_at.into_iter().chain(idle_ends).min()
        };
        match next {
            Some(t) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(t) => {}
                    _ = woken => {}
                }
            }
            None => woken.await,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Close {
    /// A held request's idle timeout ran out.
    Cut,
    /// The connection was idle for the keep-alive.
    Idle,
}

/// Classifies and admits one request.
async fn admit(gate: &Gate, head: &Head, body: &[u8], gone: &mut watch::Receiver<bool>) -> Verdict {
    let head_request = head.method() == "HEAD";
    let Some(kind) = (gate.classify)(head, body) else {
        return Verdict::Forward(Waiting { ticket: None, held: false, head_request });
    };
    let admitted = tokio::select! {
        r = gate.org.admit(gate.sandbox, kind) => r,
        _ = gone.wait_for(|g| *g) => return Verdict::Gone,
    };
    match admitted {
        Ok(t) => Verdict::Forward(Waiting { ticket: Some(t), held: kind == Kind::Exec, head_request }),
        Err(e) => Verdict::Refuse(too_many_requests(&e, matches!(gate.org.limits().on_limit, OnLimit::Queue(_)))),
    }
}

/// The answer to a refused request: a 429 with a problem-details body like the daemon's;
/// `Retry-After` when it waited in a queue first.
fn too_many_requests(why: &io::Error, queued: bool) -> Vec<u8> {
    let why = why.to_string();
    let detail = why.strip_prefix("429 ").unwrap_or(&why);
    let body = serde_json::json!({
        "type": "urn:relay-bench:error:too_many_requests",
        "title": "Too Many Requests",
        "status": 429,
        "detail": detail,
    })
    .to_string();
    let retry = if queued { "retry-after: 1\r\n" } else { "" };
    format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\n{retry}\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Makes the close of the socket `fd` (still open: one of its halves is alive) a reset.
fn reset_on_close(fd: std::os::fd::RawFd) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: `fd` is this connection's socket, open while the caller holds its halves; the
    // option is a plain struct of the size given.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}
