//! The environment fingerprint written with every run: what a reader needs to know to trust
//! or compare the numbers (kernel, cpus, the relay dir's filesystem, inotify limits, build).

use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Inotify {
    pub max_user_watches: Option<u64>,
    pub max_user_instances: Option<u64>,
    pub max_queued_events: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub os: String,
    pub arch: String,
    pub kernel: String,
    pub cpus: usize,
    /// Where the relay dirs were made.
    pub relay_root: String,
    /// The filesystem type holding `relay_root` (from /proc/self/mountinfo).
    pub relay_fs: String,
    pub inotify: Inotify,
    /// `release` or `debug`: a debug build measures itself, not the relay.
    pub build: String,
}

/// A /proc or /sys file's text, trimmed.
pub(crate) fn read_trim(p: &str) -> Option<String> {
    std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned())
}

fn read_u64(p: &str) -> Option<u64> {
    read_trim(p)?.parse().ok()
}

/// The filesystem type of the mount holding `path` (longest matching mount point).
pub(crate) fn filesystem_of(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return "unknown".into();
    };
    let mut best: Option<(usize, String)> = None;
    for line in info.lines() {
        // id parent major:minor root mountpoint options ... - fstype source superoptions
        let fields: Vec<&str> = line.split(' ').collect();
        let (Some(mp), Some(dash)) = (fields.get(4), fields.iter().position(|f| *f == "-")) else {
            continue;
        };
        let mp = mp.replace("\\040", " ");
        if path.starts_with(&mp) && best.as_ref().is_none_or(|(len, _)| mp.len() >= *len) {
            if let Some(fs) = fields.get(dash + 1) {
                best = Some((mp.len(), (*fs).to_owned()));
            }
        }
    }
    best.map_or_else(|| "unknown".into(), |(_, fs)| fs)
}

impl Environment {
    pub fn probe(relay_root: &Path) -> Environment {
        Environment {
            os: std::env::consts::OS.into(),
            arch: std::env::consts::ARCH.into(),
            kernel: read_trim("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            relay_root: relay_root.display().to_string(),
            relay_fs: filesystem_of(relay_root),
            inotify: Inotify {
                max_user_watches: read_u64("/proc/sys/fs/inotify/max_user_watches"),
                max_user_instances: read_u64("/proc/sys/fs/inotify/max_user_instances"),
                max_queued_events: read_u64("/proc/sys/fs/inotify/max_queued_events"),
            },
            build: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_this_machine() {
        let e = Environment::probe(&std::env::temp_dir());
        assert!(e.cpus >= 1);
        assert!(!e.relay_fs.is_empty());
        if cfg!(target_os = "linux") {
            assert_ne!(e.kernel, "unknown");
            assert_ne!(e.relay_fs, "unknown");
            assert!(e.inotify.max_user_watches.is_some());
        }
    }
}
