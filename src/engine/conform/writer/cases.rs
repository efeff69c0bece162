//! The writer cases about one call as the contract has it: the request's bytes and
//! publication, each answer's shape, a late answer, cleanup, temp names and stale answers,
//! the deadline, parallel calls and the answer-read figure.

use std::time::{Duration, Instant};

use super::super::observe::{publication, shown, What};
use super::super::{figure, left_in, left_line, ms, open_dir, Graded};
use super::{exited_unpublished, try_g, Ctx, Told, GOLDEN, TIMEOUT_MS};
use crate::base::protocol::{req_name, res_name, Response};
use crate::results::conform::Verdict;

/// A call whose answer is `reply`; graded by `grade` on what the writer told.
pub(super) fn answered(
    ctx: &Ctx,
    id: &str,
    reply: &[u8],
    grade: impl FnOnce(&Told) -> (Verdict, &'static str),
) -> Graded {
    let (mut call, _) = try_g!(ctx.published(id, "no request appeared"));
    ctx.answer(id, reply, true);
    let (told, _) = call.end(ctx.w.within(Duration::from_secs(6)));
    let (v, why) = grade(&told);
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(50)));
    let mut evidence = vec![
        format!("answer published: {}", shown(reply, 100)),
        format!("the writer told: {told:?}"),
        left_line(&ctx.w.dir),
    ];
    evidence.extend(call.proc.stderr_tail().filter(|_| v == Verdict::Failed));
    ctx.clear();
    Graded::new(v, why, evidence)
}

pub(super) fn shape(ctx: &Ctx, id: &str, want: Response) -> Graded {
    let reply = want.encode();
    answered(ctx, id, &reply, |t| match t {
        Told::Answer(r) if *r == want => (Verdict::Ok, "read as sent"),
        _ => (Verdict::Failed, "not read as sent"),
    })
}

pub(super) fn must_error(t: &Told) -> (Verdict, &'static str) {
    match t {
        Told::Answer(Response::Error(_)) => (Verdict::Ok, "an error"),
        Told::Nothing(Some(c)) if *c != 0 => (Verdict::Ok, "an error (no answer, a non-zero exit)"),
        Told::Nothing(_) => (Verdict::Failed, "no answer and no error: exit 0 or a signal"),
        Told::Waiting => (Verdict::NonStrict, "still waiting at the bound (it would wait out its deadline)"),
        Told::Answer(_) => (Verdict::Failed, "read as a success or a pause"),
    }
}

pub(super) fn request_bytes(ctx: &Ctx) -> Graded {
    let (mut call, seen) = try_g!(ctx.begin("call-1", "x", Some(r#"{"b":2,"a":"1"}"#), Some(TIMEOUT_MS)));
    let mut evidence = vec![left_line(&ctx.w.dir)];
    let bytes = seen.as_ref().and_then(|e| e.bytes.clone()).and_then(Result::ok);
    if seen.is_some() {
        ctx.answer("call-1", &Response::Ok("x".into()).encode(), true);
    }
    let (told, _) = call.end(ctx.w.within(Duration::from_secs(5)));
    ctx.clear();
    let Some(bytes) = bytes else {
        return match told {
            Told::Nothing(code) if seen.is_none() => exited_unpublished(code, "no call-1.req.json appeared", evidence),
            _ => ctx.w.unseen("no readable call-1.req.json appeared", evidence),
        };
    };
    evidence.push(format!("call-1.req.json: {}", shown(&bytes, 200)));
    evidence.push(format!("golden:          {}", shown(GOLDEN, 200)));
    if bytes == GOLDEN {
        return Graded::new(Verdict::Ok, "byte for byte the golden request", evidence);
    }
    let same = serde_json::from_slice::<serde_json::Value>(&bytes).ok() == serde_json::from_slice(GOLDEN).ok();
    if same {
        Graded::new(Verdict::NonStrict, "the same request, other bytes (whitespace or key order)", evidence)
    } else {
        Graded::new(Verdict::Failed, "not the golden request", evidence)
    }
}

pub(super) fn request_atomic(ctx: &Ctx) -> Graded {
    let (mut call, seen) =
        try_g!(ctx.begin("w-atomic-1", "conform", Some(r#"{"pad":"0123456789"}"#), Some(TIMEOUT_MS)));
    if seen.is_some() {
        ctx.answer("w-atomic-1", &Response::Ok("x".into()).encode(), true);
    }
    let _ = call.end(ctx.w.within(Duration::from_secs(5)));
    let evs = ctx.w.obs.events();
    let from: Vec<String> = evs
        .iter()
        .filter_map(|e| match &e.what {
            What::MovedIn { from } if e.name == "w-atomic-1.req.json" => Some(format!("{from:?}")),
            _ => None,
        })
        .collect();
    let evidence = vec![format!("renamed onto w-atomic-1.req.json from: {from:?}")];
    ctx.clear();
    match publication(&evs, "w-atomic-1.req.json") {
        Ok(()) => Graded::new(Verdict::Ok, "renamed from a `.tmp.` name in the dir", evidence),
        Err((true, why)) => Graded::new(Verdict::Failed, why, evidence),
        Err((false, why)) => Graded::new(Verdict::NonStrict, why, evidence),
    }
}

pub(super) fn late_answer(ctx: &Ctx) -> Graded {
    let (mut call, _) = try_g!(ctx.published("w-late-1", "no request appeared"));
    ctx.pick("w-late-1");
    std::thread::sleep(Duration::from_millis(1500));
    let at = ctx.answer("w-late-1", &Response::Ok("late".into()).encode(), false);
    let (told, end) = call.end(ctx.w.within(Duration::from_secs(5)));
    let mut evidence = vec![format!("the writer told: {told:?}")];
    if let Some(e) = end {
        evidence.push(format!("it ended {} after the answer", ms(e.saturating_duration_since(at))));
    }
    ctx.clear();
    if let Some(again) = ctx.republished() {
        return again;
    }
    if told == Told::Answer(Response::Ok("late".into())) {
        Graded::new(Verdict::Ok, "read the late answer", evidence)
    } else {
        Graded::new(Verdict::Failed, "did not read the late answer", evidence)
    }
}

pub(super) fn cleanup(ctx: &Ctx, id: &str, reply: Response) -> Graded {
    let (mut call, _) = try_g!(ctx.published(id, "no request appeared"));
    // The runner's delete failed: the request is still there when the answer comes.
    ctx.answer(id, &reply.encode(), false);
    let (told, _) = call.end(ctx.w.within(Duration::from_secs(5)));
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(100)));
    let left: Vec<String> =
        left_in(&ctx.w.dir).into_iter().filter(|n| n == &req_name(id) || n == &res_name(id)).collect();
    let evidence = vec![format!("the writer told: {told:?}"), left_line(&ctx.w.dir)];
    ctx.clear();
    if told == Told::Waiting {
        return ctx.w.unseen("the writer never ended", evidence);
    }
    if left.is_empty() {
        Graded::new(Verdict::Ok, "both files deleted", evidence)
    } else {
        Graded::new(Verdict::Failed, format!("left behind: {}", left.join(", ")), evidence)
    }
}

pub(super) fn temp_ignored(ctx: &Ctx) -> Graded {
    let id = "w-temp-1";
    let (mut call, _) = try_g!(ctx.published(id, "no request appeared"));
    ctx.pick(id);
    let decoy = format!("{}.tmp.conform-decoy", res_name(id));
    let _ = open_dir(&ctx.w.dir).and_then(|d| d.write_new(&decoy, &Response::Ok("decoy".into()).encode()));
    std::thread::sleep(Duration::from_millis(400));
    ctx.answer(id, &Response::Ok("real".into()).encode(), false);
    let (told, _) = call.end(ctx.w.within(Duration::from_secs(5)));
    let evidence = vec![
        format!("{decoy} held a complete answer \"decoy\" for 400 ms before the real one"),
        format!("the writer told: {told:?}"),
    ];
    ctx.clear();
    match told {
        Told::Answer(Response::Ok(t)) if t == "real" => Graded::new(Verdict::Ok, "read the final name only", evidence),
        _ => Graded::new(Verdict::Failed, "did not read the real answer", evidence),
    }
}

pub(super) fn stale_answer(ctx: &Ctx) -> Graded {
    let id = "w-stale-1";
    let _ = open_dir(&ctx.w.dir).and_then(|d| d.write_new(&res_name(id), &Response::Ok("stale".into()).encode()));
    let (mut call, seen) = try_g!(ctx.begin(id, "conform", Some("{}"), Some(TIMEOUT_MS)));
    if seen.is_some() {
        std::thread::sleep(Duration::from_millis(300));
        ctx.answer(id, &Response::Ok("fresh".into()).encode(), true);
    }
    let (told, _) = call.end(ctx.w.within(Duration::from_secs(5)));
    let evidence = vec![
        format!("{} held {{\"ok\":true,\"text\":\"stale\"}} before the call", res_name(id)),
        format!("the writer told: {told:?}"),
    ];
    ctx.clear();
    match told {
        Told::Answer(Response::Ok(t)) if t == "fresh" => {
            Graded::new(Verdict::Ok, "returned the fresh answer", evidence)
        }
        Told::Answer(Response::Ok(t)) if t == "stale" => {
            Graded::new(Verdict::Failed, "returned the stale answer", evidence)
        }
        _ if seen.is_none() => Graded::new(Verdict::NonStrict, "refused the call (no request published)", evidence),
        _ => Graded::new(Verdict::Failed, "did not return the fresh answer", evidence),
    }
}

pub(super) fn deadline(ctx: &Ctx) -> Graded {
    let id = "w-deadline-1";
    let deadline = Duration::from_millis(100) + Duration::from_secs(10);
    let (mut call, req) = try_g!(ctx.begin(id, "conform", Some("{}"), Some(100)));
    let published = req.map(|e| e.at);
    let seen = published.is_some();
    let late = ctx.w.pace.wait(Duration::from_millis(2500));
    let (told, end) = call.end(deadline + late + ctx.w.pace.wait(Duration::from_millis(1500)));
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(100)));
    let left = ctx.w.dir.join(req_name(id)).exists();
    let mut evidence = vec![format!("request published: {seen}; the writer told: {told:?}"), left_line(&ctx.w.dir)];
    ctx.clear();
    let Some(end) = end else {
        let past = late + ctx.w.pace.wait(Duration::from_millis(1500));
        return Graded::new(Verdict::Failed, format!("still waiting {} past its deadline", ms(past)), evidence);
    };
    let took = end - call.proc.started;
    evidence.push(format!("it gave up {} after it started (deadline {})", ms(took), ms(deadline)));
    if matches!(told, Told::Answer(_)) {
        return Graded::new(Verdict::Failed, "told an answer nobody published", evidence);
    }
    if took + Duration::from_millis(50) < deadline {
        return Graded::new(Verdict::Failed, "gave up before its deadline", evidence);
    }
    // Late is counted from the request's publication: the writer's clock runs by then,
    // however long a loaded machine took to start it.
    if end.saturating_duration_since(published.unwrap_or(call.proc.started)) > deadline + late {
        return Graded::new(Verdict::NonStrict, format!("gave up more than {} past its deadline", ms(late)), evidence);
    }
    if left {
        return Graded::new(
            Verdict::NonStrict,
            "gave up in time, but left its request for a runner that starts later",
            evidence,
        );
    }
    Graded::new(Verdict::Ok, "gave up at its deadline and removed its request", evidence)
}

/// The decoy answer of `parallel-8`, under an id no call has.
const DECOY: &str = "w-par-decoy";

pub(super) fn parallel_8(ctx: &Ctx) -> Graded {
    let t0 = Instant::now();
    let decoy = Response::Ok("decoy: no call's answer".into()).encode();
    if let Err(e) = super::super::publish(&ctx.w.dir, &res_name(DECOY), &decoy) {
        return super::super::setup_failed(&e);
    }
    let mut calls = Vec::new();
    for i in 0..8 {
        let args = format!(r#"{{"i":{i}}}"#);
        calls.push(try_g!(ctx.call(&format!("w-par-{i}"), "conform", Some(&args), Some(TIMEOUT_MS))));
    }
    let all = ctx.w.obs.wait_for(ctx.w.within(Duration::from_secs(6)), |evs| {
        calls
            .iter()
            .all(|c| evs.iter().any(|e| e.at >= t0 && e.name == req_name(&c.id) && e.bytes.is_some()))
            .then_some(())
    });
    if all.is_none() {
        let seen = calls.iter().filter(|c| ctx.w.obs.events().iter().any(|e| e.name == req_name(&c.id))).count();
        let exited = calls.iter_mut().filter_map(|c| c.proc.exited()).count();
        let evidence =
            vec![format!("{seen} of 8 requests appeared; {exited} writers had exited"), left_line(&ctx.w.dir)];
        ctx.clear();
        return if exited > 0 && seen < 8 {
            Graded::new(Verdict::Failed, "a writer exited without publishing its request", evidence)
        } else {
            ctx.w.unseen("not all 8 requests appeared", evidence)
        };
    }
    // One at a time, the last call first, a gap between: a writer that takes the first
    // answer it finds takes the decoy's or another call's.
    let gap = Duration::from_millis(150);
    for c in calls.iter().rev() {
        ctx.answer(&c.id, &Response::Ok(format!("answer-{}", c.id)).encode(), true);
        std::thread::sleep(gap);
    }
    let mut wrong = Vec::new();
    let mut waiting = 0;
    for c in &mut calls {
        let (told, _) = c.end(ctx.w.within(Duration::from_secs(5)));
        match told {
            Told::Answer(Response::Ok(t)) if t == format!("answer-{}", c.id) => {}
            Told::Waiting => waiting += 1,
            told => wrong.push(format!("{}: told {told:?}", c.id)),
        }
    }
    let decoy_now = std::fs::read(ctx.w.dir.join(res_name(DECOY))).ok();
    if decoy_now.as_deref() != Some(&decoy[..]) {
        wrong.push(format!(
            "the decoy {} was {}",
            res_name(DECOY),
            if decoy_now.is_some() { "changed" } else { "deleted" }
        ));
    }
    ctx.clear();
    let mut evidence = vec![format!(
        "a decoy answer under {DECOY}, then 8 writers answered one at a time ({} apart) in reverse order, {} after the first started",
        ms(gap),
        ms(t0.elapsed())
    )];
    evidence.extend(wrong.iter().cloned());
    if !wrong.is_empty() {
        Graded::new(
            Verdict::Failed,
            format!("{} of 8 did not get their own answer, or the decoy was touched", wrong.len().min(8)),
            evidence,
        )
    } else if waiting > 0 {
        ctx.w.unseen(format!("{waiting} of 8 writers still waiting after their answer"), evidence)
    } else {
        Graded::new(Verdict::Ok, "each got its own answer, the decoy left alone", evidence)
    }
}

pub(super) fn answer_latency(ctx: &Ctx) -> Graded {
    let mut lat = Vec::new();
    for i in 0..5 {
        let id = format!("w-lat-{i}");
        ctx.w.begun.set(Instant::now());
        let Ok((mut call, Some(_))) = ctx.begin(&id, "conform", Some("{}"), Some(TIMEOUT_MS)) else { break };
        let at = ctx.answer(&id, &Response::Ok("x".into()).encode(), true);
        if let Some(gone) = ctx.w.obs.wait_gone(&res_name(&id), at, ctx.w.within(Duration::from_secs(3))) {
            lat.push(gone - at);
        }
        let _ = call.end(ctx.w.within(Duration::from_secs(3)));
        ctx.clear();
    }
    let n = lat.len();
    let line = figure(&mut lat);
    let reason = match lat.get((n.max(1) - 1) / 2) {
        Some(p50) => format!("answer read p50 {}", ms(*p50)),
        None => "answer read not measured: no answer was read".into(),
    };
    Graded::new(
        Verdict::Informational,
        reason,
        vec![format!("answer published -> deleted by the writer: {line} over {n} calls")],
    )
}
