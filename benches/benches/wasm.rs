//! The module (`dist/gateway.wasm`) in the shipped runtime (`runtime`, the
//! code `host-sim serve` runs): per request over the mix in each setup and
//! isolation mode, each request kind, the stage breakdown by differences,
//! and the pieces of a cold start. (The size-table variants and the
//! speed-up kernels are compared interleaved by `bench-tool paired`.)
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use gateway_benches::corpus::{self, NOW};
use gateway_benches::host::Setup;
use gateway_benches::paths;
use runtime::engine;
use runtime::{Isolation, Prepared, Reusable};

/// Each setup over the mix, in a reused and in fresh instances. Each row
/// loads its own runtime and drops it after, so only one epoch ticker runs.
fn per_request(c: &mut Criterion) {
    corpus::check_native();
    let heads = corpus::heads(&corpus::mix());
    let mut group = c.benchmark_group("per_request/wasmtime");
    for (id, setup, isolation) in [
        ("reuse_deadline", Setup::Deadline, Isolation::Reuse),
        ("reuse_no_deadline", Setup::NoDeadline, Isolation::Reuse),
        ("reuse_cwasm_deadline", Setup::Cwasm, Isolation::Reuse),
        ("reuse_winch_deadline", Setup::Winch, Isolation::Reuse),
        ("fresh_deadline", Setup::Deadline, Isolation::Fresh),
        ("fresh_no_deadline", Setup::NoDeadline, Isolation::Fresh),
        ("fresh_cwasm_deadline", Setup::Cwasm, Isolation::Fresh),
        ("fresh_on_demand_deadline", Setup::OnDemand, Isolation::Fresh),
    ] {
        let runtime = setup.load();
        let mut reusable = Reusable::default();
        let mut i = 0usize;
        group.bench_function(id, |b| {
            b.iter(|| {
                let head = &heads[i % heads.len()];
                i += 1;
                runtime.decide(isolation, &mut reusable, black_box(head), NOW as f64)
            })
        });
    }
    group.finish();

    // Each kind of request on its own, in a reused instance.
    let runtime = Setup::Deadline.load();
    let mut reusable = Reusable::default();
    let mut group = c.benchmark_group("per_kind/wasmtime_reuse");
    for case in corpus::cases() {
        group.bench_function(corpus::slug(case.kind), |b| {
            b.iter(|| runtime.decide_reused(&mut reusable, black_box(case.head.as_bytes()), NOW as f64))
        });
    }
    group.finish();
}

/// Requests that stop at successive phases; differences give each phase.
fn stages(c: &mut Criterion) {
    corpus::check_native();
    let phases = corpus::phases();
    let runtime = Setup::NoDeadline.load();
    let mut reusable = Reusable::default();
    for phase in &phases {
        let status =
            runtime.decide_reused(&mut reusable, phase.head.as_bytes(), NOW as f64).map(|d| d.status());
        assert_eq!(status, Ok(phase.status), "phase {}", phase.name);
    }
    let mut group = c.benchmark_group("stages/wasmtime");
    for phase in &phases {
        group.bench_function(phase.name, |b| {
            b.iter(|| runtime.decide_reused(&mut reusable, black_box(phase.head.as_bytes()), NOW as f64))
        });
    }
    group.finish();
    // The same requests natively, so the two breakdowns use one method.
    let mut group = c.benchmark_group("stages/native_by_difference");
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    for phase in &phases {
        let input = corpus::input(&phase.head);
        group.bench_function(phase.name, |b| {
            b.iter(|| {
                worker::handle(black_box(&input), NOW as f64, &worker::config::COMPILED, &mut scratch).status
            })
        });
    }
    group.finish();
}

/// The pieces of a cold start, in process, each a step of the shipped host.
fn cold(c: &mut Criterion) {
    let wasm = paths::module_path();
    let bytes = std::fs::read(&wasm).unwrap();
    let options = Setup::Deadline.options();
    let winch_options = Setup::Winch.options();
    let cwasm = paths::variants_path("gateway-cold.cwasm");
    runtime::precompile_file(&options, &wasm, &cwasm).unwrap();
    let cranelift = engine::build(&options, 1).unwrap();
    let winch = engine::build(&winch_options, 1).unwrap();
    let valid = corpus::cases().remove(0);

    let mut group = c.benchmark_group("cold/wasmtime");
    group.sample_size(10);
    group.bench_function("jit_cranelift", |b| {
        b.iter(|| engine::compile(&cranelift, black_box(&bytes), &wasm))
    });
    group.bench_function("jit_winch", |b| b.iter(|| engine::compile(&winch, black_box(&bytes), &wasm)));
    group.bench_function("deserialize_cwasm", |b| b.iter(|| engine::deserialize(&cranelift, &cwasm)));
    group.bench_function("engine_build", |b| b.iter(|| engine::build(&options, 1)));
    let module = engine::deserialize(&cranelift, &cwasm).unwrap();
    group.bench_function("instance_pre", |b| b.iter(|| Prepared::new(&cranelift, &module)));
    group.bench_function("first_instantiate", |b| {
        b.iter_batched(
            || Prepared::new(&cranelift, &module).unwrap(),
            |prepared| prepared.probe(&options),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("deserialize_instantiate_first_request", |b| {
        b.iter(|| {
            let module = engine::deserialize(&cranelift, &cwasm).unwrap();
            let runtime = Prepared::new(&cranelift, &module).unwrap().probe(&options).unwrap();
            runtime.decide_fresh(valid.head.as_bytes(), NOW as f64)
        })
    });
    group.finish();
}

criterion_group! { name = benches; config = gateway_benches::criterion_config(); targets = per_request, stages, cold }
criterion_main!(benches);
