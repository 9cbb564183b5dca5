//! `bench-tool`: what criterion does not do. `benches/run.sh` calls it.
//!
//! - `corpus FILE`: the request corpus and config as JSON, for Node.js;
//! - `latency FILE`: per-call latency histograms (native, wasmtime modes,
//!   microservice) as JSON;
//! - `load URL RATE SECONDS CONNECTIONS GROUP NAME FILE`: an open-loop HTTP
//!   load at a fixed rate, latency from each request's scheduled start;
//! - `paired FILE`: A/B comparisons measured interleaved (JIT vs `.cwasm`,
//!   epoch, module variants, speed-up kernels) as JSON;
//! - `report DIR OUT`: `docs/PERFORMANCE.md` from the results in DIR.
#![allow(clippy::unwrap_used)]

mod load;
mod paired;
mod report;

use gateway_benches::corpus::{self, NOW};
use gateway_benches::latency::{Series, record};
use gateway_benches::wasm::{self, Compiler, Setup};
use worker::config::COMPILED;

fn usage() -> ! {
    eprintln!(
        "usage: bench-tool corpus FILE | latency FILE | paired FILE | load URL RATE SECONDS CONNECTIONS GROUP NAME FILE | report DIR OUT"
    );
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_else(|| usage());
    match args.first().map(String::as_str) {
        Some("corpus") => write_corpus(&arg(1)),
        Some("latency") => latency(&arg(1)),
        Some("load") => load::run(&args[1..]),
        Some("paired") => paired::run(&arg(1)),
        Some("report") => report::write(&arg(1), &arg(2)),
        _ => usage(),
    }
}

fn write_corpus(path: &str) {
    let (kid, secret) = corpus::key();
    let json = serde_json::json!({
        "now": NOW,
        "kid": kid,
        "secret_hex": secret.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "issuer": COMPILED.issuer,
        "leeway": COMPILED.leeway_secs,
        "realm": COMPILED.realm,
        "routes": COMPILED.routes.iter().map(|r| serde_json::json!({"aud": r.audience, "upstream": format!("{}{}", r.origin, r.base_path)})).collect::<Vec<_>>(),
        "mix": corpus::mix(),
        "phases": corpus::phases(),
    });
    std::fs::write(path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    eprintln!("wrote {path}");
}

fn latency(path: &str) {
    const CALLS: usize = 200_000;
    const FRESH_CALLS: usize = 50_000;
    let mix = corpus::mix();
    corpus::check_native(&mix);
    let heads: Vec<&[u8]> = mix.iter().map(|c| c.head.as_bytes()).collect();
    let now = NOW as f64;
    let mut out = Vec::new();
    let group = "per_request";

    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    let h = record(10_000, CALLS, |i| {
        std::hint::black_box(worker::handle(heads[i % heads.len()], now, &COMPILED, &mut scratch).status);
    });
    out.push(Series::of(group, "native rlib", &h));
    eprintln!("  native done");

    let bytes = wasm::read(wasm::MODULE);
    for (name, setup) in [
        ("wasm reuse, epoch", Setup::HOST),
        ("wasm reuse, no epoch", Setup { epoch: false, ..Setup::HOST }),
        ("wasm reuse, Winch", Setup { compiler: Compiler::Winch, ..Setup::HOST }),
    ] {
        let prepared = wasm::prepare(setup, &bytes);
        let mut instance = prepared.instantiate();
        let h = record(10_000, CALLS, |i| {
            std::hint::black_box(instance.handle(heads[i % heads.len()], now));
        });
        out.push(Series::of(group, name, &h));
        eprintln!("  {name} done");
    }
    for (name, setup) in [
        ("wasm fresh, pooling, epoch", Setup::HOST),
        ("wasm fresh, pooling, no epoch", Setup { epoch: false, ..Setup::HOST }),
        ("wasm fresh, on-demand, epoch", Setup { pooling: false, ..Setup::HOST }),
    ] {
        let prepared = wasm::prepare(setup, &bytes);
        let h = record(2_000, FRESH_CALLS, |i| {
            std::hint::black_box(prepared.fresh(heads[i % heads.len()], now));
        });
        out.push(Series::of(group, name, &h));
        eprintln!("  {name} done");
    }

    let addr = gateway_benches::http::spawn_microservice(now).unwrap();
    let mut client = gateway_benches::http::Client::connect(addr).unwrap();
    let h = record(2_000, FRESH_CALLS, |i| {
        std::hint::black_box(client.round_trip(heads[i % heads.len()]).unwrap());
    });
    out.push(Series::of(group, "microservice, loopback keep-alive", &h));
    eprintln!("  microservice done");

    std::fs::write(path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
    eprintln!("wrote {path}");
}
