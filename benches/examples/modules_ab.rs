//! Modules side by side in one process: each module decides the same
//! request mix in a reused instance and in fresh ones, in short batches
//! taken in turns (the order reversed every round), so that a change of load
//! or clock hits every module alike. Each figure is the lower quartile and
//! the median of the batch means, in µs per request, and its ratio to the
//! first module's. Run from the workspace root (the mix is minted with
//! gateway.toml's key).
//!
//! ```text
//! cargo build --release -p gateway-benches --example modules_ab
//! target/release/examples/modules_ab ROUNDS BATCH A.wasm B.wasm...
//! ```
#![allow(missing_docs)]

use std::time::Instant;

use runtime::engine;
use runtime::{EngineOptions, Prepared, Reusable, Runtime};
use testkit::mix::Mix;
use wasmtime::{Engine, Module};

/// The lower quartile and the median of `samples`.
fn quartile_and_median(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(f64::total_cmp);
    (samples[samples.len() / 4], samples[samples.len() / 2])
}

/// Stops with one line naming the module that cannot be run, and why.
fn fail(path: &str, error: &dyn std::fmt::Display) -> ! {
    eprintln!("error: {path}: {error}");
    std::process::exit(1);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let numbers = (
        args.get(1).and_then(|a| a.parse::<usize>().ok()),
        args.get(2).and_then(|a| a.parse::<usize>().ok()),
    );
    let (Some(rounds @ 1..), Some(batch @ 4..), [_, _, _, paths @ ..]) =
        (numbers.0, numbers.1, args.as_slice())
    else {
        eprintln!("usage: modules_ab ROUNDS BATCH A.wasm [B.wasm...]   (ROUNDS >= 1, BATCH >= 4 requests)");
        std::process::exit(2);
    };
    if paths.is_empty() {
        eprintln!("usage: modules_ab ROUNDS BATCH A.wasm [B.wasm...]: name at least one module");
        std::process::exit(2);
    }
    // Run from the workspace root: the mix is minted with gateway.toml's key.
    let config = gateway_config::load(std::path::Path::new("gateway.toml")).unwrap_or_else(|e| {
        eprintln!("error: {e} (run from the workspace root)");
        std::process::exit(1);
    });
    let now = runtime::unix_now() as u64;
    let requests = Mix::new(&config, now, 7).generate(4096);
    let now = now as f64;
    let options = EngineOptions::default();
    let runtimes: Vec<Runtime> = paths
        .iter()
        .map(|path| {
            let engine = Engine::new(&engine::config(&options, 4)).unwrap_or_else(|e| fail(path, &e));
            let bytes = std::fs::read(path).unwrap_or_else(|e| fail(path, &e));
            let module = Module::new(&engine, bytes).unwrap_or_else(|e| fail(path, &e));
            Prepared::new(&engine, &module)
                .and_then(|prepared| prepared.probe(&options))
                .and_then(|runtime| runtime.start_ticker(&options))
                .unwrap_or_else(|e| fail(path, &e))
        })
        .collect();
    let mut slots: Vec<Reusable> = paths.iter().map(|_| Reusable::default()).collect();
    let mut reused: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    let mut fresh: Vec<Vec<f64>> = vec![Vec::new(); paths.len()];
    for round in 0..rounds {
        let mut order: Vec<usize> = (0..paths.len()).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        let start = (round * batch) % requests.len();
        for &i in &order {
            let runtime = &runtimes[i];
            let batch_requests = requests.iter().cycle().skip(start).take(batch);
            let t = Instant::now();
            for request in batch_requests.clone() {
                if let Err(e) = runtime.decide_reused(&mut slots[i], request.head.as_bytes(), now) {
                    fail(&paths[i], &e);
                }
            }
            reused[i].push(t.elapsed().as_secs_f64() * 1e6 / batch as f64);
            let t = Instant::now();
            for request in batch_requests.take(batch / 4) {
                if let Err(e) = runtime.decide_fresh(request.head.as_bytes(), now) {
                    fail(&paths[i], &e);
                }
            }
            fresh[i].push(t.elapsed().as_secs_f64() * 1e6 / (batch / 4) as f64);
        }
    }
    let figures: Vec<((f64, f64), (f64, f64))> = (0..paths.len())
        .map(|i| (quartile_and_median(reused[i].clone()), quartile_and_median(fresh[i].clone())))
        .collect();
    let ((base_rq, base_rm), (base_fq, base_fm)) = figures[0];
    println!(
        "{:<40} {:>16} {:>16} {:>16} {:>16}",
        "module", "reused q1", "reused median", "fresh q1", "fresh median"
    );
    for (path, ((rq, rm), (fq, fm))) in paths.iter().zip(figures) {
        println!(
            "{path:<40} {rq:>7.3} ({:.3}x) {rm:>7.3} ({:.3}x) {fq:>7.3} ({:.3}x) {fm:>7.3} ({:.3}x)",
            rq / base_rq,
            rm / base_rm,
            fq / base_fq,
            fm / base_fm
        );
    }
}
