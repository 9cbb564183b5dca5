//! `bench-tool`: what criterion does not measure, and the report.
//! `benches/run.sh` (`make bench`) calls it; `--help` lists the commands.
//! This file parses the arguments and hands each command to its own file,
//! except the two short ones (`corpus`, `latency`) below.
#![allow(clippy::unwrap_used)]

mod host_bench;
mod load;
mod paired;
mod report;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gateway_benches::corpus::{self, NOW};
use gateway_benches::host::Setup;
use gateway_benches::latency::{Series, record};
use runtime::{Isolation, Reusable};
use worker::config::COMPILED;

/// What criterion does not measure: the host end to end, latency
/// histograms, interleaved comparisons, HTTP load; and the report.
#[derive(Debug, Parser)]
#[command(name = "bench-tool", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The shipped host end to end: cold-start steps, warm latency in both
    /// isolation modes over the request mix, memory, the deadline's cost.
    Host(host_bench::HostArgs),
    /// The request corpus and the config as JSON, for Node.js.
    Corpus {
        /// Where to write it.
        file: PathBuf,
    },
    /// Per-call latency histograms (native, wasmtime modes, microservice) as JSON.
    Latency {
        /// Where to write them.
        file: PathBuf,
    },
    /// A/B comparisons measured interleaved (JIT and .cwasm, the deadline,
    /// module variants, speed-up kernels) as JSON.
    Paired {
        /// Where to write them.
        file: PathBuf,
        /// Only this comparison (`instances`, `fetched_keys`, `rules`), for a quick look.
        #[arg(long)]
        only: Option<String>,
    },
    /// Modules side by side, measured interleaved as `paired` measures: each
    /// decides the request mix in a reused instance and in fresh ones, with
    /// the deadline on; each figure's ratio to the first module's, and a
    /// control (the first module again) that shows the run's resolution.
    Modules {
        /// The modules (.wasm), the first the one the others are compared with.
        #[arg(required = true)]
        wasm: Vec<PathBuf>,
    },
    /// An open-loop HTTP load at a fixed rate; latency from each request's
    /// scheduled start as well as its round trip.
    Load(load::LoadArgs),
    /// docs/PERFORMANCE.md from the results `benches/run.sh` left in DIR.
    Report {
        /// The results directory (target/bench-results).
        dir: PathBuf,
        /// The report to write.
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Host(args) => host_bench::run(&args),
        Command::Corpus { file } => write_corpus(&file),
        Command::Latency { file } => latency(&file),
        Command::Paired { file, only } => paired::run(&file, only.as_deref()),
        Command::Modules { wasm } => paired::modules(&wasm),
        Command::Load(args) => load::run(&args),
        Command::Report { dir, out } => report::run(&dir, &out),
    }
}

/// `bench-tool corpus`: the corpus as JSON for `benches/node/bench.mjs` and `benches/run.sh`:
/// the config, the mix, one case per kind (with its token) and the phases.
fn write_corpus(path: &std::path::Path) -> ExitCode {
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
        "abi_version": contract::ABI_VERSION,
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
    eprintln!("wrote {}", path.display());
    ExitCode::SUCCESS
}

fn latency(path: &std::path::Path) -> ExitCode {
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
    eprintln!("wrote {}", path.display());
    ExitCode::SUCCESS
}
