//! Filesystem primitives of the relay on a real directory: unique temp names (publication
//! writes one, then renames it: [`crate::dir::publish_now`]) and removal that tolerates a
//! file already gone.
//!
//! These are plain blocking calls on purpose: each is one or two syscalls on a local
//! directory (microseconds), and moving them to a blocking pool would add a thread hop to
//! every measured latency.

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::protocol::TMP_MARKER;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{classify, FileKind};

    #[test]
    fn temp_names_are_unique_and_ignored() {
        let a = temp_name("x.req.json");
        let b = temp_name("x.req.json");
        assert_ne!(a, b);
        assert_eq!(classify(&a), FileKind::Temp);
    }
}
