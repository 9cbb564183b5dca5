//! Hostile HTTP clients against `host-sim serve`, started as a child process
//! on an ephemeral loopback port: an oversized head, a client that sends a
//! byte a second, garbage bytes, a flood of connections. After each, the
//! server must still answer good requests.
//!
//! The tests need `target/release/host-sim` (`cargo build --release -p
//! host-sim`) and `target/fixture/gateway.wasm` (`make fixture`). Without them they say
//! so and pass, unless `REQUIRE_HOST_SIM=1` (as `scripts/test-extra.sh` sets
//! after building the host), when they fail.
//!
//! Time bounds here are give-up limits for a hung server, never assertions
//! about speed.

#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, Instant};

use testkit::gateway::mint_fixture;

/// How long a client waits for any answer before calling the server hung.
const GIVE_UP: Duration = Duration::from_secs(20);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The server under test; killed when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// The heads the upstream received.
    forwarded: Receiver<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// A one-line upstream that answers 200 "ok" to every connection and
/// sends each request head it receives to `heads`.
fn upstream(heads: Sender<String>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let heads = heads.clone();
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(GIVE_UP)).ok();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let (mut line, mut head) = (String::new(), String::new());
                // Read the head, then answer (the forwarded requests have no body).
                while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                    head.push_str(&line);
                    line.clear();
                }
                let _ = heads.send(head);
                let _ =
                    stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            });
        }
    });
    addr
}

/// Starts `host-sim serve` on port 0 and reads the address it prints.
fn start() -> Option<Server> {
    let bin = root().join("target/release/host-sim");
    let module = testkit::gateway::fixture_wasm();
    if !bin.exists() || !module.exists() {
        let required = std::env::var_os("REQUIRE_HOST_SIM").is_some_and(|v| v == "1");
        assert!(!required, "{} or {} is missing", bin.display(), module.display());
        eprintln!(
            "skipped: build target/release/host-sim and target/fixture/gateway.wasm (make fixture) to run these tests"
        );
        return None;
    }
    let (heads, forwarded) = std::sync::mpsc::channel();
    let upstream = upstream(heads);
    let mut child = Command::new(bin)
        .current_dir(root())
        .args(["serve", "--listen", "127.0.0.1:0", "--threads", "2", "--wasm"])
        .arg(&module)
        .args(["--upstream-override", &format!("orders=http://{upstream}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The address it prints on stdout.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            // "gateway listening on http://127.0.0.1:PORT"
            let addr = line
                .split_whitespace()
                .find_map(|w| w.trim_start_matches("http://").trim_end_matches('/').parse().ok());
            if let Some(addr) = addr {
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx.recv_timeout(GIVE_UP).expect("host-sim serve printed its address");
    Some(Server { child, addr, forwarded })
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect_timeout(&addr, GIVE_UP).unwrap();
    stream.set_read_timeout(Some(GIVE_UP)).unwrap();
    stream.set_write_timeout(Some(GIVE_UP)).unwrap();
    stream
}

/// The status of the answer on `stream`, or None when the server closed it
/// (or reset it) without answering.
fn status(stream: &mut TcpStream) -> Option<u16> {
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    let line = String::from_utf8_lossy(&answer);
    line.split_whitespace().nth(1).and_then(|s| s.parse().ok())
}

fn request(addr: SocketAddr, head: &[u8]) -> Option<u16> {
    let mut stream = connect(addr);
    stream.write_all(head).ok()?;
    status(&mut stream)
}

fn good_head(with_token: bool) -> Vec<u8> {
    head_with(with_token.then_some(r#","sub":"alice""#), "")
}

/// A request with a token (whose claims end with `extra`) when `extra` is
/// Some, and `fields` (CRLF-terminated header lines) added.
fn head_with(extra: Option<&str>, fields: &str) -> Vec<u8> {
    let mut head =
        format!("GET /v1/orders HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n{fields}").into_bytes();
    if let Some(extra) = extra {
        let claims = format!(
            r#"{{"iss":"https://issuer.test","aud":"orders","exp":{}{extra}}}"#,
            testkit::gateway::NOW + 10_000_000_000
        );
        let token = mint_fixture(r#"{"alg":"HS256","typ":"JWT","kid":"fixture"}"#, &claims);
        head.extend_from_slice(format!("Authorization: Bearer {token}\r\n").as_bytes());
    }
    head.extend_from_slice(b"\r\n");
    head
}

/// The server still serves: no token gets 401 from the module, a good token
/// reaches the upstream.
fn still_serving(server: &Server) {
    assert_eq!(request(server.addr, &good_head(false)), Some(401), "a request without a token");
    assert_eq!(request(server.addr, &good_head(true)), Some(200), "a request with a good token");
}

#[test]
fn a_head_over_the_limit_is_refused_and_the_server_goes_on() {
    let Some(server) = start() else { return };
    still_serving(&server);
    for size in [17 << 10, 64 << 10, 1 << 20] {
        let mut head = b"GET / HTTP/1.1\r\nHost: gw\r\n".to_vec();
        for i in 0..size / 1000 {
            head.extend_from_slice(format!("X-Pad-{i}: {}\r\n", "p".repeat(990)).as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        let answer = request(server.addr, &head);
        // The module's 431, hyper's own 431 or 400, or a closed connection.
        assert!(matches!(answer, None | Some(400 | 431)), "{size}-byte head: {answer:?}");
    }
    still_serving(&server);
}

#[test]
fn a_client_sending_a_byte_a_second_does_not_block_others() {
    let Some(server) = start() else { return };
    let mut slow = connect(server.addr);
    let head = good_head(true);
    let started = Instant::now();
    let mut sent = 0;
    // A few seconds of one byte a second, with good requests in between.
    while started.elapsed() < Duration::from_secs(4) && sent < head.len() {
        if slow.write_all(&head[sent..=sent]).is_err() {
            break; // the server gave up on the slow client: allowed
        }
        sent += 1;
        still_serving(&server);
        std::thread::sleep(Duration::from_secs(1));
    }
    slow.shutdown(Shutdown::Both).ok();
    still_serving(&server);
}

#[test]
fn garbage_bytes_get_an_error_or_a_closed_connection() {
    let Some(server) = start() else { return };
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut garbage: Vec<Vec<u8>> = vec![
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(), // a TLS ClientHello
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nAuthorization: Bearer \x00\x01\x02\r\n\r\n".to_vec(),
        b"\r\n\r\n\r\n\r\n".to_vec(),
        b"GET / HTTP/9.9\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nzz\r\n".to_vec(),
    ];
    for len in [1, 16, 300, 5000] {
        garbage.push((0..len).map(|_| next() as u8).collect());
    }
    for bytes in &garbage {
        let mut stream = connect(server.addr);
        if stream.write_all(bytes).is_ok() {
            stream.shutdown(Shutdown::Write).ok();
            let answer = status(&mut stream);
            assert!(answer.is_none_or(|s| (400..500).contains(&s)), "{answer:?} for {bytes:?}");
        }
    }
    still_serving(&server);
}

#[test]
fn a_flood_of_connections_does_not_stop_the_server() {
    let Some(server) = start() else { return };
    // 200 connections at once: idle, half a head, or a full request left unread.
    let mut open = Vec::new();
    for i in 0..200 {
        let Ok(mut stream) = TcpStream::connect_timeout(&server.addr, GIVE_UP) else { continue };
        match i % 3 {
            0 => {}
            1 => drop(stream.write_all(b"GET / HTTP/1.1\r\nHost: gw\r\nAuthoriz")),
            _ => drop(stream.write_all(&good_head(false))),
        }
        open.push(stream);
    }
    still_serving(&server);
    drop(open);
    still_serving(&server);
}

#[test]
fn the_upstream_never_sees_the_token_or_a_client_sent_subject() {
    let Some(server) = start() else { return };
    let spoof = "X-Gateway-Subject: admin\r\nx-gateway-subject: root\r\n";
    for (extra, want) in [(r#","sub":"alice""#, Some("alice")), ("", None)] {
        while server.forwarded.try_recv().is_ok() {}
        assert_eq!(request(server.addr, &head_with(Some(extra), spoof)), Some(200));
        let head = server.forwarded.recv_timeout(GIVE_UP).unwrap().to_ascii_lowercase();
        let subjects: Vec<&str> =
            head.lines().filter_map(|l| l.strip_prefix("x-gateway-subject:")).map(str::trim).collect();
        assert_eq!(subjects, want.into_iter().collect::<Vec<_>>(), "{head}");
        assert!(!head.contains("authorization") && !head.contains("bearer"), "{head}");
    }
}
