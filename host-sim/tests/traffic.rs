//! Rate limits on `host-sim serve`, through the real limits fixture
//! (`testkit/fixture-limits.toml`, `make fixture` builds
//! target/fixture/gateway-limits.wasm) and real HTTP to an upstream that
//! counts what reaches it: counted in process, shared by two gateways in a
//! real redis-server, a store that dies (fail open and fail closed), and a
//! flood of keys past a small table. The Redis script is checked against
//! the contract's GCRA vectors (`contract/golden/limits.json`).
//!
//! The Redis tests need `redis-server` (Debian's package; `make redis`
//! installs it): without it they skip, saying so, unless REQUIRE_REDIS is
//! set (`make test` sets it), when they fail.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Guard, head, send, start};
use host_sim::traffic::redis::SCRIPT;
use host_sim::traffic::resp::{Connection, Reply};

/// `target/fixture/gateway-limits.wasm`.
fn limits_wasm() -> PathBuf {
    let path = common::root().join("target/fixture/gateway-limits.wasm");
    assert!(path.exists(), "{} is missing: build it with `make fixture`", path.display());
    path
}

/// A token of the limits fixture's first issuer for `sub`, audience `orders`.
fn token(sub: &str) -> String {
    let config = gateway_config::load(&common::root().join("testkit/fixture-limits.toml")).unwrap();
    testkit::tokens::mint_for(&config, "orders", Some(sub), runtime::unix_now() as u64, 600).unwrap()
}

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// An upstream that answers 200 to every request and counts them.
struct Upstream {
    addr: SocketAddr,
    seen: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (seen, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
        let (count, stopped) = (seen.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(300);
            while !stopped.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let count = count.clone();
                        std::thread::spawn(move || answer(stream, &count));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Upstream { addr, seen, stop }
    }

    fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Answers each bodiless request on `stream` with 200, counting it.
fn answer(stream: TcpStream, count: &AtomicUsize) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        let mut blank = false;
        while !blank {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            blank = line == "\r\n";
        }
        count.fetch_add(1, Ordering::SeqCst);
        let response = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok";
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// `host-sim serve` over the limits fixture, both routes sent to `upstream`.
fn gateway(upstream: SocketAddr, extra: &[&str]) -> Guard {
    let wasm = limits_wasm();
    let to = |aud: &str| format!("{aud}=http://{upstream}");
    let (orders, users) = (to("orders"), to("users"));
    let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--threads", "2", "--access-log", "json"];
    args.extend_from_slice(&["--wasm", wasm.to_str().unwrap()]);
    args.extend_from_slice(&["--upstream-override", &orders, "--upstream-override", &users]);
    args.extend_from_slice(extra);
    start(&args)
}

fn get(gateway: SocketAddr, token: &str) -> common::Reply {
    send(gateway, &head("GET", "/v1/items", Some(token), &[]), b"")
}

fn scrape(addr: SocketAddr) -> String {
    send(addr, "GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", b"").body
}

/// The value of the metric line starting with `name` (0 when absent).
fn metric(text: &str, name: &str) -> f64 {
    text.lines().find_map(|l| l.strip_prefix(name)?.trim().parse().ok()).unwrap_or(0.0)
}

/// A redis-server on a free loopback port, killed when dropped; None (after
/// saying why) when it is not installed and REQUIRE_REDIS is unset.
struct Redis {
    child: Child,
    addr: SocketAddr,
}

impl Redis {
    fn start() -> Option<Redis> {
        let addr = free_port();
        let spawned = Command::new("redis-server")
            .args([
                "--port",
                &addr.port().to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(e) if std::env::var_os("REQUIRE_REDIS").is_none() => {
                eprintln!("SKIPPED: redis-server is not installed ({e}); `make redis` installs it");
                return None;
            }
            Err(e) => panic!("REQUIRE_REDIS is set but redis-server cannot start: {e}"),
        };
        let redis = Redis { child, addr };
        for _ in 0..200 {
            if let Ok(mut c) = Connection::connect(addr, Duration::from_secs(1))
                && c.call(&[b"PING"], Duration::from_secs(1)).is_ok()
            {
                return Some(redis);
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("redis-server did not answer on {addr}");
    }

    fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn the_script_counts_as_the_contracts_gcra() {
    let Some(redis) = Redis::start() else { return };
    let golden: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(common::root().join("contract/golden/limits.json")).unwrap(),
    )
    .unwrap();
    let mut c = Connection::connect(redis.addr, Duration::from_secs(5)).unwrap();
    let cases = golden["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for (i, case) in cases.iter().enumerate() {
        let n = |v: &serde_json::Value| v.as_u64().unwrap();
        let limit = &case["limit"];
        let spec = contract::limits::Limit {
            name: "l",
            requests: n(&limit["requests"]) as u32,
            per_secs: n(&limit["per_secs"]) as u32,
            burst: n(&limit["burst"]) as u32,
            fields: true,
        };
        let key = format!("golden:{i}");
        let stored = n(&case["stored_tat_us"]);
        if stored > 0 {
            c.call(&[b"SET", key.as_bytes(), stored.to_string().as_bytes()], Duration::from_secs(5)).unwrap();
        }
        let (now, interval, burst) =
            (n(&case["now_us"]).to_string(), spec.interval_us().to_string(), spec.burst.to_string());
        let args: [&[u8]; 7] = [
            b"EVAL",
            SCRIPT.as_bytes(),
            b"1",
            key.as_bytes(),
            now.as_bytes(),
            interval.as_bytes(),
            burst.as_bytes(),
        ];
        let reply = c.call(&args, Duration::from_secs(5)).unwrap();
        let Reply::Array(Some(items)) = reply else { panic!("case {i}: {reply:?}") };
        let Reply::Array(Some(f)) = &items[0] else { panic!("case {i}: {items:?}") };
        let int = |r: &Reply| match r {
            Reply::Integer(v) => *v as u64,
            other => panic!("case {i}: {other:?}"),
        };
        let expect = &case["expect"];
        let got = serde_json::json!({
            "allowed": int(&f[0]) == 1, "tat_us": int(&f[1]), "remaining": int(&f[2]),
            "reset_secs": int(&f[3]), "retry_after_secs": int(&f[4]),
        });
        assert_eq!(&got, expect, "case {i}: {case}");
        let held = c.call(&[b"GET", key.as_bytes()], Duration::from_secs(5)).unwrap();
        let tat = if expect["tat_us"] == 0 { None } else { Some(expect["tat_us"].to_string().into_bytes()) };
        assert_eq!(held, Reply::Bulk(tat), "case {i}: the stored TAT");
    }
}

#[test]
fn a_subjects_fourth_request_in_a_minute_is_refused_before_the_upstream() {
    let upstream = Upstream::start();
    let metrics = free_port();
    let server = gateway(upstream.addr, &["--metrics", &metrics.to_string()]);
    let alice = token("alice");
    for remaining in [2, 1, 0] {
        let reply = get(server.addr, &alice);
        assert_eq!(reply.status, 200, "{reply:?}");
        let field = reply.header("ratelimit").unwrap_or_default();
        assert!(field.starts_with(&format!("\"per-user\";r={remaining};t=")), "{reply:?}");
        assert!(reply.header("ratelimit-policy").is_some(), "{reply:?}");
    }
    let refused = get(server.addr, &alice);
    assert_eq!(refused.status, 429, "{refused:?}");
    let retry: u64 = refused.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{refused:?}");
    assert!(refused.header("ratelimit-policy").unwrap().contains("\"per-user\""), "{refused:?}");
    assert!(refused.header("ratelimit").unwrap().contains("r=0"), "{refused:?}");
    assert_eq!(refused.json()["limit"], "per-user");
    assert_eq!(upstream.seen(), 3, "the refused request never reached the upstream");
    assert_eq!(get(server.addr, &token("bob")).status, 200, "another subject has its own budget");
    assert_eq!(upstream.seen(), 4);
    let text = scrape(metrics);
    assert!(text.contains("outcome=\"rate_limited\""), "{text}");
    let (_, log) = server.terminate();
    let line = log.lines().find(|l| l.contains("\"rate_limited\"")).unwrap_or_else(|| panic!("{log}"));
    assert!(line.contains("\"status\":429"), "{line}");
    assert!(line.contains("\"route\":\"orders\""), "the forward's labels: {line}");
}

#[test]
fn two_gateways_share_one_budget_in_redis() {
    let Some(redis) = Redis::start() else { return };
    let upstream = Upstream::start();
    let url = redis.url();
    // A generous timeout: a loaded machine must not turn a slow reply into
    // an uncounted request here (the timeout has its own test).
    let a = gateway(upstream.addr, &["--limits", &url, "--limits-timeout-ms", "5000"]);
    let b = gateway(upstream.addr, &["--limits", &url, "--limits-timeout-ms", "5000"]);
    let carol = token("carol");
    for (gateway, remaining) in [(&a, 2), (&b, 1), (&a, 0)] {
        let reply = get(gateway.addr, &carol);
        assert_eq!(reply.status, 200, "{reply:?}");
        assert!(reply.header("ratelimit").unwrap().contains(&format!("r={remaining};")), "{reply:?}");
    }
    assert_eq!(get(b.addr, &carol).status, 429);
    assert_eq!(get(a.addr, &carol).status, 429);
    assert_eq!(upstream.seen(), 3, "three through A and B together");
    assert_eq!(get(b.addr, &token("dave")).status, 200);
}

#[test]
fn a_dead_store_fails_open_or_closed_and_never_hangs() {
    let Some(mut redis) = Redis::start() else { return };
    let upstream = Upstream::start();
    let url = redis.url();
    let metrics = free_port();
    let slow_ok = ["--limits-timeout-ms", "5000"];
    let open = gateway(
        upstream.addr,
        &[&["--limits", &url, "--metrics", &metrics.to_string()][..], &slow_ok].concat(),
    );
    let closed =
        gateway(upstream.addr, &[&["--limits", &url, "--limits-fail", "closed"][..], &slow_ok].concat());
    assert_eq!(get(open.addr, &token("erin")).status, 200);
    assert_eq!(get(closed.addr, &token("frank")).status, 200);
    redis.kill();
    for _ in 0..3 {
        let reply = get(open.addr, &token("erin"));
        assert_eq!(reply.status, 200, "fail open forwards: {reply:?}");
        assert_eq!(reply.header("ratelimit"), None, "uncounted: {reply:?}");
        let reply = get(closed.addr, &token("frank"));
        assert_eq!(reply.status, 503, "fail closed: {reply:?}");
        assert_eq!(reply.body, r#"{"error_description":"rate limit store unavailable"}"#);
    }
    assert_eq!(upstream.seen(), 5);
    let errors = metric(&scrape(metrics), "gateway_limit_store_errors_total");
    assert!(errors >= 3.0, "store errors counted: {errors}");
    let (_, log) = open.terminate();
    let logged = log.lines().filter(|l| l.starts_with("limits: redis")).count();
    assert_eq!(logged, 1, "one log line, not one per request: {log}");
    let (_, log) = closed.terminate();
    assert!(log.contains("\"limit_store_unavailable\""), "{log}");
}

#[test]
fn a_flood_of_keys_keeps_the_table_bounded() {
    let upstream = Upstream::start();
    let metrics = free_port();
    let server = gateway(upstream.addr, &["--limits-capacity", "64", "--metrics", &metrics.to_string()]);
    for i in 0..300 {
        assert_eq!(get(server.addr, &token(&format!("user-{i}"))).status, 200);
    }
    let evictions = metric(&scrape(metrics), "gateway_limit_evictions_total");
    assert!(evictions >= 200.0, "evictions counted: {evictions}");
}

#[test]
fn a_store_that_never_answers_is_a_timeout_not_a_hung_request() {
    // Accepts connections and never answers (held until the test ends).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = listener.local_addr().unwrap();
    let held = std::thread::spawn(move || {
        let mut streams = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while streams.len() < 4 && Instant::now() < deadline {
            match listener.accept() {
                Ok((stream, _)) => streams.push(stream),
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        streams
    });
    let upstream = Upstream::start();
    let url = format!("redis://{silent}");
    let open = gateway(upstream.addr, &["--limits", &url, "--limits-timeout-ms", "50"]);
    let closed = gateway(upstream.addr, &["--limits", &url, "--limits-fail", "closed"]);
    let reply = get(open.addr, &token("gina"));
    assert_eq!((reply.status, reply.header("ratelimit")), (200, None), "{reply:?}");
    assert_eq!(get(closed.addr, &token("gina")).status, 503);
    assert_eq!(upstream.seen(), 1);
    let (_, log) = open.terminate();
    assert!(log.contains("limits: redis at"), "{log}");
    drop(closed);
    drop(held);
}

#[test]
fn eval_counts_each_line_at_its_clock() {
    let t = token("hana");
    let line = |now: u64| {
        let request = format!("GET /v1/items HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {t}\r\n\r\n");
        serde_json::json!({ "request": request, "now": now }).to_string()
    };
    let now = runtime::unix_now() as u64;
    // Four at once, then one 20 s (one interval of 3 a minute) later.
    let input: Vec<String> = [now, now, now, now, now + 20].into_iter().map(line).collect();
    let wasm = limits_wasm();
    let mut child = common::bin()
        .args(["eval", "--wasm", wasm.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all((input.join("\n") + "\n").as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    let statuses: Vec<u64> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [200, 200, 200, 429, 200]);
}
