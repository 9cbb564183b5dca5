//! The module (`dist/gateway.wasm`) in wasmtime: per request over the request
//! mix in each host mode, the stage breakdown by differences, and cold-start
//! pieces. (The size-table variants and the speed-up kernels are compared
//! interleaved by `bench-tool paired`.)
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use gateway_benches::corpus::{self, Case, NOW};
use gateway_benches::wasm::{self, Compiler, Prepared, Setup};

const NO_EPOCH: Setup = Setup { compiler: Compiler::Cranelift, pooling: true, epoch: false };
const ON_DEMAND: Setup = Setup { compiler: Compiler::Cranelift, pooling: false, epoch: true };
const WINCH: Setup = Setup { compiler: Compiler::Winch, pooling: true, epoch: true };

fn check(prepared: &Prepared, cases: &[Case]) {
    let mut instance = prepared.instantiate();
    for case in cases {
        let status = instance.handle(case.head.as_bytes(), NOW as f64);
        assert_eq!(status, case.status, "{}: {}", case.name, String::from_utf8_lossy(&instance.output()));
    }
}

fn cwasm_path(name: &str) -> PathBuf {
    let dir = wasm::root().join("target/bench-variants");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Reuse: one instance answers the whole mix, one request after another.
fn reuse(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    p: &Prepared,
) {
    let heads: Vec<Vec<u8>> = corpus::mix().into_iter().map(|c| c.head.into_bytes()).collect();
    let mut instance = p.instantiate();
    let mut i = 0usize;
    group.bench_function(id, |b| {
        b.iter(|| {
            let head = &heads[i % heads.len()];
            i += 1;
            instance.handle(black_box(head), NOW as f64)
        })
    });
}

/// Fresh: a new store and instance for every request of the mix.
fn fresh(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    p: &Prepared,
) {
    let heads: Vec<Vec<u8>> = corpus::mix().into_iter().map(|c| c.head.into_bytes()).collect();
    let mut i = 0usize;
    group.bench_function(id, |b| {
        b.iter(|| {
            let head = &heads[i % heads.len()];
            i += 1;
            p.fresh(black_box(head), NOW as f64)
        })
    });
}

fn per_request(c: &mut Criterion) {
    let bytes = wasm::read(wasm::MODULE);
    let mix = corpus::mix();
    let host = wasm::prepare(Setup::HOST, &bytes);
    check(&host, &mix);
    let no_epoch = wasm::prepare(NO_EPOCH, &bytes);
    let on_demand = wasm::prepare(ON_DEMAND, &bytes);
    let winch = wasm::prepare(WINCH, &bytes);
    check(&winch, &mix);
    // The same engine settings, the module loaded from a .cwasm instead.
    let engine = wasm::engine(Setup::HOST);
    let path = cwasm_path("gateway.cwasm");
    wasm::precompile(&engine, &bytes, &path);
    let cwasm = Prepared::new(&engine, &wasm::deserialize_file(&engine, &path), true);
    check(&cwasm, &mix);

    let mut group = c.benchmark_group("per_request/wasm");
    reuse(&mut group, "reuse_epoch", &host);
    reuse(&mut group, "reuse_no_epoch", &no_epoch);
    reuse(&mut group, "reuse_cwasm_epoch", &cwasm);
    reuse(&mut group, "reuse_winch_epoch", &winch);
    fresh(&mut group, "fresh_pooling_epoch", &host);
    fresh(&mut group, "fresh_pooling_no_epoch", &no_epoch);
    fresh(&mut group, "fresh_pooling_cwasm_epoch", &cwasm);
    fresh(&mut group, "fresh_on_demand_epoch", &on_demand);
    group.finish();

    // Each request of the mix on its own, reused instance.
    let mut group = c.benchmark_group("per_case/wasm_reuse");
    let mut instance = host.instantiate();
    for case in &mix {
        group.bench_function(case.name, |b| {
            b.iter(|| instance.handle(black_box(case.head.as_bytes()), NOW as f64))
        });
    }
    group.finish();
}

/// The shipped host (`host-sim`'s runtime): a Store with a memory limiter,
/// an epoch ticker thread, the output parsed into a decision.
fn host_sim_rows(c: &mut Criterion) {
    use host_sim::engine::{EngineOptions, Isolation, ModuleSource};
    use host_sim::instance::{Reusable, Runtime};
    let mix = corpus::mix();
    let heads: Vec<&[u8]> = mix.iter().map(|c| c.head.as_bytes()).collect();
    let module = wasm::root().join(wasm::MODULE);
    let deadline = EngineOptions::default();
    let no_deadline = EngineOptions { no_deadline: true, ..EngineOptions::default() };
    let cwasm = cwasm_path("gateway-host-sim.cwasm");
    host_sim::compile::compile_file(&deadline, &module, &cwasm).unwrap();
    let mut group = c.benchmark_group("per_request/host_sim");
    for (name, options, source) in [
        ("deadline", &deadline, ModuleSource::Wasm(module.clone())),
        ("no_deadline", &no_deadline, ModuleSource::Wasm(module.clone())),
        ("cwasm_deadline", &deadline, ModuleSource::Cwasm(cwasm.clone())),
    ] {
        let runtime = Runtime::load(options, &source, 4).unwrap();
        let mut reusable = Reusable::default();
        for case in &mix {
            let status = runtime.decide(Isolation::Reuse, &mut reusable, case.head.as_bytes(), NOW as f64);
            assert_eq!(status.map(|d| d.status()), Ok(case.status), "{}", case.name);
        }
        for isolation in [Isolation::Reuse, Isolation::Fresh] {
            let mode = if isolation == Isolation::Reuse { "reuse" } else { "fresh" };
            let mut i = 0usize;
            group.bench_function(format!("{mode}_{name}"), |b| {
                b.iter(|| {
                    let head = heads[i % heads.len()];
                    i += 1;
                    runtime.decide(isolation, &mut reusable, black_box(head), NOW as f64).is_ok()
                })
            });
        }
    }
    group.finish();
}

/// Requests that stop at successive phases; differences give each phase.
fn stages(c: &mut Criterion) {
    let bytes = wasm::read(wasm::MODULE);
    let phases = corpus::phases();
    corpus::check_native(&phases);
    let host = wasm::prepare(NO_EPOCH, &bytes);
    check(&host, &phases);
    let mut instance = host.instantiate();
    let mut group = c.benchmark_group("stages/wasm");
    for case in &phases {
        group.bench_function(case.name, |b| {
            b.iter(|| instance.handle(black_box(case.head.as_bytes()), NOW as f64))
        });
    }
    group.finish();
    // The same requests natively, so the two breakdowns use one method.
    let mut group = c.benchmark_group("stages/native_by_difference");
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    for case in &phases {
        group.bench_function(case.name, |b| {
            b.iter(|| {
                worker::handle(
                    black_box(case.head.as_bytes()),
                    NOW as f64,
                    &worker::config::COMPILED,
                    &mut scratch,
                )
                .status
            })
        });
    }
    group.finish();
}

/// The pieces of a cold start, in process.
fn cold(c: &mut Criterion) {
    let bytes = wasm::read(wasm::MODULE);
    let mut group = c.benchmark_group("cold/wasmtime");
    group.sample_size(10);
    let cranelift = wasm::engine(Setup::HOST);
    let winch = wasm::engine(WINCH);
    group.bench_function("jit_cranelift", |b| b.iter(|| wasm::compile(&cranelift, black_box(&bytes))));
    group.bench_function("jit_winch", |b| b.iter(|| wasm::compile(&winch, black_box(&bytes))));
    let path = cwasm_path("gateway-cold.cwasm");
    wasm::precompile(&cranelift, &bytes, &path);
    group.bench_function("deserialize_file_cwasm", |b| b.iter(|| wasm::deserialize_file(&cranelift, &path)));
    group.bench_function("engine_new_pooling", |b| b.iter(|| wasm::engine(Setup::HOST)));
    let module = wasm::compile(&cranelift, &bytes);
    group.bench_function("instance_pre", |b| b.iter(|| Prepared::new(&cranelift, &module, true)));
    let prepared = Prepared::new(&cranelift, &module, true);
    group.bench_function("instantiate_pooling", |b| b.iter(|| drop(prepared.instantiate())));
    let first = corpus::mix().remove(0);
    group.bench_function("deserialize_instantiate_first_request", |b| {
        b.iter(|| {
            let module = wasm::deserialize_file(&cranelift, &path);
            let prepared = Prepared::new(&cranelift, &module, true);
            prepared.fresh(first.head.as_bytes(), NOW as f64)
        })
    });
    group.finish();
}

criterion_group! { name = benches; config = gateway_benches::criterion_config(); targets = per_request, host_sim_rows, stages, cold }
criterion_main!(benches);
