//! The host: the runner's view of one relay directory, wherever it lives.
//!
//! Every operation the runner performs on a relay dir goes through [`Host`] and is counted
//! by kind (list, read, write, rename, delete, stat, exec) and purpose (discovery = looking
//! for work, data = moving a call's bytes), even on a local directory, so that every case
//! reports the same request budget (SPEC §5). New hosts (remote-emulated, in-memory) are a
//! new file here plus one line in [`crate::strategy`].

mod local;

pub use local::LocalHost;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::BoxFut;

/// Why a request was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Looking for work (a list, a watch exec).
    Discovery,
    /// Moving one call's bytes (read, delete, answer write and rename).
    Data,
}

/// What a request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    List,
    Read,
    Write,
    Rename,
    Delete,
    Stat,
    Exec,
}

impl Kind {
    pub const ALL: [Kind; 7] = [
        Kind::List,
        Kind::Read,
        Kind::Write,
        Kind::Rename,
        Kind::Delete,
        Kind::Stat,
        Kind::Exec,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::List => "list",
            Kind::Read => "read",
            Kind::Write => "write",
            Kind::Rename => "rename",
            Kind::Delete => "delete",
            Kind::Stat => "stat",
            Kind::Exec => "exec",
        }
    }
}

/// Lock-free request counters, one per (purpose, kind).
#[derive(Debug, Default)]
pub struct RequestCounter {
    counts: [[AtomicU64; 7]; 2],
}

impl RequestCounter {
    #[inline]
    pub fn count(&self, purpose: Purpose, kind: Kind) {
        self.counts[purpose as usize][kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> RequestCounts {
        let mut out = RequestCounts::default();
        for k in Kind::ALL {
            out.discovery[k as usize] =
                self.counts[Purpose::Discovery as usize][k as usize].load(Ordering::Relaxed);
            out.data[k as usize] =
                self.counts[Purpose::Data as usize][k as usize].load(Ordering::Relaxed);
        }
        out
    }
}

/// A copy of the counters at one moment; counters of several hosts add up.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RequestCounts {
    pub discovery: [u64; 7],
    pub data: [u64; 7],
}

impl RequestCounts {
    pub fn add(&mut self, other: &RequestCounts) {
        for i in 0..7 {
            self.discovery[i] += other.discovery[i];
            self.data[i] += other.data[i];
        }
    }

    pub fn minus(&self, earlier: &RequestCounts) -> RequestCounts {
        let mut out = *self;
        for i in 0..7 {
            out.discovery[i] -= earlier.discovery[i];
            out.data[i] -= earlier.data[i];
        }
        out
    }

    pub fn discovery_total(&self) -> u64 {
        self.discovery.iter().sum()
    }

    pub fn data_total(&self) -> u64 {
        self.data.iter().sum()
    }

    /// Per kind, both purposes: `{"list": 12, ...}` in a fixed order.
    pub fn by_kind(&self) -> ByKind {
        let mut m = ByKind::default();
        for k in Kind::ALL {
            m.0.push((k.name(), self.discovery[k as usize] + self.data[k as usize]));
        }
        m
    }
}

/// Counts per request kind, serialized as a JSON object in a fixed order.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ByKind(pub Vec<(&'static str, u64)>);

impl Serialize for ByKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The runner's access to one relay directory. Names are plain file names inside the dir;
/// a host never accepts a path.
pub trait Host: Send + Sync {
    /// Names of every entry in the relay dir (the caller filters).
    fn list(&self, purpose: Purpose) -> BoxFut<'_, io::Result<Vec<String>>>;
    /// The bytes of one file.
    fn read<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<Vec<u8>>>;
    /// Publishes `bytes` under `name` atomically (temp write + rename: two requests).
    fn publish<'a>(&'a self, name: &'a str, bytes: &'a [u8]) -> BoxFut<'a, io::Result<()>>;
    /// Deletes one file; a file already gone is not an error.
    fn delete<'a>(&'a self, name: &'a str) -> BoxFut<'a, io::Result<()>>;
    /// The requests made so far.
    fn counts(&self) -> RequestCounts;
    /// A short label for reports ("local", "remote:proxy").
    fn label(&self) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_split_by_purpose_and_kind() {
        let c = RequestCounter::default();
        c.count(Purpose::Discovery, Kind::List);
        c.count(Purpose::Discovery, Kind::List);
        c.count(Purpose::Data, Kind::Read);
        let s = c.snapshot();
        assert_eq!(s.discovery_total(), 2);
        assert_eq!(s.data_total(), 1);
        let by = s.by_kind();
        assert_eq!(by.0[0], ("list", 2));
        assert_eq!(by.0[1], ("read", 1));
        assert_eq!(
            serde_json::to_string(&by).unwrap(),
            r#"{"list":2,"read":1,"write":0,"rename":0,"delete":0,"stat":0,"exec":0}"#
        );
    }
}
