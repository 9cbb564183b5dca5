//! `bench-tool host`: the shipped host end to end in one process. Cold
//! start broken down step by step, warm per-request latency in both
//! isolation modes over a realistic request mix, and memory.
//!
//! Cold start repeats every step on a new engine each run and reports the
//! median and the spread. Warm latency times each request on its own and
//! records it in an HDR histogram. Nothing here asserts a duration: it measures.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use contract::Decision;
use runtime::{
    Compiler, EngineOptions, GuestError, Isolation, LoadError, ModuleSource, Outcome, Prepared, Reusable,
    Runtime, engine, unix_now,
};
use testkit::mix::{Mix, Request, RequestKind};

mod table;

/// `bench-tool host` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct HostArgs {
    /// The WebAssembly module to compile and run (default: dist/gateway.wasm).
    #[arg(long, value_name = "PATH", conflicts_with = "cwasm")]
    pub wasm: Option<PathBuf>,
    /// A precompiled module from `host-sim compile` (with the same engine flags).
    #[arg(long, value_name = "PATH")]
    pub cwasm: Option<PathBuf>,
    /// The compiler for .wasm input: cranelift or winch.
    #[arg(long, default_value = "cranelift")]
    pub strategy: Compiler,
    /// Compiled without epoch interruption: no CPU deadline.
    #[arg(long)]
    pub no_deadline: bool,
    /// Warm requests per isolation mode.
    #[arg(long, default_value_t = 100_000)]
    pub requests: usize,
    /// Cold starts to repeat (each on a new engine).
    #[arg(long, default_value_t = 20)]
    pub cold_runs: usize,
    /// The gateway config whose key mints the request mix.
    #[arg(long, default_value = "gateway.toml")]
    pub config: PathBuf,
    /// The request mix's seed.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Median and spread of one cold-start step, in microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    /// The median.
    pub median_us: f64,
    /// The fastest run.
    pub min_us: f64,
    /// The slowest run.
    pub max_us: f64,
}

impl Spread {
    fn of(mut samples: Vec<Duration>) -> Spread {
        samples.sort();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        Spread {
            median_us: samples.get(samples.len() / 2).map_or(0.0, |d| us(*d)),
            min_us: samples.first().map_or(0.0, |d| us(*d)),
            max_us: samples.last().map_or(0.0, |d| us(*d)),
        }
    }
}

/// The cold-start steps.
#[derive(Debug, Clone, Serialize)]
pub struct ColdStart {
    /// How many runs.
    pub runs: usize,
    /// `Engine::new` with the pooling allocator.
    pub engine: Spread,
    /// JIT compile of the .wasm, or deserialize of the .cwasm.
    pub module: Spread,
    /// What `module` was: "jit" or "deserialize".
    pub module_step: &'static str,
    /// Contract check and `InstancePre`.
    pub instance_pre: Spread,
    /// The first instantiation (with the abi_version check).
    pub first_instantiate: Spread,
    /// The first request in a fresh instance.
    pub first_request: Spread,
    /// Module + InstancePre + first instantiate + first request (engine excluded: one per process).
    pub total_without_engine: Spread,
    /// The same start with the host's warm-up before the first request
    /// ([`Runtime::warm_up`], as `host-sim serve` does before it listens),
    /// measured in the same runs on an engine of its own.
    pub warmed: WarmedStart,
}

/// A cold start whose host decides its warm-up request before serving: the
/// warm-up moves the first request's one-time costs before the first client
/// request, it does not remove them.
#[derive(Debug, Clone, Serialize)]
pub struct WarmedStart {
    /// `Runtime::warm_up`: the fixed request in the first instance, and its drop.
    pub warm_up: Spread,
    /// The first client request after it (a new instance in the warm slot).
    pub first_client_request: Spread,
    /// Module + InstancePre + first instantiate + warm-up + first client request.
    pub total_with_warm_up: Spread,
}

/// Latency percentiles of one mode, in microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Requests measured.
    pub requests: u64,
    /// Percentiles.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// The slowest request.
    pub max_us: f64,
    /// The mean.
    pub mean_us: f64,
    /// One core's throughput: 1 / mean.
    pub requests_per_sec_per_core: f64,
    /// Answers that differed from what the mix expected, deadline hits aside (should be 0).
    pub unexpected: u64,
    /// Requests stopped by the CPU deadline (the guest's own CPU time on
    /// its thread; should be 0 for this module).
    pub deadline_hits: u64,
    /// The median per kind of request, µs.
    pub p50_by_kind_us: std::collections::BTreeMap<String, f64>,
}

impl HostArgs {
    /// The module.
    fn source(&self) -> ModuleSource {
        ModuleSource::from_flags(self.wasm.as_deref(), self.cwasm.as_deref())
    }

    /// The runtime's defaults with the flags' changes.
    fn options(&self) -> EngineOptions {
        EngineOptions { strategy: self.strategy, no_deadline: self.no_deadline, ..EngineOptions::default() }
    }
}

impl Latency {
    fn of(
        hist: &Histogram<u64>,
        (unexpected, deadline_hits): (u64, u64),
        by_kind: &[(RequestKind, Histogram<u64>)],
    ) -> Latency {
        let us = |ns: u64| ns as f64 / 1000.0;
        let mean = hist.mean();
        Latency {
            requests: hist.len(),
            p50_us: us(hist.value_at_quantile(0.50)),
            p90_us: us(hist.value_at_quantile(0.90)),
            p99_us: us(hist.value_at_quantile(0.99)),
            p999_us: us(hist.value_at_quantile(0.999)),
            max_us: us(hist.max()),
            mean_us: mean / 1000.0,
            requests_per_sec_per_core: if mean > 0.0 { 1e9 / mean } else { 0.0 },
            unexpected,
            deadline_hits,
            p50_by_kind_us: by_kind
                .iter()
                .map(|(kind, h)| (kind.name().to_owned(), us(h.value_at_quantile(0.5))))
                .collect(),
        }
    }
}

/// Resident memory.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryFigures {
    /// The process's VmRSS after the warm runs, KiB.
    pub process_rss_kib: u64,
    /// Resident memory one live instance slot adds, KiB (measured over several live instances).
    pub per_instance_kib: f64,
    /// How many instances were held live for that figure.
    pub instances_measured: usize,
}

/// The epoch deadline's cost, measured in the reuse mode.
#[derive(Debug, Clone, Serialize)]
pub struct EpochCost {
    /// Requests per side.
    pub requests: u64,
    /// Mean with epoch interruption, µs.
    pub with_deadline_mean_us: f64,
    /// Mean without, µs.
    pub without_deadline_mean_us: f64,
    /// p50 with, µs.
    pub with_deadline_p50_us: f64,
    /// p50 without, µs.
    pub without_deadline_p50_us: f64,
}

/// The mix where each token is presented many times, on a reused instance
/// (whose cache of verified tokens can serve the repeats). Kept apart from
/// the headline figures, whose tokens are all new to the module.
#[derive(Debug, Clone, Serialize)]
pub struct Repeated {
    /// How many times each token is presented.
    pub presentations: usize,
    /// How many clients send their tokens interleaved.
    pub clients: usize,
    /// First and second presentations: verified in full (the module admits
    /// a token to its cache on its second verification).
    pub misses: Latency,
    /// Third and later presentations: cache hits for every token that verifies.
    pub hits: Latency,
}

/// One group's latencies: all, per kind, and (unexpected, deadline hits).
type Group = (Histogram<u64>, Vec<(RequestKind, Histogram<u64>)>, (u64, u64));

/// Times `n` requests of a repeated mix (cycled) on one reused instance,
/// the first two presentations of a token apart from the later ones.
pub fn warm_repeated(
    runtime: &Runtime,
    requests: &[(Request, usize)],
    n: usize,
    now: f64,
) -> (Latency, Latency) {
    let new_hist =
        || Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds");
    let new_group =
        || -> Group { (new_hist(), RequestKind::ALL.iter().map(|k| (*k, new_hist())).collect(), (0, 0)) };
    let mut groups = [new_group(), new_group()];
    let mut reusable = Reusable::default();
    for (request, _) in requests.iter().take(n / 20) {
        let _ = runtime.decide(Isolation::Reuse, &mut reusable, request.head.as_bytes(), now);
    }
    for (request, before) in requests.iter().cycle().take(n) {
        let start = Instant::now();
        let outcome = runtime.decide(Isolation::Reuse, &mut reusable, request.head.as_bytes(), now);
        let ns = (start.elapsed().as_nanos() as u64).max(1);
        let (hist, by_kind, (unexpected, deadline_hits)) = &mut groups[usize::from(*before >= 2)];
        let _ = hist.record(ns);
        if let Some((_, h)) = by_kind.iter_mut().find(|(k, _)| *k == request.kind) {
            let _ = h.record(ns);
        }
        if outcome == Err(GuestError::Deadline) {
            *deadline_hits += 1;
        } else if !matches(request, &outcome) {
            *unexpected += 1;
        }
    }
    let [misses, hits] = groups.map(|(hist, by_kind, counts)| Latency::of(&hist, counts, &by_kind));
    (misses, hits)
}

/// Everything `bench` measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The module file.
    pub module: String,
    /// "wasm" or "cwasm".
    pub source: &'static str,
    /// The compiler.
    pub strategy: String,
    /// The CPU deadline, ms (None: off).
    pub deadline_ms: Option<f64>,
    /// The memory cap, bytes.
    pub memory_cap: u64,
    /// Cold start.
    pub cold_start: ColdStart,
    /// Warm latency, a fresh instance per request.
    pub fresh: Latency,
    /// Warm latency, one reused instance.
    pub reuse: Latency,
    /// Memory.
    pub memory: MemoryFigures,
    /// The deadline's cost (JIT input only: it needs a second compile).
    pub epoch: Option<EpochCost>,
    /// Each token presented many times, reused instance (cache hits apart).
    pub repeated: Repeated,
}

/// The process's resident memory from `/proc/self/status` (VmRSS), KiB.
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

/// A progress line on stderr, rewritten in place.
struct Progress {
    enabled: bool,
}

impl Progress {
    fn show(&self, text: &str) {
        if self.enabled {
            eprint!("\r\x1b[2K{text}");
        }
    }
    fn done(&self) {
        if self.enabled {
            eprint!("\r\x1b[2K");
        }
    }
}

/// Measures cold start `runs` times.
pub fn cold_start(
    options: &EngineOptions,
    source: &ModuleSource,
    head: &[u8],
    now: f64,
    runs: usize,
) -> Result<ColdStart, LoadError> {
    let mut steps: [Vec<Duration>; 6] = Default::default();
    let mut warmed: [Vec<Duration>; 3] = Default::default();
    for _ in 0..runs.max(1) {
        // The warmed start first, then the plain one: each on a new engine.
        let engine = engine::build(options, 1)?;
        let t1 = Instant::now();
        let runtime = Prepared::new(&engine, &engine::load(&engine, source)?)?.probe(options)?;
        let t2 = Instant::now();
        runtime.warm_up().map_err(|e| LoadError::Instantiate(format!("warm-up failed: {e}")))?;
        let t3 = Instant::now();
        let outcome = runtime.decide_fresh(head, now);
        let t4 = Instant::now();
        if outcome.is_err() {
            return Err(LoadError::Instantiate(format!("first request failed: {outcome:?}")));
        }
        for (i, d) in [t3 - t2, t4 - t3, t4 - t1].into_iter().enumerate() {
            warmed[i].push(d);
        }
        drop(runtime);
        drop(engine);

        let t0 = Instant::now();
        let engine = engine::build(options, 1)?;
        let t1 = Instant::now();
        let module = engine::load(&engine, source)?;
        let t2 = Instant::now();
        let prepared = Prepared::new(&engine, &module)?;
        let t3 = Instant::now();
        let runtime = prepared.probe(options)?;
        let t4 = Instant::now();
        let outcome = runtime.decide_fresh(head, now);
        let t5 = Instant::now();
        if outcome.is_err() {
            return Err(LoadError::Instantiate(format!("first request failed: {outcome:?}")));
        }
        for (i, d) in [t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t5 - t1].into_iter().enumerate() {
            steps[i].push(d);
        }
        drop(runtime);
    }
    let [engine_t, module_t, pre_t, inst_t, first_t, total_t] = steps;
    let [warm_up, first_client_request, total_with_warm_up] = warmed.map(Spread::of);
    Ok(ColdStart {
        runs: runs.max(1),
        engine: Spread::of(engine_t),
        module: Spread::of(module_t),
        module_step: match source {
            ModuleSource::Wasm(_) => "jit",
            ModuleSource::Cwasm(_) => "deserialize",
        },
        instance_pre: Spread::of(pre_t),
        first_instantiate: Spread::of(inst_t),
        first_request: Spread::of(first_t),
        total_without_engine: Spread::of(total_t),
        warmed: WarmedStart { warm_up, first_client_request, total_with_warm_up },
    })
}

fn matches(request: &Request, outcome: &Outcome) -> bool {
    match outcome {
        Ok(decision) => match decision.view() {
            Decision::Forward(_) => request.kind.expected_status() == 200,
            Decision::Answer(answer) => {
                answer.status == request.kind.expected_status()
                    && Some(answer.reason) == request.kind.expected_reason()
            }
        },
        Err(_) => false,
    }
}

/// Times `n` requests of `requests` (cycled) in `isolation`, after a warm-up.
pub fn warm(
    runtime: &Runtime,
    isolation: Isolation,
    requests: &[Request],
    n: usize,
    now: f64,
    label: &str,
    progress: bool,
) -> Latency {
    let progress = Progress { enabled: progress };
    // 1 ns to 60 s at 3 significant digits: the bounds are valid constants.
    let new_hist =
        || Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds");
    let mut hist = new_hist();
    let mut by_kind: Vec<(RequestKind, Histogram<u64>)> =
        RequestKind::ALL.iter().map(|k| (*k, new_hist())).collect();
    let mut reusable = Reusable::default();
    let warmup = (n / 20).clamp(100, 5_000);
    for request in requests.iter().cycle().take(warmup) {
        let _ = runtime.decide(isolation, &mut reusable, request.head.as_bytes(), now);
    }
    let mut unexpected = 0;
    let mut deadline_hits = 0;
    let step = (n / 100).max(1);
    for (i, request) in requests.iter().cycle().take(n).enumerate() {
        let start = Instant::now();
        let outcome = runtime.decide(isolation, &mut reusable, request.head.as_bytes(), now);
        let elapsed = start.elapsed();
        let ns = (elapsed.as_nanos() as u64).max(1);
        let _ = hist.record(ns);
        if let Some((_, h)) = by_kind.iter_mut().find(|(k, _)| *k == request.kind) {
            let _ = h.record(ns);
        }
        if outcome == Err(GuestError::Deadline) {
            deadline_hits += 1;
        } else if !matches(request, &outcome) {
            unexpected += 1;
        }
        if i % step == 0 {
            progress.show(&format!("{label}: {}%", i * 100 / n.max(1)));
        }
    }
    progress.done();
    Latency::of(&hist, (unexpected, deadline_hits), &by_kind)
}

/// Runs the whole benchmark.
pub fn measure(args: &HostArgs, progress: bool) -> Result<Report, String> {
    let source = args.source();
    let options = args.options();
    let config = gateway_config::load(&args.config).map_err(|e| e.to_string())?;
    let now_secs = unix_now() as u64;
    let now = now_secs as f64;
    let mix = Mix::new(&config, now_secs, args.seed);
    let requests = mix.generate(4096);
    let valid = requests
        .iter()
        .find(|r| r.kind == testkit::mix::RequestKind::Valid)
        .map(|r| r.head.clone())
        .unwrap_or_default();

    let say = Progress { enabled: progress };
    say.show("cold start");
    let cold =
        cold_start(&options, &source, valid.as_bytes(), now, args.cold_runs).map_err(|e| e.to_string())?;

    const LIVE: usize = 16;
    let runtime = Runtime::load(&options, &source, LIVE as u32 + 2).map_err(|e| e.to_string())?;
    let fresh =
        warm(&runtime, Isolation::Fresh, &requests, args.requests, now, "warm, fresh instances", progress);
    let reuse =
        warm(&runtime, Isolation::Reuse, &requests, args.requests, now, "warm, reused instance", progress);
    say.show("warm, reused instance, each token presented 20 times");
    let (presentations, clients) = (20, 8);
    let repeated_mix = mix.generate_repeated(4096 / presentations, presentations, clients);
    let (misses, hits) = warm_repeated(&runtime, &repeated_mix, args.requests, now);
    let repeated = Repeated { presentations, clients, misses, hits };

    let before = rss_kib();
    let during =
        runtime.with_live_instances(LIVE, valid.as_bytes(), now, rss_kib).map_err(|e| e.to_string())?;
    let memory = MemoryFigures {
        process_rss_kib: rss_kib(),
        per_instance_kib: during.saturating_sub(before) as f64 / LIVE as f64,
        instances_measured: LIVE,
    };

    let epoch = match (&source, options.no_deadline) {
        (ModuleSource::Wasm(_), false) => {
            let n = (args.requests / 5).max(1000);
            let off_options = EngineOptions { no_deadline: true, ..options.clone() };
            let off = Runtime::load(&off_options, &source, 2).map_err(|e| e.to_string())?;
            let without = warm(&off, Isolation::Reuse, &requests, n, now, "epoch off", progress);
            let with = warm(&runtime, Isolation::Reuse, &requests, n, now, "epoch on", progress);
            Some(EpochCost {
                requests: n as u64,
                with_deadline_mean_us: with.mean_us,
                without_deadline_mean_us: without.mean_us,
                with_deadline_p50_us: with.p50_us,
                without_deadline_p50_us: without.p50_us,
            })
        }
        _ => None,
    };
    say.done();

    Ok(Report {
        module: source.path().display().to_string(),
        source: match source {
            ModuleSource::Wasm(_) => "wasm",
            ModuleSource::Cwasm(_) => "cwasm",
        },
        strategy: format!("{:?}", options.strategy).to_lowercase(),
        deadline_ms: options.deadline().map(|d| d.as_secs_f64() * 1000.0),
        memory_cap: options.memory_cap,
        cold_start: cold,
        fresh,
        reuse,
        memory,
        epoch,
        repeated,
    })
}

/// Runs `bench-tool host`.
pub fn run(args: &HostArgs) -> ExitCode {
    let progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
    match measure(args, progress) {
        Ok(report) => {
            if args.json {
                match serde_json::to_string_pretty(&report) {
                    Ok(text) => println!("{text}"),
                    Err(e) => {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", table::table(&report));
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
