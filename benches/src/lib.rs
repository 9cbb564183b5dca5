//! The gateway's benchmarks, side by side with their peers.
//!
//! - [`corpus`]: the request heads every benchmark uses (the same bytes for
//!   the native rlib, the module in wasmtime, Node.js and the HTTP runs);
//! - [`http`]: a keep-alive client and the microservice peer;
//! - [`wasm`]: the module in wasmtime, configured the way each row needs;
//! - [`latency`]: per-call latency histograms and their percentiles;
//! - [`svg`]: the charts of `docs/PERFORMANCE.md`, drawn from those histograms.
//!
//! `benches/run.sh` (`make bench`) runs everything and writes the report.

pub mod corpus;
pub mod http;
pub mod latency;
pub mod svg;
pub mod wasm;

/// The criterion settings every bench file shares: short runs, so that
/// `make bench` stays around ten minutes (`benches/run.sh` passes
/// `--warm-up-time` and `--measurement-time` to lengthen them).
pub fn criterion_config() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(1))
        .sample_size(30)
        .configure_from_args()
}
