//! The gateway's benchmarks, side by side with their peers.
//!
//! - [`corpus`]: the requests every benchmark sends (the one request mix of
//!   `testkit::mix`, one request per kind, the phase requests);
//! - [`host`]: the module in the shipped host (`host_sim::engine`,
//!   `host_sim::instance`), one engine setting changed per row;
//! - [`ids`]: every figure's name, shared by the bench files and the report;
//! - [`http`]: a keep-alive client and the microservice peer;
//! - [`latency`]: per-call latency histograms and their percentiles;
//! - [`svg`]: the charts of `docs/PERFORMANCE.md`, drawn from those histograms;
//! - [`table`], [`template`]: the report's tables and its prose.
//!
//! `benches/run.sh` (`make bench`) runs everything and writes the report.

pub mod corpus;
pub mod host;
pub mod http;
pub mod ids;
pub mod latency;
pub mod svg;
pub mod table;
pub mod template;

use criterion::measurement::WallTime;
use criterion::{Bencher, BenchmarkGroup, Criterion};

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

/// A criterion benchmark group named by an [`ids::Group`]: its benchmarks
/// are registered by [`ids::Id`], so the report finds them under the same names.
pub struct BenchGroup<'a> {
    group: ids::Group,
    inner: BenchmarkGroup<'a, WallTime>,
}

impl<'a> BenchGroup<'a> {
    /// Opens `group` in `c`.
    pub fn new(c: &'a mut Criterion, group: ids::Group) -> Self {
        assert!(matches!(group.tool, ids::Tool::Criterion(_)), "{} is not a criterion group", group.name);
        BenchGroup { group, inner: c.benchmark_group(group.name) }
    }

    /// Benchmarks `routine` as `id`, which must belong to this group.
    pub fn bench(&mut self, id: ids::Id, routine: impl FnMut(&mut Bencher<'_, WallTime>)) {
        assert_eq!(id.group, self.group, "{} registered in {}", id.full(), self.group.name);
        self.inner.bench_function(id.name, routine);
    }

    /// Fewer samples, for slow routines.
    pub fn sample_size(&mut self, n: usize) {
        self.inner.sample_size(n);
    }

    /// Closes the group.
    pub fn finish(self) {
        self.inner.finish();
    }
}
