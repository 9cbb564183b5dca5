//! `host-sim serve` against hostile clients and slow upstreams, on loopback:
//! slow request heads, the connection cap, a connection flood under a low
//! descriptor limit, a slow upstream, oversized bodies, a forged access-log
//! line, and a clock that cannot be read. Every test is bounded in time and
//! count; none asserts a duration (generous timeouts only).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Guard, Reply, head, send, start, start_command};
use contract::Decision;
use host_sim::limits::{ClientLimits, ForwardLimits};
use host_sim::serve::{Gateway, Log};
use host_sim::upstream::Forwarder;
use runtime::Isolation;

fn token(aud: &str) -> String {
    testkit::tokens::mint_for(&common::config(), aud, Some("alice"), runtime::unix_now() as u64, 600).unwrap()
}

fn serve_args(extra: &[&str]) -> Vec<String> {
    let wasm = common::gateway_wasm();
    let mut args: Vec<String> =
        ["serve", "--listen", "127.0.0.1:0", "--access-log", "--threads", "2", "--wasm"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
    args.push(wasm.to_str().unwrap().to_owned());
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

fn gateway(extra: &[&str]) -> Guard {
    let args = serve_args(extra);
    start(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Whether the server closed `stream` within `within`, while the client
/// sends one more byte of an endless header field every 200 ms.
fn closed_while_trickling(mut stream: TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let started = Instant::now();
    let mut sink = [0u8; 512];
    while started.elapsed() < within {
        match stream.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stream.write_all(b"a").is_err() {
                    return true;
                }
            }
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn slow_heads_are_closed_after_the_head_timeout_while_valid_requests_are_served() {
    let server = gateway(&["--head-timeout", "1s", "--idle-timeout", "60s"]);
    let addr = server.addr;
    let slow: Vec<JoinHandle<bool>> = (0..20)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
                stream.write_all(b"GET / HTTP/1.1\r\nHost: gateway.test\r\nX-Slow: ").unwrap();
                closed_while_trickling(stream, Duration::from_secs(30))
            })
        })
        .collect();
    // Meanwhile a whole request is answered (by the module: no token, 401).
    let reply = send(addr, &head("GET", "/v1/orders", None, &[]), b"");
    assert_eq!(reply.status, 401, "{reply:?}");
    let closed = slow.into_iter().map(|h| h.join().unwrap()).filter(|closed| *closed).count();
    assert_eq!(closed, 20, "every slow head is closed");
    let reply = send(addr, &head("GET", "/v1/orders", None, &[]), b"");
    assert_eq!(reply.status, 401, "{reply:?}");
    let (status, _) = server.terminate();
    assert!(status.success());
}

/// Sends a keep-alive request on `stream` and reads its response (which has
/// a `Content-Length`); returns the status.
fn keep_alive_request(stream: &mut TcpStream) -> u16 {
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\nHost: gateway.test\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed before a whole response: {:?}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&raw);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                })
                .and_then(|v| v.parse().ok())
                .unwrap();
            if body.len() >= length {
                return head.split(' ').nth(1).unwrap().parse().unwrap();
            }
        }
    }
}

#[test]
fn silent_kept_alive_connections_are_closed_after_the_idle_timeout() {
    let server = gateway(&["--idle-timeout", "1s", "--head-timeout", "60s"]);
    let mut kept = TcpStream::connect_timeout(&server.addr, Duration::from_secs(5)).unwrap();
    assert_eq!(keep_alive_request(&mut kept), 401);
    let silent = TcpStream::connect_timeout(&server.addr, Duration::from_secs(5)).unwrap();
    for mut stream in [kept, silent] {
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut sink = [0u8; 64];
        assert_eq!(stream.read(&mut sink).unwrap(), 0, "closed by the gateway, not by the read timeout");
    }
    let (status, _) = server.terminate();
    assert!(status.success());
}

#[test]
fn the_connection_cap_answers_503_and_recovers() {
    let server = gateway(&["--max-connections", "3", "--head-timeout", "60s", "--idle-timeout", "60s"]);
    let mut held: Vec<TcpStream> =
        (0..3).map(|_| TcpStream::connect_timeout(&server.addr, Duration::from_secs(5)).unwrap()).collect();
    for stream in &mut held {
        assert_eq!(keep_alive_request(stream), 401, "a connection within the cap is served");
    }
    for _ in 0..3 {
        let reply = send(server.addr, &head("GET", "/", None, &[]), b"");
        assert_eq!(reply.status, 503, "{reply:?}");
        assert_eq!(reply.header("content-type"), Some("application/json"));
        assert_eq!(reply.body, r#"{"error_description":"gateway busy"}"#);
    }
    drop(held);
    let reply = retry_until_served(server.addr, Duration::from_secs(30));
    assert_eq!(reply.status, 401, "served again once the held connections closed: {reply:?}");
    let (status, _) = server.terminate();
    assert!(status.success());
}

/// Sends a request until it is answered with something else than 503,
/// connection errors included, for at most `within`.
fn retry_until_served(addr: SocketAddr, within: Duration) -> Reply {
    let started = Instant::now();
    loop {
        let reply = send_tolerant(addr, &head("GET", "/", None, &[]), b"");
        match reply {
            Some(reply) if reply.status != 503 => return reply,
            _ if started.elapsed() > within => panic!("not served within {within:?}: {reply:?}"),
            _ => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// Like `common::send`, but a connection the server refuses, resets or
/// closes early gives what was read (None when no whole head was).
fn send_tolerant(addr: SocketAddr, head: &str, body: &[u8]) -> Option<Reply> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
    let mut raw = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = stream.read(&mut chunk) {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Some(Reply { status, headers, body: body.to_owned() })
}

/// The CPU time (user and system) process `pid` has used so far.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses): state is the
    // 3rd field, utime the 14th and stime the 15th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let per_second: u64 = String::from_utf8(Command::new("getconf").arg("CLK_TCK").output().unwrap().stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Duration::from_millis(ticks * 1000 / per_second)
}

/// Connections of the flood: more than the gateway has descriptors for.
const FLOOD: usize = 300;

/// How long the flood is held while the gateway's CPU time is watched.
const FLOOD_HELD: Duration = Duration::from_secs(4);

#[test]
fn a_low_descriptor_limit_survives_a_connection_flood_without_spinning() {
    // This test process holds the flood's client ends.
    let _ = rlimit::increase_nofile_limit(4096);
    // With the derived cap the gateway answers the flood 503; with a cap
    // above its descriptors, accept itself fails and must back off.
    for (case, extra) in [("derived cap", &[][..]), ("accept failing", &["--max-connections", "1000"][..])] {
        let mut command = Command::new("sh");
        command.current_dir(common::root());
        command.args(["-c", "ulimit -n 128 && exec \"$0\" \"$@\"", env!("CARGO_BIN_EXE_host-sim")]);
        command.args(serve_args(&[&["--head-timeout", "60s", "--idle-timeout", "60s"][..], extra].concat()));
        let server = start_command(command);
        let pid = server.child.id();
        assert_eq!(send(server.addr, &head("GET", "/", None, &[]), b"").status, 401, "{case}");

        // Until the gateway's accept queue is full too.
        let flood: Vec<TcpStream> = (0..FLOOD)
            .map_while(|_| {
                let mut stream = TcpStream::connect_timeout(&server.addr, Duration::from_secs(2)).ok()?;
                let _ = stream.write_all(b"GET / HTTP/1.1\r\n");
                Some(stream)
            })
            .collect();
        let before = cpu_time(pid);
        std::thread::sleep(FLOOD_HELD);
        let used = cpu_time(pid).saturating_sub(before);
        assert!(
            used < FLOOD_HELD / 4,
            "{case}: the gateway used {used:?} of CPU while {} connections were held for {FLOOD_HELD:?}",
            flood.len()
        );
        eprintln!("{case}: {} connections held for {FLOOD_HELD:?}, gateway CPU time {used:?}", flood.len());
        drop(flood);

        let reply = retry_until_served(server.addr, Duration::from_secs(30));
        assert_eq!(reply.status, 401, "{case}: served after the flood: {reply:?}");
        let (status, log) = server.terminate();
        assert!(status.success(), "{case}: {log}");
        if case == "accept failing" {
            assert!(log.contains("accept failed"), "{case}: {log}");
        }
    }
}

/// An upstream that accepts connections and never answers, counting how
/// many are open at once. It stops by itself after a minute.
struct SlowUpstream {
    addr: SocketAddr,
    most_open: Arc<AtomicUsize>,
    accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SlowUpstream {
    fn start() -> SlowUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let (most_open, accepted) = (Arc::<AtomicUsize>::default(), Arc::default());
        let stop = Arc::<AtomicBool>::default();
        let thread = {
            let (most_open, accepted, stop) =
                (Arc::clone(&most_open), Arc::clone(&accepted), Arc::clone(&stop));
            std::thread::spawn(move || accept_and_hold(&listener, &most_open, &accepted, &stop))
        };
        SlowUpstream { addr, most_open, accepted, stop, thread: Some(thread) }
    }

    /// Stops it; returns the most connections open at once and the number accepted.
    fn stop(mut self) -> (usize, usize) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        (self.most_open.load(Ordering::Relaxed), self.accepted.load(Ordering::Relaxed))
    }
}

fn accept_and_hold(
    listener: &TcpListener,
    most_open: &Arc<AtomicUsize>,
    accepted: &Arc<AtomicUsize>,
    stop: &Arc<AtomicBool>,
) {
    let started = Instant::now();
    let mut held = Vec::new();
    // A handle on every connection still open, to ask the kernel at each
    // accept which ones the gateway has closed already: a holder thread on a
    // loaded machine notices a close late, which would count it twice.
    let mut live: Vec<TcpStream> = Vec::new();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(60) {
        let Ok((mut stream, _)) = listener.accept() else {
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        accepted.fetch_add(1, Ordering::Relaxed);
        // Open until the kernel has the gateway's FIN or reset (a peek would
        // count a closed connection whose request its holder has not read yet).
        live.retain(still_established);
        if let Ok(handle) = stream.try_clone() {
            live.push(handle);
        }
        most_open.fetch_max(live.len(), Ordering::Relaxed);
        let stop = Arc::clone(stop);
        held.push(std::thread::spawn(move || {
            // Read what arrives, answer nothing, until the gateway closes.
            stream.set_nonblocking(false).unwrap();
            stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
            let mut sink = [0u8; 4096];
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(60) {
                match stream.read(&mut sink) {
                    Ok(0) => break,
                    Err(e) if !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                    _ => {}
                }
            }
        }));
    }
    for thread in held {
        let _ = thread.join();
    }
}

/// Whether the kernel still has `stream` established, that is, the peer has
/// not closed it (`/proc/net/tcp`: state 01; a peer's FIN makes it 08).
fn still_established(stream: &TcpStream) -> bool {
    let hex = |addr: SocketAddr| match addr {
        SocketAddr::V4(v4) => format!("{:08X}:{:04X}", u32::from_le_bytes(v4.ip().octets()), v4.port()),
        SocketAddr::V6(_) => String::new(),
    };
    let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) else { return false };
    let (local, peer) = (hex(local), hex(peer));
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table.lines().skip(1).any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        fields.len() > 3 && fields[1] == local && fields[2] == peer && fields[3] == "01"
    })
}

/// Sends `count` requests at once for the `orders` route; returns the replies.
fn parallel_requests(addr: SocketAddr, count: usize) -> Vec<Reply> {
    let t = token("orders");
    let threads: Vec<JoinHandle<Reply>> = (0..count)
        .map(|_| {
            let request = head("GET", "/v1/orders", Some(&t), &[]);
            std::thread::spawn(move || send(addr, &request, b""))
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// A gateway whose `orders` route goes to `upstream`, with these upstream
/// connection cap, exchange timeout and queue timeout.
fn gateway_to(upstream: &SlowUpstream, max_connections: &str, timeout: &str, queue_timeout: &str) -> Guard {
    let target = format!("orders=http://{}", upstream.addr);
    gateway(&[
        "--upstream-override",
        &target,
        "--upstream-max-connections",
        max_connections,
        "--upstream-timeout",
        timeout,
        "--upstream-queue-timeout",
        queue_timeout,
    ])
}

#[test]
fn a_slow_upstream_gets_at_most_its_connection_cap_and_clients_get_504() {
    let upstream = SlowUpstream::start();
    let server = gateway_to(&upstream, "3", "2s", "30s");
    for reply in parallel_requests(server.addr, 9) {
        assert_eq!(reply.status, 504, "{reply:?}");
        assert_eq!(reply.body, r#"{"error_description":"upstream timed out"}"#);
        assert_eq!(reply.header("content-type"), Some("application/json"));
    }
    let (status, log) = server.terminate();
    assert!(status.success());
    assert!(log.contains("upstream timed out after 2s"), "{log}");
    let (most_open, accepted) = upstream.stop();
    assert!(most_open <= 3, "the slow upstream had {most_open} connections open at once");
    assert!(accepted >= 1, "the upstream was reached");
}

#[test]
fn requests_queued_past_the_queue_timeout_get_503() {
    let upstream = SlowUpstream::start();
    let server = gateway_to(&upstream, "2", "4s", "1s");
    let replies = parallel_requests(server.addr, 6);
    let busy = replies.iter().filter(|r| r.status == 503).count();
    let timed_out = replies.iter().filter(|r| r.status == 504).count();
    assert_eq!(busy + timed_out, 6, "{replies:?}");
    assert!(busy >= 4 && timed_out <= 2, "{replies:?}");
    for reply in replies.iter().filter(|r| r.status == 503) {
        assert_eq!(reply.body, r#"{"error_description":"upstream busy"}"#);
    }
    let (status, _) = server.terminate();
    assert!(status.success());
    let (most_open, _) = upstream.stop();
    assert!(most_open <= 2, "the slow upstream had {most_open} connections open at once");
}

#[test]
fn bodies_past_the_maximum_get_413_without_being_forwarded_whole() {
    let upstream = start(&["upstream", "--listen", "127.0.0.1:0"]);
    let target = format!("orders=http://{}", upstream.addr);
    let server = gateway(&["--upstream-override", &target, "--max-body", "1KiB"]);
    let t = token("orders");

    // Within the maximum: forwarded.
    let reply = send(server.addr, &head("POST", "/in", Some(&t), &["Content-Length: 1024"]), &[b'x'; 1024]);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["body_length"], 1024);

    // Too large by its Content-Length: refused before the upstream is asked.
    let reply =
        send_tolerant(server.addr, &head("POST", "/cl", Some(&t), &["Content-Length: 5000"]), &[b'x'; 5000])
            .unwrap();
    assert_eq!(reply.status, 413, "{reply:?}");
    assert_eq!(reply.body, r#"{"error_description":"request body too large"}"#);

    // Too large as it streams (chunked, no length known up front).
    let mut chunked = Vec::new();
    for _ in 0..5 {
        chunked.extend_from_slice(b"3e8\r\n");
        chunked.extend_from_slice(&[b'y'; 1000]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    let reply = send_tolerant(
        server.addr,
        &head("POST", "/chunked", Some(&t), &["Transfer-Encoding: chunked"]),
        &chunked,
    )
    .unwrap();
    assert_eq!(reply.status, 413, "{reply:?}");
    assert_eq!(reply.body, r#"{"error_description":"request body too large"}"#);

    let (status, log) = server.terminate();
    assert!(status.success());
    assert_eq!(log.matches("request body larger than 1024 bytes").count(), 2, "{log}");
    upstream.terminate();
}

#[test]
fn a_stalled_request_body_gets_408() {
    let upstream = start(&["upstream", "--listen", "127.0.0.1:0"]);
    let target = format!("orders=http://{}", upstream.addr);
    let server = gateway(&["--upstream-override", &target, "--body-timeout", "1s"]);
    let request = head("POST", "/stall", Some(&token("orders")), &["Content-Length: 100"]);
    let mut stream = TcpStream::connect_timeout(&server.addr, Duration::from_secs(5)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    stream.write_all(&[b'x'; 10]).unwrap();
    // The other 90 bytes never come.
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.ends_with(r#"{"error_description":"request body timed out"}"#), "{text}");
    drop(stream);
    server.terminate();
    upstream.terminate();
}

#[test]
fn the_access_log_escapes_what_the_client_sent() {
    let server = gateway(&[]);
    let reply = send(server.addr, &head("GET", "/a\"b\\c", None, &[]), b"");
    // A raw backslash in the path is refused (400) before the token is read.
    assert_eq!(reply.status, 400);
    let (status, log) = server.terminate();
    assert!(status.success());
    assert!(log.contains(r#""GET /a\"b\\c" 400 "#), "{log}");
}

/// A clock that reads before the Unix epoch: the one way reading it fails.
fn broken_clock() -> SystemTime {
    UNIX_EPOCH - Duration::from_secs(1)
}

fn forward_limits() -> ForwardLimits {
    ForwardLimits {
        body_timeout: Duration::from_secs(10),
        max_body: 1 << 20,
        connect_timeout: Duration::from_secs(5),
        timeout: Duration::from_secs(30),
        max_connections: 8,
        queue_timeout: Duration::from_secs(5),
    }
}

#[test]
fn a_clock_that_cannot_be_read_gives_500_not_a_pass() {
    let t = token("orders");
    let request = head("GET", "/v1/orders", Some(&t), &[]);

    // The module refuses the clock, where 0 would have passed the token.
    let forwarder = Forwarder::new(HashMap::new(), forward_limits());
    let gateway =
        Gateway::new(common::runtime(), Isolation::Fresh, forwarder, Log::default()).with_clock(broken_clock);
    let decision = gateway.decide(runtime::Input::from(request.as_bytes())).expect("a decision");
    let Decision::Answer(rejected) = decision.view() else {
        panic!("a broken clock must not let the token through")
    };
    assert_eq!(rejected.status, 500);
    assert_eq!(rejected.reason, "host clock invalid");

    // And over HTTP, through the library's server.
    let gateway = Arc::new(gateway);
    let runtime = host_sim::listen::runtime(2).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let listener =
        runtime.block_on(host_sim::listen::bind("127.0.0.1:0".parse().unwrap(), "gateway")).unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        runtime.block_on(host_sim::listen::serve(
            listener,
            ClientLimits::defaults(1024),
            move |request, remote| Arc::clone(&gateway).handle(request, remote),
            async move {
                let _ = tokio::time::timeout(Duration::from_secs(60), stopped).await;
            },
        ));
    });
    let reply = send(addr, &request, b"");
    assert_eq!(reply.status, 500, "{reply:?}");
    assert_eq!(reply.body, r#"{"error_description":"host clock invalid"}"#);
    let _ = stop.send(());
    server.join().unwrap();
}
