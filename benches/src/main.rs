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
use gateway_benches::host::Setup;
use gateway_benches::latency::{Series, record};
use host_sim::engine::Isolation;
use host_sim::instance::Reusable;
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
        Some("report") => std::process::exit(report::run(&arg(1), &arg(2))),
        _ => usage(),
    }
}

/// The corpus as JSON for `benches/node/bench.mjs` and `benches/run.sh`:
/// the config, the mix, one case per kind (with its token) and the phases.
fn write_corpus(path: &str) {
    corpus::check_native();
    let (kid, secret) = testkit::tokens::first_key(corpus::config()).expect("a key");
    let request = |r: &testkit::mix::Request| {
        serde_json::json!({
            "name": corpus::slug(r.kind),
            "head": r.head,
            "status": r.kind.expected_status(),
            "token": corpus::bearer(&r.head),
        })
    };
    let json = serde_json::json!({
        "now": NOW,
        "seed": corpus::SEED,
        "kid": kid,
        "secret_hex": secret.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "issuer": COMPILED.issuers.first().and_then(|i| i.iss),
        "leeway": COMPILED.issuers.first().map(|i| i.leeway_secs),
        "realm": COMPILED.realm,
        "routes": COMPILED.routes.iter().map(|r| serde_json::json!({"aud": r.audience, "upstream": format!("{}{}", r.origin, r.base_path)})).collect::<Vec<_>>(),
        "mix": corpus::mix().iter().map(request).collect::<Vec<_>>(),
        "cases": corpus::cases().iter().map(request).collect::<Vec<_>>(),
        "phases": corpus::phases(),
    });
    std::fs::write(path, serde_json::to_string_pretty(&json).expect("JSON")).expect("write the corpus");
    eprintln!("wrote {path}");
}

fn latency(path: &str) {
    const CALLS: usize = 200_000;
    const FRESH_CALLS: usize = 50_000;
    corpus::check_native();
    let heads = corpus::heads(&corpus::mix());
    let now = NOW as f64;
    let mut out = Vec::new();
    let group = "per_request";

    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    let h = record(10_000, CALLS, |i| {
        std::hint::black_box(worker::handle(&heads[i % heads.len()], now, &COMPILED, &mut scratch).status);
    });
    out.push(Series::of(group, "native rlib", &h));
    eprintln!("  native done");

    for (name, setup, isolation, warmup, calls) in [
        ("wasmtime reuse, deadline", Setup::Deadline, Isolation::Reuse, 10_000, CALLS),
        ("wasmtime reuse, no deadline", Setup::NoDeadline, Isolation::Reuse, 10_000, CALLS),
        ("wasmtime reuse, Winch", Setup::Winch, Isolation::Reuse, 10_000, CALLS),
        ("wasmtime fresh, deadline", Setup::Deadline, Isolation::Fresh, 2_000, FRESH_CALLS),
        ("wasmtime fresh, no deadline", Setup::NoDeadline, Isolation::Fresh, 2_000, FRESH_CALLS),
        ("wasmtime fresh, on-demand allocator", Setup::OnDemand, Isolation::Fresh, 2_000, FRESH_CALLS),
    ] {
        let runtime = setup.load();
        let mut reusable = Reusable::default();
        let h = record(warmup, calls, |i| {
            let _ =
                std::hint::black_box(runtime.decide(isolation, &mut reusable, &heads[i % heads.len()], now));
        });
        out.push(Series::of(group, name, &h));
        eprintln!("  {name} done");
    }

    let addr = gateway_benches::http::spawn_microservice(now).expect("microservice");
    let mut client = gateway_benches::http::Client::connect(addr).expect("connect");
    let h = record(2_000, FRESH_CALLS, |i| {
        std::hint::black_box(client.round_trip(&heads[i % heads.len()]).expect("round trip"));
    });
    out.push(Series::of(group, "microservice, loopback keep-alive", &h));
    eprintln!("  microservice done");

    std::fs::write(path, serde_json::to_string_pretty(&out).expect("JSON")).expect("write");
    eprintln!("wrote {path}");
}
