//! `relay-bench conform`: a battery of named cases that grades a relay runner or writer
//! against the file contract (SPEC §2, §7, §8), relay-bench playing the other side.
//!
//! Each case gets a fresh relay dir and a fresh scratch dir beside it, starts the
//! implementation's command (argv placeholders substituted, never a shell; the same values
//! in the environment), watches the dir with its own inotify watch ([`observe`]) and grades
//! what it saw. The implementation's process group is killed when the case ends, and at the
//! case's bound at the latest. The cases are two tables, [`runner::CASES`] and
//! [`writer::CASES`]; a case is a name, the SPEC section, a one-line expectation and the
//! function that plays it.
//!
//! A runner needs a tool to run: the battery gives it one, the **conform handler**, a
//! command (`{handler}`, `$RELAY_CONFORM_HANDLER`) the runner runs once per call with the
//! request's JSON on stdin, publishing what it prints on stdout as the answer. The handler
//! logs each run to a file only the battery reads, so "executed once" is counted, not
//! guessed; the answer it prints is the one the battery put in the request's args.

pub mod observe;
pub mod runner;
pub mod writer;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::base::fsio::{remove_if_present, temp_name, OwnGroup};
use crate::base::signal::Signal;
use crate::results::conform::{CaseResult, ConformReport, Side, Verdict, SCHEMA_VERSION};

/// The hidden subcommand that is the conform handler.
pub(crate) const HANDLER_SUBCOMMAND: &str = "conform-handler";

/// What `conform` was asked.
#[derive(Debug, Clone)]
pub struct ConformOptions {
    pub side: Side,
    /// argv of the implementation, placeholders unsubstituted.
    pub command: Vec<String>,
    /// Only these cases (all when empty).
    pub cases: Vec<String>,
    /// Each case's bound.
    pub bound: Duration,
    /// Where the relay and scratch dirs of the cases are made (the system temp dir).
    pub work_root: Option<PathBuf>,
    /// This binary (the conform handler).
    pub handler_program: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ConformError {
    #[error("--case {0:?}: no such case (`relay-bench conform --list` names them)")]
    UnknownCase(String),
    #[error("no command given: put the implementation's command after `--`")]
    NoCommand,
    #[error("cannot make the cases' dirs: {0}")]
    Io(#[from] std::io::Error),
}

/// One case of either table.
pub struct Case<C> {
    pub name: &'static str,
    pub section: &'static str,
    pub expectation: &'static str,
    pub play: fn(&C) -> Graded,
}

/// What a case's play concludes.
pub struct Graded {
    pub verdict: Verdict,
    pub reason: String,
    pub evidence: Vec<String>,
}

impl Graded {
    pub fn new(verdict: Verdict, reason: impl Into<String>, evidence: Vec<String>) -> Graded {
        Graded { verdict, reason: reason.into(), evidence }
    }
}

/// The names of every case of a side, in order.
pub(crate) fn case_names(side: Side) -> Vec<(&'static str, &'static str, &'static str)> {
    match side {
        Side::Runner => runner::CASES.iter().map(|c| (c.name, c.section, c.expectation)).collect(),
        Side::Writer => writer::CASES.iter().map(|c| (c.name, c.section, c.expectation)).collect(),
    }
}

/// Runs the battery; `done` hears each case as it ends. Stops between cases once `stop`
/// closes (the report says so).
pub fn run(
    opts: &ConformOptions,
    stop: &Signal,
    started: String,
    mut done: impl FnMut(&CaseResult),
) -> Result<ConformReport, ConformError> {
    if opts.command.is_empty() || opts.command[0].is_empty() {
        return Err(ConformError::NoCommand);
    }
    let names = case_names(opts.side);
    for c in &opts.cases {
        if !names.iter().any(|(n, _, _)| n == c) {
            return Err(ConformError::UnknownCase(c.clone()));
        }
    }
    let chosen = |n: &str| opts.cases.is_empty() || opts.cases.iter().any(|c| c == n);
    let root = match &opts.work_root {
        Some(r) => tempfile::Builder::new().prefix("relay-conform.").tempdir_in(r)?,
        None => tempfile::Builder::new().prefix("relay-conform.").tempdir()?,
    };
    let mut report = ConformReport {
        schema_version: SCHEMA_VERSION,
        started,
        side: opts.side,
        command: opts.command.clone(),
        case_bound_ms: opts.bound.as_millis() as u64,
        counts: Default::default(),
        cases: Vec::new(),
        interrupted: false,
    };
    for (i, (name, section, expectation)) in names.into_iter().enumerate() {
        if !chosen(name) {
            continue;
        }
        if stop.is_closed() {
            report.interrupted = true;
            break;
        }
        let t0 = Instant::now();
        let base = root.path().join(format!("{i:02}-{name}"));
        let graded = match opts.side {
            Side::Runner => runner::play(opts, &base, i),
            Side::Writer => writer::play(opts, &base, i),
        };
        let graded =
            graded.unwrap_or_else(|e| Graded::new(Verdict::Failed, format!("the case could not run: {e}"), vec![]));
        let result = CaseResult {
            name: name.into(),
            section: section.into(),
            expectation: expectation.into(),
            verdict: graded.verdict,
            reason: graded.reason,
            evidence: graded.evidence,
            duration_ms: t0.elapsed().as_millis() as u64,
        };
        done(&result);
        report.cases.push(result);
    }
    report.recount();
    Ok(report)
}

/// A placeholder's value, as `{name}` in argv and `var` in the environment.
pub(crate) struct Place<'a> {
    pub name: &'static str,
    pub var: &'static str,
    pub value: &'a str,
}

/// The implementation's process: its own process group, stdout and stderr kept in files,
/// killed (the whole group) when dropped.
pub(crate) struct Proc {
    child: Child,
    _group: OwnGroup,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    pub started: Instant,
}

impl Proc {
    /// Starts `command` with `places` substituted in every argument and set in the
    /// environment; its output goes to `<out>.stdout` / `<out>.stderr`.
    pub fn start(command: &[String], places: &[Place<'_>], out: &Path) -> std::io::Result<Proc> {
        use std::os::unix::process::CommandExt;
        let argv: Vec<String> = command
            .iter()
            .map(|a| places.iter().fold(a.clone(), |a, p| a.replace(&format!("{{{}}}", p.name), p.value)))
            .collect();
        let stdout = out.with_extension("stdout");
        let stderr = out.with_extension("stderr");
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout)?)
            .stderr(std::fs::File::create(&stderr)?)
            .process_group(0);
        for p in places {
            cmd.env(p.var, p.value);
        }
        let child =
            cmd.spawn().map_err(|e| std::io::Error::new(e.kind(), format!("cannot start {:?}: {e}", argv[0])))?;
        let group = OwnGroup::register(child.id() as i32);
        Ok(Proc { child, _group: group, stdout, stderr, started: Instant::now() })
    }

    /// Its exit code, if it has exited (`Some(None)`: killed by a signal).
    pub fn exited(&mut self) -> Option<Option<i32>> {
        self.child.try_wait().ok().flatten().map(|s| s.code())
    }

    /// Waits for it to exit, at most `bound`; its exit code and when, or `None` (still running).
    pub fn wait(&mut self, bound: Duration) -> Option<(Option<i32>, Instant)> {
        let end = Instant::now() + bound;
        loop {
            if let Some(code) = self.exited() {
                return Some((code, Instant::now()));
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub(crate) fn stdout_text(&self) -> String {
        std::fs::read(&self.stdout).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default()
    }

    /// The last line of its stderr, as evidence.
    pub(crate) fn stderr_tail(&self) -> Option<String> {
        let b = std::fs::read(&self.stderr).ok()?;
        let s = String::from_utf8_lossy(&b);
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| format!("its stderr ends: {}", l.chars().take(200).collect::<String>()))
    }

    pub fn kill(&mut self) {
        // SAFETY: killpg only sends a signal, to the group this process leads.
        unsafe { libc::killpg(self.child.id() as i32, libc::SIGKILL) };
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Publishes `bytes` as `dir/name` the way the contract says: a `.tmp.` name in the same dir,
/// then a rename. Returns the moment just before the rename: whatever follows from it (the
/// other side's events) comes after that, however this thread is scheduled.
pub fn publish(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<Instant> {
    let tmp = dir.join(temp_name(name));
    std::fs::write(&tmp, bytes)?;
    let at = Instant::now();
    std::fs::rename(&tmp, dir.join(name))?;
    Ok(at)
}

/// The relay files (and anything else) left in `dir`, sorted, for evidence.
pub(crate) fn left_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

pub(crate) fn left_line(dir: &Path) -> String {
    let left = left_in(dir);
    if left.is_empty() {
        "left in the dir: nothing".into()
    } else {
        format!("left in the dir: {}", left.join(", "))
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Removes a file, ignoring errors (a case's own cleanup).
pub fn rm(path: &Path) {
    let _ = remove_if_present(path);
}

/// One run of the conform handler, as it logged it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Exec {
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
pub fn execs(log: &Path) -> Vec<Exec> {
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

    #[test]
    fn every_case_name_is_unique_and_every_expectation_names_a_section() {
        for side in [Side::Runner, Side::Writer] {
            let names = case_names(side);
            let mut seen = std::collections::HashSet::new();
            for (name, section, expectation) in names {
                assert!(seen.insert(name), "{name} twice");
                assert!(section.starts_with('§') && !expectation.is_empty(), "{name}");
            }
        }
    }
}
