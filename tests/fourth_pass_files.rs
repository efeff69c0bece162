//! What relay-bench writes, under attack and by a careless hand (the fourth hostile pass):
//! only a regular file or a new path, never through a link, never over a FIFO or a device;
//! only under the run directory and the relay root; and it removes only what it wrote, as
//! its run directory's marker lists. Each test runs the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::serve::{run_in, said, virtual_scenario};
use common::BIN;

/// `relay-bench run -q --no-calibration --relay-root ROOT/relay --out OUT EXTRA...` in `root`.
fn run(root: &Path, out: &Path, extra: &[&str]) -> Output {
    run_in(root, out, extra)
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Every file below `dir`, relative, sorted.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, at: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(at).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn junit_is_never_written_over_a_device_a_fifo_or_a_link() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    mkfifo(&d.join("fifo.xml"));
    std::fs::write(d.join("precious.txt"), "precious").unwrap();
    std::os::unix::fs::symlink(d.join("precious.txt"), d.join("link.xml")).unwrap();
    // `/dev/null`'s twin (a character device 1,3) of the test's own: a regression must not
    // break the machine's `/dev/null` for every process on it.
    let mut cases = vec![("fifo.xml", "a FIFO"), ("link.xml", "a symbolic link")];
    let made = Command::new("mknod").arg(d.join("null")).args(["c", "1", "3"]).status().is_ok_and(|s| s.success());
    if made {
        cases.push(("null", "a device"));
    } else {
        eprintln!("not tried: a device node (mknod is not permitted here)");
    }
    for (junit, what) in cases {
        let out = run(d, &d.join("out"), &["--junit", junit, "v.toml"]);
        assert_eq!(out.status.code(), Some(2), "{junit}: {}", said(&out));
        assert!(said(&out).contains(&format!("--junit {junit}: {what}; give the path of a file")), "{}", said(&out));
        assert!(!d.join("out").exists(), "{junit}: refused before the run");
    }
    let fifo = std::fs::symlink_metadata(d.join("fifo.xml")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&fifo.file_type()), "the FIFO is still one");
    assert!(std::fs::symlink_metadata(d.join("link.xml")).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(d.join("precious.txt")).unwrap(), "precious");
    if made {
        let null = std::fs::symlink_metadata(d.join("null")).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(&null.file_type()), "the device is still one");
    }
    // A regular file is written over, as before; a new path is made.
    std::fs::write(d.join("old.xml"), "old").unwrap();
    let out = run(d, &d.join("out"), &["--junit", "old.xml", "v.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(std::fs::read_to_string(d.join("old.xml")).unwrap().starts_with("<?xml"));
}

#[test]
fn a_folder_with_a_summary_but_no_marker_is_refused_and_a_marked_one_loses_only_the_runs_files() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("one.toml"), virtual_scenario("s", "one")).unwrap();
    std::fs::write(d.join("two.toml"), virtual_scenario("s", "two")).unwrap();
    // Someone's folder that happens to hold a summary.json.
    let theirs = d.join("theirs");
    for f in ["summary.json", "charts/mine.png", "hdr/notes.txt", "sub/summary.json", "summary.md"] {
        std::fs::create_dir_all(theirs.join(f).parent().unwrap()).unwrap();
        std::fs::write(theirs.join(f), f).unwrap();
    }
    let before = tree(&theirs);
    let out = run(d, &theirs, &["one.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let e = said(&out);
    assert!(e.contains("holds a summary.json but no relay-bench marker (.relay-bench-run)"), "{e}");
    assert!(e.contains("give a new or empty directory, or move its files away first"), "{e}");
    assert_eq!(tree(&theirs), before, "nothing touched");
    for f in &before {
        assert_eq!(std::fs::read_to_string(theirs.join(f)).unwrap(), *f);
    }

    // A run's own folder, the user's files added beside the run's and inside its folders.
    let out_dir = d.join("out");
    let first = run(d, &out_dir, &["--calls-csv", "one.toml"]);
    assert_eq!(first.status.code(), Some(0), "{}", said(&first));
    let mine = ["notes.txt", "charts/mine.png", "hdr/mine.txt", "hdr/one/mine.txt", "old/summary.json"];
    for f in mine {
        std::fs::create_dir_all(out_dir.join(f).parent().unwrap()).unwrap();
        std::fs::write(out_dir.join(f), "mine").unwrap();
    }
    let second = run(d, &out_dir, &["two.toml"]);
    assert_eq!(second.status.code(), Some(0), "{}", said(&second));
    for f in mine {
        assert_eq!(std::fs::read_to_string(out_dir.join(f)).unwrap(), "mine", "{f} kept");
    }
    let left = tree(&out_dir);
    assert!(!left.iter().any(|f| f.starts_with("hdr/one/") && !f.ends_with("mine.txt")), "{left:?}");
    assert!(!left.contains(&"calls.csv".to_owned()), "the first run's calls.csv is gone: {left:?}");
    assert!(left.contains(&"hdr/two/pickup.hlog".to_owned()), "{left:?}");
}

#[test]
fn a_marker_that_is_a_link_is_not_written_through() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    std::fs::write(d.join("precious.txt"), "precious").unwrap();
    let out_dir = d.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::symlink(d.join("precious.txt"), out_dir.join(".relay-bench-run")).unwrap();
    let out = run(d, &out_dir, &["v.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("its marker .relay-bench-run is a symbolic link"), "{}", said(&out));
    assert_eq!(std::fs::read_to_string(d.join("precious.txt")).unwrap(), "precious");
}

/// A real-clock scenario whose case `case` is an external runner: `relay-bench serve` after
/// the shell lines `prelude`, for one sandbox and about a second (its script written in `d`).
fn external(d: &Path, case: &str, prelude: &str) -> String {
    let script = d.join(format!("{case}.sh"));
    std::fs::write(&script, format!("{prelude}\nexec '{BIN}' serve --dir \"$1\"\n")).unwrap();
    format!(
        "name = \"ext\"\n[workload]\nsandboxes = 1\nturns_per_sec = 2\nduration = \"1s\"\n[[case]]\nname = \"{case}\"\n\
         runner = {{ command = [\"sh\", {:?}, \"{{dir}}\"] }}\nwriter = \"watch\"\n",
        script.display().to_string()
    )
}

#[test]
fn an_external_runners_stderr_file_is_never_a_link_followed_and_is_cleared_with_its_run() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("a.toml"), external(d, "a", "true")).unwrap();
    std::fs::write(d.join("b.toml"), external(d, "b", "true")).unwrap();
    let out_dir = d.join("out");
    let first = run(d, &out_dir, &["a.toml"]);
    assert_eq!(first.status.code(), Some(0), "{}", said(&first));
    assert!(out_dir.join("a-sandbox-0.stderr").is_file(), "{:?}", tree(&out_dir));
    // Reused: the first run's stderr file is its own, and cleared.
    let second = run(d, &out_dir, &["b.toml"]);
    assert_eq!(second.status.code(), Some(0), "{}", said(&second));
    assert!(!out_dir.join("a-sandbox-0.stderr").exists(), "{:?}", tree(&out_dir));
    // A link planted at the name is neither followed nor removed.
    std::fs::write(d.join("precious.txt"), "precious").unwrap();
    std::fs::remove_file(out_dir.join("b-sandbox-0.stderr")).unwrap();
    std::os::unix::fs::symlink(d.join("precious.txt"), out_dir.join("b-sandbox-0.stderr")).unwrap();
    let third = run(d, &out_dir, &["b.toml"]);
    assert_ne!(third.status.code(), Some(0), "{}", said(&third));
    assert!(said(&third).contains("a symbolic link is there"), "{}", said(&third));
    assert_eq!(std::fs::read_to_string(d.join("precious.txt")).unwrap(), "precious");
}

#[test]
fn an_external_runners_stderr_is_kept_to_64_kib() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    // Three megabytes on stderr before it serves.
    let text = external(d, "loud", "head -c 3000000 /dev/zero | tr '\\0' x >&2");
    std::fs::write(d.join("loud.toml"), text).unwrap();
    let out_dir = d.join("out");
    let out = run(d, &out_dir, &["loud.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let kept = std::fs::read_to_string(out_dir.join("loud-sandbox-0.stderr")).unwrap();
    assert!(kept.len() <= (64 << 10) + 200, "{} bytes kept", kept.len());
    assert!(kept.contains("bytes of stderr left out here; the first and last 32 KiB are kept"), "{}", &kept[32760..]);
    assert!(kept.starts_with("xxxx") && kept.ends_with("xxxx"));
}

#[test]
fn report_writes_nothing_through_a_linked_folder_and_waits_for_no_run_in_progress() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    let out_dir = d.join("out");
    let out = run(d, &out_dir, &["v.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let outside = d.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::remove_dir_all(out_dir.join("charts")).unwrap();
    std::os::unix::fs::symlink(&outside, out_dir.join("charts")).unwrap();
    let report = Command::new(BIN).arg("report").arg(&out_dir).output().unwrap();
    assert_eq!(report.status.code(), Some(2), "{}", said(&report));
    assert!(said(&report).contains("charts: a symbolic link is there"), "{}", said(&report));
    assert!(tree(&outside).is_empty(), "nothing written outside the run: {:?}", tree(&outside));

    // A run holds the directory's lock: report is refused, not raced.
    std::fs::remove_file(out_dir.join("charts")).unwrap();
    let marker = std::fs::OpenOptions::new().read(true).write(true).open(out_dir.join(".relay-bench-run")).unwrap();
    // SAFETY: flock on a descriptor this test owns, as a run in progress holds it.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&marker), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    let busy = Command::new(BIN).arg("report").arg(&out_dir).output().unwrap();
    assert_eq!(busy.status.code(), Some(2), "{}", said(&busy));
    assert!(said(&busy).contains("another run writes there"), "{}", said(&busy));
    assert!(!out_dir.join("charts").exists(), "nothing drawn");
    drop(marker);
    let free = Command::new(BIN).arg("report").arg(&out_dir).output().unwrap();
    assert_eq!(free.status.code(), Some(0), "{}", said(&free));
}

#[test]
fn conform_writes_nothing_through_a_relay_dir_the_runner_replaced_with_a_link() {
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    // A runner that moves its relay dir away, puts a link to `outside` in its place and
    // serves through it. The link is made first and the two renames are one process's, so
    // the dir is never missing long enough for the battery's own setup to meet ENOENT (two
    // process starts apart, it did on a loaded machine).
    let script = format!(
        "ln -s {} \"$1.link\" && perl -e 'rename($ARGV[0], \"$ARGV[0].moved\") && rename(\"$ARGV[0].link\", $ARGV[0]) or die' \"$1\" && exec \"$0\" serve --dir \"$1\"",
        outside.display()
    );
    let done = Command::new(BIN)
        .args(["conform", "--runner", "--case", "answer-ok", "--case", "parallel-8", "--out"])
        .arg(t.path().join("report"))
        .args(["--", "sh", "-c", &script, BIN, "{dir}"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(1), "{}", said(&done));
    assert!(said(&done).contains("was replaced by a symbolic link"), "{}", said(&done));
    assert!(tree(&outside).is_empty(), "the battery wrote through the link: {:?}", tree(&outside));
}

/// Where `relay-bench report` left temp files.
fn temps(dir: &Path) -> Vec<PathBuf> {
    tree(dir).into_iter().filter(|f| f.contains(".tmp.")).map(PathBuf::from).collect()
}

#[test]
fn report_removes_the_temp_files_a_killed_report_left_and_an_interrupted_one_leaves_none() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    let out_dir = d.join("out");
    assert_eq!(run(d, &out_dir, &["v.toml"]).status.code(), Some(0));
    // What a report killed with SIGKILL leaves: staged files under their temp names.
    let left = ["hdr/c/pickup.tmp.0123456789abcdef.hgrm", "charts/latency-percentiles.tmp.fedcba9876543210.svg"];
    for f in left {
        std::fs::write(out_dir.join(f), "half").unwrap();
    }
    std::fs::write(out_dir.join("hdr/c/mine.tmp.txt"), "mine").unwrap();
    let out = Command::new(BIN).arg("report").arg(&out_dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert_eq!(temps(&out_dir), [PathBuf::from("hdr/c/mine.tmp.txt")], "only the user's own is left");
    // SIGINT while it draws: it stops with every output whole or absent, no temp file left.
    for delay_ms in [0u64, 20, 60, 150] {
        let child = Command::new(BIN).arg("report").arg(&out_dir).stdout(Stdio::null()).stderr(Stdio::piped()).spawn();
        let child = child.unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
        let done = child.wait_with_output().unwrap();
        // 130: stopped; 0: done first; killed by the signal: before its handler was set.
        let by_int = std::os::unix::process::ExitStatusExt::signal(&done.status) == Some(libc::SIGINT);
        assert!(matches!(done.status.code(), Some(0 | 130)) || by_int, "{:?}: {}", done.status, said(&done));
        assert_eq!(temps(&out_dir), [PathBuf::from("hdr/c/mine.tmp.txt")], "after a SIGINT at {delay_ms} ms");
    }
}

/// A tmpfs of `inodes` files at most mounted at `at` (unmounted when dropped), or `None`
/// where this user cannot mount (the test then says it is skipped). Its last free inode
/// taken, a file cannot be made: ENOSPC, as on a full disk, at a point of the run's writing
/// that `inodes` sets.
struct Tiny(PathBuf);

impl Tiny {
    fn mount(at: &Path, inodes: u32) -> Option<Tiny> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size=4m,nr_inodes={inodes}"), "tmpfs"])
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
fn a_disk_that_fills_while_the_report_is_written_exits_7_saying_so_with_summary_json_whole() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    let mut cut_after_summary = 0;
    // Room for fewer files than the report writes, then for more: the disk fills at every
    // point of the report in turn.
    for inodes in (5..=44).step_by(3) {
        let at = d.join(format!("disk-{inodes}"));
        let Some(_disk) = Tiny::mount(&at, inodes) else {
            eprintln!("skipped: cannot mount a tmpfs here");
            return;
        };
        let out_dir = at.join("out");
        let out = run(d, &out_dir, &["v.toml"]);
        let summary = std::fs::read(out_dir.join("summary.json")).ok();
        match out.status.code() {
            Some(0) => {
                for f in ["summary.json", "summary.md", "report.html", "hdr/c/pickup.hlog", "charts"] {
                    assert!(out_dir.join(f).exists(), "{inodes} inodes: exit 0 without {f}: {:?}", tree(&out_dir));
                }
            }
            // Refused before the run: the probe found no room.
            Some(2) => assert!(said(&out).contains("No space left on device"), "{}", said(&out)),
            Some(7) => {
                let e = said(&out);
                assert!(e.contains("this machine failed the run, not the relay: no space left on the device"), "{e}");
                if let Some(bytes) = summary {
                    let v: serde_json::Value = serde_json::from_slice(&bytes).expect("summary.json whole");
                    if v["results"][0]["case"] == "c" {
                        cut_after_summary += 1;
                    }
                }
            }
            _ => panic!("{inodes} inodes: {:?}: {}", out.status, said(&out)),
        }
    }
    assert!(cut_after_summary > 0, "the disk filled after summary.json was whole at least once");
}
