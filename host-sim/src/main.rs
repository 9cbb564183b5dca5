//! `host-sim`: compile, evaluate and serve the gateway module on wasmtime.
//! This file only parses the arguments and dispatches.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc instead of the system allocator: serving allocates and frees
/// small buffers on every request (hyper's, the header maps, the Store),
/// and glibc's malloc and free were 8% of the CPU `serve` spent per
/// forward (`docs/PERFORMANCE.md`, "Issue 22's levers of 2026-12-02").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The wasmtime host for the gateway module (dist/gateway.wasm).
#[derive(Debug, Parser)]
#[command(name = "host-sim", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Precompile a .wasm into a .cwasm for these engine settings.
    Compile(host_sim::compile::CompileArgs),
    /// Decide requests read as JSON Lines on stdin; one JSON line out per request.
    Eval(host_sim::eval::EvalArgs),
    /// Serve HTTP/1.1: run each request head through the module, forward or reject.
    #[command(after_help = host_sim::traffic::HELP)]
    Serve(Box<host_sim::serve::ServeArgs>),
    /// Run an echo upstream that describes each request it receives as JSON.
    Upstream(host_sim::echo::UpstreamArgs),
    /// Mint a token signed with the gateway config's key (the demo key).
    Token(host_sim::mint::TokenArgs),
    /// Moved: the host's measurements are `bench-tool host` (same flags).
    #[command(hide = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Compile(args) => host_sim::compile::run(&args),
        Command::Eval(args) => host_sim::eval::run(&args),
        Command::Serve(args) => host_sim::serve::run(&args),
        Command::Upstream(args) => host_sim::echo::run(&args),
        Command::Token(args) => host_sim::mint::run(&args),
        Command::Bench { .. } => {
            eprintln!(
                "error: `host-sim bench` moved to the benches: run `target/release/bench-tool host` (`--wasm`, `--cwasm`, `--requests`, `--cold-runs`, `--json` as before; `make host` builds it)"
            );
            ExitCode::from(2)
        }
    }
}
