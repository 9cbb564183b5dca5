//! The in-process count: a bounded table of bucket -> TAT (Unix µs), split into
//! [`SHARDS`] shards, each behind a mutex held for one lookup and one
//! store, so that two serving threads wait on each other only when they
//! count in the same shard at the same moment.
//!
//! A key is stored as its 64-bit SipHash-1-3 under a key drawn at random
//! per process (std's `RandomState`): a client cannot choose keys that
//! collide, and with a million buckets two keys share a hash with
//! probability about 3e-8. The shard is chosen by bits 32 to 37 of the
//! hash, the slot within a shard by its low bits, so neither skews the other.
//!
//! Memory is bounded: each shard holds at most its share of the capacity.
//! A new bucket in a full shard first drops every entry whose TAT has
//! passed (a bucket whose TAT is in the past is full again: it carries no
//! information), and when none has, evicts the live entry with the
//! smallest TAT (the one closest to full again; found by a scan that keeps
//! the next [`EVICTION_BATCH`] candidates, so a flood of new keys scans a
//! shard once per batch, not once per key). Evictions are counted
//! (`gateway_limit_evictions_total`): an evicted bucket starts full again,
//! so each one may let a caller through early.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::Mutex;

use contract::limits::{Limit, Verdict};
use prometheus_client::metrics::counter::Counter;

/// Shards of the table.
pub const SHARDS: usize = 64;

/// Eviction candidates a scan of a full shard keeps.
pub const EVICTION_BATCH: usize = 32;

/// The default capacity, in buckets.
pub const DEFAULT_CAPACITY: usize = 1_000_000;

/// A hasher for keys that are already keyed hashes: passes them through.
#[derive(Debug, Default, Clone, Copy)]
pub struct Identity(u64);

impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; any other input still hashes.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// One shard: its buckets and its eviction candidates, on a cache line of
/// its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    inner: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    tats: HashMap<u64, u64, BuildHasherDefault<Identity>>,
    /// Live entries of the last scan, smallest TAT last: `(tat, hash)`.
    candidates: Vec<(u64, u64)>,
}

/// The sharded, bounded table of bucket TATs.
#[derive(Debug)]
pub struct Table {
    shards: Box<[Shard]>,
    seed: std::collections::hash_map::RandomState,
    per_shard: usize,
    evictions: Counter,
}

impl Table {
    /// A table of at most `capacity` buckets (at least one per shard),
    /// counting evictions in `evictions`.
    pub fn new(capacity: usize, evictions: Counter) -> Table {
        let per_shard = capacity.div_ceil(SHARDS).max(1);
        let shards = (0..SHARDS).map(|_| Shard::default()).collect();
        Table { shards, seed: std::collections::hash_map::RandomState::new(), per_shard, evictions }
    }

    /// The most buckets the table holds.
    pub fn capacity(&self) -> usize {
        self.per_shard * SHARDS
    }

    /// Buckets held now (takes every shard's lock: for tests and reports).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| locked(&s.inner).tats.len()).sum()
    }

    /// True when no bucket is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts one request at `now_us` in the bucket `key` of `limit`, and
    /// stores its new TAT when allowed.
    pub fn count(&self, key: &str, limit: &Limit<'_>, now_us: u64) -> Verdict {
        let hash = self.seed.hash_one(key);
        let shard = &self.shards[((hash >> 32) as usize) % SHARDS];
        let mut buckets = locked(&shard.inner);
        let stored = buckets.tats.get(&hash).copied().unwrap_or(0);
        let verdict = limit.count(stored, now_us);
        if verdict.allowed {
            if stored == 0 && buckets.tats.len() >= self.per_shard {
                let evicted = buckets.make_room(now_us);
                if evicted > 0 {
                    self.evictions.inc_by(evicted);
                }
            }
            buckets.tats.insert(hash, verdict.tat_us);
        }
        verdict
    }
}

impl Buckets {
    /// Frees one entry in a full shard; returns how many live entries it evicted.
    fn make_room(&mut self, now_us: u64) -> u64 {
        // A candidate of the last scan, if it is still there as it was.
        while let Some((tat, hash)) = self.candidates.pop() {
            if tat > now_us && self.tats.get(&hash) == Some(&tat) {
                self.tats.remove(&hash);
                return 1;
            }
        }
        let before = self.tats.len();
        self.tats.retain(|_, tat| *tat > now_us);
        if self.tats.len() < before {
            return 0;
        }
        // Every entry is live: keep the smallest TATs, smallest last.
        let mut smallest: Vec<(u64, u64)> = Vec::with_capacity(EVICTION_BATCH + 1);
        for (&hash, &tat) in &self.tats {
            if smallest.len() < EVICTION_BATCH || tat < smallest[0].0 {
                let at = smallest.partition_point(|&(t, _)| t > tat);
                smallest.insert(at, (tat, hash));
                if smallest.len() > EVICTION_BATCH {
                    smallest.remove(0);
                }
            }
        }
        self.candidates = smallest;
        match self.candidates.pop() {
            Some((_, hash)) => {
                self.tats.remove(&hash);
                1
            }
            None => 0,
        }
    }
}

fn locked<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(requests: u32, per_secs: u32, burst: u32) -> Limit<'static> {
        Limit { name: "l", requests, per_secs, burst, fields: true }
    }

    #[test]
    fn counts_each_key_on_its_own() {
        let table = Table::new(1000, Counter::default());
        let l = limit(3, 60, 3);
        let now = 1_800_000_000_000_000;
        for remaining in [2, 1, 0] {
            let v = table.count("l:s:0.alice", &l, now);
            assert!(v.allowed);
            assert_eq!(v.remaining, remaining);
        }
        let refused = table.count("l:s:0.alice", &l, now);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_secs, 20);
        assert!(table.count("l:s:0.bob", &l, now).allowed, "another key has its own budget");
        assert!(table.count("l:s:0.alice", &l, now + 20_000_000).allowed, "one interval later");
    }

    #[test]
    fn a_full_table_drops_past_entries_first_then_the_smallest_tat() {
        let evictions = Counter::default();
        let table = Table::new(SHARDS * 4, evictions.clone());
        assert_eq!(table.capacity(), SHARDS * 4);
        let l = limit(1, 60, 1);
        let now = 1_800_000_000_000_000;
        // A flood of distinct keys, each counted once: the table stays bounded.
        for i in 0..10_000u64 {
            assert!(table.count(&format!("l:a:{i}"), &l, now + i).allowed);
            assert!(table.len() <= table.capacity());
        }
        assert!(evictions.get() > 9_000, "live entries were evicted: {}", evictions.get());
        // Later than every TAT: the past entries go, nothing live is evicted.
        let before = evictions.get();
        let later = now + 10_000 + 60_000_000;
        for i in 0..10_000u64 {
            table.count(&format!("l:b:{i}"), &l, later);
        }
        assert!(evictions.get() - before < 10_000, "past entries were dropped, not counted");
        assert!(table.len() <= table.capacity());
    }

    #[test]
    fn the_entry_closest_to_full_is_evicted() {
        let table = Table::new(SHARDS, Counter::default()); // one bucket per shard
        let now = 1_800_000_000_000_000;
        let slow = limit(1, 3600, 1); // TAT an hour ahead
        let fast = limit(1, 1, 1); // TAT a second ahead
        // Find two keys of one shard.
        let shard_of = |key: &str| (table.seed.hash_one(key) >> 32) as usize % SHARDS;
        let first = "k:0";
        let second =
            (1..).map(|i| format!("k:{i}")).find(|k| shard_of(k) == shard_of(first)).unwrap_or_default();
        assert!(table.count(first, &slow, now).allowed);
        assert!(!table.count(first, &slow, now).allowed, "spent");
        assert!(table.count(&second, &fast, now).allowed, "the full shard evicts the only entry");
        assert!(table.count(first, &slow, now).allowed, "the evicted bucket starts full");
    }
}
