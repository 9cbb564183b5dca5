//! What counting costs a decision: `serve`'s decide path (the module's
//! decision, then the forward's buckets counted in the in-process table or
//! in a local redis-server) with counting on and off, over the limits
//! fixture, on one serving thread and on two at once (sharing the table,
//! as `serve`'s threads do), 16 requests in flight per thread. Rounds
//! interleaved; prints the median of each and the ratio.
//! Asserts nothing about time: run it by hand,
//! `cargo test --release -p host-sim --test traffic_cost -- --ignored --nocapture`.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use host_sim::serve::{Gateway, Log};
use host_sim::traffic::{Counting, FailMode, LimitCounters, StoreKind, TrafficArgs, limit_table};
use host_sim::upstream::Forwarder;
use runtime::{Input, Isolation, ModuleSource, Runtime};

const REQUESTS: usize = 20_000;
const ROUNDS: usize = 5;

fn heads(count: usize, round: usize) -> Vec<Vec<u8>> {
    let config = gateway_config::load(&common::root().join("testkit/fixture-limits.toml")).unwrap();
    let now = runtime::unix_now() as u64;
    // Distinct subjects: every request is counted and allowed.
    let tokens: Vec<String> = (0..count)
        .map(|i| {
            testkit::tokens::mint_for(&config, "orders", Some(&format!("u{round}-{i}")), now, 600).unwrap()
        })
        .collect();
    tokens
        .iter()
        .map(|t| {
            format!("GET /v1/items HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {t}\r\n\r\n").into_bytes()
        })
        .collect()
}

/// Requests each serving thread has in flight at once.
const IN_FLIGHT: usize = 16;

/// Decides every head as `serve` does (`Gateway::decide_and_count`) across
/// `threads` threads, each a tokio runtime of its own with `IN_FLIGHT`
/// requests at once; the wall time.
fn run(
    gateway: &Gateway,
    options: &runtime::EngineOptions,
    threads: usize,
    heads: &Arc<Vec<Vec<u8>>>,
) -> Duration {
    let gateways: Vec<Arc<Gateway>> =
        (0..threads).map(|_| Arc::new(gateway.for_thread(options).unwrap())).collect();
    let start = Instant::now();
    std::thread::scope(|scope| {
        for (i, gateway) in gateways.into_iter().enumerate() {
            let heads = Arc::clone(heads);
            scope.spawn(move || {
                let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                tokio.block_on(async move {
                    let mut lanes = tokio::task::JoinSet::new();
                    for lane in 0..IN_FLIGHT {
                        let (gateway, heads) = (Arc::clone(&gateway), Arc::clone(&heads));
                        lanes.spawn(async move {
                            for head in heads.iter().skip(i + lane * threads).step_by(threads * IN_FLIGHT) {
                                let outcome =
                                    gateway.decide_and_count(Input::from(head.as_slice())).await.outcome;
                                assert_eq!(outcome.unwrap().status(), 200);
                            }
                        });
                    }
                    while let Some(lane) = lanes.join_next().await {
                        lane.unwrap();
                    }
                });
            });
        }
    });
    start.elapsed()
}

#[test]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
fn counting_cost() {
    let wasm = common::root().join("target/fixture/gateway-limits.wasm");
    let options = common::relaxed();
    let runtime = Runtime::load(&options, &ModuleSource::Wasm(wasm), 4).unwrap();
    let limits = limit_table(&runtime.labels().unwrap()).unwrap();
    let args = TrafficArgs {
        store: StoreKind::Local,
        limits_fail: FailMode::Open,
        limits_timeout_ms: 50,
        limits_capacity: 1_000_000,
    };
    let forwarder = Forwarder::new(Default::default(), host_sim_forward_limits());
    let off = Gateway::new(runtime, Isolation::Fresh, forwarder, Log::default());
    let on = off.for_thread(&options).unwrap().with_counting(Counting::new(
        limits,
        &args,
        LimitCounters::default(),
    ));
    for threads in [1, 2] {
        let (mut offs, mut ons) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let heads = Arc::new(heads(REQUESTS, round * 10 + threads));
            offs.push(run(&off, &options, threads, &heads));
            ons.push(run(&on, &options, threads, &heads));
        }
        offs.sort();
        ons.sort();
        let (off_t, on_t) = (offs[ROUNDS / 2], ons[ROUNDS / 2]);
        let rate = |d: Duration| REQUESTS as f64 / d.as_secs_f64();
        println!(
            "{threads} thread(s), {REQUESTS} decisions, median of {ROUNDS}: off {:.0}/s, on {:.0}/s, on/off {:.3}",
            rate(off_t),
            rate(on_t),
            rate(on_t) / rate(off_t)
        );
    }
}

/// The forward limits `serve` uses by default (no forward is sent here).
fn host_sim_forward_limits() -> host_sim::limits::ForwardLimits {
    host_sim::limits::ForwardLimits {
        body_timeout: Duration::from_secs(10),
        max_body: 10 << 20,
        connect_timeout: Duration::from_secs(5),
        timeout: Duration::from_secs(30),
        max_connections: 256,
        queue_timeout: Duration::from_secs(5),
    }
}

/// The table alone: counts per second on one thread and on two at once
/// (each on keys of its own, as two serving threads' callers are): with
/// 64 shards two threads rarely wait on one lock, so two should count
/// about twice what one does on two free cores.
#[test]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
fn table_cost() {
    use host_sim::traffic::table::Table;
    let limit =
        contract::limits::Limit { name: "per-user", requests: 3, per_secs: 60, burst: 3, fields: true };
    let keys: Vec<String> = (0..200_000).map(|i| format!("per-user:s:0.user-{i}")).collect();
    let now = runtime::unix_now() as u64 * 1_000_000;
    for threads in [1, 2] {
        let mut rates = Vec::new();
        for _ in 0..ROUNDS {
            let table = Table::new(1_000_000, Default::default());
            let start = Instant::now();
            std::thread::scope(|scope| {
                for t in 0..threads {
                    let (table, keys) = (&table, &keys);
                    scope.spawn(move || {
                        for key in keys.iter().skip(t).step_by(threads) {
                            std::hint::black_box(table.count(key, &limit, now));
                        }
                    });
                }
            });
            rates.push(keys.len() as f64 / start.elapsed().as_secs_f64());
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "table, {threads} thread(s), {} new keys, median of {ROUNDS}: {:.0} counts/s",
            keys.len(),
            rates[ROUNDS / 2]
        );
    }
}

/// Counting in a local redis-server (one script call per decision, on the
/// serving thread): decisions per second against counting off.
#[test]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
fn redis_cost() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let Ok(mut redis) = std::process::Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .stdout(std::process::Stdio::null())
        .spawn()
    else {
        eprintln!("SKIPPED: redis-server is not installed");
        return;
    };
    std::thread::sleep(Duration::from_millis(300));
    let wasm = common::root().join("target/fixture/gateway-limits.wasm");
    let options = common::relaxed();
    let runtime = Runtime::load(&options, &ModuleSource::Wasm(wasm), 4).unwrap();
    let limits = limit_table(&runtime.labels().unwrap()).unwrap();
    let args = TrafficArgs {
        store: StoreKind::Redis(([127, 0, 0, 1], port).into()),
        limits_fail: FailMode::Closed,
        limits_timeout_ms: 1000,
        limits_capacity: 1_000_000,
    };
    let forwarder = Forwarder::new(Default::default(), host_sim_forward_limits());
    let off = Gateway::new(runtime, Isolation::Fresh, forwarder, Log::default());
    let counting = Counting::new(limits, &args, LimitCounters::default());
    let on = off.for_thread(&options).unwrap().with_counting(counting);
    let requests = REQUESTS / 4;
    for threads in [1, 2] {
        let (mut offs, mut ons) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            let heads = Arc::new(heads(requests, 100 + round * 10 + threads));
            offs.push(run(&off, &options, threads, &heads));
            ons.push(run(&on, &options, threads, &heads));
        }
        offs.sort();
        ons.sort();
        let rate = |d: Duration| requests as f64 / d.as_secs_f64();
        let (off_r, on_r) = (rate(offs[ROUNDS / 2]), rate(ons[ROUNDS / 2]));
        println!(
            "redis, {threads} thread(s), {requests} decisions, median of {ROUNDS}: off {off_r:.0}/s, on {on_r:.0}/s, on/off {:.3}",
            on_r / off_r
        );
    }
    let _ = redis.kill();
    let _ = redis.wait();
}
