//! The conform handler: the tool a graded runner is given (`{handler}`), a program it runs
//! once per call with the request's JSON on stdin. It logs each run to a file only the battery
//! reads, so "executed once" is counted, not guessed, and prints the answer the battery put in
//! the request's args.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The hidden subcommand that is the conform handler.
pub(crate) const HANDLER_SUBCOMMAND: &str = "conform-handler";

/// One run of the conform handler, as it logged it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Exec {
    /// When it started, in nanoseconds since the Unix epoch.
    pub t_ns: u128,
    /// `args.tag` of the request it ran.
    pub tag: Option<String>,
    /// `toolCallId` as the handler received it.
    pub id: Option<String>,
}

/// The conform handler: reads a request's JSON on stdin, logs the run to `LOG` (one line,
/// appended), sleeps `args.sleep_ms`, prints `args.reply` (a response's JSON) and exits 0.
pub(crate) fn handler_main(args: &[std::ffi::OsString]) -> i32 {
    let Some(log) = args.first() else {
        eprintln!("usage: relay-bench {HANDLER_SUBCOMMAND} LOG < request.json");
        return 2;
    };
    let mut input = Vec::new();
    if std::io::stdin().take(64 << 20).read_to_end(&mut input).is_err() {
        return 3;
    }
    let req: serde_json::Value = match serde_json::from_slice(&input) {
        Ok(v) => v,
        Err(e) => {
            println!("{}", serde_json::json!({"ok": false, "error": format!("conform handler: not a request: {e}")}));
            return 0;
        }
    };
    let a = &req["args"];
    let exec = Exec {
        t_ns: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
        tag: a["tag"].as_str().map(str::to_owned),
        id: req["toolCallId"].as_str().map(str::to_owned),
    };
    let line = serde_json::to_string(&exec).expect("an exec serializes") + "\n";
    let logged =
        std::fs::OpenOptions::new().create(true).append(true).open(log).and_then(|mut f| f.write_all(line.as_bytes()));
    if logged.is_err() {
        return 3;
    }
    if let Some(ms) = a["sleep_ms"].as_u64() {
        std::thread::sleep(Duration::from_millis(ms));
    }
    let reply = match &a["reply"] {
        serde_json::Value::Null => serde_json::json!({"ok": true, "text": "conform"}),
        r => r.clone(),
    };
    println!("{reply}");
    0
}

/// Reads the handler's log.
pub(crate) fn execs(log: &Path) -> Vec<Exec> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// The moment an exec's wall-clock time corresponds to, given a pair taken together.
pub(crate) fn instant_of(t_ns: u128, pair: (Instant, SystemTime)) -> Instant {
    let base = pair.1.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    if t_ns >= base {
        pair.0 + Duration::from_nanos((t_ns - base) as u64)
    } else {
        pair.0.checked_sub(Duration::from_nanos((base - t_ns) as u64)).unwrap_or(pair.0)
    }
}

/// Writes the handler script the runner is given: `exec BIN conform-handler LOG`.
pub(crate) fn handler_script(program: &Path, log: &Path, at: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let q = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let text = format!("#!/bin/sh\nexec {} {HANDLER_SUBCOMMAND} {}\n", q(program), q(log));
    std::fs::write(at, text)?;
    std::fs::set_permissions(at, std::fs::Permissions::from_mode(0o755))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wall_clock_time_maps_onto_the_monotonic_clock_both_ways() {
        let pair = (Instant::now(), SystemTime::now());
        let base = pair.1.duration_since(UNIX_EPOCH).unwrap().as_nanos();
        assert_eq!(instant_of(base + 5_000_000, pair) - pair.0, Duration::from_millis(5));
        assert_eq!(pair.0 - instant_of(base - 5_000_000, pair), Duration::from_millis(5));
    }
}
