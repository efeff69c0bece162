//! The emulated remote daemon's tests: its latency legs, its counters, its concurrency limit,
//! and the cost of the execs it holds.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::profile::Leg;
use super::remote::{Daemon, LatencyProfile, RemoteHost};
use super::Host;
use crate::base::rng::Rng;
use crate::sandbox::host::profile::ms;

#[test]
fn shipped_profiles_and_legs() {
    let p = LatencyProfile::shipped("proxy").unwrap();
    let mut rng = Rng::new(3);
    for _ in 0..1000 {
        let l = p.leg.draw(&mut rng);
        assert!(l >= ms(10) && l <= ms(25), "{l:?}");
    }
    let far = LatencyProfile::shipped("far").unwrap();
    let draws: Vec<Duration> = (0..10_000).map(|_| far.leg.draw(&mut rng)).collect();
    let tail = draws.iter().filter(|d| **d > ms(80)).count();
    assert!((300..700).contains(&tail), "about 5% of legs in the tail: {tail}");
    assert!(draws.iter().all(|d| *d <= ms(2080)));
    assert!(LatencyProfile::shipped("mars").is_none());
    assert!(p.describe().contains("proxy: round trip 20.0ms–50.0ms"), "{}", p.describe());
}

#[tokio::test(start_paused = true)]
async fn each_request_pays_two_legs_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let profile = LatencyProfile {
        name: "fixed".into(),
        leg: Leg::uniform(ms(20), ms(20)),
        concurrency: 2,
        held_exec_cost: Duration::ZERO,
    };
    let daemon = Arc::new(Daemon::new(profile, 1, Arc::default()));
    let host = RemoteHost::new(dir.path(), daemon.clone());
    let t0 = Instant::now();
    host.publish("a.res.json", b"{}").await.unwrap();
    assert_eq!(t0.elapsed(), ms(80), "write + rename: two round trips");
    let t0 = Instant::now();
    assert!(host.list().await.unwrap().contains(&"a.res.json".to_string()));
    assert_eq!(host.read("a.res.json").await.unwrap(), b"{}");
    assert_eq!(t0.elapsed(), ms(80));
    let c = host.counts();
    assert_eq!((c.discovery_total(), c.data_total()), (1, 3));
    assert_eq!(daemon.paid_legs().len(), 8);
}

#[tokio::test(start_paused = true)]
async fn every_exec_the_daemon_holds_slows_its_other_answers_by_the_measured_cost() {
    let dir = crate::sandbox::dir::SimDir::new("/sb/relay");
    let mut profile = LatencyProfile::shipped("proxy").unwrap();
    profile.leg = Leg::uniform(ms(10), ms(10));
    profile.held_exec_cost = ms(3);
    let host = Arc::new(RemoteHost::over(Arc::new(dir.clone()), Arc::new(Daemon::new(profile, 1, Arc::default()))));
    let t0 = Instant::now();
    host.list().await.unwrap();
    assert_eq!(t0.elapsed(), ms(20), "nothing held: two legs");
    let argv =
        crate::sandbox::dir::program::WatchArgs::window("/sb/relay", Duration::from_secs(5), Duration::from_secs(2))
            .argv(std::path::Path::new("relay-bench"));
    let h = host.clone();
    let held = tokio::spawn(async move { h.exec(&argv, Duration::from_secs(10)).await });
    tokio::time::sleep(ms(50)).await;
    let t0 = Instant::now();
    host.list().await.unwrap();
    assert_eq!(t0.elapsed(), ms(23), "one exec held: its cost on the answer");
    held.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_concurrency_limit_queues_requests() {
    let dir = tempfile::tempdir().unwrap();
    let profile = LatencyProfile {
        name: "fixed".into(),
        leg: Leg::uniform(ms(10), ms(10)),
        concurrency: 2,
        held_exec_cost: Duration::ZERO,
    };
    let host = Arc::new(RemoteHost::new(dir.path(), Arc::new(Daemon::new(profile, 1, Arc::default()))));
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let h = host.clone();
        tasks.push(tokio::spawn(async move { h.list().await.unwrap() }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(t0.elapsed(), ms(40), "4 requests, 2 at a time, 20 ms each");
}
