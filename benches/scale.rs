//! How far the virtual clock carries a fleet on this machine: each point runs relay-bench
//! as a child process on a generated virtual scenario (production's window-exec behind the
//! proxy profile, no event log) and measures its wall time, its peak RSS and the calls it
//! simulated per second of wall time. A table on stdout and `target/scale.json`.
//!
//! `cargo bench --bench scale` runs every point; `-- --quick` the small ones only (CI);
//! `-- NAME...` the points named.

use std::process::Command;
use std::time::Instant;

/// One point: a name, the sandboxes, the simulated hours, and the workload's keys.
struct Point {
    name: &'static str,
    sandboxes: u32,
    hours: u32,
    /// `[workload]` keys beside sandboxes and duration (`[workload.agent]` included).
    workload: &'static str,
    quick: bool,
}

/// Today's keys: one relay per sandbox for the whole case, 1 turn a second fleet-wide.
const HELD_ALL_DAY: &str = "turns_per_sec = 1\n";
/// Agent turns, the suite's default mix: a turn under way about a tenth of the time.
const AGENT_TURNS: &str = "[workload.agent]\n";
/// Agent turns with an hour between sessions (a fleet idle most of the day).
const IDLE_HEAVY: &str = "[workload.agent]\nsession_gap = { mean = \"1h\" }\n";

const POINTS: &[Point] = &[
    Point { name: "100x1h-held", sandboxes: 100, hours: 1, workload: HELD_ALL_DAY, quick: true },
    Point { name: "100x1h-turns", sandboxes: 100, hours: 1, workload: AGENT_TURNS, quick: true },
    Point { name: "1000x1h-held", sandboxes: 1000, hours: 1, workload: HELD_ALL_DAY, quick: false },
    Point { name: "1000x24h-held", sandboxes: 1000, hours: 24, workload: HELD_ALL_DAY, quick: false },
    Point { name: "1000x24h-turns", sandboxes: 1000, hours: 24, workload: AGENT_TURNS, quick: false },
    Point { name: "1000x24h-turns-idle-heavy", sandboxes: 1000, hours: 24, workload: IDLE_HEAVY, quick: false },
    Point { name: "10000x1h-turns", sandboxes: 10_000, hours: 1, workload: AGENT_TURNS, quick: false },
    Point { name: "10000x1h-held", sandboxes: 10_000, hours: 1, workload: "turns_per_sec = 10\n", quick: false },
];

fn scenario(p: &Point) -> String {
    format!(
        "name = \"scale-{}\"\n[workload]\nsandboxes = {}\nduration = \"{}h\"\nseed = 3\n{}\
         [[case]]\nname = \"window-exec\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\n\
         runner = \"window-exec\"\nwriter = \"watch\"\n",
        p.name, p.sandboxes, p.hours, p.workload
    )
}

/// Runs `relay-bench` on the point's scenario: (wall seconds, peak RSS in MB, calls).
fn measure(p: &Point, dir: &std::path::Path) -> (f64, f64, u64) {
    let file = dir.join(format!("{}.toml", p.name));
    std::fs::write(&file, scenario(p)).expect("write the scenario");
    let out = dir.join(p.name);
    let t0 = Instant::now();
    // Reaped by wait4 below, for its own rusage (Child::wait would not give it).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_relay-bench"))
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--no-event-log", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start relay-bench");
    // wait4 for the child's own peak RSS (getrusage's is the largest of all children).
    let mut status = 0;
    // SAFETY: rusage is plain data, filled in by the kernel for the child we started.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child by pid; status and usage are valid for writes.
    let waited = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let wall = t0.elapsed().as_secs_f64();
    assert!(waited > 0 && libc::WIFEXITED(status), "{}: relay-bench did not exit cleanly", p.name);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).expect("summary.json")).expect("json");
    let calls = summary["results"][0]["calls"]["completed"].as_u64().unwrap_or(0);
    (wall, usage.ru_maxrss as f64 / 1024.0, calls)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--bench")).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let named: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let chosen: Vec<&Point> = POINTS
        .iter()
        .filter(|p| if named.is_empty() { !quick || p.quick } else { named.iter().any(|n| *n == p.name) })
        .collect();
    let dir = tempfile::tempdir().expect("a temp dir");
    println!("| point | sandboxes | simulated | wall | peak RSS | calls | calls simulated / s |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for p in chosen {
        let (wall, rss, calls) = measure(p, dir.path());
        println!(
            "| {} | {} | {} h | {wall:.1} s | {rss:.0} MB | {calls} | {:.0} |",
            p.name,
            p.sandboxes,
            p.hours,
            calls as f64 / wall
        );
        rows.push(serde_json::json!({
            "point": p.name, "sandboxes": p.sandboxes, "hours": p.hours,
            "wall_secs": wall, "peak_rss_mb": rss, "calls": calls,
        }));
    }
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let _ = std::fs::create_dir_all(&target);
    let _ = std::fs::write(target.join("scale.json"), serde_json::to_vec_pretty(&rows).expect("json"));
}
