//! The recording layer: what is measured of every call ([`measure`]), the listeners on a
//! case's event channel — HDR histograms, counters and the pairing check ([`recorder`]), the event log `events.ndjson` ([`eventlog`]) or its compact
//! form `events.bin` ([`compact`]), read back by [`logread`], and
//! `calls.csv` ([`calls_csv`]).

mod appended;
pub(crate) mod calls_csv;
pub(crate) mod compact;
pub(crate) mod eventlog;
pub(crate) mod logread;
pub(crate) mod measure;
pub(crate) mod recorder;
