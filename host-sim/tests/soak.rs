//! Soak: a million requests through the real module in each isolation mode,
//! with the process's resident memory read before and after. A leak of even
//! a few bytes per request would show as megabytes here.
//!
//! The figures are printed (`cargo test --release -p host-sim --test soak --
//! --nocapture`); the test fails only on growth, never on time.

mod common;

use runtime::Isolation;
use runtime::Reusable;

/// The process's resident memory (`VmRSS` of `/proc/self/status`), KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("a VmRSS line");
    line.split_whitespace().nth(1).and_then(|kib| kib.parse().ok()).expect("VmRSS in KiB")
}

/// Requests per mode.
const REQUESTS: usize = 1_000_000;

/// Growth allowed after the warm-up: allocator noise, not a per-request leak
/// (a leak of 2 bytes per request would already be 2 MB).
const ALLOWED_GROWTH_KIB: u64 = 1024;

#[test]
fn a_million_requests_per_mode_leave_resident_memory_flat() {
    let runtime = common::runtime();
    let mix = testkit::mix::Mix::new(&common::config(), common::NOW, 7).generate(1000);
    let now = common::NOW as f64;
    for isolation in [Isolation::Fresh, Isolation::Reuse] {
        let mut reusable = Reusable::default();
        let mut run = |n: usize| {
            let mut forwarded = 0usize;
            for request in mix.iter().cycle().take(n) {
                let outcome = runtime.decide(isolation, &mut reusable, request.head.as_bytes(), now);
                let decision = outcome.expect("the module decides every request of the mix");
                forwarded += usize::from(matches!(decision.view(), contract::Decision::Forward(_)));
            }
            forwarded
        };
        // Warm up: the pool's slots, the allocator's arenas, the page cache.
        run(50_000);
        let before = rss_kib();
        let forwarded = run(REQUESTS);
        let after = rss_kib();
        println!(
            "soak {isolation:?}: {REQUESTS} requests ({forwarded} forwarded), VmRSS {before} KiB before, {after} KiB after ({:+} KiB)",
            after as i64 - before as i64
        );
        assert!(forwarded > REQUESTS / 2, "the mix is mostly valid tokens");
        assert!(
            after <= before + ALLOWED_GROWTH_KIB,
            "{isolation:?}: resident memory grew from {before} KiB to {after} KiB over {REQUESTS} requests"
        );
    }
}
