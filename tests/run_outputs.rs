//! What `run` writes, through the real binary (issue 19): one run per output directory,
//! holding one run's files only; a directory of other files and scenarios that would
//! overwrite each other refused before anything runs.

use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::{wait_until, BIN};

fn said(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// A scenario `name` of one virtual-clock case `case` (a second of simulated calls).
fn virtual_scenario(name: &str, case: &str) -> String {
    format!(
        "name = \"{name}\"\n[workload]\nduration = \"1s\"\n[[case]]\nname = \"{case}\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n"
    )
}

/// `relay-bench run -q --no-calibration --relay-root ROOT/relay --out OUT EXTRA...` in `root`.
fn run(root: &Path, out: &Path, extra: &[&str]) -> Command {
    std::fs::create_dir_all(root.join("relay")).unwrap();
    let mut c = Command::new(BIN);
    c.current_dir(root).args(["run", "-q", "--no-calibration", "--relay-root", "relay", "--out"]).arg(out).args(extra);
    c
}

fn names(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> =
        std::fs::read_dir(dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    n.sort();
    n
}

#[test]
fn a_second_run_into_an_out_dir_in_use_is_refused_naming_the_first() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    let long = "name = \"long\"\n[workload]\nturns_per_sec = 2\nduration = \"60s\"\n[[case]]\nname = \"c\"\nrunner = \"poll\"\nwriter = \"poll\"\n";
    std::fs::write(t.path().join("long.toml"), long).unwrap();
    let first = run(t.path(), &out, &["long.toml"]).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let pid = first.id();
    let marker = out.join(".relay-bench-run");
    wait_until("the first run's lock", || {
        std::fs::read_to_string(&marker).is_ok_and(|s| s.contains(&format!("\nholder: pid {pid} ")))
    });
    let second = run(t.path(), &out, &["long.toml"]).output().unwrap();
    assert_eq!(second.status.code(), Some(2), "{}", said(&second));
    let e = said(&second);
    assert!(e.contains("another run writes there (pid ") && e.contains(&format!("pid {pid} since ")), "{e}");
    assert!(e.contains("relay-bench run -q --no-calibration"), "the other run's command: {e}");
    // Some calls made before the stop, for the event log to hold them.
    wait_until("the case's relay dir", || !names(&t.path().join("relay")).is_empty());
    std::thread::sleep(std::time::Duration::from_secs(2));
    let _ = Command::new("kill").args(["-INT", &pid.to_string()]).status();
    let done = first.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(130), "{}", said(&done));
    let check = Command::new(BIN).arg("check").arg(out.join("events.ndjson")).output().unwrap();
    assert_eq!(check.status.code(), Some(0), "one run's event log: {}", said(&check));
}

#[test]
fn a_run_into_a_previous_runs_dir_leaves_none_of_its_files() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    std::fs::write(t.path().join("one.toml"), virtual_scenario("s", "one")).unwrap();
    std::fs::write(t.path().join("two.toml"), virtual_scenario("s", "two")).unwrap();
    let first = run(t.path(), &out, &["--calls-csv", "one.toml"]).output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", said(&first));
    assert!(out.join("calls.csv").is_file() && out.join("hdr/one").is_dir(), "{:?}", names(&out));
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let second = run(t.path(), &out, &["two.toml"]).output().unwrap();
    assert_eq!(second.status.code(), Some(0), "{}", said(&second));
    assert!(!out.join("calls.csv").exists(), "the first run's calls.csv is gone: {:?}", names(&out));
    assert_eq!(names(&out.join("hdr")), ["two"], "the first run's histograms are gone");
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine", "not a run's file: kept");
    let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["results"][0]["case"], "two");
}

#[test]
fn two_scenarios_of_one_name_and_a_dir_of_other_files_are_refused_before_anything_runs() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("out");
    std::fs::write(t.path().join("a.toml"), virtual_scenario("same", "x")).unwrap();
    std::fs::write(t.path().join("b.toml"), virtual_scenario("same", "y")).unwrap();
    let dup = run(t.path(), &out, &["a.toml", "b.toml"]).output().unwrap();
    assert_eq!(dup.status.code(), Some(2), "{}", said(&dup));
    let e = said(&dup);
    assert!(e.contains("two scenarios are named \"same\" (a.toml and b.toml)"), "{e}");
    assert!(!out.exists(), "nothing written");

    let foreign = t.path().join("thesis");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("chapter1.tex"), "years of work").unwrap();
    let refused = run(t.path(), &foreign, &["a.toml"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{}", said(&refused));
    assert!(said(&refused).contains("not empty and not a relay-bench run directory"), "{}", said(&refused));
    assert_eq!(names(&foreign), ["chapter1.tex"], "left as it was");

    let root = run(t.path(), Path::new("/"), &["a.toml"]).output().unwrap();
    assert_eq!(root.status.code(), Some(2), "{}", said(&root));
    assert!(said(&root).contains("--out /: refusing to write a run into the root directory"), "{}", said(&root));
}

fn dev_full() -> Stdio {
    Stdio::from(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
}

#[test]
fn a_full_stdout_or_stderr_is_no_panic_and_the_report_is_finished() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("v.toml"), virtual_scenario("v", "c")).unwrap();
    std::fs::create_dir(t.path().join("relay")).unwrap();
    let finished = |out: &Path| {
        let s: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
        assert_eq!(s["results"][0]["case"], "c", "the whole summary: {s}");
        assert!(out.join("summary.md").is_file() && out.join("hdr/c").is_dir());
    };
    // Not -q: stderr has progress lines to fail on.
    let err_full = Command::new(BIN)
        .current_dir(t.path())
        .args(["run", "--no-calibration", "--relay-root", "relay", "--out", "e", "v.toml"])
        .stderr(dev_full())
        .output()
        .unwrap();
    assert_eq!(err_full.status.code(), Some(0), "no panic on a full stderr: {}", said(&err_full));
    finished(&t.path().join("e"));
    let out_full = run(t.path(), &t.path().join("o"), &["v.toml"]).stdout(dev_full()).output().unwrap();
    assert_eq!(out_full.status.code(), Some(6), "{}", said(&out_full));
    assert!(said(&out_full).contains("Error: cannot write to stdout: No space left on device"), "{}", said(&out_full));
    finished(&t.path().join("o"));
    let list = Command::new(BIN).arg("list").stdout(dev_full()).output().unwrap();
    assert_eq!(list.status.code(), Some(6), "{}", said(&list));
}

/// Runs `relay-bench ARGS` in `cwd` inside a private mount namespace where `mount_at` is a
/// tmpfs filled to its last byte, then lists what is left in it (after a `LEFT:` line).
/// `None` (and why, said) when this machine does not allow such a namespace.
fn on_a_full_disk(cwd: &Path, mount_at: &Path, args: &[&str]) -> Option<Output> {
    let probe =
        Command::new("unshare").args(["-r", "-m", "sh", "-c", "mount -t tmpfs tmpfs \"$0\""]).arg(mount_at).output();
    if !probe.as_ref().is_ok_and(|p| p.status.success()) {
        eprintln!("skipped: a tmpfs in a private mount namespace (`unshare -r -m`) is not permitted here: {probe:?}");
        return None;
    }
    let script = r#"mnt="$1"; shift
mount -t tmpfs -o size=256k tmpfs "$mnt" || exit 97
dd if=/dev/zero of="$mnt/fill" bs=4k >/dev/null 2>&1
"$@"; code=$?
echo LEFT:; ls -A "$mnt"; exit $code"#;
    let out = Command::new("unshare")
        .current_dir(cwd)
        .args(["-r", "-m", "sh", "-c", script, "sh"])
        .arg(mount_at)
        .arg(BIN)
        .args(args)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(97), "the tmpfs mounted: {}", said(&out));
    Some(out)
}

fn left(out: &Output) -> Vec<String> {
    let s = String::from_utf8_lossy(&out.stdout);
    s.split("LEFT:\n").nth(1).unwrap_or("").lines().map(str::to_owned).collect()
}

#[test]
fn a_full_disk_at_the_relay_root_or_the_out_dir_is_refused_before_the_run() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    std::fs::create_dir_all(d.join("relay")).unwrap();
    let full = d.join("full");
    std::fs::create_dir(&full).unwrap();
    let root = full.display().to_string();
    let args = ["run", "-q", "--no-calibration", "--relay-root", &root, "--out", "out", "v.toml"];
    let Some(out) = on_a_full_disk(d, &full, &args) else { return };
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let e = said(&out);
    assert!(e.contains(&format!("--relay-root {root}: cannot write there: No space left on device")), "{e}");
    assert_eq!(left(&out), ["fill"], "nothing left in the relay root");
    assert!(!d.join("out").exists(), "no report started");

    let to = full.join("out").display().to_string();
    let args = ["run", "-q", "--no-calibration", "--relay-root", "relay", "--out", &to, "v.toml"];
    let Some(out) = on_a_full_disk(d, &full, &args) else { return };
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let e = said(&out);
    assert!(e.contains(&format!("--out {to}: ")) && e.contains("No space left on device"), "{e}");
    assert_eq!(left(&out), ["fill"], "no summary temp, no empty events.ndjson, no out dir");
}

#[test]
fn a_junit_path_that_cannot_be_a_file_is_refused_before_the_run() {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("v.toml"), virtual_scenario("v", "c")).unwrap();
    std::fs::create_dir(t.path().join("reports")).unwrap();
    for (junit, why) in [("reports", "a directory"), ("missing/gates.xml", "its directory does not exist")] {
        let out = run(t.path(), &t.path().join("out"), &["--junit", junit, "v.toml"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{junit}: {}", said(&out));
        assert!(said(&out).contains(&format!("--junit {junit}: {why}; give the path of a file")), "{}", said(&out));
        assert!(!t.path().join("out").exists(), "{junit}: refused before the run");
    }
}

#[test]
fn the_reports_path_is_the_last_line_a_run_prints() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("one.toml"), virtual_scenario("one", "only")).unwrap();
    let out = Command::new(BIN)
        .current_dir(d)
        .args(["run", "one.toml", "--no-calibration", "--out"])
        .arg(d.join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().rfind(|l| !l.trim().is_empty()).unwrap_or_default();
    assert!(last.starts_with("report: ") && last.ends_with("summary.md"), "last line {last:?}: {stdout}");
    assert!(stdout.lines().filter(|l| l.starts_with("report: ")).count() == 1, "{stdout}");
}
