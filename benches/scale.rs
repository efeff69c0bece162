//! How far the virtual clock carries a fleet on this machine: each point runs relay-bench
//! as a child process on a generated virtual scenario (production's window-exec behind the
//! proxy profile; no event log, but for the points that keep the default one and report its
//! size) and measures its wall time, its CPU time, its peak RSS and the calls it simulated
//! per second of wall time. A table on stdout and `target/scale.json`.
//!
//! `cargo bench --bench scale` runs every point but the week (seven times the day's 882 s of
//! CPU, by the day's run: run it by name); `-- --quick` the small ones only (CI); `-- NAME...` the points named.

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
    /// Run with the default event log (and report its size), not `--no-event-log`.
    log: bool,
    /// Simulated minutes instead of `hours`.
    minutes: Option<u32>,
    /// Run only when named (it takes more than an hour).
    by_name: bool,
}

/// Today's keys: one relay per sandbox for the whole case, 1 turn a second fleet-wide.
const HELD_ALL_DAY: &str = "turns_per_sec = 1\n";
/// Agent turns, the suite's default mix: a turn under way about a tenth of the time.
const AGENT_TURNS: &str = "[workload.agent]\n";
/// Agent turns with an hour between sessions (a fleet idle most of the day).
const IDLE_HEAVY: &str = "[workload.agent]\nsession_gap = { mean = \"1h\" }\n";

const fn point(name: &'static str, sandboxes: u32, hours: u32, workload: &'static str) -> Point {
    Point { name, sandboxes, hours, workload, quick: false, log: false, minutes: None, by_name: false }
}

const POINTS: &[Point] = &[
    Point { quick: true, ..point("100x1h-held", 100, 1, HELD_ALL_DAY) },
    Point { quick: true, ..point("100x1h-turns", 100, 1, AGENT_TURNS) },
    point("1000x1h-held", 1000, 1, HELD_ALL_DAY),
    point("1000x24h-held", 1000, 24, HELD_ALL_DAY),
    point("1000x24h-turns", 1000, 24, AGENT_TURNS),
    // The same day with the default options: the event log it writes.
    Point { log: true, ..point("1000x24h-turns-logged", 1000, 24, AGENT_TURNS) },
    point("1000x24h-turns-idle-heavy", 1000, 24, IDLE_HEAVY),
    point("10000x1h-turns", 10_000, 1, AGENT_TURNS),
    point("10000x1h-held", 10_000, 1, "turns_per_sec = 10\n"),
    point("10000x24h-turns", 10_000, 24, AGENT_TURNS),
    // The same fleet for a week: whether its peak memory stays the day's (memory follows the
    // sandboxes, not simulated time). Long: about seven times the day.
    Point { by_name: true, ..point("10000x7d-turns", 10_000, 168, AGENT_TURNS) },
    point("100000x1h-turns", 100_000, 1, AGENT_TURNS),
    // The same fleet for a tenth of the hour: what 100,000 sandboxes cost to hold, quickly.
    Point { minutes: Some(6), ..point("100000x6m-turns", 100_000, 1, AGENT_TURNS) },
];

/// The point's simulated time, as the scenario says it.
fn simulated(p: &Point) -> String {
    p.minutes.map_or_else(|| format!("{}h", p.hours), |m| format!("{m}m"))
}

fn scenario(p: &Point) -> String {
    format!(
        "name = \"scale-{}\"\n[workload]\nsandboxes = {}\nduration = \"{}\"\nseed = 3\n{}\
         [[case]]\nname = \"window-exec\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\n\
         runner = \"window-exec\"\nwriter = \"watch\"\n",
        p.name,
        p.sandboxes,
        simulated(p),
        p.workload
    )
}

/// What one point cost.
struct Measured {
    wall: f64,
    /// User + system CPU seconds of the child.
    cpu: f64,
    rss_mb: f64,
    calls: u64,
    /// The event log's bytes, for a point that keeps it.
    log_bytes: Option<u64>,
}

/// Runs `relay-bench` on the point's scenario.
fn measure(p: &Point, dir: &std::path::Path) -> Measured {
    let file = dir.join(format!("{}.toml", p.name));
    std::fs::write(&file, scenario(p)).expect("write the scenario");
    let out = dir.join(p.name);
    let t0 = Instant::now();
    // Reaped by wait4 below, for its own rusage (Child::wait would not give it).
    #[allow(clippy::zombie_processes)]
    let child = Command::new(env!("CARGO_BIN_EXE_relay-bench"))
        .arg("run")
        .arg(&file)
        .args(["--quiet", "--no-calibration", "--out"])
        .arg(&out)
        .args(if p.log { &[][..] } else { &["--no-event-log"][..] })
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
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let log_bytes = ["events.bin", "events.ndjson"]
        .iter()
        .find_map(|f| std::fs::metadata(out.join(f)).ok())
        .map(|m| m.len())
        .filter(|_| p.log);
    let _ = std::fs::remove_dir_all(&out);
    Measured {
        wall,
        cpu: secs(usage.ru_utime) + secs(usage.ru_stime),
        rss_mb: usage.ru_maxrss as f64 / 1024.0,
        calls,
        log_bytes,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--bench")).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let named: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let chosen: Vec<&Point> = POINTS
        .iter()
        .filter(
            |p| if named.is_empty() { !p.by_name && (!quick || p.quick) } else { named.iter().any(|n| *n == p.name) },
        )
        .collect();
    let dir = tempfile::tempdir().expect("a temp dir");
    println!("| point | sandboxes | simulated | wall | CPU | peak RSS | calls | calls simulated / s of wall | / s of CPU | event log |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for p in chosen {
        let m = measure(p, dir.path());
        let log = m.log_bytes.map_or_else(|| "-".to_owned(), |b| format!("{:.1} MB", b as f64 / 1e6));
        println!(
            "| {} | {} | {} | {:.1} s | {:.1} s | {:.0} MB | {} | {:.0} | {:.0} | {log} |",
            p.name,
            p.sandboxes,
            simulated(p),
            m.wall,
            m.cpu,
            m.rss_mb,
            m.calls,
            m.calls as f64 / m.wall,
            m.calls as f64 / m.cpu.max(1e-9),
        );
        rows.push(serde_json::json!({
            "point": p.name, "sandboxes": p.sandboxes, "simulated": simulated(p),
            "wall_secs": m.wall, "cpu_secs": m.cpu, "peak_rss_mb": m.rss_mb, "calls": m.calls,
            "event_log_bytes": m.log_bytes,
        }));
    }
    let target = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target");
    let _ = std::fs::create_dir_all(&target);
    let _ = std::fs::write(target.join("scale.json"), serde_json::to_vec_pretty(&rows).expect("json"));
}
