//! Per-call latency: each call timed on its own and recorded in an HDR
//! histogram, then summarised as percentiles.
//!
//! Timing one call costs two `Instant::now()` reads (about 20 to 40 ns here),
//! which is included in every sample; criterion's figures, which time batches,
//! do not carry it.

use std::time::Instant;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// A new histogram for nanoseconds from 1 ns to 10 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("histogram bounds")
}

/// Times `calls` calls of `f`, one sample each, after `warmup` untimed calls.
pub fn record(warmup: usize, calls: usize, mut f: impl FnMut(usize)) -> Histogram<u64> {
    for i in 0..warmup {
        f(i);
    }
    let mut h = histogram();
    for i in 0..calls {
        let start = Instant::now();
        f(i);
        let ns = start.elapsed().as_nanos() as u64;
        h.saturating_record(ns.max(1));
    }
    h
}

/// A measured latency distribution, as the report needs it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Series {
    /// Which chart the series belongs to.
    pub group: String,
    /// The row's name.
    pub name: String,
    /// Samples recorded.
    pub count: u64,
    /// Mean, nanoseconds.
    pub mean_ns: f64,
    /// p50, p90, p95, p99, p99.9 and max, nanoseconds.
    pub p50_ns: u64,
    /// p90.
    pub p90_ns: u64,
    /// p95.
    pub p95_ns: u64,
    /// p99.
    pub p99_ns: u64,
    /// p99.9.
    pub p999_ns: u64,
    /// The largest sample.
    pub max_ns: u64,
    /// Free text shown beside the row (e.g. achieved rate, errors).
    #[serde(default)]
    pub note: String,
}

impl Series {
    /// Summarises `h` as the series `name` of chart `group`.
    pub fn of(group: &str, name: &str, h: &Histogram<u64>) -> Self {
        let q = |p: f64| h.value_at_quantile(p / 100.0);
        Series {
            group: group.into(),
            name: name.into(),
            count: h.len(),
            mean_ns: h.mean(),
            p50_ns: q(50.0),
            p90_ns: q(90.0),
            p95_ns: q(95.0),
            p99_ns: q(99.0),
            p999_ns: q(99.9),
            max_ns: h.max(),
            note: String::new(),
        }
    }

    /// The same series with a note.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.note = note.into();
        self
    }
}
