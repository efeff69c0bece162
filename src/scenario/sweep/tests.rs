//! A sweep's points are cases read as hand-written ones: named after their values, refused
//! where a hand-written case would be, with the swept path named.

use std::time::Duration;

use crate::scenario::{Overrides, Scenario, ScenarioError};

use super::{Goal, SweepArg};

const SWEPT: &str = r#"
name = "s"
[workload]
sandboxes = 2
duration = "2m"
[[case]]
name = "window-exec"
host = "remote"
profile = "proxy"
clock = "virtual"
runner = "window-exec"
writer = "watch"
gates = ["pickup.p50 < 150ms"]
sweep = { "runner.window" = ["5s", "25s", "120s"] }
objective = "min idle_discovery_per_min"
"#;

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse("s.toml", text)
}

fn names(s: &Scenario) -> Vec<&str> {
    s.cases.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn a_sweep_expands_into_cases_named_after_their_values() {
    let s = parse(SWEPT).unwrap();
    assert_eq!(names(&s), ["window-exec@window=5s", "window-exec@window=25s", "window-exec@window=120s"]);
    // Each point is the hand-written case with its value: production's own value departs
    // from nothing, the others say their window.
    let departures: Vec<Vec<String>> =
        s.cases.iter().map(|c| c.departures().into_iter().map(|d| d.text).collect()).collect();
    assert_eq!(departures, [vec!["window = 5.00s".to_string()], vec![], vec!["window = 120.00s".to_string()]]);
    assert!(s.cases[0].runner.params().starts_with("window 5.00s"), "{}", s.cases[0].runner.params());
    let exprs: Vec<&str> = s.cases[2].gates.iter().map(|g| g.expr.as_str()).collect();
    assert!(exprs.contains(&"pickup.p50 < 150ms") && exprs.contains(&"lost == 0"), "every gate per point: {exprs:?}");
    let sw = &s.sweeps[0];
    assert_eq!((sw.case.as_str(), sw.axes[0].label.as_str(), sw.points.len()), ("window-exec", "window", 3));
    assert_eq!(sw.axes[0].values[1].number, Some(25.0));
    let o = sw.objective.as_ref().unwrap();
    assert_eq!((o.goal, o.text().as_str()), (Goal::Min, "min idle_discovery_per_min"));
    let figures: Vec<String> = sw.figures.iter().map(|m| m.name()).collect();
    assert_eq!(figures, ["pickup.p50", "idle_discovery_per_min"], "the gated figures, then the objective's");
    assert_eq!(s.sweep_of("window-exec@window=25s").map(|w| w.case.as_str()), Some("window-exec"));
}

#[test]
fn two_paths_make_the_cross_product_and_ranges_make_values() {
    let text = SWEPT.replace(
        r#"sweep = { "runner.window" = ["5s", "25s", "120s"] }"#,
        r#"sweep = { runner.window = { from = "10s", to = "40s", steps = 3 }, "limits.idle_timeout" = ["none", "60s"] }"#,
    );
    let s = parse(&text).unwrap();
    assert_eq!(
        names(&s),
        [
            "window-exec@window=10s,idle_timeout=none",
            "window-exec@window=10s,idle_timeout=60s",
            "window-exec@window=25s,idle_timeout=none",
            "window-exec@window=25s,idle_timeout=60s",
            "window-exec@window=40s,idle_timeout=none",
            "window-exec@window=40s,idle_timeout=60s",
        ],
        "the axes in the order given, the last varying fastest"
    );
    assert_eq!(s.cases[0].host.limits().idle_timeout, None, "\"none\": no idle timeout");
    assert_eq!(s.cases[1].host.limits().idle_timeout, Some(Duration::from_secs(60)));
    assert_eq!(s.sweeps[0].points[3].at, vec![1, 1]);
    // Limits given by name: the point's value goes into a copy of the named table.
    let named = text.replace("runner = \"window-exec\"", "runner = \"window-exec\"\nlimits = \"held\"")
        + "[limits.held]\norg_held_execs = 7\n";
    let s = parse(&named).unwrap();
    let l = s.cases[1].host.limits();
    assert_eq!((l.org.held_execs, l.idle_timeout), (Some(7), Some(Duration::from_secs(60))));
}

#[test]
fn a_path_that_does_not_apply_is_refused_naming_it() {
    let poll = SWEPT.replace("runner = \"window-exec\"", "runner = \"poll\"");
    let e = parse(&poll).unwrap_err();
    assert_eq!(e.key, "case[0].sweep.runner.window", "{e}");
    assert!(e.msg.starts_with("does not apply to this case"), "{e}");
    assert!(e.msg.contains("allowed here:") && e.msg.contains("interval"), "what is allowed: {e}");
    let local = SWEPT
        .replace("host = \"remote\"\nprofile = \"proxy\"\n", "")
        .replace(r#""runner.window" = ["5s", "25s", "120s"]"#, r#""limits.idle_timeout" = ["60s"]"#);
    let e = parse(&local).unwrap_err();
    assert_eq!(e.key, "case[0].sweep.limits.idle_timeout", "{e}");
    assert!(e.msg.contains("does not apply") && e.msg.contains("host = \"remote\""), "{e}");
    // A value the option refuses is named with the path.
    let e = parse(&SWEPT.replace("\"120s\"", "\"200s\"")).unwrap_err();
    assert_eq!(e.key, "case[0].sweep.runner.window", "{e}");
    assert!(e.msg.contains("the value 200s is refused") && e.msg.contains("between 5s and 120s"), "{e}");
    // A name cannot take sub-keys.
    let e = parse(&SWEPT.replace("\"runner.window\"", "\"profile.leg_min\"")).unwrap_err();
    assert_eq!(e.key, "case[0].sweep.profile.leg_min", "{e}");
    assert!(e.msg.contains("is a name here"), "{e}");
}

#[test]
fn a_sweep_is_checked_as_a_whole() {
    let with = |sweep: &str| SWEPT.replace(r#"{ "runner.window" = ["5s", "25s", "120s"] }"#, sweep);
    let e = parse(&with(r#"{ "a.b" = [1], "c.d" = [1], "e.f" = [1] }"#)).unwrap_err();
    assert!(e.msg.contains("3 option paths; allowed: 1 or 2"), "{e}");
    let e = parse(&with(r#"{ name = ["a"] }"#)).unwrap_err();
    assert_eq!(e.key, "case[0].sweep.name", "{e}");
    let e = parse(&SWEPT.replace("objective = \"min", "objective = \"least")).unwrap_err();
    assert_eq!(e.key, "case[0].objective", "{e}");
    let e = parse(&SWEPT.replace("min idle_discovery_per_min", "min speed")).unwrap_err();
    assert!(e.msg.contains("unknown metric"), "{e}");
    let plain = SWEPT.replace(r#"sweep = { "runner.window" = ["5s", "25s", "120s"] }"#, "");
    let e = parse(&plain).unwrap_err();
    assert_eq!(e.key, "case[0].objective", "{e}");
    assert!(e.msg.contains("only with `sweep`"), "{e}");
    // A scenario's baseline cannot be a swept case: its points are named.
    let e = parse(&SWEPT.replace("[workload]", "baseline = \"window-exec\"\n[workload]")).unwrap_err();
    assert!(e.msg.contains("is swept: name one of its points") && e.msg.contains("window-exec@window=5s"), "{e}");
}

#[test]
fn a_workload_key_gives_each_point_a_workload_of_its_own() {
    let text = SWEPT.replace(r#""runner.window" = ["5s", "25s", "120s"]"#, r#""workload.sandboxes" = [1, 3]"#);
    let s = parse(&text).unwrap();
    assert_eq!(names(&s), ["window-exec@sandboxes=1", "window-exec@sandboxes=3"]);
    let sizes: Vec<u32> = s.cases.iter().map(|c| c.workload.sandboxes).collect();
    assert_eq!((sizes, s.workload.sandboxes), (vec![1, 3], 2), "the scenario's own workload stays");
    let e = parse(&text.replace("[1, 3]", "[0]")).unwrap_err();
    assert_eq!(e.key, "case[0].sweep.workload.sandboxes", "{e}");
    assert!(e.msg.contains("the value 0 is refused"), "{e}");
    // A fault on a sandbox the smaller point lacks is refused there.
    let fault = text.replace("[1, 3]", "[3, 1]") + "[[case.fault]]\nkind = \"exec-fail\"\nat = \"1m\"\nsandbox = 2\n";
    let e = parse(&fault).unwrap_err();
    assert!(e.msg.contains("window-exec@sandboxes=1"), "the point is named: {e}");
}

#[test]
fn the_command_line_sweeps_the_cases_it_names() {
    let plain = SWEPT.replace(r#"sweep = { "runner.window" = ["5s", "25s", "120s"] }"#, "").replace("objective", "#");
    let over = |sweeps: &[&str], cases: &[&str]| Overrides {
        sweeps: sweeps.iter().map(|a| SweepArg::parse(a).unwrap()).collect(),
        cases: cases.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    let s = Scenario::parse_with("s.toml", &plain, &over(&["runner.window=5s,10s"], &[])).unwrap();
    assert_eq!(names(&s), ["window-exec@window=5s", "window-exec@window=10s"]);
    assert!(s.source.contains("sweep"), "the text sent to a sandbox is the scenario as run");
    let s = Scenario::parse_with(
        "s.toml",
        SWEPT,
        &over(&["runner.window=10s..30s:3", "limits.org_held_execs=5,9"], &["window-exec"]),
    )
    .unwrap();
    assert_eq!(s.cases.len(), 6, "the command line's sweep replaces the scenario's");
    assert_eq!(s.cases[5].name, "window-exec@window=30s,org_held_execs=9");
    assert_eq!(s.cases[5].host.limits().org.held_execs, Some(9));
    let e = Scenario::parse_with("s.toml", SWEPT, &over(&["runner.window=5s"], &["nope"])).unwrap_err();
    assert_eq!((e.file.as_str(), e.key.as_str()), ("--sweep", "nope"), "{e}");
}

#[test]
fn narrowing_to_a_swept_case_keeps_its_points() {
    let mut s = parse(SWEPT).unwrap();
    s.retain_cases(&["window-exec".into()]).unwrap();
    assert_eq!(s.cases.len(), 3);
    s.retain_cases(&["window-exec@window=25s".into()]).unwrap();
    assert_eq!((s.cases.len(), s.sweeps[0].points.len()), (1, 1));
    assert_eq!(s.retain_cases(&["nope".into()]), Err(crate::scenario::UnknownCase("nope".into())));
}
