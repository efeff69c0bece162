//! `serve` under the fourth hostile pass: a request whose name leaves no room for a temp
//! name's suffix is answered, a request withdrawn before it is read gets no answer, the
//! count of answers is the count of answer files, and answers to requests read from a dir
//! since moved away are not published into the new one.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

mod common;
use common::serve::{said, Serve};
use common::wait_until;

/// Publishes `body` as `dir/name` the way a writer does (a temp name, then a rename).
fn publish(dir: &Path, name: &str, body: &[u8]) {
    let tmp = dir.join(format!("{}.tmp.test", &name[..name.len().min(200)]));
    std::fs::write(&tmp, body).unwrap();
    std::fs::rename(tmp, dir.join(name)).unwrap();
}

fn request(id: &str) -> Vec<u8> {
    format!(r#"{{"toolName":"t","toolCallId":"{id}","args":{{}}}}"#).into_bytes()
}

/// The answer files in `dir`.
fn answers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".res.json"))
        .collect()
}

/// The number in `serve`'s last line, `stopped after ...: N answered, ...`.
fn answered(out: &Output) -> usize {
    let s = said(out);
    let line = s.lines().rfind(|l| l.starts_with("stopped after")).unwrap_or_else(|| panic!("{s}"));
    line.split(": ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap()
}

#[test]
fn a_request_whose_name_leaves_no_room_for_a_temp_suffix_is_answered() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let serve = Serve::start(dir, &[]);
    // 249 bytes with `.req.json`: its answer's temp name, `<answer>.tmp.<16 hex>`, would be 270.
    let id = "a".repeat(240);
    publish(dir, &format!("{id}.req.json"), &request(&id));
    wait_until("the answer", || dir.join(format!("{id}.res.json")).exists());
    let out = serve.stop();
    assert_eq!(answered(&out), 1, "{}", said(&out));
    assert!(!said(&out).contains("File name too long"), "{}", said(&out));
}

#[test]
fn withdrawn_requests_get_no_answer_and_every_answer_published_is_counted() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let serve = Serve::start(dir, &["--strategy", "watch"]);
    // A churn of requests withdrawn as soon as they appear, and malformed ones among them.
    let t0 = Instant::now();
    for i in 0..600 {
        let name = format!("c{i}.req.json");
        if i % 10 == 0 {
            publish(dir, &name, b"{ not json");
        } else {
            publish(dir, &name, &request(&format!("c{i}")));
            let _ = std::fs::remove_file(dir.join(&name));
        }
    }
    // Whatever the runner took is answered: wait until it is quiet.
    let mut last = usize::MAX;
    while answers(dir).len() != last && t0.elapsed() < Duration::from_secs(60) {
        last = answers(dir).len();
        std::thread::sleep(Duration::from_millis(500));
    }
    let out = serve.stop();
    let files = answers(dir);
    let vanished: Vec<&String> = files
        .iter()
        .filter(|n| std::fs::read_to_string(dir.join(n)).unwrap_or_default().contains("No such file"))
        .collect();
    assert!(vanished.is_empty(), "answers to requests gone before they were read: {vanished:?}");
    assert!(files.len() >= 60, "the malformed requests are answered: {}", files.len());
    assert_eq!(answered(&out), files.len(), "what serve counts is what it published: {}", said(&out));
}

#[test]
fn answers_to_requests_read_from_a_dir_since_moved_away_are_not_published_into_the_new_one() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("relay");
    std::fs::create_dir(&dir).unwrap();
    let serve = Serve::start(&dir, &["--handler", "3s"]);
    for i in 0..5 {
        publish(&dir, &format!("m{i}.req.json"), &request(&format!("m{i}")));
    }
    // Every request taken (read and deleted), their handlers under way: the dir moves away.
    wait_until("the pickups", || std::fs::read_dir(&dir).unwrap().count() == 0);
    std::fs::rename(&dir, t.path().join("moved")).unwrap();
    std::fs::create_dir(&dir).unwrap();
    std::thread::sleep(Duration::from_secs(5));
    let out = serve.stop();
    assert!(answers(&dir).is_empty(), "old answers in the new dir: {:?}", answers(&dir));
    assert!(said(&out).contains("the relay dir was replaced after its request was read"), "{}", said(&out));
    assert_eq!(answered(&out), 0, "{}", said(&out));
}
