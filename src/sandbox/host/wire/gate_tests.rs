//! A gated delay proxy in front of a small fake daemon: every request admitted, counted and
//! given back; a refusal answered 429 on a connection that lives on; a queue; the idle cut
//! (a reset); the keep-alive close.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::Instant;

use super::http::{Event, Framer};
use super::{DelayProxy, Gate};
use crate::sandbox::host::org::{Caps, Limits, OnLimit, Org};
use crate::sandbox::host::{LatencyProfile, Leg};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A daemon that answers every request: a file read in chunks, anything else with a length;
/// a body with `"sleep": N` answers N ms later. Counts the requests it got.
async fn fake_daemon() -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let got = Arc::new(AtomicUsize::new(0));
    let count = got.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let (mut f, mut buf, mut body, mut path) =
                    (Framer::requests(), vec![0u8; 4096], Vec::new(), String::new());
                loop {
                    let n = match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    let mut ev = Vec::new();
                    f.feed(&buf[..n], &mut ev).unwrap();
                    for e in ev {
                        match e {
                            Event::Head(h, _) => path = format!("{} {}", h.method(), h.path()),
                            Event::Data(r) => body.extend_from_slice(&buf[r]),
                            Event::End(_) => {
                                count.fetch_add(1, Ordering::SeqCst);
                                let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                                if let Some(n) = v.get("sleep").and_then(|n| n.as_u64()) {
                                    tokio::time::sleep(ms(n)).await;
                                }
                                if v.get("close").is_some() {
                                    return; // a daemon gone mid-request
                                }
                                body.clear();
                                let answer: &[u8] = if path == "GET /v1/fs/file" {
                                    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n"
                                } else {
                                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
                                };
                                if s.write_all(answer).await.is_err() {
                                    return;
                                }
                                if path == "GET /v1/fs/file" {
                                    tokio::time::sleep(ms(30)).await; // the rest in a later read
                                    let _ = s.write_all(b"2\r\nde\r\n0\r\n\r\n").await;
                                }
                            }
                        }
                    }
                }
            });
        }
    });
    (addr, got)
}

fn profile() -> LatencyProfile {
    LatencyProfile {
        name: "fixed".into(),
        leg: Leg::uniform(ms(5), ms(5)),
        concurrency: 1,
        held_exec_cost: Duration::ZERO,
    }
}

async fn gated(limits: Limits) -> (DelayProxy, Arc<Org>, Arc<AtomicUsize>) {
    let (upstream, got) = fake_daemon().await;
    let org = Arc::new(Org::new(limits, 1));
    org.count_real_connections();
    let gate = Gate { org: org.clone(), sandbox: 0, classify: crate::sandbox::host::sandbox_agent_request_kind };
    (DelayProxy::start_gated(upstream, profile(), 7, Some(gate)).unwrap(), org, got)
}

fn run(command: &str, args: &[&str], sleep: u64) -> Vec<u8> {
    let body = serde_json::json!({ "command": command, "args": args, "timeoutMs": 10000, "sleep": sleep });
    request(body)
}

fn request(body: serde_json::Value) -> Vec<u8> {
    let body = body.to_string();
    format!("POST /v1/processes/run HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn plain(method: &str, target: &str, body: &str) -> Vec<u8> {
    format!("{method} {target} HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

/// One response read whole: status, its raw bytes, body (chunks joined).
async fn answer(s: &mut TcpStream) -> std::io::Result<(u16, String, Vec<u8>)> {
    let (mut f, mut buf, mut raw, mut body, mut status) = (Framer::responses(), [0u8; 4096], Vec::new(), Vec::new(), 0);
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed"));
        }
        raw.extend_from_slice(&buf[..n]);
        let mut ev = Vec::new();
        f.feed(&buf[..n], &mut ev).unwrap();
        for e in ev {
            match e {
                Event::Head(h, _) => {
                    status = if let super::http::Start::Response { status } = h.start { status } else { 0 }
                }
                Event::Data(r) => body.extend_from_slice(&buf[r]),
                Event::End(_) => return Ok((status, String::from_utf8_lossy(&raw).into_owned(), body)),
            }
        }
    }
}

async fn eventually(what: &str, mut ok: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !ok() {
        assert!(t0.elapsed() < Duration::from_secs(5), "{what}");
        tokio::time::sleep(ms(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_on_one_keep_alive_connection_are_each_admitted_counted_and_given_back() {
    let (proxy, org, got) = gated(Limits::default()).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    let requests = [
        run("ls", &["-1", "/tmp/d"], 0),
        plain("GET", "/v1/fs/file?path=/tmp/d/a", ""),
        plain("PUT", "/v1/fs/file?path=/tmp/d/a.tmp", "{\"ok\":true}"),
        plain("POST", "/v1/fs/move", "{}"),
        plain("DELETE", "/v1/fs/entry?path=/tmp/d/a", ""),
        plain("GET", "/v1/fs/stat?path=/tmp/d/a", ""),
        plain("GET", "/v1/health", ""),
    ];
    for (i, r) in requests.iter().enumerate() {
        c.write_all(r).await.unwrap();
        let (status, _, body) = answer(&mut c).await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(body, if i == 1 { &b"abcde"[..] } else { b"{}" }, "the chunked file whole, from two reads");
        eventually("each place given back once its answer crossed", || org.sample().in_flight == 0).await;
    }
    // A held exec holds its place while the daemon works on it.
    c.write_all(&run("/tmp/relay-bench", &["sandbox-watch", "--", "/tmp/d", "5000", "2000"], 300)).await.unwrap();
    eventually("the exec is held", || org.sample().held == 1).await;
    assert_eq!(answer(&mut c).await.unwrap().0, 200);
    eventually("and given back", || org.sample().held == 0).await;
    assert_eq!(got.load(Ordering::SeqCst), 8, "everything forwarded");
    let by: Vec<u64> = org.counts_by_kind().0.iter().map(|(_, n)| *n).collect();
    assert_eq!(by, [1, 1, 1, 1, 1, 1, 1], "one of each kind; the health check is none of the runner's");
    assert_eq!(org.sample().conns, 1, "one real connection");
    drop(c);
    eventually("its connection closed", || org.sample().conns == 0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_limit_is_answered_429_without_forwarding_and_the_connection_lives_on() {
    let limits = Limits { org: Caps { held_execs: Some(0), ..Caps::default() }, ..Limits::default() };
    let (proxy, org, got) = gated(limits).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(&run("node", &["-e", "script", "/tmp/d", "5000", "2000"], 0)).await.unwrap();
    let (status, raw, body) = answer(&mut c).await.unwrap();
    assert_eq!(status, 429, "{raw}");
    assert!(!raw.to_ascii_lowercase().contains("retry-after"), "not queued: {raw}");
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!((v["status"].as_u64(), v["title"].as_str()), (Some(429), Some("Too Many Requests")));
    assert!(v["detail"].as_str().unwrap().contains("held-exec limit"), "{v}");
    assert_eq!(got.load(Ordering::SeqCst), 0, "never forwarded");
    c.write_all(&run("ls", &["-1", "/tmp/d"], 0)).await.unwrap();
    assert_eq!(answer(&mut c).await.unwrap().0, 200, "a list holds nothing, on the same connection");
    assert_eq!(got.load(Ordering::SeqCst), 1);
    let st = org.finish(Instant::now());
    assert_eq!((st.rejected, st.queued, st.held_execs.max), (1, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_holds_the_request_until_a_place_frees_or_its_wait_ends() {
    let limits = Limits {
        sandbox: Caps { requests: Some(1), ..Caps::default() },
        on_limit: OnLimit::Queue(ms(400)),
        ..Limits::default()
    };
    let (proxy, org, got) = gated(limits).await;
    let (mut a, mut b) = (TcpStream::connect(proxy.addr).await.unwrap(), TcpStream::connect(proxy.addr).await.unwrap());
    a.write_all(&run("sh", &["-c", "x"], 250)).await.unwrap();
    eventually("the first request in", || got.load(Ordering::SeqCst) == 1).await;
    let t0 = Instant::now();
    b.write_all(&plain("GET", "/v1/fs/stat?path=/x", "")).await.unwrap();
    tokio::time::sleep(ms(100)).await;
    assert_eq!(got.load(Ordering::SeqCst), 1, "held at the proxy, not forwarded");
    assert_eq!(answer(&mut a).await.unwrap().0, 200);
    assert_eq!(answer(&mut b).await.unwrap().0, 200, "let through once the place was freed");
    assert!(t0.elapsed() >= ms(150), "{:?}", t0.elapsed());
    a.write_all(&run("sh", &["-c", "x"], 1500)).await.unwrap();
    eventually("the long request in", || got.load(Ordering::SeqCst) == 3).await;
    let t0 = Instant::now();
    b.write_all(&plain("GET", "/v1/fs/stat?path=/x", "")).await.unwrap();
    let (status, raw, _) = answer(&mut b).await.unwrap();
    assert_eq!(status, 429, "{raw}");
    assert!(raw.to_ascii_lowercase().contains("retry-after: 1"), "the queue gave up: {raw}");
    assert!(t0.elapsed() >= ms(400) && t0.elapsed() < ms(1400), "after the stated wait: {:?}", t0.elapsed());
    let st = org.finish(Instant::now());
    assert_eq!((st.queued, st.rejected, got.load(Ordering::SeqCst)), (2, 1, 3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_request_silent_for_the_idle_timeout_is_cut_with_a_reset() {
    let limits = Limits { idle_timeout: Some(ms(300)), ..Limits::default() };
    let (proxy, org, _) = gated(limits).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(&run("ls", &["-1", "/tmp/d"], 500)).await.unwrap();
    assert_eq!(answer(&mut c).await.unwrap().0, 200, "a list holds nothing: never cut");
    let t0 = Instant::now();
    c.write_all(&run("/tmp/relay-bench", &["sandbox-watch"], 3000)).await.unwrap();
    let e = answer(&mut c).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    assert!(t0.elapsed() >= ms(300) && t0.elapsed() < ms(2000), "{:?}", t0.elapsed());
    eventually("its place given back", || org.sample().held == 0 && org.sample().conns == 0).await;
    assert_eq!(org.finish(Instant::now()).cut, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_closed_after_the_keepalive() {
    let limits = Limits { keepalive: ms(300), ..Limits::default() };
    let (proxy, org, _) = gated(limits).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    c.write_all(&run("ls", &["-1", "/tmp/d"], 400)).await.unwrap();
    assert_eq!(answer(&mut c).await.unwrap().0, 200, "busy longer than the keep-alive: not idle");
    let t0 = Instant::now();
    let mut buf = [0u8; 16];
    assert_eq!(c.read(&mut buf).await.unwrap(), 0, "closed by the proxy");
    assert!(t0.elapsed() >= ms(250) && t0.elapsed() < ms(2000), "{:?}", t0.elapsed());
    eventually("out of the gauge", || org.sample().conns == 0).await;
    assert_eq!(org.finish(Instant::now()).connections.max, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_gone_mid_request_closes_the_client_side_at_once() {
    let (proxy, org, _) = gated(Limits::default()).await;
    let mut c = TcpStream::connect(proxy.addr).await.unwrap();
    let t0 = Instant::now();
    c.write_all(&request(serde_json::json!({ "command": "x", "sleep": 100, "close": true }))).await.unwrap();
    let e = answer(&mut c).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
    assert!(t0.elapsed() < ms(2000), "not left hanging: {:?}", t0.elapsed());
    eventually("its place given back", || org.sample().held == 0).await;
}
