//! Filesystem primitives of the relay on a real directory: unique temp names (publication
//! writes one, then renames it: [`crate::sandbox::dir::publish_now`]) and removal that tolerates a
//! file already gone; and the process groups relay-bench leads ([`OwnGroup`]).
//!
//! These are plain blocking calls on purpose: each is one or two syscalls on a local
//! directory (microseconds), and moving them to a blocking pool would add a thread hop to
//! every measured latency.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::base::protocol::TMP_MARKER;

static NONCE: AtomicU64 = AtomicU64::new(0);

/// A temp name unique within this process: `<final>.tmp.<pid>-<counter>`.
pub fn temp_name(final_name: &str) -> String {
    let n = NONCE.fetch_add(1, Ordering::Relaxed);
    format!("{final_name}{TMP_MARKER}{}-{n}", std::process::id())
}

/// The first `program` file in a directory of `PATH`, as a shell would find it.
pub fn on_path(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Removes a file, treating "already gone" as success.
pub fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Process groups of programs relay-bench started in a group of their own (black-box
/// runners), while they run. An abort (a second Ctrl-C) exits without the stops that would
/// kill them: it kills these first ([`kill_own_groups`]).
static OWN_GROUPS: std::sync::Mutex<Vec<i32>> = std::sync::Mutex::new(Vec::new());

/// A process group relay-bench leads, listed while this lives.
pub struct OwnGroup(i32);

impl OwnGroup {
    pub fn register(pgid: i32) -> OwnGroup {
        OWN_GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(pgid);
        OwnGroup(pgid)
    }
}

impl Drop for OwnGroup {
    fn drop(&mut self) {
        let mut groups = OWN_GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(i) = groups.iter().position(|g| *g == self.0) {
            groups.swap_remove(i);
        }
    }
}

/// SIGKILLs every process group listed (an abort's last act).
pub fn kill_own_groups() {
    for pgid in OWN_GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).iter() {
        // SAFETY: killpg only sends a signal, to a group relay-bench created and leads.
        unsafe { libc::killpg(*pgid, libc::SIGKILL) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::protocol::{classify, FileKind};

    #[test]
    fn temp_names_are_unique_and_ignored() {
        let a = temp_name("x.req.json");
        let b = temp_name("x.req.json");
        assert_ne!(a, b);
        assert_eq!(classify(&a), FileKind::Temp);
    }
}
