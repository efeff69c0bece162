//! A relay dir others can write: entries planted at the names relay-bench is about to use
//! (links to files outside the dir, FIFOs) are never written through, opened or waited on,
//! and a failed write leaves no temp file behind.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::serve::{said, Serve};
use common::BIN;

/// The temp names a process numbering them `<final>.tmp.<pid>-<n>` would use first: what a
/// hostile writer of the dir could predict.
fn guessable(final_name: &str, pid: u32) -> impl Iterator<Item = String> + '_ {
    (0..64).map(move |n| format!("{final_name}.tmp.{pid}-{n}"))
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

fn call(dir: &Path, id: &str) -> Output {
    Command::new(BIN).args(["call", "--tool", "t", "--timeout", "1s", "--id", id, "--dir"]).arg(dir).output().unwrap()
}

#[test]
fn serve_writes_nothing_through_links_planted_at_its_temp_names() {
    let t = tempfile::tempdir().unwrap();
    let (dir, victim) = (t.path().join("relay"), t.path().join("precious.txt"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(&victim, "precious").unwrap();
    let serve = Serve::start(&dir, &[]);
    for name in guessable("c1.res.json", serve.pid()) {
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
    }
    let out = call(&dir, "c1");
    assert_eq!(out.status.code(), Some(0), "the call is answered: {}", said(&out));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious", "nothing written outside the dir");
    let (done, _) = serve.terminate();
    assert!(said(&done).contains(": 1 answered"), "{}", said(&done));
}

#[test]
fn fifos_planted_at_its_temp_names_do_not_wedge_serve() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("relay");
    std::fs::create_dir(&dir).unwrap();
    let serve = Serve::start(&dir, &[]);
    let ids = ["f1", "f2", "f3"];
    for id in ids {
        for name in guessable(&format!("{id}.res.json"), serve.pid()) {
            mkfifo(&dir.join(name));
        }
    }
    for id in ids {
        let out = call(&dir, id);
        assert_eq!(out.status.code(), Some(0), "{id} is answered: {}", said(&out));
    }
    let (done, took) = serve.terminate();
    assert_eq!(done.status.code(), Some(0), "one SIGTERM ends it: {}", said(&done));
    assert!(took < Duration::from_secs(10), "ended {took:?} after SIGTERM");
    assert!(said(&done).contains(": 3 answered"), "{}", said(&done));
}

/// A handler command at `dir/name` running `body` (a shell script); `hang-sleep` beside it
/// is `sleep` under a name only this test's processes carry.
fn handler(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let sleep = common_sleep();
    std::os::unix::fs::symlink(sleep, dir.join("hang-sleep")).ok();
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn common_sleep() -> std::path::PathBuf {
    ["/bin/sleep", "/usr/bin/sleep"].iter().map(std::path::PathBuf::from).find(|p| p.exists()).expect("sleep")
}

#[test]
fn one_sigterm_ends_serve_with_a_hung_handler_and_kills_what_it_started() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("relay");
    std::fs::create_dir(&dir).unwrap();
    let hang = handler(t.path(), "hang.sh", &format!("{0}/hang-sleep 1000 & {0}/hang-sleep 1001", t.path().display()));
    let serve = Serve::start(&dir, &["--handler-command", hang.to_str().unwrap()]);
    let call = Command::new(BIN)
        .args(["call", "--tool", "t", "--id", "hung", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    common::wait_until("the handler's children", || {
        common::processes_naming(t.path()).iter().filter(|c| c.contains("hang-sleep 100")).count() == 2
    });
    let (done, took) = serve.terminate();
    let mut call = call;
    let _ = call.kill();
    let _ = call.wait();
    assert!(took < Duration::from_secs(5), "one SIGTERM ended serve in {took:?}: {}", said(&done));
    assert_eq!(done.status.code(), Some(0), "{}", said(&done));
    assert!(said(&done).contains("its handlers are killed"), "{}", said(&done));
    common::wait_until("the handler's group gone", || {
        !common::processes_naming(t.path()).iter().any(|c| c.contains("hang-sleep"))
    });
}

#[test]
fn a_handler_command_is_killed_at_its_timeout_and_the_call_answered_so() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("relay");
    std::fs::create_dir(&dir).unwrap();
    let hang = handler(t.path(), "hang.sh", &format!("{0}/hang-sleep 1000 & {0}/hang-sleep 1001", t.path().display()));
    let serve = Serve::start(&dir, &["--handler-command", hang.to_str().unwrap(), "--handler-timeout", "1s"]);
    let out = call(&dir, "slow");
    assert_eq!(out.status.code(), Some(1), "an error answer: {}", said(&out));
    assert!(said(&out).contains("did not finish in 1") && said(&out).contains("killed"), "{}", said(&out));
    common::wait_until("the handler's group gone", || {
        !common::processes_naming(t.path()).iter().any(|c| c.contains("hang-sleep"))
    });
    drop(serve);
}

#[test]
fn a_streaming_handler_gets_a_large_request_while_its_answer_is_read() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("relay");
    std::fs::create_dir(&dir).unwrap();
    // Answers as it reads: the request's bytes, quotes and backslashes dropped, as the text.
    let echo = handler(t.path(), "echo.sh", r#"printf '{"ok":true,"text":"'; tr -d '"\\'; printf '"}'"#);
    let serve = Serve::start(&dir, &["--handler-command", echo.to_str().unwrap(), "--handler-timeout", "30s"]);
    let big = "a".repeat(2 << 20);
    let req = format!(r#"{{"toolName":"t","toolCallId":"big","args":{{"x":"{big}"}}}}"#);
    std::fs::write(dir.join("big.req.json.tmp.test"), &req).unwrap();
    std::fs::rename(dir.join("big.req.json.tmp.test"), dir.join("big.req.json")).unwrap();
    common::wait_until("the answer", || dir.join("big.res.json").exists());
    let answer: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("big.res.json")).unwrap()).unwrap();
    assert_eq!(answer["ok"], true, "{}", &answer.to_string()[..200.min(answer.to_string().len())]);
    assert!(answer["text"].as_str().unwrap().len() > 2 << 20);
    drop(serve);
}

/// A tmpfs of `kib` KiB mounted at `at` (unmounted when dropped), or `None` where this user
/// cannot mount (the test then says it is skipped).
struct Tiny(std::path::PathBuf);

impl Tiny {
    fn mount(at: &Path, kib: u32) -> Option<Tiny> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(at)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tiny(at.to_path_buf()))
    }
}

impl Drop for Tiny {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_relay_disk_is_the_machines_failure_not_lost_calls() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("relays");
    let Some(_fs) = Tiny::mount(&root, 256) else {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    };
    let scenario = t.path().join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"full\"\n[workload]\nsandboxes = 2\nturns_per_sec = 20\nduration = \"4s\"\n\
         [[case]]\nname = \"local\"\nrunner = \"watch\"\nwriter = \"watch\"\n",
    )
    .unwrap();
    let out = t.path().join("out");
    let child = Command::new(BIN)
        .arg("run")
        .arg(&scenario)
        .args(["--quiet", "--no-calibration", "--relay-root"])
        .arg(&root)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until("the relay dirs", || std::fs::read_dir(&root).unwrap().count() >= 1);
    std::thread::sleep(Duration::from_millis(800));
    // The disk fills (not with relay files: the runner leaves them alone), and stays full
    // until the run ends: a page a relay file frees when it is deleted is taken again within
    // milliseconds, so the run's next writes fail whenever the filler's last write landed.
    let running = Arc::new(AtomicBool::new(true));
    let filler = {
        let (running, path) = (running.clone(), root.join("filler"));
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::File::create(path).unwrap();
            while running.load(Ordering::Relaxed) {
                while f.write_all(&[0u8; 4096]).is_ok() {}
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let done = child.wait_with_output().unwrap();
    running.store(false, Ordering::Relaxed);
    filler.join().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(7), "{err}");
    assert!(err.contains("this machine failed") && err.contains("write(s) of the relay"), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    let r = &s["results"][0];
    assert!(r["calls"]["environment"].as_u64().unwrap() > 0, "{}", r["calls"]);
    assert!(r["environment_failures"].as_u64().unwrap() > 0);
    assert_eq!(r["leftover_files"], 0, "no temp file left by a failed write");
    let (env, lost) = (r["calls"]["environment"].as_u64().unwrap(), r["calls"]["lost"].as_u64().unwrap());
    assert!(lost < env, "the unpublished requests are not lost calls: {}", r["calls"]);
    assert!(
        r["pairing_violations"]["total"].as_u64().unwrap() <= lost,
        "an unpublished request is no breach: {}",
        r["pairing_violations"]
    );
}
