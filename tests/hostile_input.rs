//! Hostile input through the real binary (issue 13): a scenario too large to schedule, a
//! case name that would leave its report folder, an event log with an endless line or a
//! last line cut by a kill. Each ends in a clear message and the right exit code, before
//! anything is allocated or written outside the run directory. And every file read is
//! bounded (issue 19): a FIFO, a device, a link where none is expected or a file past its cap
//! is refused, never read without end nor waited on.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::BIN;

fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// `relay-bench run FILE` in `dir`, with relay dirs under `dir/relay` and the report in
/// `dir/report`.
fn run(dir: &Path, text: &str) -> Output {
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    std::fs::create_dir_all(dir.join("relay")).unwrap();
    Command::new(BIN)
        .current_dir(dir)
        .args(["run", "-q", "--no-calibration", "--relay-root", "relay", "--out", "report"])
        .arg(&file)
        .output()
        .unwrap()
}

#[test]
fn a_schedule_too_large_to_build_exits_2_and_leaves_nothing_behind() {
    let t = tempfile::tempdir().unwrap();
    let text = r#"
name = "huge"
[workload]
turns_per_sec = 100000
calls_per_turn = 1000
[[case]]
name = "poll"
runner = "poll"
writer = "poll"
"#;
    let out = run(t.path(), text);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let e = said(&out);
    assert!(e.contains("s.toml: `workload`: every case would schedule 1000000000 calls"), "{e}");
    assert!(e.contains("allowed: at most 10000000 calls per case"), "{e}");
    assert!(!t.path().join("report").exists(), "no report started");
    assert_eq!(std::fs::read_dir(t.path().join("relay")).unwrap().count(), 0, "no relay dir made");
}

#[test]
fn check_replays_a_log_whose_last_line_a_kill_cut_and_refuses_an_endless_line() {
    let t = tempfile::tempdir().unwrap();
    let line =
        |call: &str, event: &str| format!(r#"{{"case":"c","sandbox":0,"call":"{call}","event":"{event}","t_ns":1}}"#);
    let log = t.path().join("events.ndjson");
    let text = [line("a", "request"), line("a", "response"), line("b", "request")].join("\n");
    std::fs::write(&log, &text[..text.len() - 5]).unwrap();
    let out = Command::new(BIN).arg("check").arg(&log).output().unwrap();
    // Replayed as far as it goes, and failed: a log cut short cannot vouch for what it lacks.
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let s = said(&out);
    assert!(
        s.contains("events.ndjson:3: the last line has no newline") && s.contains("c: 1 requests, 1 responses"),
        "{s}"
    );
    assert!(s.contains("incomplete: no case_end line"), "{s}");

    std::fs::write(&log, format!("{}\n{}", line("a", "request"), "x".repeat(3 << 20))).unwrap();
    let out = Command::new(BIN).arg("check").arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("events.ndjson:2: longer than 1048576 bytes"), "{}", said(&out));
}

#[test]
fn a_case_name_that_would_leave_the_report_folder_is_refused_when_written_and_when_read() {
    let t = tempfile::tempdir().unwrap();
    for bad in ["..", ".", "-x", "../up"] {
        let text = format!(
            "name = \"n\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"{bad}\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n"
        );
        let out = run(t.path(), &text);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", said(&out));
        assert!(
            said(&out).contains("`case[0].name`") && said(&out).contains("is not allowed; allowed:"),
            "{}",
            said(&out)
        );
        assert!(!t.path().join("report").exists(), "{bad}: nothing written");
    }
    // A summary.json edited to name a case `../..` is not followed out of its run directory.
    let archived = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/archived-run/summary.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(archived).unwrap()).unwrap();
    v["results"][0]["case"] = "../..".into();
    let dir = t.path().join("edited");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("summary.json"), v.to_string()).unwrap();
    let out = Command::new(BIN).arg("report").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("`results[0].case`: \"../..\" is not allowed"), "{}", said(&out));
}

/// Runs `cmd`, killing it if it has not ended within a generous bound (a read that blocks
/// on a FIFO would hang the test forever).
fn bounded(cmd: &mut Command) -> Output {
    let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            panic!("{cmd:?} did not end: it blocked on its input");
        }
    }
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

const VIRTUAL: &str =
    "name = \"v\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"c\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n";

#[test]
fn a_scenario_that_is_no_regular_file_or_too_large_is_refused_and_a_link_to_one_is_followed() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::create_dir(d.join("relay")).unwrap();
    mkfifo(&d.join("fifo.toml"));
    std::fs::write(d.join("big.toml"), format!("{VIRTUAL}# {}\n", "x".repeat(2 << 20))).unwrap();
    let long = VIRTUAL.replace("name = \"v\"\n", &format!("name = \"v\"\ndescription = \"{}\"\n", "d".repeat(5000)));
    std::fs::write(d.join("long.toml"), long).unwrap();
    let cases = [
        ("/dev/zero", "not a regular file (a device)"),
        ("fifo.toml", "not a regular file (a FIFO)"),
        ("relay", "not a regular file (a directory)"),
        ("big.toml", "larger than the 1048576-byte cap"),
        ("long.toml", "`description`: 5000 characters; allowed: at most 4096"),
    ];
    for (file, why) in cases {
        let out =
            bounded(Command::new(BIN).current_dir(d).args(["run", "-q", "--no-calibration", "--out", "r"]).arg(file));
        assert_eq!(out.status.code(), Some(2), "{file}: {}", said(&out));
        assert!(said(&out).contains(why), "{file}: {}", said(&out));
        assert!(!d.join("r").exists(), "{file}: nothing written");
    }
    std::fs::write(d.join("real.toml"), VIRTUAL).unwrap();
    std::os::unix::fs::symlink(d.join("real.toml"), d.join("link.toml")).unwrap();
    let out = run(d, &std::fs::read_to_string(d.join("link.toml")).unwrap());
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let linked = bounded(Command::new(BIN).current_dir(d).args([
        "run",
        "-q",
        "--no-calibration",
        "--relay-root",
        "relay",
        "--out",
        "l",
        "link.toml",
    ]));
    assert_eq!(linked.status.code(), Some(0), "a link the user names is followed: {}", said(&linked));
}

#[test]
fn report_and_compare_refuse_run_files_that_are_links_fifos_or_devices() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let out = run(d, VIRTUAL);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let good = d.join("report");
    let copy = |name: &str| {
        let to = d.join(name);
        assert!(Command::new("cp").arg("-r").arg(&good).arg(&to).status().unwrap().success());
        to
    };
    let linked = copy("linked");
    std::fs::remove_file(linked.join("summary.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", linked.join("summary.json")).unwrap();
    let piped = copy("piped");
    std::fs::remove_file(piped.join("summary.json")).unwrap();
    mkfifo(&piped.join("summary.json"));
    let log = copy("log");
    std::fs::remove_file(log.join("hdr/c/pickup.hlog")).unwrap();
    mkfifo(&log.join("hdr/c/pickup.hlog"));
    let zero = copy("zero");
    std::fs::remove_file(zero.join("hdr/c/pickup.hlog")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero.join("hdr/c/pickup.hlog")).unwrap();
    let expect = [
        (&linked, "summary.json: a run's summary.json: ", "a symbolic link, not followed here"),
        (&piped, "summary.json: a run's summary.json: ", "not a regular file (a FIFO)"),
        (&log, "pickup.hlog: an interval log (.hlog): ", "not a regular file (a FIFO)"),
        (&zero, "pickup.hlog: an interval log (.hlog): ", "a symbolic link, not followed here"),
    ];
    for (dir, what, why) in expect {
        let out = bounded(Command::new(BIN).arg("report").arg(dir));
        assert_eq!(out.status.code(), Some(2), "report {}: {}", dir.display(), said(&out));
        assert!(said(&out).contains(&format!("{what}{why}")), "report {}: {}", dir.display(), said(&out));
        let out = bounded(Command::new(BIN).arg("compare").arg(&good).arg(dir));
        assert_eq!(out.status.code(), Some(2), "compare {}: {}", dir.display(), said(&out));
        assert!(said(&out).contains(why), "compare {}: {}", dir.display(), said(&out));
    }
    let out = bounded(Command::new(BIN).arg("check").arg(log.join("hdr/c/pickup.hlog")));
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("the event log: not a regular file (a FIFO)"), "{}", said(&out));
}
