//! The compilers agree: code compiled by Winch (`--strategy winch`, the
//! fast-compiling choice for a module that arrives as `.wasm`) decides every
//! request of the forwarding conformance corpus and of the seeded request mix
//! exactly as Cranelift's code does, in both isolation modes, and so does a
//! Winch `.cwasm` precompiled by `host-sim compile`.
#![allow(clippy::unwrap_used)]

mod common;

use common::NOW;
use runtime::{Compiler, EngineOptions, ModuleSource};
use runtime::{Reusable, Runtime};
use testkit::mix::Mix;

/// The request heads: the conformance corpus (`testkit/conformance/forwarding.jsonl`,
/// read from the repository) and 500 requests of the seeded mix.
fn heads() -> Vec<String> {
    let corpus =
        std::fs::read_to_string(common::root().join("testkit/conformance/forwarding.jsonl")).unwrap();
    let mut heads: Vec<String> = corpus
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            case["request"].as_str().unwrap().to_owned()
        })
        .collect();
    assert!(heads.len() >= 40, "the corpus has its cases");
    heads.extend(Mix::new(&common::config(), NOW, 7).generate(500).into_iter().map(|r| r.head));
    heads
}

fn options(strategy: Compiler) -> EngineOptions {
    EngineOptions { strategy, ..common::relaxed() }
}

/// Asserts that `runtime` decides every head as `reference` does, fresh and reused.
fn same_decisions(reference: &Runtime, runtime: &Runtime, heads: &[String]) {
    let (mut mine, mut theirs) = (Reusable::default(), Reusable::default());
    let now = NOW as f64;
    for head in heads {
        let expected = reference.decide_fresh(head.as_bytes(), now);
        assert!(expected.is_ok(), "Cranelift decides {head:?}: {expected:?}");
        assert_eq!(runtime.decide_fresh(head.as_bytes(), now), expected, "fresh: {head:?}");
        assert_eq!(reference.decide_reused(&mut theirs, head.as_bytes(), now), expected, "{head:?}");
        assert_eq!(runtime.decide_reused(&mut mine, head.as_bytes(), now), expected, "reused: {head:?}");
    }
}

#[test]
fn winch_decides_the_corpus_and_the_mix_as_cranelift_does() {
    let wasm = ModuleSource::Wasm(common::gateway_wasm());
    let cranelift = Runtime::load(&options(Compiler::Cranelift), &wasm, 4).unwrap();
    let winch = Runtime::load(&options(Compiler::Winch), &wasm, 4).unwrap();
    same_decisions(&cranelift, &winch, &heads());
}

#[test]
fn a_winch_cwasm_decides_as_cranelift_does() {
    let dir = common::scratch("compilers");
    let cwasm = dir.join("winch.cwasm");
    let winch_options = options(Compiler::Winch);
    runtime::precompile_file(&winch_options, &common::gateway_wasm(), &cwasm).unwrap();
    let winch = Runtime::load(&winch_options, &ModuleSource::Cwasm(cwasm), 4).unwrap();
    let wasm = ModuleSource::Wasm(common::gateway_wasm());
    let cranelift = Runtime::load(&options(Compiler::Cranelift), &wasm, 4).unwrap();
    let heads = heads();
    same_decisions(&cranelift, &winch, &heads[..60]);
}
