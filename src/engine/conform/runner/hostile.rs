//! The runner cases about input a runner must survive: request files that are no call
//! (not JSON, cut short, not UTF-8, oversized, a symbolic link, a FIFO), hostile and
//! colliding ids, and a request published slowly.

use std::time::{Duration, Instant, SystemTime};

use super::super::handler::execs;
use super::super::observe::shown;
use super::super::{hostile, left_in, left_line, ms, setup_failed, try_g, Graded};
use super::{request, Ctx, OK_REPLY, PROBE};
use crate::base::indir::InDir;
use crate::base::protocol::{req_name, res_name, Response};
use crate::results::conform::Verdict;

/// A request file that is no call: published (or linked) as `name`; graded as the
/// contract says for it. `tag`: the tag a runner that runs it anyway would log; `run_once`:
/// the verdict for a runner that does.
pub(super) fn bad<T>(
    ctx: &Ctx,
    fid: &str,
    make: impl FnOnce(&Ctx) -> std::io::Result<T>,
    tag: Option<&str>,
    run_once: Verdict,
) -> Graded {
    try_g!(ctx.start());
    let at = Instant::now();
    if let Err(e) = make(ctx) {
        return setup_failed(&e);
    }
    ctx.note(fid, tag, at);
    let follow = ctx.follow_up();
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(300)));
    // Taken (deleted) but not answered yet: a runner that handles calls side by side may
    // answer the follow-up first; its answer to this one is waited for before "unanswered".
    let gone = ctx.w.dir.join(req_name(fid)).symlink_metadata().is_err();
    if gone && ctx.answers(fid, at).is_empty() {
        let _ = ctx.answer(fid, at, Duration::from_secs(5));
        std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(300)));
    }
    let answers = ctx.answers(fid, at);
    let runs = tag.map_or(0, |t| ctx.runs(t).len());
    let left = ctx.w.dir.join(req_name(fid)).symlink_metadata().is_ok();
    let mut evidence = vec![format!("answers: {}, tool runs: {runs}, request left: {left}", answers.len())];
    if let Some(a) = answers.first() {
        evidence.push(format!("answer: {}", shown(a.read(), 120)));
    }
    evidence.push(left_line(&ctx.w.dir));
    if runs > 1 || answers.len() > 1 {
        evidence.extend(answers.iter().map(|e| format!("{:?} at +{}: {}", e.what, ms(e.at - at), shown(e.read(), 60))));
        return Graded::new(Verdict::Failed, "run or answered more than once", evidence);
    }
    if let Err(why) = follow {
        return ctx.stopped(why, "the runner stopped answering after it", evidence);
    }
    if runs == 1 {
        return Graded::new(run_once, "run once", evidence);
    }
    match answers.first().map(|a| Response::decode(a.read())) {
        Some(Ok(Response::Error(_))) => Graded::new(Verdict::Ok, "answered {\"ok\":false}", evidence),
        Some(_) => Graded::new(Verdict::Failed, "answered, but not {\"ok\":false}", evidence),
        None if left => Graded::new(Verdict::Ok, "left in place, unanswered", evidence),
        None => Graded::new(Verdict::NonStrict, "deleted unanswered: its writer waits until its deadline", evidence),
    }
}

pub(super) fn truncated(ctx: &Ctx) -> Graded {
    let full = request(Some("truncated-1"), "truncated-1", OK_REPLY, 0);
    let cut = full[..full.len() - 12].to_vec();
    bad(ctx, "truncated-1", move |c| c.put("truncated-1", None, &cut), Some("truncated-1"), Verdict::Failed)
}

pub(super) fn non_utf8(ctx: &Ctx) -> Graded {
    let mut body = br#"{"toolName":"conform","toolCallId":"non-utf8-1","args":{"tag":"non-utf8-1","note":""#.to_vec();
    body.extend_from_slice(b"\xff\xfe\xc3");
    body.extend_from_slice(br#"","reply":{"ok":true,"text":"\"ran\""}}}"#);
    bad(ctx, "non-utf8-1", move |c| c.put("non-utf8-1", None, &body), Some("non-utf8-1"), Verdict::NonStrict)
}

pub(super) fn oversized(ctx: &Ctx) -> Graded {
    let pad = "p".repeat(17 << 20);
    let body = format!(
        r#"{{"toolName":"conform","toolCallId":"big-1","args":{{"tag":"big-1","reply":{OK_REPLY},"pad":"{pad}"}}}}"#
    );
    bad(ctx, "big-1", move |c| c.put("big-1", None, body.as_bytes()), Some("big-1"), Verdict::Ok)
}

/// A file's bytes and modification time, to tell it unchanged.
fn fingerprint(p: &std::path::Path) -> Option<(Vec<u8>, SystemTime)> {
    let m = std::fs::symlink_metadata(p).ok()?;
    Some((std::fs::read(p).ok()?, m.modified().ok()?))
}

pub(super) fn symlinked(ctx: &Ctx) -> Graded {
    let target = ctx.w.scratch.join("outside.req.json");
    let body = request(Some("sym-1"), "sym-1", OK_REPLY, 0);
    if let Err(e) = std::fs::write(&target, &body) {
        return setup_failed(&e);
    }
    let before = fingerprint(&target);
    let t = target.clone();
    let g = bad(
        ctx,
        "sym-1",
        move |c| InDir::open(&c.w.dir)?.symlink(&t, "sym-1.req.json"),
        Some("sym-1"),
        Verdict::NonStrict,
    );
    match fingerprint(&target) {
        _ if before.is_none() => g,
        None => Graded::new(Verdict::Failed, "the file the link named, outside the relay dir, was deleted", g.evidence),
        Some(after) if Some(&after) != before.as_ref() => {
            let mut evidence = g.evidence;
            evidence.push(format!(
                "the file outside the dir: {} bytes before, {} after; modified time {}",
                before.as_ref().map_or(0, |b| b.0.len()),
                after.0.len(),
                if before.as_ref().map(|b| b.1) == Some(after.1) { "unchanged" } else { "changed" }
            ));
            Graded::new(Verdict::Failed, "the file the link named, outside the relay dir, was changed", evidence)
        }
        Some(_) => g,
    }
}

pub(super) fn hostile_ids(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let mut calls: Vec<(String, String, String, Instant)> = hostile()
        .into_iter()
        .map(|id| {
            let (fid, tag, at) = ctx.call(&id, OK_REPLY, 0);
            (id, fid, tag, at)
        })
        .collect();
    let no_id =
        ctx.put("no-id-1", Some("no-id-1"), &request(None, "no-id-1", OK_REPLY, 0)).unwrap_or_else(|_| Instant::now());
    calls.push((String::new(), "no-id-1".into(), "no-id-1".into(), no_id));
    let (mut wrong, mut mangled, mut evidence, mut missing) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (id, fid, _, at) in &calls {
        match ctx.answer(fid, *at, Duration::from_secs(6)) {
            None => missing.push(format!("{id:?}: no answer under {}", res_name(fid))),
            Some(_) => evidence.push(format!("{id:?} -> {}", res_name(fid))),
        }
    }
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(150)));
    let log = execs(&ctx.log);
    for (id, fid, tag, at) in &calls[..calls.len() - 1] {
        let got: Vec<_> = log.iter().filter(|e| e.tag.as_deref() == Some(tag)).collect();
        if got.len() != 1 || ctx.answers(fid, *at).len() > 1 {
            wrong.push(format!("{id:?}: run {} time(s)", got.len()));
        } else if got[0].id.as_deref() != Some(id) {
            mangled.push(format!("{id:?}: the tool got {:?}", got[0].id));
        }
    }
    let stray: Vec<String> = left_in(&ctx.w.dir)
        .into_iter()
        .filter(|n| n.ends_with(".res.json") && !n.starts_with(PROBE) && !calls.iter().any(|c| res_name(&c.1) == *n))
        .collect();
    if !stray.is_empty() {
        wrong.push(format!("answers under other names: {stray:?}"));
    }
    for c in &calls {
        ctx.done_with(&c.1);
    }
    evidence.truncate(3);
    evidence.extend(wrong.iter().chain(&missing).chain(&mangled).cloned());
    if !wrong.is_empty() {
        Graded::new(Verdict::Failed, "a hostile id was not answered once under its file id", evidence)
    } else if !missing.is_empty() {
        ctx.w.unseen(format!("{} hostile ids not answered under their file id", missing.len()), evidence)
    } else if !mangled.is_empty() {
        Graded::new(Verdict::NonStrict, "answered, but the tool got a changed call id", evidence)
    } else {
        Graded::new(
            Verdict::Ok,
            "every hostile id answered once under its file id, the tool got it unchanged",
            evidence,
        )
    }
}

pub(super) fn id_collision(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let (fid, tag1, at) = ctx.call("coll/1", OK_REPLY, 0);
    let first = ctx.answer(&fid, at, Duration::from_secs(5)).is_some();
    ctx.done_with(&fid);
    let (_, tag2, _) = ctx.call("coll:1", OK_REPLY, 0);
    let _ = ctx.follow_up();
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(300)));
    let evidence = vec![
        format!("file id {fid:?}; `coll/1` answered: {first}, run {} time(s)", ctx.runs(&tag1).len()),
        format!("`coll:1` published under the same name after it: run {} time(s)", ctx.runs(&tag2).len()),
        left_line(&ctx.w.dir),
    ];
    ctx.done_with(&fid);
    Graded::new(
        Verdict::Informational,
        "a runner cannot tell two ids that sanitize alike apart; the writer must refuse the second",
        evidence,
    )
}

pub(super) fn slow_publication(ctx: &Ctx) -> Graded {
    try_g!(ctx.start());
    let body = request(Some("slow-1"), "slow-1", OK_REPLY, 0);
    let tmp = "slow-1.req.json.tmp.conform-slow";
    let written = (|| -> std::io::Result<Instant> {
        use std::io::Write;
        // Never through a link the runner put in the dir's place.
        let dir = InDir::open(&ctx.w.dir)?;
        let mut f = dir.create_new(tmp)?;
        for chunk in body.chunks(body.len().div_ceil(4)) {
            f.write_all(chunk)?;
            f.sync_data()?;
            std::thread::sleep(Duration::from_millis(200));
        }
        let at = Instant::now();
        dir.rename(tmp, "slow-1.req.json")?;
        Ok(at)
    })();
    let renamed = match written {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Graded::new(
                Verdict::Failed,
                "the runner deleted or renamed the battery's temp name slow-1.req.json.tmp.conform-slow while it was being written (a `.tmp.` name is no request)",
                vec![left_line(&ctx.w.dir)],
            )
        }
        Err(e) => return setup_failed(&e),
    };
    ctx.note("slow-1", Some("slow-1"), renamed);
    let got = ctx.answer("slow-1", renamed, Duration::from_secs(5));
    std::thread::sleep(ctx.w.pace.wait(Duration::from_millis(150)));
    let runs = ctx.runs("slow-1");
    let stray: Vec<String> = left_in(&ctx.w.dir)
        .into_iter()
        .filter(|n| n.ends_with(".res.json") && n != "slow-1.res.json" && !n.starts_with(PROBE))
        .collect();
    let mut evidence = vec![
        format!("tool runs: {}; answers: {}", runs.len(), ctx.answers("slow-1", renamed).len()),
        left_line(&ctx.w.dir),
    ];
    ctx.done_with("slow-1");
    if let Some(a) = &got {
        evidence.push(format!("answered {} after the rename", ms(a.at - renamed)));
    }
    if runs.iter().any(|t| *t < renamed) {
        return Graded::new(Verdict::Failed, "run before its rename: a temp name was read as a request", evidence);
    }
    if runs.len() > 1 || !stray.is_empty() {
        evidence.push(format!("answers under other names: {stray:?}"));
        return Graded::new(Verdict::Failed, "not run and answered exactly once after the rename", evidence);
    }
    if runs.is_empty() || got.is_none() {
        return ctx.w.unseen("not run and answered after the rename", evidence);
    }
    Graded::new(Verdict::Ok, "run once, after the rename", evidence)
}
