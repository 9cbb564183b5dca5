//! The whole request handler: arbitrary head bytes and an arbitrary clock,
//! through the same `Instance` the wasm exports wrap (so heads longer than
//! the input buffer get the module's 431).
//!
//! Input: 8 bytes of clock (an f64, little-endian: NaN, negative and huge
//! values included), then the request head.
#![no_main]

use testkit::gateway::{Gateway, HEAD_CAPACITY, Native};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((clock, head)) = data.split_first_chunk::<8>() else { return };
    let now = f64::from_le_bytes(*clock);
    let mut gateway = Native::new();
    let decision = gateway.decide(head, now);
    // Never panics (we got here); a known status; 2 or 4 fields; the reason,
    // code, challenge and JSON body agree (`Decision::check`).
    if let Err(why) = decision.check() {
        panic!("invariant broken: {why}");
    }
    if head.len() > HEAD_CAPACITY {
        assert_eq!(decision.status, 431);
    }
    if head.len() <= HEAD_CAPACITY && !(0.0..=9_007_199_254_740_992.0).contains(&now) {
        // (A head that does not fit is answered 431 before the clock is read.)
        assert_eq!(decision.status, 500, "an invalid clock is a 500");
    }
    if decision.status == 200 {
        // A forward needs a token signed with the gateway's key.
        assert!(testkit::gateway::bearer_token_of(head).is_some_and(testkit::gateway::signed_by_fixture_key));
    }
    // The same request in a reused instance gets the same answer.
    assert_eq!(gateway.decide(head, now), decision);
});
