//! A run split over machines (`run --shard K/N`) and joined again (`merge`): the merged
//! summary.json is the one-machine run's, apart from wall times, `started_at` and the
//! machine; parts that do not make one run are refused, naming what is wrong.

mod common;

use std::path::Path;
use std::process::Command;

use common::BIN;

/// Plain cases (one compared with another), a sweep's points and a search: every kind of unit.
const SCENARIO: &str = r#"
name = "split"
description = "every kind of unit a split deals"
[workload]
sandboxes = 3
duration = "2m"
warmup = "10s"
seed = 5
turns_per_sec = 2
calls_per_turn = 2
[[case]]
name = "poll"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "poll"
writer = "poll"
[[case]]
name = "window"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
baseline = "poll"
gates = ["vs_baseline.discovery_per_min <= 1"]
[[case]]
name = "swept"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
sweep = { "workload.sandboxes" = [1, 2, 4] }
[[case]]
name = "searched"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "poll"
writer = "poll"
rollout = ["pickup.p50 < 400ms"]
search = { path = "runner.interval", from = "100ms", to = "1s", precision = "50ms", meets = "below" }
"#;

fn relay_bench(dir: &Path, args: &[&str]) -> (i32, String) {
    let o = Command::new(BIN).current_dir(dir).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o.status.code().unwrap_or(-1), text)
}

/// A run's summary.json without what differs between machines and runs.
fn comparable(dir: &Path) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let o = v.as_object_mut().unwrap();
    for k in ["started_at", "environment"] {
        o.remove(k);
    }
    for r in o["results"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("wall_secs");
    }
    v
}

#[test]
fn a_run_split_two_or_three_ways_merges_into_the_one_machine_run() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("split.toml"), SCENARIO).unwrap();
    let (code, said) = relay_bench(d, &["run", "split.toml", "--quiet", "--out", "whole"]);
    assert_eq!(code, 0, "{said}");
    let whole = comparable(&d.join("whole"));
    assert!(whole["results"].as_array().unwrap().len() >= 7, "the search probed: {whole}");
    for n in [2, 3] {
        let mut parts = Vec::new();
        for k in 1..=n {
            let part = format!("part{k}of{n}");
            // One job here, the machine's cores in the whole run: a search's probes are the same.
            let (code, said) =
                relay_bench(d, &["run", "split.toml", "--shard", &format!("{k}/{n}"), "--jobs", "1", "--out", &part]);
            assert!(code == 0, "{part}: {said}");
            assert!(said.contains(&format!("split: part {k} of {n}: ")), "{said}");
            let md = std::fs::read_to_string(d.join(&part).join("summary.md")).unwrap();
            assert!(md.contains("PART OF A RUN") && md.contains("Rollout verdict: in the merged run"), "{md}");
            common::check_schema(
                &serde_json::from_slice(&std::fs::read(d.join(&part).join("summary.json")).unwrap()).unwrap(),
            );
            parts.push(part);
        }
        // In any order.
        parts.reverse();
        let merged = format!("merged{n}");
        let junit = format!("{merged}.xml");
        let mut args = vec!["merge", "--quiet", "--out", merged.as_str(), "--junit", junit.as_str()];
        args.extend(parts.iter().map(String::as_str));
        let (code, said) = relay_bench(d, &args);
        assert_eq!(code, 0, "{said}");
        let xml = std::fs::read_to_string(d.join(&junit)).unwrap();
        assert!(xml.contains("<testsuites") && xml.contains("split.window"), "the merged gates as JUnit: {xml}");
        let got = comparable(&d.join(&merged));
        assert!(got == whole, "{n} parts merged differ from the whole run:\n{got}\n---\n{whole}");
        common::check_schema(
            &serde_json::from_slice(&std::fs::read(d.join(&merged).join("summary.json")).unwrap()).unwrap(),
        );
        assert_eq!(
            std::fs::read_to_string(d.join(&merged).join("summary.md"))
                .unwrap()
                .lines()
                .filter(|l| !l.contains(" · started "))
                .collect::<Vec<_>>(),
            std::fs::read_to_string(d.join("whole/summary.md"))
                .unwrap()
                .lines()
                .filter(|l| !l.contains(" · started "))
                .collect::<Vec<_>>(),
            "summary.md too"
        );
        let notes: serde_json::Value =
            serde_json::from_slice(&std::fs::read(d.join(&merged).join("parts.json")).unwrap()).unwrap();
        assert_eq!(notes.as_array().unwrap().len(), n);
        // Every call of the whole run's event log is in the merged one.
        let lines = |p: &str| {
            let mut l: Vec<String> =
                std::fs::read_to_string(d.join(p).join("events.ndjson")).unwrap().lines().map(String::from).collect();
            l.sort();
            l
        };
        assert!(lines("whole") == lines(&merged), "the event logs hold the same events");
    }

    // Parts that do not make one run.
    let (code, said) = relay_bench(d, &["merge", "part1of3", "part2of3"]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("part(s) 3 of 3 not given"), "{said}");
    let (code, said) = relay_bench(d, &["merge", "part1of3", "part1of3", "part2of3"]);
    assert!(code == 2 && said.contains("part 1 of 3 is given twice"), "{said}");
    let (code, said) = relay_bench(d, &["merge", "part1of3", "part2of2"]);
    assert!(code == 2 && said.contains("of another run than"), "{said}");
    let (code, said) = relay_bench(d, &["merge", "--junit", "/dev/null", "part1of2", "part2of2"]);
    assert!(code == 2 && said.contains("--junit /dev/null"), "a device is never written over: {said}");
    let (code, said) = relay_bench(d, &["merge", "whole"]);
    assert!(code == 2 && said.contains("not a part of a split run"), "{said}");
    let (code, said) = relay_bench(d, &["merge", "--out", "part1of2", "part1of2", "part2of2"]);
    assert!(code == 2 && said.contains("is one of the parts"), "{said}");
    assert!(d.join("part1of2/summary.json").is_file(), "a part is never cleared");
    // Another seed is another run.
    let (code, said) = relay_bench(d, &["run", "split.toml", "--shard", "3/3", "--seed", "6", "--out", "other3"]);
    assert_eq!(code, 0, "{said}");
    let (code, said) = relay_bench(d, &["merge", "part1of3", "part2of3", "other3"]);
    assert!(code == 2 && said.contains("of another run than"), "{said}");
}

/// A `--repeat` run splits as a plain one: each unit takes its repeats with it, and the
/// merged run's medians, spreads and searched boundaries are the one machine's.
#[test]
fn a_repeated_run_split_two_ways_merges_into_the_one_machine_run() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    std::fs::write(d.join("split.toml"), SCENARIO).unwrap();
    let repeated = ["--repeat", "3", "--duration", "1m", "--no-event-log", "--quiet"];
    let run = |extra: &[&str], out: &str| {
        let mut args = vec!["run", "split.toml", "--out", out];
        args.extend(repeated);
        args.extend(extra);
        let (code, said) = relay_bench(d, &args);
        assert_eq!(code, 0, "{out}: {said}");
    };
    run(&[], "whole");
    let whole = comparable(&d.join("whole"));
    let first = &whole["results"][0];
    assert_eq!(first["repeat"]["seeds"].as_array().map(Vec::len), Some(3), "{first}");
    run(&["--shard", "1/2"], "part1");
    run(&["--shard", "2/2", "--jobs", "1"], "part2");
    let (code, said) = relay_bench(d, &["merge", "--quiet", "--out", "merged", "part2", "part1"]);
    assert_eq!(code, 0, "{said}");
    let got = comparable(&d.join("merged"));
    assert!(got == whole, "the repeated parts merged differ from the whole run:\n{got}\n---\n{whole}");
}

#[test]
fn a_bad_part_is_refused_before_anything_runs() {
    let t = tempfile::tempdir().unwrap();
    for bad in ["0/3", "4/3", "3", "1/0"] {
        let (code, said) = relay_bench(t.path(), &["run", "--shard", bad, "--out", "x"]);
        assert_eq!(code, 2, "{bad}: {said}");
        assert!(said.contains("give K/N with 1 <= K <= N"), "{said}");
    }
    let (code, said) = relay_bench(t.path(), &["run", "--shard", "1/2", "--baseline", "main"]);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("cannot be used with"), "a part is not compared with a whole run's baseline: {said}");
    assert!(!t.path().join("x").exists(), "nothing was written");
}
