//! Where a case departs from production's relay as built (SPEC §8), one option at a time, and
//! what that departure would take in production: a setting production already reads from its
//! environment, a constant of its code changed, a change of its code, or another design. A
//! recommendation prefers them in that order, and names production's knob for each.
//!
//! Production's knobs, from `services/runner/src/tools/` (Agenta-AI/agenta): the runner and
//! the writer read `AGENTA_AGENT_TOOLS_RELAY_POLLING` (300 ms), `..._POLLING_MAX` (1,500 ms),
//! `..._IDLE_GROW_AFTER` (5), `..._RESPONSE_WATCH_ENABLED` (on) and, for the window,
//! `..._REMOTE_WATCH_WINDOW_MS` (25,000, clamped to 5,000-120,000); the safety wait
//! (`RELAY_SAFETY_POLL_MS`, 30 s), the grace, the outer bound's margin, the program's re-list,
//! the backoff and the demotion threshold are constants of `relay-watch.ts`. The design's
//! status notes add an operating rule for the window: keep it below the 30 s safety wait.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The prefix of production's environment variables for the relay.
pub(crate) const ENV: &str = "AGENTA_AGENT_TOOLS_RELAY_";

/// What a departure would take in production, least invasive first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A setting production already reads (an environment variable): no code change.
    Setting,
    /// A constant of production's code with another value: a one-line change of code.
    DefaultValue,
    /// A change of what production's runner or in-sandbox program does.
    Code,
    /// Another design than production's (a followed stream, another program).
    Design,
    /// A run written before departures were classified.
    NotRecorded,
}

impl ChangeKind {
    /// `a setting production already reads`, as the reports say it.
    pub fn describe(self) -> &'static str {
        match self {
            ChangeKind::Setting => "a setting production already reads",
            ChangeKind::DefaultValue => "a change of a default value in production's code",
            ChangeKind::Code => "a change of production's code",
            ChangeKind::Design => "another design",
            ChangeKind::NotRecorded => "not classified (a run from before departures were)",
        }
    }
}

/// One option a case sets away from production's relay as built.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Departure {
    /// The option and its value as a scenario writes it: `window = 28.00s`.
    pub text: String,
    /// What it would take in production.
    pub kind: ChangeKind,
    /// Production's name for it: its environment variable set to this value, or the
    /// constant of its code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub production: Option<String>,
    /// Why it leaves the envelope production's own notes set, if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outside_envelope: Option<String>,
}

impl Departure {
    fn new(text: String, kind: ChangeKind, production: Option<String>) -> Departure {
        Departure { text, kind, production, outside_envelope: None }
    }

    /// A setting production reads from `AGENTA_AGENT_TOOLS_RELAY_<var>`, set to `value`.
    pub(crate) fn setting(text: String, var: &str, value: impl fmt::Display) -> Departure {
        Departure::new(text, ChangeKind::Setting, Some(format!("{ENV}{var}={value}")))
    }

    /// A constant of production's code (`name` in `file`), another value.
    pub(crate) fn default_value(text: String, name: &str, file: &str) -> Departure {
        Departure::new(text, ChangeKind::DefaultValue, Some(format!("{name} in {file}")))
    }

    /// A change of what production's code does.
    pub(crate) fn code(text: impl Into<String>) -> Departure {
        Departure::new(text.into(), ChangeKind::Code, None)
    }

    /// Another design than production's.
    pub(crate) fn design(text: impl Into<String>) -> Departure {
        Departure::new(text.into(), ChangeKind::Design, None)
    }

    /// ... that leaves production's envelope, and why.
    pub(crate) fn outside(mut self, why: impl Into<String>) -> Departure {
        self.outside_envelope = Some(why.into());
        self
    }
}

impl fmt::Display for Departure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Borrow<str> for Departure {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl PartialEq<str> for Departure {
    fn eq(&self, other: &str) -> bool {
        self.text == other
    }
}

impl PartialEq<&str> for Departure {
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}

impl PartialEq<String> for Departure {
    fn eq(&self, other: &String) -> bool {
        &self.text == other
    }
}

/// A test's departure from its text alone (a change of code).
#[cfg(test)]
impl From<&str> for Departure {
    fn from(text: &str) -> Departure {
        Departure::code(text)
    }
}

/// A departure as stored: a run written before departures were classified kept their text
/// alone.
#[derive(Deserialize)]
#[serde(untagged)]
enum Stored {
    Text(String),
    Full {
        text: String,
        kind: ChangeKind,
        #[serde(default)]
        production: Option<String>,
        #[serde(default)]
        outside_envelope: Option<String>,
    },
}

impl<'de> Deserialize<'de> for Departure {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Stored::deserialize(d)? {
            Stored::Text(text) => Departure::new(text, ChangeKind::NotRecorded, None),
            Stored::Full { text, kind, production, outside_envelope } => {
                Departure { text, kind, production, outside_envelope }
            }
        })
    }
}

/// The least invasive kind a set of departures takes as a whole: the most invasive of them
/// (`Setting` for none).
pub(crate) fn kind_of(departures: &[Departure]) -> ChangeKind {
    departures.iter().map(|d| d.kind).max().unwrap_or(ChangeKind::Setting)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_departure_reads_back_from_its_text_or_its_whole_record() {
        let d = Departure::setting("window = 28.00s".into(), "REMOTE_WATCH_WINDOW_MS", 28000);
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(
            json,
            r#"{"text":"window = 28.00s","kind":"setting","production":"AGENTA_AGENT_TOOLS_RELAY_REMOTE_WATCH_WINDOW_MS=28000"}"#
        );
        assert_eq!(serde_json::from_str::<Departure>(&json).unwrap(), d);
        let old: Departure = serde_json::from_str(r#""idle_wake = false""#).unwrap();
        assert_eq!((old.text.as_str(), old.kind), ("idle_wake = false", ChangeKind::NotRecorded));
        assert_eq!([d.clone(), old].join(", "), "window = 28.00s, idle_wake = false");
        assert!(ChangeKind::Setting < ChangeKind::DefaultValue && ChangeKind::DefaultValue < ChangeKind::Code);
        assert_eq!(kind_of(&[d, Departure::code("idle_wake = false")]), ChangeKind::Code);
    }
}
