//! The writer cases about what a call is given: no args, hostile ids, an id that collides
//! with one in flight, and no timeout.

use std::time::{Duration, Instant};

use super::super::observe::{shown, What};
use super::super::{hostile, left_line, ms, Graded};
use super::{try_g, Ctx, Told, TIMEOUT_MS};
use crate::base::protocol::{classify, req_name, sanitize_id, FileKind, Response};
use crate::results::conform::Verdict;

pub(super) fn args_default(ctx: &Ctx) -> Graded {
    let id = "w-noargs-1";
    let want = format!(r#"{{"toolName":"conform","toolCallId":"{id}","args":{{}}}}"#);
    let (mut call, seen) = try_g!(ctx.begin(id, "conform", None, Some(TIMEOUT_MS)));
    let bytes = seen.as_ref().and_then(|e| e.bytes.clone()).and_then(Result::ok);
    if seen.is_some() {
        ctx.answer(id, &Response::Ok("x".into()).encode(), true);
    }
    let (told, _) = call.end(ctx.w.within(Duration::from_secs(5)));
    let mut evidence = vec![format!("argv: {:?}", call.proc.argv), format!("the writer told: {told:?}")];
    ctx.clear();
    let Some(bytes) = bytes else {
        if seen.is_none() {
            if let Some(late) = ctx.late(id, call.proc.started) {
                return late;
            }
        }
        return match told {
            Told::Waiting => ctx.w.unseen(format!("no readable {}", req_name(id)), evidence),
            _ => Graded::new(Verdict::Failed, "a call without args published no request", evidence),
        };
    };
    evidence.push(format!("{}: {}", req_name(id), shown(&bytes, 160)));
    if bytes == want.as_bytes() {
        return Graded::new(Verdict::Ok, "published with \"args\":{}", evidence);
    }
    let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    if v["args"] == serde_json::json!({}) && v["toolCallId"] == id {
        Graded::new(Verdict::NonStrict, "args {}, in other bytes", evidence)
    } else {
        Graded::new(Verdict::Failed, format!("the request's args are {}, not {{}}", v["args"]), evidence)
    }
}

pub(super) fn hostile_ids(ctx: &Ctx) -> Graded {
    let (mut wrong, mut mangled, mut missing, mut evidence) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // One after another (a writer that reads any answer in the dir would find only its
    // own), each call given the case's bound.
    for (k, id) in hostile().into_iter().enumerate() {
        let fid = sanitize_id(&id);
        let t0 = Instant::now();
        ctx.w.begun.set(t0);
        let (mut call, seen) = try_g!(ctx.begin(&id, "conform", Some("{}"), Some(TIMEOUT_MS)));
        let want = format!("answer-{k}");
        if seen.is_some() {
            ctx.answer(&fid, &Response::Ok(want.clone()).encode(), true);
        }
        let (told, _) = call.end(ctx.w.within(Duration::from_secs(5)));
        let others: Vec<String> = ctx
            .w
            .obs
            .events()
            .into_iter()
            .filter(|e| {
                e.at >= t0 && e.bytes.is_some() && classify(&e.name) == FileKind::Request && e.name != req_name(&fid)
            })
            .map(|e| e.name)
            .collect();
        ctx.clear();
        match seen {
            None if !others.is_empty() => {
                wrong.push(format!("{id:?}: published as {others:?}, not {}", req_name(&fid)))
            }
            None if told == Told::Waiting => missing.push(format!("{id:?}: no {} seen", req_name(&fid))),
            None => wrong.push(format!("{id:?}: no {} (the writer told {told:?})", req_name(&fid))),
            Some(ev) => {
                let bytes = ev.read();
                let v: serde_json::Value = serde_json::from_slice(bytes).unwrap_or_default();
                if v["toolCallId"].as_str() != Some(id.as_str()) {
                    mangled.push(format!("{id:?}: toolCallId {}", v["toolCallId"]));
                }
                match told {
                    Told::Answer(Response::Ok(t)) if t == want => {
                        evidence.push(format!("{id:?} -> {}", req_name(&fid)))
                    }
                    Told::Waiting => missing.push(format!("{id:?}: still waiting after its answer")),
                    told => wrong.push(format!("{id:?}: told {told:?}, not its answer")),
                }
            }
        }
    }
    evidence.truncate(3);
    evidence.extend(wrong.iter().chain(&missing).chain(&mangled).cloned());
    if !wrong.is_empty() {
        Graded::new(Verdict::Failed, "a hostile id was not published under its file id and told its answer", evidence)
    } else if !missing.is_empty() {
        ctx.w.unseen(format!("{} hostile-id calls not seen through", missing.len()), evidence)
    } else if !mangled.is_empty() {
        Graded::new(Verdict::NonStrict, "published under the file id, but toolCallId changed", evidence)
    } else {
        Graded::new(
            Verdict::Ok,
            "every hostile id published under its file id, toolCallId unchanged, its answer told",
            evidence,
        )
    }
}

pub(super) fn id_collision(ctx: &Ctx) -> Graded {
    let fid = sanitize_id("coll/1");
    let t0 = Instant::now();
    let what = format!("the first call's {} never appeared", req_name(&fid));
    let (mut first, req) = try_g!(ctx.published("coll/1", what));
    let t1 = Instant::now();
    let mut second = try_g!(ctx.call("coll:1", "conform", Some("{}"), Some(TIMEOUT_MS)));
    // The first stays in flight until the second has done something: exited, or published.
    // A request published while the first's was in place (the first writer that gives up
    // removes it; no collision after that).
    let published = |evs: &[super::super::observe::Ev]| {
        let gone = evs
            .iter()
            .find(|e| e.at >= t1 && e.name == req_name(&fid) && matches!(e.what, What::Deleted | What::MovedOut))
            .map(|e| e.at);
        evs.iter()
            .find(|e| {
                e.at >= t1
                    && gone.is_none_or(|g| e.at < g)
                    && classify(&e.name) == FileKind::Request
                    && e.bytes.is_some()
            })
            .cloned()
    };
    // As long as the first took to publish, three times over, and at least 3 s (scaled): a
    // writer that starts slowly here is given the time it showed it needs.
    let took = req.at.saturating_duration_since(t0);
    let until = Instant::now() + ctx.w.within(Duration::from_secs(3)).max(ctx.w.within(took * 3));
    let mut gave_up = None;
    while Instant::now() < until && gave_up.is_none() && published(&ctx.w.obs.events()).is_none() {
        gave_up = second.proc.wait(Duration::from_millis(20));
    }
    let again = published(&ctx.w.obs.events());
    let first_gave_up = first.proc.exited().is_some();
    ctx.answer(&fid, &Response::Ok("answer-coll/1".into()).encode(), true);
    // As long as it took to publish, three times over, to read its answer: a writer this
    // machine runs slowly now is given the time it showed it needs.
    let (told1, _) = first.end(ctx.w.within(Duration::from_secs(5)).max(ctx.w.within(took * 3)));
    let (told2, _) = second.end(ctx.w.pace.wait(Duration::from_millis(500)).min(ctx.w.within(Duration::from_secs(1))));
    let mut evidence = vec![
        format!("`coll/1` published {}: {}", req_name(&fid), shown(req.read(), 100)),
        format!(
            "`coll:1` started while it waited: {}",
            match gave_up {
                Some((code, at)) => format!("exited {code:?} {} later", ms(at - t1)),
                None => "still running".into(),
            }
        ),
        format!("the first told {told1:?}; the second {told2:?}"),
    ];
    ctx.clear();
    if let Some(e) = again {
        evidence.push(format!(
            "{} published again {} after the second started: {}",
            e.name,
            ms(e.at - t1),
            shown(e.read(), 100)
        ));
        return Graded::new(Verdict::Failed, "the colliding call published over the one in flight", evidence);
    }
    grade_collision(ctx, (told1, told2), gave_up, first_gave_up, evidence)
}

/// The collision graded, once no second request was published over the first: by what
/// each call told, whether the colliding one exited (`gave_up`: its code and when), and
/// whether the call in flight ended before its answer.
fn grade_collision(
    ctx: &Ctx,
    (told1, told2): (Told, Told),
    gave_up: Option<(Option<i32>, Instant)>,
    first_gave_up: bool,
    evidence: Vec<String>,
) -> Graded {
    if matches!(&told2, Told::Answer(Response::Ok(t)) if t == "answer-coll/1") {
        return Graded::new(Verdict::Failed, "the colliding call told the other call's answer", evidence);
    }
    if first_gave_up {
        // Its deadline is the deadline case's to grade; here the collision went untested.
        return Graded::new(
            Verdict::Inconclusive,
            "the call in flight ended before it was answered: the collision could not be tested",
            evidence,
        );
    }
    if told1 == Told::Waiting {
        return ctx.w.unseen("the call in flight did not tell its answer in time", evidence);
    }
    if told1 != Told::Answer(Response::Ok("answer-coll/1".into())) {
        return Graded::new(Verdict::Failed, "the call in flight did not tell its own answer", evidence);
    }
    match (gave_up, told2) {
        (Some((Some(c), _)), Told::Nothing(_)) if c != 0 => {
            Graded::new(Verdict::Ok, "the colliding call was refused", evidence)
        }
        (Some(_), Told::Answer(Response::Error(_))) => {
            Graded::new(Verdict::Ok, "the colliding call was refused with an error", evidence)
        }
        (None, _) => Graded::new(
            Verdict::NonStrict,
            "the colliding call published nothing, but waited instead of refusing",
            evidence,
        ),
        _ => Graded::new(Verdict::Failed, "the colliding call ended without an error", evidence),
    }
}

pub(super) fn deadline_no_timeout(ctx: &Ctx) -> Graded {
    let id = "w-no-timeout-1";
    let t0 = Instant::now();
    let (mut call, seen) = try_g!(ctx.begin(id, "conform", Some("{}"), None));
    let Some(published) = seen else {
        return ctx.not_published(&mut call, "no request appeared", vec![left_line(&ctx.w.dir)]);
    };
    // Held from the request's publication, not from the process's start: the writer's clock
    // has started by then, however long a loaded machine took to start the writer. Past
    // 10 s by the margin at this machine's pace, a writer that gives up at 10 s has.
    let hold = Duration::from_secs(10) + ctx.w.pace.wait(Duration::from_millis(2500));
    let gave_up = call.proc.wait((published.at + hold).saturating_duration_since(Instant::now()));
    let mut evidence = vec![format!("argv: {:?}", call.proc.argv)];
    if let Some((code, at)) = gave_up {
        let (told, _) = call.end(Duration::ZERO);
        evidence.push(format!(
            "it ended {} after its request was published (exit {code:?}), telling {told:?}",
            ms(at.saturating_duration_since(published.at))
        ));
        ctx.clear();
        return Graded::new(
            Verdict::Failed,
            format!("with no timeout it gave up within {} (its deadline is 60 s)", ms(hold)),
            evidence,
        );
    }
    ctx.answer(id, &Response::Ok("after 12.5 s".into()).encode(), true);
    // As long as it took to publish, three times over, to read the answer (a writer this
    // machine runs slowly now is given the time it showed it needs).
    let took = published.at.saturating_duration_since(t0);
    let (told, _) = call.end(ctx.w.pace.wait(Duration::from_secs(5)).max(ctx.w.pace.wait(took * 3)));
    evidence.push(format!("still waiting {} after its request was published; then told {told:?}", ms(hold)));
    ctx.clear();
    match told {
        Told::Answer(Response::Ok(t)) if t == "after 12.5 s" => {
            Graded::new(Verdict::Ok, "waited past the 10 s grace and read the answer", evidence)
        }
        Told::Waiting => ctx.w.unseen("did not read the answer published 12.5 s after its request", evidence),
        _ => Graded::new(Verdict::Failed, "did not read the answer published 12.5 s after its request", evidence),
    }
}
