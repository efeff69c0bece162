//! The runner cases about calls as the contract has them: each answer's shape, atomic
//! publication, delete-on-pickup, the stale sweep, a reused id, parallel calls, the dir made
//! anew, and the figures (pickup latency, idle lists).

use std::time::{Duration, Instant};

use super::super::observe::{publication, shown, What};
use super::super::{left_in, left_line, ms, setup_failed, try_g, Graded};
use super::{ok_reply, request, Ctx, OK_REPLY};
use crate::base::protocol::{req_name, res_name, Response, TMP_MARKER};
use crate::results::conform::Verdict;

pub(super) fn shape(ctx: &Ctx, id: &str, reply: &str, want: Response) -> Graded {
    try_g!(ctx.start());
    let (fid, tag, at) = ctx.call(id, reply, 0);
    let Some(ev) = ctx.answer(&fid, at, Duration::from_secs(5)) else {
        return ctx.w.unseen("no answer", vec![left_line(&ctx.w.dir), format!("tool runs: {}", ctx.runs(&tag).len())]);
    };
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(150)));
    let bytes = ev.read();
    let (runs, times) = (ctx.runs(&tag).len(), ctx.answers(&fid, at).len());
    let mut evidence = vec![
        format!("answer {}: {}", res_name(&fid), shown(bytes, 160)),
        format!("published {} after the request", ms(ev.at - at)),
        format!("tool runs: {runs}, answers: {times}"),
    ];
    ctx.done_with(&fid);
    let got = Response::decode(bytes);
    if got.as_ref() != Ok(&want) {
        evidence.push(format!("read as {got:?}"));
        return Graded::new(
            Verdict::Failed,
            format!("the answer is not {}", String::from_utf8_lossy(&want.encode())),
            evidence,
        );
    }
    if runs != 1 || times != 1 {
        return Graded::new(Verdict::Failed, "run or answered other than once", evidence);
    }
    Graded::new(Verdict::Ok, "answered in the expected shape, once", evidence)
}

/// A text with an astral-free non-ASCII character, quotes and a newline (canonical JSON).
pub(super) const OK_TEXT: &str = r#"{"conform":"✓ \"quoted\"\nline 2"}"#;

pub(super) fn answer_pause(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let (fid, tag, at) = ctx.call("shape-pause-1", r#"{"ok":true,"paused":true}"#, 0);
    let Some(ran) = ctx.wait_run(&tag, Duration::from_secs(5)) else {
        return ctx.w.unseen("the tool never ran", vec![left_line(&ctx.w.dir)]);
    };
    let got = ctx.answer(&fid, at, Duration::from_millis(1500));
    let runs = ctx.runs(&tag).len();
    let mut evidence = vec![format!("tool ran {} after the request; runs: {runs}", ms(ran - at))];
    ctx.done_with(&fid);
    if runs != 1 {
        return Graded::new(Verdict::Failed, "the tool ran more than once", evidence);
    }
    match got {
        None => {
            evidence.push(format!(
                "no answer within {} of the tool's run",
                ms(ctx.w.pace.wait(Duration::from_millis(1500)))
            ));
            Graded::new(Verdict::Ok, "a pause writes no answer (production's default integration)", evidence)
        }
        Some(ev) => {
            let bytes = ev.read();
            evidence.push(format!("answer: {}", shown(bytes, 120)));
            let v: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
            if v["paused"] == serde_json::Value::Bool(true) && v["ok"] == serde_json::Value::Bool(true) {
                Graded::new(Verdict::Ok, "a pause is answered {\"ok\":true,\"paused\":true}", evidence)
            } else {
                Graded::new(Verdict::Failed, "a pause was answered, not as a pause", evidence)
            }
        }
    }
}

pub(super) fn atomic_answers(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let text = format!("\"{}\"", crate::relay::handler::filler(256 << 10));
    let reply = ok_reply(&text);
    let calls: Vec<_> = (0..8).map(|i| ctx.call(&format!("atomic-{i}"), &reply, 0)).collect();
    let mut evidence = Vec::new();
    let (mut breach, mut departure) = (Vec::new(), Vec::new());
    let mut missing = Vec::new();
    for (fid, _, at) in &calls {
        match ctx.answer(fid, *at, Duration::from_secs(6)) {
            None => missing.push(format!("{fid}: no answer")),
            Some(ev) if Response::decode(ev.read()) != Ok(Response::Ok(text.clone())) => {
                breach.push(format!("{}: read {} bytes, not the whole answer", res_name(fid), ev.read().len()))
            }
            Some(_) => {}
        }
    }
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(100)));
    let evs = ctx.w.obs.events();
    for (fid, _, _) in &calls {
        if let Err((hard, why)) = publication(&evs, &res_name(fid)) {
            if hard {
                breach.push(why)
            } else {
                departure.push(why)
            }
        }
    }
    let from: Vec<String> = evs
        .iter()
        .filter_map(|e| match &e.what {
            What::MovedIn { from: Some(f) } if e.name.starts_with("atomic-") => Some(f.clone()),
            _ => None,
        })
        .take(2)
        .collect();
    evidence.push(format!("8 answers of {} bytes; renamed from e.g. {from:?}", reply.len()));
    for (fid, _, _) in &calls {
        ctx.done_with(fid);
    }
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(100)));
    let temps: Vec<String> = left_in(&ctx.w.dir).into_iter().filter(|n| n.contains(TMP_MARKER)).collect();
    evidence.extend(breach.iter().chain(&departure).chain(&missing).take(6).cloned());
    if !breach.is_empty() {
        let bad = calls.iter().filter(|(fid, _, _)| breach.iter().any(|b| b.contains(&res_name(fid)))).count();
        return Graded::new(Verdict::Failed, format!("{bad} of 8 answers not published atomically"), evidence);
    }
    if !missing.is_empty() {
        return ctx.w.unseen(format!("{} of 8 answers not seen", missing.len()), evidence);
    }
    if !departure.is_empty() || !temps.is_empty() {
        evidence.push(format!("temp names left: {temps:?}"));
        return Graded::new(
            Verdict::NonStrict,
            "atomic, but not through a `.tmp.` name in the dir, or temps left behind",
            evidence,
        );
    }
    Graded::new(Verdict::Ok, "every answer renamed onto its name from a `.tmp.` name in the dir", evidence)
}

pub(super) fn delete_on_pickup(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let tool = ctx.w.pace.wait(Duration::from_millis(1500));
    let (fid, tag, at) = ctx.call("delete-1", OK_REPLY, tool.as_millis() as u64);
    let ran = ctx.wait_run(&tag, Duration::from_secs(5));
    let gone = ctx.w.obs.wait_gone(&req_name(&fid), at, ctx.w.within(Duration::from_millis(2500)));
    let answered = ctx.answer(&fid, at, Duration::from_secs(4));
    let gone = gone.or_else(|| ctx.w.obs.wait_gone(&req_name(&fid), at, ctx.w.within(Duration::from_millis(500))));
    let mut evidence = vec![left_line(&ctx.w.dir)];
    ctx.done_with(&fid);
    let Some(ran) = ran else {
        return ctx.w.unseen("the tool never ran", evidence);
    };
    evidence.push(format!("tool ran {} after the request, for {}", ms(ran - at), ms(tool)));
    if let Some(a) = &answered {
        evidence.push(format!("answer {} after the request", ms(a.at - at)));
    }
    match gone {
        Some(g) if g <= ran + tool => {
            evidence.push(format!("request deleted {} after it was published", ms(g - at)));
            Graded::new(Verdict::Ok, "deleted while the tool ran", evidence)
        }
        Some(g) => {
            evidence.push(format!("request deleted {} after it was published", ms(g - at)));
            Graded::new(Verdict::NonStrict, "deleted only after the tool finished", evidence)
        }
        None if answered.is_some() => Graded::new(Verdict::Failed, "answered, and its request never deleted", evidence),
        None => ctx.w.unseen("the request was never deleted by the runner", evidence),
    }
}

const STALE: &[(&str, &str)] = &[
    ("stale-2.res.json", r#"{"ok":true,"text":"stale"}"#),
    ("stale-3.req.json.tmp.1", r#"{"toolName":"conf"#),
    ("stale-4.res.json.tmp.conform", r#"{"ok":tr"#),
];
const KEEP: &[(&str, &str)] =
    &[("notes.txt", "keep me"), ("keep.json", "{}"), ("keep.req.json.bak", "x"), ("keep.json.tmp.3", "y")];

pub(super) fn stale_sweep(ctx: &Ctx) -> Graded {
    let stale_req = request(Some("stale-1"), "stale-1", OK_REPLY, 0);
    let mut put = vec![("stale-1.req.json".to_owned(), stale_req.clone())];
    put.extend(STALE.iter().chain(KEEP).map(|(n, b)| ((*n).to_owned(), b.as_bytes().to_vec())));
    for (n, b) in &put {
        if let Err(e) = std::fs::write(ctx.w.dir.join(n), b) {
            return setup_failed(&e);
        }
    }
    let startup = try_g!(ctx.start());
    // A runner that runs stale requests late has time to.
    let _ = ctx.follow_up();
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(300)));
    let mut evidence = vec![format!("ready {} after start", ms(startup)), left_line(&ctx.w.dir)];
    let mut wrong = Vec::new();
    for (n, _) in put.iter().take(1 + STALE.len()) {
        if ctx.w.dir.join(n).symlink_metadata().is_ok() {
            wrong.push(format!("{n} left"));
        }
    }
    for (n, b) in KEEP {
        match std::fs::read(ctx.w.dir.join(n)) {
            Ok(got) if got == b.as_bytes() => {}
            Ok(_) => wrong.push(format!("{n} changed")),
            Err(_) => wrong.push(format!("{n} removed (not a relay file)")),
        }
    }
    let runs = ctx.runs("stale-1").len();
    if runs > 0 {
        wrong.push(format!("the stale request stale-1 was run {runs} time(s)"));
    }
    if !ctx.answers("stale-1", ctx.w.begun.get() - Duration::from_secs(3600)).is_empty() {
        wrong.push("the stale request was answered".into());
    }
    evidence.extend(wrong.iter().cloned());
    if wrong.is_empty() {
        Graded::new(Verdict::Ok, "stale relay files removed unrun, other files untouched", evidence)
    } else {
        Graded::new(Verdict::Failed, "the stale sweep did not do what §2 says", evidence)
    }
}

pub(super) fn reused_id(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let (fid, tag1, at) = ctx.call("reused-1", OK_REPLY, 0);
    if ctx.answer(&fid, at, Duration::from_secs(5)).is_none() {
        return ctx.w.unseen("the first call was not answered", vec![left_line(&ctx.w.dir)]);
    }
    ctx.done_with(&fid);
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(50)));
    let (_, tag2, at2) = ctx.call("reused-1", OK_REPLY, 0);
    let follow = ctx.follow_up();
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(300)));
    let (r1, r2) = (ctx.runs(&tag1).len(), ctx.runs(&tag2).len());
    let evidence = vec![
        format!("first call run {r1} time(s); the same id published again after its answer: run {r2} time(s)"),
        format!("answers to the second: {}", ctx.answers(&fid, at2).len()),
        left_line(&ctx.w.dir),
    ];
    ctx.done_with(&fid);
    if r2 > 0 {
        return Graded::new(Verdict::Failed, "a reused id was run again in the same turn", evidence);
    }
    if let Err(why) = follow {
        return ctx.stopped(why, "the runner stopped answering", evidence);
    }
    Graded::new(Verdict::Ok, "a reused id was not run again", evidence)
}

pub(super) fn parallel(ctx: &Ctx, n: usize) -> Graded {
    try_g!(ctx.start());
    let t0 = Instant::now();
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let reply = ok_reply(&format!("\"answer-{i}\""));
            ctx.call(&format!("par{n}-{i}"), &reply, 0)
        })
        .collect();
    let (mut wrong, mut missing) = (std::collections::BTreeMap::new(), Vec::new());
    let mut last = t0;
    for (i, (fid, _, at)) in calls.iter().enumerate() {
        match ctx.answer(fid, *at, Duration::from_secs(8)) {
            None => missing.push(format!("{fid}: no answer")),
            Some(ev) => {
                last = last.max(ev.at);
                if Response::decode(ev.read()) != Ok(Response::Ok(format!("\"answer-{i}\""))) {
                    wrong.insert(fid.clone(), format!("{fid}: got {}", shown(ev.read(), 60)));
                }
            }
        }
    }
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(200)));
    for (fid, tag, at) in &calls {
        let (runs, answers) = (ctx.runs(tag).len(), ctx.answers(fid, *at).len());
        if runs != 1 || answers > 1 {
            let seen: Vec<String> = ctx
                .answers(fid, *at)
                .iter()
                .map(|e| format!("{:?} at +{} {}", e.what, ms(e.at - *at), shown(e.read(), 40)))
                .collect();
            wrong
                .entry(fid.clone())
                .or_insert(format!("{fid}: run {runs} time(s), answered {answers} time(s): {seen:?}"));
        }
        ctx.done_with(fid);
    }
    let mut evidence = vec![format!(
        "{n} published in {}; the last answer {} after the first publication",
        ms(calls.last().map_or(t0, |c| c.2) - t0),
        ms(last - t0)
    )];
    evidence.extend(wrong.values().chain(&missing).take(6).cloned());
    if !wrong.is_empty() {
        Graded::new(
            Verdict::Failed,
            format!("{} of {n} calls not answered exactly once with their own answer", wrong.len()),
            evidence,
        )
    } else if !missing.is_empty() {
        ctx.w.unseen(format!("{} of {n} calls not answered", missing.len()), evidence)
    } else {
        Graded::new(Verdict::Ok, format!("{n} in, {n} answers out, each run once"), evidence)
    }
}

pub(super) fn dir_recreated(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let (fid, _, at) = ctx.call("before-1", OK_REPLY, 0);
    if ctx.answer(&fid, at, Duration::from_secs(5)).is_none() {
        return ctx.w.unseen("the first call was not answered", vec![]);
    }
    ctx.done_with(&fid);
    let _ = std::fs::remove_dir_all(&ctx.w.dir);
    if let Err(e) = std::fs::create_dir(&ctx.w.dir) {
        return Graded::new(Verdict::Failed, format!("cannot make the dir again: {e}"), vec![]);
    }
    if let Err(e) = ctx.w.obs.rearm(&ctx.w.dir) {
        return Graded::new(Verdict::Failed, format!("cannot watch the new dir: {e}"), vec![]);
    }
    let (fid, _, at) = ctx.call("after-1", OK_REPLY, 0);
    let got = ctx.answer(&fid, at, Duration::from_secs(8));
    let mut evidence = vec![left_line(&ctx.w.dir)];
    ctx.done_with(&fid);
    match got {
        Some(e) if e.at - at <= ctx.w.pace.wait(Duration::from_secs(3)) => {
            evidence.push(format!("answered {} after publication in the new dir", ms(e.at - at)));
            Graded::new(Verdict::Ok, "served the new dir", evidence)
        }
        Some(e) => {
            evidence.push(format!("answered {} after publication in the new dir", ms(e.at - at)));
            Graded::new(Verdict::NonStrict, "served the new dir, slowly", evidence)
        }
        None if !ctx.alive() => Graded::new(Verdict::Failed, "the runner exited", evidence),
        None => ctx.w.unseen(
            format!("no call answered in the new dir within {}", ms(ctx.w.pace.wait(Duration::from_secs(8)))),
            evidence,
        ),
    }
}
