//! What a host does to a cold start before its first client request
//! changes no decision: the warm-up request (`Runtime::warm_up`, which
//! `host-sim serve` decides on each serving thread before it listens) and
//! the first instance's memory made resident at once
//! (`EngineOptions::populate_first_memory`). The first request of a runtime
//! warmed up, of one made without the pre-faulting and of one made with it
//! decide alike, and so do the requests after it.
#![allow(clippy::unwrap_used)]

mod common;

use common::NOW;
use runtime::{EngineOptions, MemoryReset, ModuleSource, Runtime, WARM_UP_HEAD};
use testkit::mix::Mix;

fn load(options: &EngineOptions) -> Runtime {
    Runtime::load(options, &ModuleSource::Wasm(common::gateway_wasm()), 4).unwrap()
}

#[test]
fn a_warmed_up_runtime_decides_as_a_cold_one() {
    let heads: Vec<String> =
        Mix::new(&common::config(), NOW, 7).generate(40).into_iter().map(|r| r.head).collect();
    let with = common::relaxed();
    let without = EngineOptions { populate_first_memory: false, ..common::relaxed() };
    for head in &heads {
        let (cold, populated, warmed) = (load(&without), load(&with), load(&with));
        warmed.warm_up().unwrap();
        let expected = cold.decide_fresh(head.as_bytes(), NOW as f64);
        assert!(expected.is_ok(), "{head}");
        assert_eq!(populated.decide_fresh(head.as_bytes(), NOW as f64), expected, "{head}");
        assert_eq!(warmed.decide_fresh(head.as_bytes(), NOW as f64), expected, "{head}");
        // The next request, in a new instance of the slot the first one left.
        assert_eq!(populated.decide_fresh(head.as_bytes(), NOW as f64), expected, "{head}");
        assert_eq!(warmed.decide_fresh(head.as_bytes(), NOW as f64), expected, "{head}");
    }
}

#[test]
fn the_warm_up_request_is_refused_without_a_key() {
    // A token no key signs: the module answers it, and never forwards it.
    let runtime = load(&common::relaxed());
    let decision = runtime.decide_fresh(WARM_UP_HEAD, NOW as f64).unwrap();
    assert_eq!(decision.status(), 401);
}

#[test]
fn only_a_memory_reset_whole_is_made_resident() {
    // A memory reset page by page keeps unwritten pages unmapped: making
    // them resident would undo that.
    let whole = load(&EngineOptions { memory_reset: MemoryReset::Whole, ..common::relaxed() });
    let written = load(&EngineOptions { memory_reset: MemoryReset::Written, ..common::relaxed() });
    // (true on Linux 5.14 and later; an older kernel refuses the call)
    whole.populate_first_memory();
    assert!(!written.populate_first_memory());
    // Once the first instance has served, there is nothing left to populate.
    whole.warm_up().unwrap();
    assert!(!whole.populate_first_memory());
}
