//! The fourth hostile pass's crashes, growth, wrong results and messages: a summary.json
//! edited to absurd values, a sweep of hundreds of points, a log cut short, inputs that are
//! the user's to fix (exit 2, naming them) and what a Markdown report holds of untrusted
//! text. Each runs the real binary or the library in-process.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::serve::{run_in, said, virtual_scenario};
use common::BIN;

/// `relay-bench run -q --no-calibration --relay-root ROOT/relay --out OUT EXTRA...` in `root`.
fn run(root: &Path, out: &Path, extra: &[&str]) -> Output {
    run_in(root, out, extra)
}

#[test]
fn a_latency_of_1e308_in_summary_json_is_drawn_not_a_panic() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    let out_dir = d.join("out");
    assert_eq!(run(d, &out_dir, &["v.toml"]).status.code(), Some(0));
    let path = out_dir.join("summary.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for stats in v["results"][0]["latency_us"].as_object_mut().unwrap().values_mut() {
        for stat in ["min", "p50", "p90", "p99", "p999", "max", "mean"] {
            stats[stat] = serde_json::json!(1e308);
        }
    }
    std::fs::write(&path, v.to_string()).unwrap();
    let report = Command::new(BIN).arg("report").arg(&out_dir).output().unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", said(&report));
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("1×10^302s"), "the value as a person reads it, not 309 digits");
    let compare = Command::new(BIN).arg("compare").arg(&out_dir).arg(&out_dir).output().unwrap();
    assert_eq!(compare.status.code(), Some(0), "{}", said(&compare));
}

/// How many times `name` was renamed into place in `dir` while `cmd` ran, and how long it ran.
fn renames_while(dir: &Path, name: &str, cmd: &mut Command) -> (usize, std::time::Duration, Output) {
    use inotify::{Inotify, WatchMask};
    let mut watch = Inotify::init().unwrap();
    watch.watches().add(dir, WatchMask::MOVED_TO).unwrap();
    let t0 = std::time::Instant::now();
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let mut buf = [0u8; 64 << 10];
    let mut count = 0;
    let mut tally = |watch: &mut Inotify| {
        while let Ok(events) = watch.read_events(&mut buf) {
            let mut any = false;
            for e in events {
                any = true;
                count += usize::from(e.name.is_some_and(|n| n == name));
            }
            if !any {
                break;
            }
        }
    };
    while child.try_wait().unwrap().is_none() {
        tally(&mut watch);
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let elapsed = t0.elapsed();
    tally(&mut watch);
    (count, elapsed, child.wait_with_output().unwrap())
}

#[test]
fn a_sweep_of_hundreds_of_points_rewrites_its_report_a_few_times_not_once_a_point() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    std::fs::create_dir_all(d.join("relay")).unwrap();
    let out_dir = d.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let points = 200;
    let mut cmd = Command::new(BIN);
    cmd.current_dir(d).args(["run", "-q", "--no-calibration", "--relay-root", "relay", "--out"]).arg(&out_dir).args([
        "v.toml",
        "--sweep",
        &format!("runner.interval=100ms..400ms:{points}"),
    ]);
    let (rewrites, elapsed, out) = renames_while(&out_dir, "summary.json", &mut cmd);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    // At most one rewrite every 5 s while it runs, the first and the last two (the end of the
    // scenario, the end of the run) besides: bounded by the run's own length, whatever load
    // stretches it, and far fewer than the points.
    let bound = (elapsed.as_secs_f64() / 5.0).ceil() as usize + 4;
    assert!(rewrites <= bound, "{rewrites} rewrites of summary.json in {elapsed:?} (at most {bound})");
    assert!(rewrites < points / 4, "{rewrites} rewrites for {points} points");
    // Each point's own histograms are written as it finishes, and the report holds them all.
    let hdr = std::fs::read_dir(out_dir.join("hdr")).unwrap().count();
    assert_eq!(hdr, points);
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(out_dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["results"].as_array().unwrap().len(), points);
    assert!(out_dir.join("charts/latency-percentiles.svg").is_file(), "a chart of 200 points is drawn");
}

const LONG: &str = r#"
name = "long"
[workload]
sandboxes = 2
turns_per_sec = 5
duration = "60s"
[[case]]
name = "window"
host = "remote"
profile = "lan"
runner = "window-exec"
writer = "watch"
"#;

/// `relay-bench run LONG` under way (its watch programs started), not quiet.
fn long_run(d: &Path) -> std::process::Child {
    std::fs::write(d.join("long.toml"), LONG).unwrap();
    std::fs::create_dir_all(d.join("relays")).unwrap();
    let child = Command::new(BIN)
        .current_dir(d)
        .args(["run", "long.toml", "--no-calibration", "--out", "out", "--relay-root", "relays"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let root = d.join("relays");
    common::wait_until("the watch programs", || !common::processes_naming(&root).iter().all(|c| c.contains(" run ")));
    std::thread::sleep(std::time::Duration::from_secs(1));
    child
}

fn sigint(child: &std::process::Child) {
    let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
}

#[test]
fn a_case_cut_short_is_said_interrupted_not_failed_and_an_abort_leaves_the_summary_saying_so() {
    let t = tempfile::tempdir().unwrap();
    let child = long_run(t.path());
    sigint(&child);
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{err}");
    let line = err.lines().find(|l| l.contains("calls answered")).unwrap_or_default();
    assert!(line.contains("interrupted: not judged (") && !line.contains("GATES FAIL"), "{err}");

    // Twice: the second aborts at once, and the summary on disk still says it was cut short.
    // The second must come while the first is honoured (the case's stop): sooner after it on
    // a machine that stops the case quicker.
    let (t, err) = [30, 5, 0]
        .iter()
        .map(|ms| {
            let t = tempfile::tempdir().unwrap();
            let child = long_run(t.path());
            sigint(&child);
            std::thread::sleep(std::time::Duration::from_millis(*ms));
            sigint(&child);
            let done = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&done.stderr).into_owned();
            assert_eq!(done.status.code(), Some(130), "{err}");
            (t, err)
        })
        .find(|(_, err)| err.contains("interrupted again (Ctrl-C): aborting"))
        .expect("a second Ctrl-C while the first was honoured aborts");
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("out/summary.json")).unwrap()).unwrap();
    assert_eq!(s["interrupted"], true, "{s}\n{err}");
    assert_eq!(s["pass"], false);
    let temps: Vec<_> = std::fs::read_dir(t.path().join("out"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .map(|e| e.file_name())
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}

#[test]
fn inputs_that_are_the_users_to_fix_exit_2_naming_the_input() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    // A latency profile whose worst round trip no runner can start through.
    let heavy = "name = \"heavy\"\n[workload]\nduration = \"10s\"\n[profile.heavy]\nleg_min = \"10ms\"\n\
                 leg_max = \"20ms\"\ntail_ratio = 1.0\ntail_mean = \"100s\"\ntail_max = \"600s\"\n[[case]]\n\
                 name = \"c\"\nclock = \"virtual\"\nhost = \"remote\"\nprofile = \"heavy\"\nrunner = \"window-exec\"\n\
                 writer = \"watch\"\n";
    std::fs::write(d.join("heavy.toml"), heavy).unwrap();
    let out = run(d, &d.join("o1"), &["heavy.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("`profile.heavy.tail_max`: a round trip takes up to"), "{}", said(&out));
    // A daemon binary that is none.
    let sh = "name = \"sa\"\n[workload]\nduration = \"2s\"\n[[case]]\nname = \"c\"\nhost = \"sandbox-agent\"\n\
              binary = \"/bin/sh\"\nrunner = \"poll\"\nwriter = \"poll\"\n";
    std::fs::write(d.join("sa.toml"), sh).unwrap();
    let out = run(d, &d.join("o2"), &["sa.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("/bin/sh is not a working sandbox-agent daemon"), "{}", said(&out));
    let out = Command::new(BIN)
        .current_dir(d)
        .args(["daemon-capacity", "--sandbox-agent", "/bin/true", "--out", "cap"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("/bin/true is not a working sandbox-agent daemon"), "{}", said(&out));
    // An interval log that does not read back: `report` says so as `compare` does.
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    let run_dir = d.join("o3");
    assert_eq!(run(d, &run_dir, &["v.toml"]).status.code(), Some(0));
    std::fs::write(run_dir.join("hdr/c/pickup.hlog"), "not an interval log\n").unwrap();
    let out = Command::new(BIN).arg("report").arg(&run_dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("pickup.hlog"), "{}", said(&out));
    let out = Command::new(BIN).arg("compare").arg(&run_dir).arg(&run_dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
}

/// The raw HTML GFM would find in `md` (none may come from untrusted text).
fn raw_html(md: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Options, Parser};
    Parser::new_ext(md, Options::ENABLE_TABLES)
        .filter_map(|e| match e {
            Event::Html(h) | Event::InlineHtml(h) => Some(h.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn html_in_summary_json_or_a_graded_programs_output_is_escaped_in_every_markdown_report() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("v.toml"), virtual_scenario("v", "c")).unwrap();
    let out_dir = d.join("out");
    assert_eq!(run(d, &out_dir, &["v.toml"]).status.code(), Some(0));
    let bad = "<img src=x onerror=alert(1)> & <script>alert(2)</script>";
    let path = out_dir.join("summary.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    v["description"] = bad.into();
    v["environment"]["relay_fs"] = bad.into();
    v["results"][0]["notices"] = serde_json::json!([format!("skipped {bad}.req.json: a FIFO")]);
    v["results"][0]["notices_total"] = 1.into();
    std::fs::write(&path, v.to_string()).unwrap();
    let report = Command::new(BIN).arg("report").arg(&out_dir).output().unwrap();
    assert_eq!(report.status.code(), Some(0), "{}", said(&report));
    let md = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(md.contains("&lt;script&gt;alert(2)&lt;/script&gt;"), "{md}");
    assert_eq!(raw_html(&md), Vec::<String>::new(), "{md}");
    // What a graded program leaves in its relay dir lands in conform.md: a file named to be HTML.
    let planted = "<img src=x onerror=alert(1)>";
    let script = format!("printf '%s' '{bad}' > \"$RELAY_DIR/{planted}\"; exit 3");
    let done = Command::new(BIN)
        .args(["conform", "--writer", "--case", "request-bytes", "--out"])
        .arg(d.join("conform"))
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(matches!(done.status.code(), Some(1 | 8)), "{}", said(&done));
    let md = std::fs::read_to_string(d.join("conform/conform.md")).unwrap();
    assert!(md.contains("&lt;img src=x onerror=alert(1)&gt;"), "the planted name is in the report: {md}");
    assert_eq!(raw_html(&md), Vec::<String>::new(), "{md}");
}

#[test]
fn messages_say_what_is_wrong_a_missing_path_the_exit_codes_a_huge_number() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let missing = d.join("no-such-dir");
    let file = d.join("a-file");
    std::fs::write(&file, "").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["run", "--no-calibration", "--relay-root"], "--relay-root"),
        (&["serve", "--dir"], "--dir"),
        (&["call", "--tool", "t", "--dir"], "--dir"),
        (&["conform", "--runner", "--relay-root"], "--relay-root"),
    ];
    for (args, flag) in cases {
        for (path, why) in [(&missing, "does not exist"), (&file, "not a directory (a regular file)")] {
            let mut cmd = Command::new(BIN);
            cmd.current_dir(d).args(args).arg(path);
            if args[0] == "conform" {
                cmd.args(["--", "true"]);
            }
            let out = cmd.output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", said(&out));
            assert!(said(&out).contains(&format!("{flag} {}: {why}", path.display())), "{args:?}: {}", said(&out));
        }
    }
    let help = Command::new(BIN).arg("--help").output().unwrap();
    let help = said(&help);
    assert!(help.contains("7 this machine failed the run") && help.contains("8 conform: no case FAILED"), "{help}");
    // A number past what a person reads digit by digit is said short, or not at all.
    let out = Command::new(BIN).args(["compare", "--threshold", "1e308", "a", "b"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("\"1e308\": a threshold is under 100%") && said(&out).len() < 300, "{}", said(&out));
    std::fs::write(
        d.join("big.toml"),
        virtual_scenario("v", "c").replace("duration", "turns_per_sec = 1e308\nduration"),
    )
    .unwrap();
    let out = run(d, &d.join("o"), &["big.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("1×10^308") && said(&out).len() < 400, "{}", said(&out));
}

/// Puts something at an answer's name.
type Plant = fn(&Path);

/// `relay-bench call` in `dir` while something other than a regular answer within the cap
/// is put at its answer's name by `plant`; what it said and its exit code.
fn call_answered_with(dir: &Path, plant: Plant) -> Output {
    let child = Command::new(BIN)
        .args(["call", "--tool", "t", "--id", "x", "--timeout", "1ms", "--max-file-bytes", "64", "--dir"])
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until("the request", || dir.join("x.req.json").exists());
    std::fs::remove_file(dir.join("x.req.json")).unwrap();
    plant(&dir.join("x.res.json"));
    child.wait_with_output().unwrap()
}

#[test]
fn call_says_why_an_answer_it_found_could_not_be_read() {
    let kinds: [(Plant, &str); 4] = [
        (|p| std::os::unix::fs::symlink("/etc/hostname", p).unwrap(), "a symbolic link (not followed)"),
        (|p| assert!(Command::new("mkfifo").arg(p).status().unwrap().success()), "not a regular file (a FIFO)"),
        (|p| std::fs::create_dir(p).unwrap(), "not a regular file (a directory)"),
        (
            |p| {
                // Whole when it appears (renamed into place), as a runner publishes.
                let tmp = p.with_extension("json.tmp.test");
                std::fs::write(&tmp, format!("{{\"ok\":true,\"text\":\"{}\"}}", "x".repeat(100))).unwrap();
                std::fs::rename(tmp, p).unwrap();
            },
            "larger than the 64-byte cap",
        ),
    ];
    std::thread::scope(|s| {
        for (plant, why) in kinds {
            s.spawn(move || {
                let t = tempfile::tempdir().unwrap();
                let out = call_answered_with(t.path(), plant);
                let e = said(&out);
                assert_eq!(out.status.code(), Some(5), "{why}: {e}");
                assert!(e.contains(&format!("notice: cannot read answer for \"x\": {why}")), "{e}");
                assert!(e.contains("no answer read: one appeared at") && !e.contains("did not answer it"), "{e}");
            });
        }
    });
}

#[test]
fn the_largest_payload_a_scenario_allows_is_answered_on_the_real_clock() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let text = |n: u64| {
        format!(
            "name = \"big\"\n[workload]\nsandboxes = 1\nturns_per_sec = 1\nduration = \"1s\"\npayload_bytes = {n}\n\
             [[case]]\nname = \"c\"\nrunner = \"poll\"\nwriter = \"watch\"\n"
        )
    };
    std::fs::write(d.join("over.toml"), text(16 << 20)).unwrap();
    let out = run(d, &d.join("over"), &["over.toml"]);
    assert_eq!(out.status.code(), Some(2), "the runner's own cap, no room for the envelope: {}", said(&out));
    assert!(said(&out).contains("`workload.payload_bytes`: 16777216 is out of range; allowed: 0 to 16776192"));
    std::fs::write(d.join("max.toml"), text((16 << 20) - 1024)).unwrap();
    let out = run(d, &d.join("max"), &["max.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("max/summary.json")).unwrap()).unwrap();
    let calls = &s["results"][0]["calls"];
    assert!(calls["completed"].as_u64().unwrap() >= 1 && calls["lost"] == 0, "{calls}");
}

#[test]
fn a_writer_that_exits_without_publishing_is_failed_not_inconclusive() {
    let t = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["conform", "--writer", "--case", "request-bytes", "--case", "answer-ok", "--out"])
        .arg(t.path().join("report"))
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("report/conform.json")).unwrap()).unwrap();
    for c in r["cases"].as_array().unwrap() {
        assert_eq!(c["verdict"], "FAILED", "{c}");
        assert!(c["reason"].as_str().unwrap().contains("the writer exited without publishing it"), "{c}");
    }
}

#[test]
fn check_fails_a_log_cut_short_or_missing_its_case_end() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let scenario = "name = \"logged\"\n[workload]\nsandboxes = 2\nturns_per_sec = 4\nduration = \"5s\"\n\
                    [[case]]\nname = \"a\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n\
                    [[case]]\nname = \"b\"\nclock = \"virtual\"\nrunner = \"poll\"\nwriter = \"poll\"\n";
    std::fs::write(d.join("s.toml"), scenario).unwrap();
    assert_eq!(run(d, &d.join("nd"), &["s.toml"]).status.code(), Some(0));
    assert_eq!(run(d, &d.join("bin"), &["s.toml", "--event-log", "compact"]).status.code(), Some(0));
    let check = |log: &Path| Command::new(BIN).arg("check").arg(log).output().unwrap();
    let nd = d.join("nd/events.ndjson");
    let bin = d.join("bin/events.bin");
    for whole in [&nd, &bin] {
        assert_eq!(check(whole).status.code(), Some(0), "{}", said(&check(whole)));
    }
    // Cut inside a case: an ndjson log mid-line, a compact one mid-record.
    for (log, name) in [(&nd, "cut.ndjson"), (&bin, "cut.bin")] {
        let bytes = std::fs::read(log).unwrap();
        let cut = d.join(name);
        std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
        let out = check(&cut);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", said(&out));
        assert!(said(&out).contains("incomplete: no case_end line"), "{name}: {}", said(&out));
    }
    // Cut between the two cases (the first whole): the run's summary.json beside it names both.
    let whole_a: String = std::fs::read_to_string(&nd)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"case\":\"a\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let between = d.join("nd/between.ndjson");
    std::fs::write(&between, whole_a).unwrap();
    let out = check(&between);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("b: in the summary.json beside the log, and no line of it in the log"));
    // A call deleted whole, with its case's case_end line: nothing counts it missing.
    let text = std::fs::read_to_string(&nd).unwrap();
    let victim = text
        .lines()
        .find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["event"] == "request" && v["case"] == "a").then(|| v["call"].as_str().unwrap().to_owned())
        })
        .unwrap();
    let call = format!("\"call\":{}", serde_json::to_string(&victim).unwrap());
    let edited: String = text
        .lines()
        .filter(|l| {
            let its_case_end = l.contains("\"case\":\"a\"") && l.contains("\"case_end\"");
            !l.contains(&call) && !its_case_end
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let edited_log = d.join("edited.ndjson");
    std::fs::write(&edited_log, edited).unwrap();
    let out = check(&edited_log);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    assert!(said(&out).contains("a: ") && said(&out).contains("incomplete: no case_end line"), "{}", said(&out));
}

#[test]
fn relay_dirs_deleted_under_a_run_are_the_machines_failure_not_lost_calls() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let text = "name = \"rd\"\n[workload]\nsandboxes = 2\nturns_per_sec = 10\nduration = \"6s\"\n[[case]]\n\
                name = \"local\"\nrunner = \"watch\"\nwriter = \"watch\"\n";
    std::fs::write(d.join("rd.toml"), text).unwrap();
    let root = d.join("relays");
    std::fs::create_dir(&root).unwrap();
    let child = Command::new(BIN)
        .current_dir(d)
        .args(["run", "rd.toml", "-q", "--no-calibration", "--relay-root", "relays", "--out", "out"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_until("the relay dirs", || std::fs::read_dir(&root).unwrap().count() >= 1);
    std::thread::sleep(std::time::Duration::from_secs(2));
    for e in std::fs::read_dir(&root).unwrap().flatten() {
        let _ = std::fs::remove_dir_all(e.path());
    }
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(7), "{err}");
    assert!(err.contains("a relay dir deleted under the run"), "{err}");
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("out/summary.json")).unwrap()).unwrap();
    let r = &s["results"][0];
    assert!(r["calls"]["environment"].as_u64().unwrap() > 0, "{}", r["calls"]);
    assert_eq!(r["calls"]["lost"], 0, "{}", r["calls"]);
    assert_eq!(r["pairing_violations"]["total"], 0, "{}", r["pairing_violations"]);
}

/// A correct writer (relay-bench's own `call`) that this machine starts 6 s late, as a
/// machine whose every core is busy may, after the battery measured its pace: slower than
/// any wait the battery scaled, never wrong. Graded OK or INCONCLUSIVE, never FAILED.
#[test]
fn a_correct_writer_slowed_after_the_pace_was_measured_is_never_failed() {
    let t = tempfile::tempdir().unwrap();
    // The call's values from the environment the battery sets (args and timeout unset when absent).
    let script = r#"bin="$0"; sleep 6
set -- call --dir "$RELAY_DIR" --tool "$RELAY_CALL_TOOL" --id "$RELAY_CALL_ID"
[ -n "${RELAY_CALL_ARGS+x}" ] && set -- "$@" --args "$RELAY_CALL_ARGS"
[ -n "$RELAY_CALL_TIMEOUT_MS" ] && set -- "$@" --timeout "${RELAY_CALL_TIMEOUT_MS}ms"
exec "$bin" "$@""#;
    let out = Command::new(BIN)
        .args(["conform", "--writer", "--out"])
        .arg(t.path().join("report"))
        .args(["--case", "request-args-default", "--case", "id-collision", "--case", "deadline-no-timeout"])
        .args(["--", "sh", "-c", script, BIN])
        .output()
        .unwrap();
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path().join("report/conform.json")).unwrap()).unwrap();
    for c in r["cases"].as_array().unwrap() {
        assert_ne!(c["verdict"], "FAILED", "{c}");
    }
    assert!(matches!(out.status.code(), Some(0 | 8)), "{}", said(&out));
}
