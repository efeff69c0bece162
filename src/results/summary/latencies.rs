//! Every measure's statistics in one case ([`Latencies`]), kept in summary.json under the
//! measure's name: `latency_us.<name>`, or `<name>_us` beside it for a measure kept apart
//! (schedule lag, the pacer's and not the relay's).

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::record::measure::{LatencyStats, Measure, COUNT};

/// The statistics of every registered measure, in registry order. A measure a run did not
/// record (one added after it) reads as no samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latencies([LatencyStats; COUNT]);

impl Latencies {
    /// Each measure's statistics, from `of`.
    pub(crate) fn from_fn(of: impl Fn(Measure) -> LatencyStats) -> Latencies {
        Latencies(Measure::ALL.map(of))
    }

    /// The statistics of one measure.
    pub fn get(&self, m: Measure) -> &LatencyStats {
        &self.0[m.index()]
    }

    /// The statistics of one measure, to change.
    pub fn get_mut(&mut self, m: Measure) -> &mut LatencyStats {
        &mut self.0[m.index()]
    }

    /// Every measure with its statistics, to change, in registry order.
    #[cfg(test)]
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = (Measure, &mut LatencyStats)> {
        Measure::all().zip(self.0.iter_mut())
    }
}

/// The measures summary.json keeps in `latency_us`, by name.
struct InLatencyUs<'a>(&'a Latencies);

impl Serialize for InLatencyUs<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for m in Measure::all().filter(|m| m.in_latency_us()) {
            map.serialize_entry(m.name(), self.0.get(m))?;
        }
        map.end()
    }
}

/// Written flattened into its case: `latency_us` then each measure kept apart.
impl Serialize for Latencies {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("latency_us", &InLatencyUs(self))?;
        for m in Measure::all().filter(|m| !m.in_latency_us()) {
            map.serialize_entry(&format!("{}_us", m.name()), self.get(m))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Latencies {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Latencies, D::Error> {
        d.deserialize_map(CaseKeys)
    }
}

/// Reads a case's keys: `latency_us` and the `<name>_us` of each measure kept apart; the
/// others are the case's own fields.
struct CaseKeys;

impl<'de> Visitor<'de> for CaseKeys {
    type Value = Latencies;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a case's `latency_us` object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Latencies, A::Error> {
        let mut l = Latencies::default();
        while let Some(key) = map.next_key::<String>()? {
            if key == "latency_us" {
                l = map.next_value_seed(ByName(l))?;
            } else if let Some(m) = key.strip_suffix("_us").and_then(Measure::from_name).filter(|m| !m.in_latency_us())
            {
                *l.get_mut(m) = map.next_value()?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(l)
    }
}

/// Reads `latency_us`: a measure's statistics by its name; a name this build does not know
/// (a measure added after it) is skipped.
struct ByName(Latencies);

impl<'de> serde::de::DeserializeSeed<'de> for ByName {
    type Value = Latencies;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Latencies, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ByName {
    type Value = Latencies;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of each measure's statistics")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Latencies, A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match Measure::from_name(&key).filter(|m| m.in_latency_us()) {
                Some(m) => *self.0.get_mut(m) = map.next_value()?,
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(self.0)
    }
}
