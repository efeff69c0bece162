//! `cargo bench`: the suite's own costs and one local relay round trip per strategy.
//!
//! - `protocol/*`: encoding and decoding the relay's bytes.
//! - `record/*`: what recording one call's timeline costs, timed in batches of 1,024 calls.
//!   `emit_one_call` is what the measured tasks pay (each side's id, four events: two
//!   intents, two halves); `ingest_one_call` is the recorder thread's share (pairing,
//!   joining the halves, nine HDR records, dropping the events). Their sum is what
//!   recording one call costs. Criterion runs millions of calls, so the pairing set is
//!   large and cold here. `log_one_call` is what the event log (a listener on the same
//!   thread, on in every run) adds.
//! - `round_trip/*`: one call through a real runner and writer on a temp dir, per strategy.
//! - `virtual/*`: a simulated hour of a small fleet.
//! - `fleet/*`: the simulation's hot path per event: an emulated daemon request in virtual
//!   time, the organisation's admission, a gauge change.

use std::sync::Arc;
use std::time::Duration;

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use relay_bench::{
    runner_from_toml, writer_from_toml, CallEnd, CallId, CallOutcome, EventKind, EventLog, EventSink, HandlerModel,
    Listener, LocalHost, Outcome, Recorder, Relay, RelaySpec, Request, Response, RunnerSide, WriterSide,
};
use tokio::time::Instant;

fn protocol(c: &mut Criterion) {
    let mut g = c.benchmark_group("protocol");
    let req = Request::new("x", "call-1", Some(r#"{"b":2,"a":"1"}"#)).unwrap();
    let bytes = req.encode();
    g.bench_function("encode_request", |b| b.iter(|| black_box(&req).encode()));
    g.bench_function("decode_request", |b| b.iter(|| Request::decode(black_box(&bytes)).unwrap()));
    let res = Response::Ok("x".repeat(256));
    let res_bytes = res.encode();
    g.bench_function("encode_response", |b| b.iter(|| black_box(&res).encode()));
    g.bench_function("decode_response", |b| b.iter(|| Response::decode(black_box(&res_bytes)).unwrap()));
    g.finish();
}

/// The four events of one call, as the writer and runner send them. Each side makes its
/// `CallId` once from the id it already holds (the writer from its call spec, the runner
/// from the request it read) and shares it between its two events.
fn emit_call(sink: &EventSink, id: &str, n: u64, t0: Instant) {
    let at = |us: u64| t0 + Duration::from_micros(n * 100 + us);
    let writer_id: CallId = Arc::from(id);
    sink.emit(0, &writer_id, EventKind::Requesting);
    let runner_id: CallId = Arc::from(id);
    sink.emit(0, &runner_id, EventKind::Answering);
    let runner = RunnerSide {
        woke: at(3),
        picked: at(4),
        handler_start: at(5),
        handler_end: at(9),
        answered: Some(at(10)),
        observed: false,
        handler_known: true,
    };
    sink.emit_at(at(10), 0, &runner_id, EventKind::Runner(runner));
    let writer = WriterSide {
        intended: at(0),
        started: at(1),
        warmup: false,
        published: Some(at(2)),
        read: Some(at(12)),
        outcome: CallOutcome::Answered(Outcome::Ok),
    };
    sink.emit_at(at(12), 0, &writer_id, EventKind::Writer(writer));
}

/// The ids of the next `k` calls (made outside the timed part: the writer's pacer has them
/// before the call starts).
fn next_ids(ids: &mut Vec<String>, n: u64, k: u64) {
    ids.clear();
    ids.extend((n + 1..=n + k).map(|i| format!("t{i}-c0")));
}

/// Emits the next `k` calls (untimed: the input of what the recorder thread is timed on).
fn emit_batch(sink: &EventSink, (n, ids): &mut (u64, Vec<String>), k: u64, t0: Instant) {
    next_ids(ids, *n, k);
    for id in ids.iter() {
        *n += 1;
        emit_call(sink, id, *n, t0);
    }
}

/// Calls timed together, so reading the clock does not weigh on the figure.
const BATCH: u64 = 1024;

/// Runs `iters` calls in batches of [`BATCH`] over `state`: `untimed` makes the batch's
/// inputs or clears its outputs, `timed` is the part measured.
fn batched<S>(
    iters: u64,
    state: &mut S,
    mut untimed: impl FnMut(&mut S, u64),
    mut timed: impl FnMut(&mut S, u64),
) -> Duration {
    let mut spent = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let k = left.min(BATCH);
        untimed(state, k);
        let start = std::time::Instant::now();
        timed(state, k);
        spent += start.elapsed();
        left -= k;
    }
    spent
}

fn record(c: &mut Criterion) {
    let mut g = c.benchmark_group("record");
    let t0 = Instant::now();
    // What the measured tasks pay: four events per call (half on the writer, half on the runner).
    g.bench_function("emit_one_call", |b| {
        let (sink, mut rx) = EventSink::channel();
        let mut calls = (0u64, Vec::new());
        b.iter_custom(|iters| {
            batched(
                iters,
                &mut calls,
                |(n, ids), k| {
                    rx.take(drop);
                    next_ids(ids, *n, k);
                },
                |(n, ids), _| {
                    for id in ids.iter() {
                        *n += 1;
                        emit_call(&sink, id, *n, t0);
                    }
                },
            )
        })
    });
    // What the recorder thread pays: take the events, pair, join the halves, fold into
    // histograms, drop the events (and with them the ids).
    g.bench_function("ingest_one_call", |b| {
        let (sink, mut rx) = EventSink::channel();
        let mut recorder = Recorder::default();
        let mut calls = (0u64, Vec::new());
        b.iter_custom(|iters| {
            batched(
                iters,
                &mut calls,
                |calls, k| emit_batch(&sink, calls, k, t0),
                |_, _| {
                    rx.take(|msg| recorder.ingest(&msg));
                },
            )
        })
    });
    // What the event log adds on the recorder thread (on in every `run`): nine lines a call.
    g.bench_function("log_one_call", |b| {
        let (sink, mut rx) = EventSink::channel();
        let file = tempfile::NamedTempFile::new().unwrap();
        let mut log = EventLog::append(file.path(), "bench", t0).unwrap();
        let mut calls = (0u64, Vec::new());
        b.iter_custom(|iters| {
            batched(
                iters,
                &mut calls,
                |calls, k| emit_batch(&sink, calls, k, t0),
                |_, _| {
                    rx.take(|msg| log.message(&msg));
                },
            )
        })
    });
    g.finish();
}

fn round_trip(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let ms = Duration::from_millis;
    // Production's strategies (and 50 ms polling), in their scenario form.
    let cases = [
        ("poll_300ms", "poll", "poll"),
        (
            "poll_50ms",
            r#"{ strategy = "poll", interval = "50ms", max_interval = "50ms" }"#,
            r#"{ strategy = "poll", interval = "50ms" }"#,
        ),
        ("watch", "watch", "watch"),
    ];
    let mut g = c.benchmark_group("round_trip");
    g.sample_size(10).warm_up_time(ms(500)).measurement_time(Duration::from_secs(4));
    for (name, runner, writer) in cases {
        let (runner, writer) = (runner_from_toml(runner).unwrap(), writer_from_toml(writer).unwrap());
        let dir = tempfile::tempdir().unwrap();
        // Recorded as a run records them, on the recorder's own thread: an undrained channel
        // would grow (and copy) its buffer inside the timed calls.
        let (sink, rx) = EventSink::channel();
        let recorder = std::thread::spawn(move || Recorder::run(rx));
        let handler =
            Arc::new(HandlerModel { duration: Duration::ZERO, duration_max: Duration::ZERO, ..Default::default() });
        let relay = rt.block_on(async {
            let spec = RelaySpec {
                sandbox: 0,
                dir: Arc::new(relay_bench::RealDir::new(dir.path())),
                host: Arc::new(LocalHost::new(dir.path())),
                busy: Arc::default(),
                runner: &runner,
                writer: Some(&writer),
                handler,
                // Local strategies run no watch program.
                watch_program: std::path::Path::new("relay-bench"),
                seed: 1,
                stderr_to: None,
            };
            let relay = Relay::start(spec, &sink);
            // Production's runner sweeps its dir before serving: calls start after that.
            assert!(relay.ready(Duration::from_secs(30)).await, "the runner started");
            relay
        });
        let mut n = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                let end = rt.block_on(relay.call(&format!("c{n}"), None, Duration::from_secs(30)));
                assert!(matches!(end, CallEnd::Answered(_)), "{end:?}");
            })
        });
        rt.block_on(relay.stop(Instant::now() + Duration::from_secs(10))).unwrap();
        drop((relay, sink));
        recorder.join().unwrap();
    }
    g.finish();
}

/// Virtual time: how long one simulated hour of 10 remote sandboxes on window-exec (turns
/// with idle gaps, `proxy` latency) takes to run here.
fn virtual_time(c: &mut Criterion) {
    const HOUR: &str = r#"
name = "virtual-hour"
[workload]
sandboxes = 10
calls_per_turn = 2
[[workload.phase]]
duration = "10m"
turns_per_sec = 2
[[workload.phase]]
duration = "50m"
turns_per_sec = 0
[[case]]
name = "window-exec"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
"#;
    let s = relay_bench::Scenario::parse("virtual-hour.toml", HOUR).unwrap();
    let env = relay_bench::CaseEnv::quiet();
    let mut g = c.benchmark_group("virtual");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("one_hour_10_sandboxes_window_exec", |b| {
        b.iter(|| {
            let r = relay_bench::run_case_virtual(&s, &s.cases[0], &env).unwrap();
            assert_eq!(r.calls.lost, 0);
            black_box(r)
        })
    });
    g.finish();
}

/// The simulation's hot path, per event: one emulated daemon request in virtual time (its
/// admission by the organisation, a slot, two latency legs, the in-memory dir's list), the
/// admission alone, and one gauge change.
fn fleet(c: &mut Criterion) {
    use relay_bench::Org;
    use relay_bench::{Daemon, Host, Kind, LatencyProfile, RemoteHost};
    use relay_bench::{Level, Tally};
    use relay_bench::{RelayDir, SimDir};
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
    let mut g = c.benchmark_group("fleet");
    let org = Org::unlimited(1);
    g.bench_function("org_admit_and_release", |b| {
        b.iter(|| rt.block_on(async { drop(black_box(org.admit(0, Kind::List).await.unwrap())) }))
    });
    let dir: Arc<dyn RelayDir> = Arc::new(SimDir::new("/sb/relay"));
    let profile = LatencyProfile::shipped("proxy").unwrap();
    let daemon = Arc::new(Daemon::in_org(profile, 1, Arc::default(), Org::unlimited(1), 0));
    let host = RemoteHost::over(dir, daemon);
    // A thousand requests per iteration: the paused clock jumps over each leg.
    g.bench_function("daemon_request_virtual_x1000", |b| {
        b.iter(|| {
            rt.block_on(async {
                for _ in 0..1000 {
                    black_box(host.list().await.unwrap());
                }
            })
        })
    });
    let t0 = Instant::now();
    let (mut level, mut tally, mut t) = (Level::new(t0), Tally::default(), t0);
    g.bench_function("gauge_change", |b| {
        b.iter(|| {
            t += Duration::from_micros(7);
            level.set(black_box(level.value() ^ 1), t, &mut tally);
        })
    });
    g.finish();
}

criterion_group!(benches, protocol, record, round_trip, virtual_time, fleet);
criterion_main!(benches);
