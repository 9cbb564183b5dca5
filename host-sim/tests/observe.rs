//! What `host-sim serve` tells its operators, over real HTTP to a recording
//! upstream: no log line (text or JSON) holds anything of a query, where a
//! token may travel as a value or as a name; request heads hyper refuses
//! itself are logged and counted; an upstream answering with whatever
//! status a request asks for makes few series; the one issuer of a module
//! without a label table is named as its config names it.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Guard, head, send, start};

/// An upstream that records each request line and answers with the status
/// its query names (`s=NNN`), 200 without one.
struct Recorder {
    addr: SocketAddr,
    lines: Arc<Mutex<Vec<String>>>,
}

fn recorder() -> Recorder {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&lines);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let kept = Arc::clone(&kept);
            std::thread::spawn(move || answer(stream, &kept));
        }
    });
    Recorder { addr, lines }
}

/// Reads one request head from `stream` and answers it (no body is sent to it here).
fn answer(mut stream: TcpStream, kept: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut field = String::new();
    while reader.read_line(&mut field).is_ok_and(|n| n > 2) {
        field.clear();
    }
    let status = line.split(['?', '&', ' ']).find_map(|p| p.strip_prefix("s=")).and_then(|s| s.parse().ok());
    let status: u16 = status.unwrap_or(200);
    kept.lock().unwrap().push(line.trim_end().to_owned());
    let _ = write!(stream, "HTTP/1.1 {status} Odd\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
}

/// A free port on loopback, for a listener the gateway opens.
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// `host-sim serve` over `wasm`, every origin of the fixtures sent to `upstream`.
fn gateway(wasm: &str, upstream: SocketAddr, extra: &[&str]) -> Guard {
    let to = |from: &str| format!("{from}=http://{upstream}");
    let (a, b) = (to("http://127.0.0.1:9201"), to("http://127.0.0.1:9202"));
    let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--threads", "2", "--wasm", wasm];
    args.extend_from_slice(&["--upstream-override", &a, "--upstream-override", &b]);
    args.extend_from_slice(extra);
    start(&args)
}

/// The metrics scraped from `addr`.
fn scrape(addr: SocketAddr) -> String {
    send(addr, "GET /metrics HTTP/1.1\r\nHost: m\r\nConnection: close\r\n\r\n", b"").body
}

/// Every part of `token` a log must not hold: the token and each of its segments.
fn secrets(token: &str) -> Vec<String> {
    let mut parts: Vec<String> = token.split('.').filter(|p| p.len() >= 8).map(str::to_owned).collect();
    parts.push(token.to_owned());
    parts
}

/// Each place a client may put `secret` in a query after `path`, with how
/// many parameters the log may say the query has.
fn queries(path: &str, secret: &str) -> Vec<(String, usize)> {
    vec![
        (format!("{path}?access_token={secret}"), 1),
        (format!("{path}?{secret}"), 1),
        (format!("{path}?{secret}=1"), 1),
        (format!("{path}?a=1&{secret}"), 2),
        (format!("{path}?a=1&{secret}={secret}&b"), 3),
    ]
}

#[test]
fn no_log_line_holds_anything_of_a_query() {
    let upstream = recorder();
    let fixture = common::gateway_wasm();
    let policies = common::root().join("target/fixture/gateway-policies.wasm");
    let config = common::config();
    let now = runtime::unix_now() as u64;
    let bearer = testkit::tokens::mint_for(&config, "orders", Some("alice"), now, 600).unwrap();
    let in_query = testkit::tokens::mint_for(&config, "orders", Some("query-secret"), now, 600).unwrap();
    for form in ["text", "json"] {
        let log = format!("--access-log={form}");
        // A token path: forwarded with the bearer token, a second token in the query.
        let server = gateway(fixture.to_str().unwrap(), upstream.addr, &[&log]);
        let sent = queries("/v1/items", &in_query);
        for (target, _) in &sent {
            let reply = send(server.addr, &head("GET", target, Some(&bearer), &[]), b"");
            assert_eq!(reply.status, 200, "{target}: {reply:?}");
        }
        let (_, token_log) = server.terminate();
        // A public path, anonymously.
        let server = gateway(policies.to_str().unwrap(), upstream.addr, &[&log]);
        let public = queries("/healthz", &in_query);
        for (target, _) in &public {
            let reply = send(server.addr, &head("GET", target, None, &[]), b"");
            assert_eq!(reply.status, 200, "{target}: {reply:?}");
        }
        let (_, public_log) = server.terminate();

        let received = upstream.lines.lock().unwrap().clone();
        assert!(
            received.iter().any(|l| l.contains(&in_query)),
            "the query reached the upstream: {received:?}"
        );
        for (log, path, sent) in [(&token_log, "/v1/items", &sent), (&public_log, "/healthz", &public)] {
            for line in log.lines() {
                for secret in secrets(&in_query).iter().chain(&secrets(&bearer)) {
                    assert!(!line.contains(secret.as_str()), "{form}: a line holds a token: {line}");
                }
            }
            for (_, parameters) in sent.iter() {
                let shown = format!("{path}?<{parameters}>");
                assert!(log.contains(&shown), "{form}: no {shown} in {log}");
            }
        }
    }
}

/// Heads hyper refuses itself: obs-fold, two lengths, a space in a field's
/// name, a control byte in one, a bad request line.
const REFUSED: [&str; 5] = [
    "GET /v1/items HTTP/1.1\r\nHost: gateway.test\r\nX-A: 1\r\n folded\r\n\r\n",
    "POST /v1/items HTTP/1.1\r\nHost: gateway.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
    "GET /v1/items HTTP/1.1\r\nHost: gateway.test\r\nBad Name: 1\r\n\r\n",
    "GET /v1/items HTTP/1.1\r\nHost: gateway.test\r\nX\x01: 1\r\n\r\n",
    "GET /v1/items HTP/1.1\r\nHost: gateway.test\r\n\r\n",
];

/// Sends `raw` and reads whatever comes back, as text.
fn exchange(addr: SocketAddr, raw: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // A server that refuses early may close before all is written.
    let _ = stream.write_all(raw.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn refused_heads_are_logged_and_counted() {
    let upstream = recorder();
    let wasm = common::gateway_wasm();
    for form in ["text", "json"] {
        let metrics = free_port();
        let log = format!("--access-log={form}");
        let server =
            gateway(wasm.to_str().unwrap(), upstream.addr, &[&log, "--metrics", &metrics.to_string()]);
        for raw in REFUSED {
            let answer = exchange(server.addr, raw);
            assert!(answer.starts_with("HTTP/1.1 400"), "{raw:?}: {answer:?}");
        }
        // A head far past hyper's buffer: 431 from hyper itself.
        let huge = format!(
            "GET /v1/items HTTP/1.1\r\nHost: gateway.test\r\nX-Big: {}\r\n\r\n",
            "a".repeat(256 << 10)
        );
        assert!(exchange(server.addr, &huge).starts_with("HTTP/1.1 431"));
        // The line follows the connection's end by a moment.
        std::thread::sleep(Duration::from_millis(300));
        let text = scrape(metrics);
        let count = |outcome: &str| {
            let sample =
                format!("gateway_decisions_total{{outcome=\"{outcome}\",rule=\"\",route=\"\",issuer=\"\"}} ");
            text.lines().find_map(|l| l.strip_prefix(sample.as_str())).and_then(|n| n.parse::<u64>().ok())
        };
        assert_eq!(count("malformed_head"), Some(REFUSED.len() as u64), "{text}");
        assert_eq!(count("head_too_large"), Some(1), "{text}");
        assert!(text.contains(&format!("gateway_denied_total {}\n", REFUSED.len() + 1)), "{text}");
        let (_, log) = server.terminate();
        let refused: Vec<&str> = log.lines().filter(|l| l.contains("malformed_head")).collect();
        assert_eq!(refused.len(), REFUSED.len(), "{form}: {log}");
        for line in refused {
            match form {
                "text" => assert!(line.contains("\"- -\" 400 "), "{line}"),
                _ => {
                    let value: serde_json::Value = serde_json::from_str(line).unwrap();
                    assert_eq!(
                        (value["status"].as_u64(), value["outcome"].as_str()),
                        (Some(400), Some("malformed_head"))
                    );
                }
            }
        }
        assert!(log.lines().any(|l| l.contains("head_too_large") && l.contains("431")), "{form}: {log}");
    }
}

#[test]
fn an_upstream_echoing_odd_statuses_makes_few_series() {
    let upstream = recorder();
    let wasm = common::gateway_wasm();
    let metrics = free_port();
    let server = gateway(wasm.to_str().unwrap(), upstream.addr, &["--metrics", &metrics.to_string()]);
    // Fifty unregistered statuses, then registered ones.
    let odd = (250..275).chain(550..575);
    let registered = [200, 404, 503];
    let config = common::config();
    let token =
        testkit::tokens::mint_for(&config, "orders", Some("a"), runtime::unix_now() as u64, 600).unwrap();
    for status in odd.chain(registered) {
        let reply = send(server.addr, &head("GET", &format!("/v1/items?s={status}"), Some(&token), &[]), b"");
        assert_eq!(reply.status, status);
    }
    let text = scrape(metrics);
    let series: Vec<&str> =
        text.lines().filter(|l| l.starts_with("gateway_upstream_responses_total{")).collect();
    let expected = ["2xx\"} 25", "5xx\"} 25", "200\"} 1", "404\"} 1", "503\"} 1"];
    assert_eq!(series.len(), expected.len(), "{series:?}");
    for end in expected {
        assert!(series.iter().any(|s| s.ends_with(end)), "no series ending {end}: {series:?}");
    }
    server.terminate();
}

#[test]
fn the_one_issuer_of_a_module_without_a_label_table_is_named_by_its_config() {
    let upstream = recorder();
    let wasm = common::gateway_wasm();
    let config = common::config();
    let token =
        testkit::tokens::mint_for(&config, "orders", Some("a"), runtime::unix_now() as u64, 600).unwrap();
    let fixture = common::fixture_toml();
    let other = common::root().join("testkit/fixture-policies.toml");
    for (given, named) in [(&fixture, "https://issuer.test"), (&other, "0")] {
        let metrics = free_port();
        let extra =
            ["--metrics", &metrics.to_string(), "--access-log=json", "--config", given.to_str().unwrap()];
        let server = gateway(wasm.to_str().unwrap(), upstream.addr, &extra);
        assert_eq!(send(server.addr, &head("GET", "/v1/items", Some(&token), &[]), b"").status, 200);
        let text = scrape(metrics);
        let sample = format!(
            "gateway_decisions_total{{outcome=\"forwarded\",rule=\"\",route=\"orders\",issuer=\"{named}\"}} 1"
        );
        assert!(text.contains(&sample), "{}: {text}", given.display());
        let (_, log) = server.terminate();
        let line = log.lines().find(|l| l.contains("\"forwarded\"")).unwrap();
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(value["issuer"], named, "{line}");
        if named == "0" {
            assert!(log.contains("labels: ") && log.contains("2 issuers"), "says why: {log}");
        }
    }
    // `eval` names it alike.
    let mut eval = common::bin();
    eval.args(["eval", "--wasm", wasm.to_str().unwrap(), "--config", fixture.to_str().unwrap()]);
    let request = head("GET", "/v1/items", Some(&token), &[]);
    let mut child =
        eval.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    writeln!(child.stdin.take().unwrap(), "{}", serde_json::json!({ "request": request })).unwrap();
    let output = child.wait_with_output().unwrap();
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["labels"]["issuer"], "https://issuer.test", "{value}");
}
