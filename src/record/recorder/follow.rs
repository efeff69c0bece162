//! What the recorder follows beside the whole-case histograms: pickup per interval of
//! publication time (the `.hlog` files and the pickup-over-time chart), the calls touched by
//! a fault's span, and notices with their time.

use std::time::Duration;

use hdrhistogram::Histogram;
use tokio::time::Instant;

use crate::record::measure::{new_histogram, Measure};

/// A case's histograms, for the HdrHistogram exports and charts.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseHdr {
    pub measures: Vec<(Measure, Histogram<u64>)>,
    pub intervals: Option<Intervals>,
    /// The case's length (from its first intended start).
    pub length: Duration,
}

/// Pickup histograms per interval of publication time (the `.hlog` and pickup-over-time
/// chart); created only for intervals with calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Intervals {
    pub epoch: Instant,
    pub interval: Duration,
    /// Index i covers [epoch + i * interval, epoch + (i + 1) * interval).
    pub hists: Vec<Option<Histogram<u64>>>,
    pub(super) max: usize,
}

impl Intervals {
    pub(super) fn record(&mut self, at: Instant, v: Duration) {
        let i = (at.saturating_duration_since(self.epoch).as_nanos() / self.interval.as_nanos().max(1)) as usize;
        let i = i.min(self.max - 1);
        if self.hists.len() <= i {
            self.hists.resize(i + 1, None);
        }
        crate::base::units::record(self.hists[i].get_or_insert_with(new_histogram), v);
    }
}

/// A stretch of time in one sandbox (a fault and its aftermath) whose calls are followed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span {
    pub sandbox: u32,
    /// Every sandbox (a fleet-wide fault).
    pub all: bool,
    /// Every sandbox but `sandbox` (what a fault in one sandbox does to the others).
    pub others: bool,
    pub from: Instant,
    pub to: Instant,
}

impl Span {
    pub(super) fn overlaps(&self, sandbox: u32, start: Instant, end: Instant) -> bool {
        (self.all || (sandbox == self.sandbox) != self.others) && start <= self.to && end >= self.from
    }
}

/// The calls whose life overlapped a [`Span`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpanStats {
    pub calls: u64,
    pub answered: u64,
    pub failed: u64,
    pub worst_pickup: Option<Duration>,
    pub worst_completion: Option<Duration>,
}

/// A notice with its time and sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimedNotice {
    pub at: Instant,
    pub sandbox: u32,
    pub what: crate::base::notice::Say,
}
