//! The gateway's one measurement system: every figure of
//! `docs/PERFORMANCE.md` is measured here, side by side with its peers, and
//! written there only (`make bench`, `benches/run.sh`).
//!
//! - [`paths`]: the workspace's files the benches read and write;
//! - [`corpus`]: the requests every benchmark sends (the one request mix of
//!   `testkit::mix`, one request per kind, the phase requests);
//! - [`host`]: the module in the shipped runtime, one engine setting
//!   changed per row;
//! - [`variants`]: the module variants of the size table;
//! - [`http`]: a keep-alive client and the microservice peer;
//! - [`latency`]: per-call latency histograms and their percentiles;
//! - [`table`]: the report's Markdown tables.
//!
//! A figure is named `group/name`, criterion's id: the bench files register
//! it, the other tools write it under that name, and the report looks it up
//! by it (a figure it asks for and the run did not produce fails the report
//! with its name).

pub mod corpus;
pub mod host;
pub mod http;
pub mod latency;
pub mod paths;
pub mod table;
pub mod variants;

use criterion::Criterion;

/// The criterion settings every bench file shares: short runs, so that
/// `make bench` stays around ten minutes (`benches/run.sh` passes
/// `--warm-up-time` and `--measurement-time` to lengthen them).
pub fn criterion_config() -> Criterion {
    Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(1))
        .sample_size(30)
        .configure_from_args()
}
