//! The module (`dist/gateway.wasm`) in the shipped host (`host_sim::engine`
//! and `host_sim::instance`): per request over the mix in each setup and
//! isolation mode, each request kind, the stage breakdown by differences,
//! and the pieces of a cold start. (The size-table variants and the
//! speed-up kernels are compared interleaved by `bench-tool paired`.)
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use gateway_benches::corpus::{self, NOW};
use gateway_benches::host::{self, Setup};
use gateway_benches::{BenchGroup, ids};
use host_sim::engine::{self, Isolation};
use host_sim::instance::{Prepared, Reusable};

/// Each setup over the mix, in a reused and in fresh instances. Each row
/// loads its own runtime and drops it after, so only one epoch ticker runs.
fn per_request(c: &mut Criterion) {
    corpus::check_native();
    let heads = corpus::heads(&corpus::mix());
    let mut group = BenchGroup::new(c, ids::PER_REQUEST_WASMTIME);
    for (id, setup, isolation) in [
        (ids::REUSE_DEADLINE, Setup::Deadline, Isolation::Reuse),
        (ids::REUSE_NO_DEADLINE, Setup::NoDeadline, Isolation::Reuse),
        (ids::REUSE_CWASM, Setup::Cwasm, Isolation::Reuse),
        (ids::REUSE_WINCH, Setup::Winch, Isolation::Reuse),
        (ids::FRESH_DEADLINE, Setup::Deadline, Isolation::Fresh),
        (ids::FRESH_NO_DEADLINE, Setup::NoDeadline, Isolation::Fresh),
        (ids::FRESH_CWASM, Setup::Cwasm, Isolation::Fresh),
        (ids::FRESH_ON_DEMAND, Setup::OnDemand, Isolation::Fresh),
    ] {
        let runtime = setup.load();
        let mut reusable = Reusable::default();
        let mut i = 0usize;
        group.bench(id, |b| {
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
    let mut group = BenchGroup::new(c, ids::PER_KIND_WASMTIME);
    for case in corpus::cases() {
        group.bench(ids::PER_KIND_WASMTIME.id(corpus::slug(case.kind)), |b| {
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
    let mut group = BenchGroup::new(c, ids::STAGES_WASMTIME);
    for phase in &phases {
        group.bench(ids::STAGES_WASMTIME.id(phase.name), |b| {
            b.iter(|| runtime.decide_reused(&mut reusable, black_box(phase.head.as_bytes()), NOW as f64))
        });
    }
    group.finish();
    // The same requests natively, so the two breakdowns use one method.
    let mut group = BenchGroup::new(c, ids::STAGES_NATIVE_BY_DIFFERENCE);
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    for phase in &phases {
        let input = corpus::input(&phase.head);
        group.bench(ids::STAGES_NATIVE_BY_DIFFERENCE.id(phase.name), |b| {
            b.iter(|| {
                worker::handle(black_box(&input), NOW as f64, &worker::config::COMPILED, &mut scratch).status
            })
        });
    }
    group.finish();
}

/// The pieces of a cold start, in process, each a step of the shipped host.
fn cold(c: &mut Criterion) {
    let wasm = host::module_path();
    let bytes = std::fs::read(&wasm).unwrap();
    let options = Setup::Deadline.options();
    let winch_options = Setup::Winch.options();
    let cwasm = host::variants_path("gateway-cold.cwasm");
    host_sim::compile::compile_file(&options, &wasm, &cwasm).unwrap();
    let cranelift = engine::build(&options, 1).unwrap();
    let winch = engine::build(&winch_options, 1).unwrap();
    let valid = corpus::cases().remove(0);

    let mut group = BenchGroup::new(c, ids::COLD);
    group.sample_size(10);
    group
        .bench(ids::COLD_JIT_CRANELIFT, |b| b.iter(|| engine::compile(&cranelift, black_box(&bytes), &wasm)));
    group.bench(ids::COLD_JIT_WINCH, |b| b.iter(|| engine::compile(&winch, black_box(&bytes), &wasm)));
    group.bench(ids::COLD_DESERIALIZE, |b| b.iter(|| engine::deserialize(&cranelift, &cwasm)));
    group.bench(ids::COLD_ENGINE, |b| b.iter(|| engine::build(&options, 1)));
    let module = engine::deserialize(&cranelift, &cwasm).unwrap();
    group.bench(ids::COLD_INSTANCE_PRE, |b| b.iter(|| Prepared::new(&cranelift, &module)));
    group.bench(ids::COLD_FIRST_INSTANCE, |b| {
        b.iter_batched(
            || Prepared::new(&cranelift, &module).unwrap(),
            |prepared| prepared.probe(&options),
            BatchSize::SmallInput,
        )
    });
    group.bench(ids::COLD_FIRST_REQUEST, |b| {
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
