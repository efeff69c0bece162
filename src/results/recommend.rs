//! The verdict's recommendation: when production as built misses a rollout gate, the least
//! invasive change this run measured that meets every rollout gate with margin, inside the
//! envelope production's own notes set.
//!
//! Every option a case sets away from production is a [`Departure`] that says what it would
//! take: a setting production already reads, a default value changed in its code, a change
//! of its code, or another design. The recommendation ranks the options that meet every gate
//! in that order (then by how many departures they make, then the value nearest production's
//! own: a search's boundary before the longer windows past it), and recommends the first that
//! meets them with margin (not on the edge) and stays inside production's envelope. Options
//! that meet the gates only by leaving the envelope (a window that reaches the 30 s safety
//! wait) are listed apart, with what crossing cost in this run, and never recommended.

use serde::{Deserialize, Serialize};

use crate::strategy::{ChangeKind, Departure};

/// The recommendation of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recommendation {
    /// The option recommended, if one meets every rollout gate with margin inside
    /// production's envelope (absent: production meets them, or no option does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<Choice>,
    /// The other options this run measured that meet every rollout gate inside the
    /// envelope, least invasive first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub others: Vec<Choice>,
    /// Options that meet every rollout gate only outside production's envelope: measured,
    /// never recommended.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<Choice>,
    /// The recommendation's lead sentence, as the reports print it.
    pub text: String,
}

/// One option: a case that departs from production and meets every rollout gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    /// The case that measured it.
    pub case: String,
    /// Its departures, each with what it takes.
    pub departures: Vec<Departure>,
    /// What the option takes as a whole: its most invasive departure's kind.
    pub kind: ChangeKind,
    /// Each rollout gate: the gate, its observed value, and its margin as said.
    pub margins: Vec<[String; 3]>,
    /// A gate it meets only on the edge.
    pub on_edge: bool,
    /// Why it leaves production's envelope (a departure's reason each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside_envelope: Vec<String>,
    /// What it cost in this run beyond the gates (for an option outside the envelope: its
    /// safety lists, watch misses and demotions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub costs: Vec<String>,
    /// Where a search placed it (the line's sentence), when a search found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub searched: Option<String>,
}

impl Choice {
    /// `` `window = 27.15s` (window-exec-window@window=27.15s; a setting production already
    /// reads: AGENTA_..._WINDOW_MS=27150) ``.
    pub fn name(&self) -> String {
        let knobs: Vec<&str> = self.departures.iter().filter_map(|d| d.production.as_deref()).collect();
        let knobs = if knobs.is_empty() { String::new() } else { format!(": `{}`", knobs.join("`, `")) };
        format!("`{}` ({}; {}{knobs})", self.departures.join(", "), self.case, self.kind.describe())
    }

    /// `idle_phase_discovery_per_min <= 5.0` 4.89 (2.2 % to spare); ...
    pub fn margins_text(&self) -> String {
        let each: Vec<String> = self.margins.iter().map(|[g, v, m]| format!("`{g}` {v} ({m})")).collect();
        each.join(", ")
    }
}
