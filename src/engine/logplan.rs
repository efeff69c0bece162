//! Which event log a run writes, and whether it fits, decided before anything runs: the
//! form (`--event-log`: `ndjson` lines, the `compact` binary of [`crate::record::compact`],
//! or `auto`, ndjson while it stays small and compact past that), and the size the
//! scenario's planned calls would write in it, refused past `--max-event-log` instead of
//! filling the disk.

use crate::scenario::Scenario;

crate::base::named! {
/// The forms of the event log `--event-log` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventLogFormat {
    /// ndjson while the estimate stays under [`AUTO_NDJSON_MAX`], compact past it.
    #[default]
    Auto,
    /// `events.ndjson`: one JSON line per event.
    Ndjson,
    /// `events.bin`: the compact binary log.
    Compact,
}
names ["auto", "ndjson", "compact"]
}

/// What an ndjson log takes per call (ten lines of about 95 bytes).
pub(crate) const NDJSON_PER_CALL: u64 = 1_000;
/// What a compact log takes per call (four records, measured on a virtual fleet; see
/// docs/reports.md).
pub(crate) const COMPACT_PER_CALL: u64 = 48;
/// The largest ndjson log `auto` writes (by the estimate); past it, compact.
pub(crate) const AUTO_NDJSON_MAX: u64 = 100_000_000;
/// `--max-event-log`'s default.
pub const DEFAULT_MAX: u64 = 1_000_000_000;

/// The log a run writes: its file name in the run directory, and whether it is compact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventLogPlan {
    pub compact: bool,
    /// The estimate (bytes), for the run's note.
    pub estimate: u64,
}

impl EventLogPlan {
    pub(crate) fn file_name(&self) -> &'static str {
        if self.compact {
            "events.bin"
        } else {
            "events.ndjson"
        }
    }
}

/// A log that would be larger than the run allows.
#[derive(Debug, thiserror::Error)]
#[error(
    "{scenario}: its event log would be about {} for {calls} planned calls ({form}, about {per_call} bytes a \
     call), more than --max-event-log {}: give --no-event-log, or a larger --max-event-log",
    mb(*estimate), mb(*max)
)]
pub struct TooLarge {
    pub scenario: String,
    pub calls: u64,
    pub form: &'static str,
    pub per_call: u64,
    pub estimate: u64,
    pub max: u64,
}

fn mb(bytes: u64) -> String {
    format!("{:.0} MB", bytes as f64 / 1e6)
}

/// The log scenario `s` writes in `format`, refused when its estimate passes `max` bytes.
pub(crate) fn plan(s: &Scenario, format: EventLogFormat, max: u64) -> Result<EventLogPlan, TooLarge> {
    // Only a case's first repeat writes the log.
    let probes: u64 = s.expected_probes().iter().map(|(calls, _)| calls).sum();
    let calls: u64 = s.cases.iter().map(|c| c.workload.planned_calls()).sum::<u64>() + probes;
    let ndjson = calls.saturating_mul(NDJSON_PER_CALL);
    let compact = match format {
        EventLogFormat::Auto => ndjson > AUTO_NDJSON_MAX,
        EventLogFormat::Ndjson => false,
        EventLogFormat::Compact => true,
    };
    let per_call = if compact { COMPACT_PER_CALL } else { NDJSON_PER_CALL };
    let estimate = calls.saturating_mul(per_call);
    if estimate > max {
        let form = if compact { "compact" } else { "ndjson" };
        return Err(TooLarge { scenario: s.name.clone(), calls, form, per_call, estimate, max });
    }
    Ok(EventLogPlan { compact, estimate })
}

/// A size [`parse_size`] would not read; each names the text and what it takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SizeError {
    #[error("{0:?} is not a size (expected e.g. 500MB, 2GB)")]
    NotANumber(String),
    #[error("{text:?} has unknown unit {unit:?} (use B, KB, MB, GB or TB)")]
    UnknownUnit { text: String, unit: String },
}

/// A size as `--max-event-log` takes it: bytes, or a number with `KB`, `MB`, `GB` (powers of
/// 1000).
pub(crate) fn parse_size(s: &str) -> Result<u64, SizeError> {
    let (value, unit) = crate::base::units::number_and_unit(s).ok_or_else(|| SizeError::NotANumber(s.to_owned()))?;
    let scale = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1.0,
        "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        u => return Err(SizeError::UnknownUnit { text: s.to_owned(), unit: u.to_owned() }),
    };
    Ok((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLEET_DAY: &str = "name = \"day\"\n[workload]\nsandboxes = 1000\nduration = \"24h\"\n[workload.agent]\n\
        [[case]]\nname = \"w\"\nhost = \"remote\"\nprofile = \"proxy\"\nclock = \"virtual\"\nrunner = \"window-exec\"\nwriter = \"watch\"\n";

    #[test]
    fn a_fleet_day_is_compact_by_default_and_refused_past_the_cap() {
        let s = Scenario::parse("day.toml", FLEET_DAY).unwrap();
        let p = plan(&s, EventLogFormat::Auto, DEFAULT_MAX).unwrap();
        assert!(p.compact && p.estimate <= 100_000_000, "{p:?}");
        let e = plan(&s, EventLogFormat::Ndjson, DEFAULT_MAX).unwrap_err().to_string();
        assert!(e.contains("day: its event log would be about") && e.contains("--no-event-log"), "{e}");
        let small = Scenario::parse("s.toml", &FLEET_DAY.replace("1000", "2").replace("24h", "10m")).unwrap();
        assert!(!plan(&small, EventLogFormat::Auto, DEFAULT_MAX).unwrap().compact, "a small run stays ndjson");
        assert!(plan(&small, EventLogFormat::Auto, 10).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("2 gb"), Ok(2_000_000_000));
        assert_eq!(parse_size("1234"), Ok(1234));
        assert!(parse_size("lots").is_err() && parse_size("3PB").unwrap_err().to_string().contains("unit"));
    }
}
