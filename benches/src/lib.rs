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
