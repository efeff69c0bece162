//! Finds what the optional tests need on this machine, so a test that cannot run here is
//! reported by cargo itself as ignored, with how to make it run:
//!
//! - `cfg(has_sandbox_agent)`: the sandbox-agent daemon (`$SANDBOX_AGENT_BIN`, else the
//!   project-local install of `scripts/install-sandbox-agent.sh`, else `PATH`), as
//!   `relay_bench::find_sandbox_agent` finds it at run time;
//! - `cfg(has_chromium)`: headless Chromium (`chromium` on `PATH`).
//!
//! `RELAY_BENCH_REQUIRE_DAEMON=1` / `RELAY_BENCH_REQUIRE_BROWSER=1` (as `.ci/run` sets) turn
//! a missing one into a build error, so CI cannot pass by ignoring them.
//!
//! The script reruns only when what it looked at changes: the variables above and `PATH`,
//! the file it found, or — when it found nothing — the directories it looked in (a new
//! entry there changes their time). Nothing it watches is a path that may not exist (cargo
//! would rerun it, and rebuild the crate, on every build).

use std::path::{Path, PathBuf};

/// Where `scripts/install-sandbox-agent.sh` installs the daemon (as `LOCAL_INSTALL` in
/// src/sandbox/host/agent/mod.rs).
const LOCAL_INSTALL: &str = "tools/sandbox-agent/node_modules/@sandbox-agent/cli-linux-x64/bin/sandbox-agent";

fn path_dirs() -> Vec<PathBuf> {
    std::env::var_os("PATH").map(|p| std::env::split_paths(&p).filter(|d| d.is_dir()).collect()).unwrap_or_default()
}

fn on_path(name: &str) -> Option<PathBuf> {
    path_dirs().into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

fn watch(p: &Path) {
    println!("cargo::rerun-if-changed={}", p.display());
}

/// Watches what a search found, or else the directories it searched.
fn found(what: Option<PathBuf>, searched: &[PathBuf]) -> bool {
    match what {
        Some(p) => {
            watch(&p);
            true
        }
        None => {
            for d in searched.iter().filter(|d| d.is_dir()) {
                watch(d);
            }
            false
        }
    }
}

fn required(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| !v.is_empty() && v != "0")
}

fn main() {
    println!("cargo::rustc-check-cfg=cfg(has_sandbox_agent)");
    println!("cargo::rustc-check-cfg=cfg(has_chromium)");
    for var in ["PATH", "SANDBOX_AGENT_BIN", "RELAY_BENCH_REQUIRE_DAEMON", "RELAY_BENCH_REQUIRE_BROWSER"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));

    let daemon = match std::env::var_os("SANDBOX_AGENT_BIN").map(PathBuf::from) {
        // An explicit choice is not overridden (as at run time); a missing file is no daemon.
        Some(p) => found(Some(p).filter(|p| p.is_file()), &[]),
        None => {
            let local = root.join(LOCAL_INSTALL);
            let what = Some(local).filter(|p| p.is_file()).or_else(|| on_path("sandbox-agent"));
            let mut searched = path_dirs();
            searched.push(root.join("tools"));
            found(what, &searched)
        }
    };
    if daemon {
        println!("cargo::rustc-cfg=has_sandbox_agent");
    } else if required("RELAY_BENCH_REQUIRE_DAEMON") {
        panic!(
            "RELAY_BENCH_REQUIRE_DAEMON is set and no sandbox-agent daemon was found ($SANDBOX_AGENT_BIN, \
             {LOCAL_INSTALL}, PATH): run scripts/install-sandbox-agent.sh"
        );
    }

    if found(on_path("chromium"), &path_dirs()) {
        println!("cargo::rustc-cfg=has_chromium");
    } else if required("RELAY_BENCH_REQUIRE_BROWSER") {
        panic!("RELAY_BENCH_REQUIRE_BROWSER is set and no chromium is on PATH (Debian: apt-get install -y chromium)");
    }
}
