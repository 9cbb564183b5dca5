//! Rate-limit counting in the component's own memory (`ABI.md`, "Rate
//! limits"): wasi:http gives a component no store shared between
//! instances, so each instance counts its own requests. Exact for the
//! requests one instance serves; `wasmtime serve` reuses instances (kept by
//! `make deploy-wasi-http`) but runs concurrent requests in separate ones,
//! so a budget holds per instance, and not at all with a fresh instance
//! per request (`deploy/wasi-http/README.md` says what that means).
//!
//! A fixed table of [`SLOTS`] buckets (16 bytes each, zeroed static memory):
//! a key's hash, keyed with a seed the instance draws from wasi:random so
//! that no client can aim keys at one slot, picks a run of [`PROBE`] slots;
//! the key's own slot, else a free or expired one (a TAT in the past carries
//! nothing), else the one whose TAT is earliest (the bucket closest to full
//! again) is taken, and the eviction counted.

use contract::limits::{Limit, Verdict};

/// Buckets one instance keeps.
pub const SLOTS: usize = 4096;

/// Slots looked at for one key.
const PROBE: usize = 8;

/// One bucket: its key's hash (0: free) and its TAT.
#[derive(Clone, Copy)]
struct Slot {
    hash: u64,
    tat_us: u64,
}

/// The instance's buckets.
pub struct Counter {
    seed: u64,
    slots: [Slot; SLOTS],
    /// Live buckets dropped for lack of room.
    pub evictions: u64,
}

impl Counter {
    /// An empty table; [`Counter::seed`] before the first count.
    pub const fn new() -> Self {
        Counter { seed: 0, slots: [Slot { hash: 0, tat_us: 0 }; SLOTS], evictions: 0 }
    }

    /// Keys the hash with `seed` (drawn once per instance), when not yet keyed.
    pub fn seed(&mut self, seed: impl FnOnce() -> u64) {
        if self.seed == 0 {
            self.seed = seed() | 1;
        }
    }

    /// Counts one request at `now_us` in the bucket `key` of `limit`.
    pub fn count(&mut self, key: &str, limit: &Limit<'_>, now_us: u64) -> Verdict {
        let hash = self.hash(key.as_bytes());
        let start = (hash as usize) % SLOTS;
        let run = |i: usize| (start + i) % SLOTS;
        let at = (0..PROBE).map(run).find(|&i| self.slots[i].hash == hash).or_else(|| {
            (0..PROBE).map(run).find(|&i| self.slots[i].hash == 0 || self.slots[i].tat_us <= now_us)
        });
        let at = at.unwrap_or_else(|| {
            self.evictions += 1;
            (0..PROBE).map(run).min_by_key(|&i| self.slots[i].tat_us).unwrap_or(start)
        });
        let slot = &mut self.slots[at];
        let stored = if slot.hash == hash { slot.tat_us } else { 0 };
        let verdict = limit.count(stored, now_us);
        if verdict.allowed {
            *slot = Slot { hash, tat_us: verdict.tat_us };
        }
        verdict
    }

    /// FNV-1a over the key, keyed by the seed, never 0.
    fn hash(&self, key: &[u8]) -> u64 {
        let mut hash = 0xcbf2_9ce4_8422_2325 ^ self.seed;
        for &b in key {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A final mix, so that keys alike in their last bytes spread.
        hash ^= hash >> 33;
        hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
        (hash ^ (hash >> 33)).max(1)
    }
}

impl Default for Counter {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Limit<'static> = Limit { name: "l", requests: 3, per_secs: 60, burst: 3, fields: true };
    const NOW: u64 = 1_765_000_000_000_000;

    #[test]
    fn each_key_has_its_own_budget() {
        let mut counter = Box::new(Counter::new());
        counter.seed(|| 42);
        for _ in 0..3 {
            assert!(counter.count("l:s:0.alice", &LIMIT, NOW).allowed);
        }
        let refused = counter.count("l:s:0.alice", &LIMIT, NOW);
        assert!(!refused.allowed);
        assert_eq!(refused.retry_after_secs, 20);
        assert!(counter.count("l:s:0.bob", &LIMIT, NOW).allowed);
        assert!(counter.count("l:s:0.alice", &LIMIT, NOW + 20_000_000).allowed);
    }

    #[test]
    fn a_flood_of_keys_stays_in_the_table_and_counts_its_evictions() {
        let mut counter = Box::new(Counter::new());
        counter.seed(|| 7);
        for i in 0..(SLOTS * 4) {
            assert!(counter.count(&format!("l:a:10.0.{i}"), &LIMIT, NOW).allowed);
        }
        assert!(counter.evictions > 0);
        // Expired buckets are reused without an eviction.
        let before = counter.evictions;
        for i in 0..100 {
            counter.count(&format!("l:a:later.{i}"), &LIMIT, NOW + 3_600_000_000);
        }
        assert_eq!(counter.evictions, before);
    }
}
