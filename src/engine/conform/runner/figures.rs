//! The runner's figures: pickup and answer latency over sequential calls, and its lists of
//! the dir while idle. A figure over no sample says "not measured".

use std::time::{Duration, Instant};

use super::super::observe::What;
use super::super::{figure, ms, try_g, Graded};
use super::{Ctx, OK_REPLY};
use crate::base::protocol::req_name;
use crate::results::conform::Verdict;

pub(super) fn wake_latency(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let (mut pickup, mut answer) = (Vec::new(), Vec::new());
    for i in 0..10 {
        if !ctx.alive() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        let (fid, _, at) = ctx.call(&format!("wake-{i}"), OK_REPLY, 0);
        if let Some(a) = ctx.answer(&fid, at, Duration::from_secs(3)) {
            answer.push(a.at - at);
        }
        let req = req_name(&fid);
        if let Some(o) = ctx.w.obs.events().iter().find(|e| e.at >= at && e.name == req && e.what == What::Opened) {
            pickup.push(o.at - at);
        }
        ctx.done_with(&fid);
    }
    let (n, m) = (pickup.len(), answer.len());
    let evidence = vec![
        format!("pickup (request first opened): {} over {n} calls", figure(&mut pickup)),
        format!("answer published: {} over {m} calls (the tool is a process start)", figure(&mut answer)),
    ];
    let reason = match pickup.get((n.max(1) - 1) / 2) {
        Some(p50) => format!("pickup p50 {}", ms(*p50)),
        None => "pickup not measured: no call was picked up".into(),
    };
    Graded::new(Verdict::Informational, reason, evidence)
}

pub(super) fn idle_rate(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    std::thread::sleep(Duration::from_millis(200));
    let from = Instant::now();
    let window = Duration::from_secs(5);
    let end = from + window;
    while Instant::now() < end && ctx.alive() && !ctx.w.halted() {
        std::thread::sleep(Duration::from_millis(50).min(end.saturating_duration_since(Instant::now())));
    }
    if !ctx.alive() {
        return Graded::new(
            Verdict::Informational,
            "idle lists not measured: the runner exited",
            vec![format!("it exited {} into the {} window", ms(from.elapsed()), ms(window))],
        );
    }
    let lists =
        ctx.w.obs.events().iter().filter(|e| e.at >= from && e.at < from + window && e.what == What::Listed).count();
    let per_min = lists as f64 * 60.0 / window.as_secs_f64();
    Graded::new(
        Verdict::Informational,
        format!("{per_min:.0} lists/min idle"),
        vec![format!("{lists} opens of the relay dir in {} while no call came", ms(window))],
    )
}
