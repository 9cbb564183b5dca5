//! The counts themselves, kept per serving thread: each thread writes only
//! its own [`Shard`], so counting a request touches no cache line another
//! thread writes (counters shared by the threads cost `serve` 12 to 21% of
//! its requests/s, measured with `benches/observe-cost.sh`); a scrape adds
//! the shards up. A shard's maps are behind a mutex that only its thread
//! and a scrape take.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use contract::outcome::{self, Cache, Labels};

use super::names::StatusLabel;

/// A decision's labels as indices: outcome, rule, route, issuer.
pub type Key = (u8, Option<u16>, Option<u16>, Option<u8>);

/// An upstream's answer on a route: its status's label (a registered code,
/// or the class of any other), or the outcome of the host's own answer when
/// it gave none.
pub type UpstreamKey = (Option<u16>, Result<StatusLabel, u8>);

/// Latency buckets: 10 µs doubling 21 times (to about 10.5 s), then +Inf.
pub const BUCKETS: usize = 21;

/// The upper bound of bucket `i`, in seconds (`f64::MAX`: +Inf, as the encoder wants it).
pub fn upper_bound(i: usize) -> f64 {
    if i < BUCKETS { 10e-6 * f64::from(1u32 << i) } else { f64::MAX }
}

/// A latency histogram of one thread: a count per bucket, and the sum.
#[derive(Debug, Default)]
pub struct Buckets {
    counts: [AtomicU64; BUCKETS + 1],
    sum_nanos: AtomicU64,
}

impl Buckets {
    /// Counts one latency.
    pub fn observe(&self, took: Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        // The first bucket whose bound (10 µs << i) holds it.
        let i = match nanos.saturating_sub(1) / 10_000 {
            0 => 0,
            q => (u64::BITS - q.leading_zeros()) as usize,
        };
        self.counts[i.min(BUCKETS)].fetch_add(1, Relaxed);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }

    /// Adds this histogram's counts to `counts` and its sum (seconds) to `sum`.
    pub fn add_to(&self, counts: &mut [u64; BUCKETS + 1], sum: &mut f64) {
        for (total, count) in counts.iter_mut().zip(&self.counts) {
            *total += count.load(Relaxed);
        }
        *sum += self.sum_nanos.load(Relaxed) as f64 / 1e9;
    }
}

/// One thread's counts.
#[derive(Debug, Default)]
pub struct Shard {
    pub(super) decisions: Mutex<HashMap<Key, u64>>,
    pub(super) allowed: AtomicU64,
    pub(super) denied: AtomicU64,
    pub(super) cache_hit: AtomicU64,
    pub(super) cache_miss: AtomicU64,
    pub(super) instances: AtomicU64,
    pub(super) deadline_hits: AtomicU64,
    pub(super) decision_time: Buckets,
    pub(super) request_time: Buckets,
    pub(super) upstream: Mutex<HashMap<UpstreamKey, u64>>,
    pub(super) upstream_time: Mutex<HashMap<Option<u16>, Box<Buckets>>>,
}

/// The counts of a map behind a mutex, even one a panicking thread held
/// (a count is never left half written).
pub(super) fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shard {
    /// Counts one decision (or the host's own answer when the module gave
    /// none) and the module's time.
    pub fn decided(&self, labels: &Labels, took: Duration) {
        self.counted(labels);
        self.decision_time.observe(took);
    }

    /// Counts one decision no module made and no time was spent on (a
    /// request head the HTTP parser refused): counted, not timed.
    pub fn counted(&self, labels: &Labels) {
        *locked(&self.decisions)
            .entry((labels.outcome, labels.rule, labels.route, labels.issuer))
            .or_default() += 1;
        let verdict = if outcome::allowed(labels.outcome) {
            Some(&self.allowed)
        } else {
            (labels.outcome != outcome::PREFLIGHT).then_some(&self.denied)
        };
        let cache = match labels.cache {
            Cache::Hit => Some(&self.cache_hit),
            Cache::Miss => Some(&self.cache_miss),
            Cache::None => None,
        };
        for counter in [verdict, cache].into_iter().flatten() {
            counter.fetch_add(1, Relaxed);
        }
    }

    /// Counts the upstream's answer on route `route` (its status by
    /// [`StatusLabel`]) and the time it took.
    pub fn upstream(&self, route: Option<u16>, answer: Result<u16, u8>, took: Duration) {
        *locked(&self.upstream).entry((route, answer.map(StatusLabel::of))).or_default() += 1;
        locked(&self.upstream_time).entry(route).or_default().observe(took);
    }

    /// Times one whole request.
    pub fn request(&self, took: Duration) {
        self.request_time.observe(took);
    }

    /// Counts one instance made for a decision.
    pub fn instance_made(&self) {
        self.instances.fetch_add(1, Relaxed);
    }

    /// Counts one decision stopped at the CPU deadline.
    pub fn deadline_hit(&self) {
        self.deadline_hits.fetch_add(1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_falls_in_the_first_bucket_that_holds_it() {
        let buckets = Buckets::default();
        for micros in [1, 10, 11, 20, 21, 40, 10_485_760, 99_000_000] {
            buckets.observe(Duration::from_micros(micros));
        }
        let (mut counts, mut sum) = ([0; BUCKETS + 1], 0.0);
        buckets.add_to(&mut counts, &mut sum);
        assert_eq!(&counts[..3], &[2, 2, 2]);
        assert_eq!((counts[20], counts[BUCKETS]), (1, 1));
        assert!((sum - 109.485_863).abs() < 1e-6, "{sum}");
        assert_eq!(upper_bound(1), 20e-6);
        assert_eq!(upper_bound(BUCKETS), f64::MAX);
    }
}
