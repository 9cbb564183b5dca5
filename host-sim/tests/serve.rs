//! `host-sim serve` on loopback with ephemeral ports: forwarding to a real
//! upstream (`host-sim upstream`), rejections, a dead upstream, and guests
//! that loop, trap or outgrow their memory. Each test starts its own
//! processes and stops them, so the tests run in parallel.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Guard, head, send, start};

fn token(aud: &str, sub: Option<&str>) -> String {
    testkit::tokens::mint_for(&common::config(), aud, sub, runtime::unix_now() as u64, 600).unwrap()
}

fn gateway(extra: &[&str]) -> Guard {
    let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--access-log", "--threads", "2"];
    args.extend_from_slice(extra);
    start(&args)
}

#[test]
fn forwards_accepted_requests_without_the_token() {
    let upstream = start(&["upstream", "--listen", "127.0.0.1:0"]);
    let target = format!("orders=http://{}", upstream.addr);
    let wasm = common::gateway_wasm();
    for isolation in ["fresh", "reuse"] {
        let server = gateway(&[
            "--wasm",
            wasm.to_str().unwrap(),
            "--isolation",
            isolation,
            "--upstream-override",
            &target,
        ]);
        let body = vec![b'x'; 100_000];
        let t = token("orders", Some("alice"));
        let extra = [
            "Content-Type: application/octet-stream",
            "Content-Length: 100000",
            "X-Gateway-Subject: mallory",
        ];
        let reply = send(server.addr, &head("PUT", "/v1/items/42?color=red&size=2", Some(&t), &extra), &body);
        assert_eq!(reply.status, 200, "{reply:?}");
        let echo = reply.json();
        assert_eq!(echo["method"], "PUT");
        assert_eq!(echo["path"], "/orders-svc/v1/items/42", "under the route's base path");
        assert_eq!(echo["query"], "color=red&size=2");
        assert_eq!(echo["subject"], "alice", "the gateway's subject replaces a client's");
        assert_eq!(echo["authorization"], false, "the token must not reach the upstream");
        assert_eq!(echo["body_length"], 100_000);
        assert_eq!(echo["content_type"], "application/octet-stream");

        // A token without sub: no subject header.
        let t = testkit::tokens::mint_for(&common::config(), "orders", None, runtime::unix_now() as u64, 600)
            .unwrap();
        let reply = send(server.addr, &head("GET", "/", Some(&t), &[]), b"");
        assert_eq!(reply.status, 200);
        assert!(reply.json()["subject"].is_null());

        let (status, log) = server.terminate();
        assert!(status.success(), "{log}");
        assert!(log.contains("\"PUT /v1/items/42?<2>\" 200"), "access log: {log}");
    }
    upstream.terminate();
}

#[test]
fn rejections_are_answered_directly() {
    let wasm = common::gateway_wasm();
    let server = gateway(&["--wasm", wasm.to_str().unwrap()]);

    let reply = send(server.addr, &head("GET", "/v1/orders", None, &[]), b"");
    assert_eq!(reply.status, 401);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer realm=\"fixture\""));
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.json()["error_description"], "bearer token required");

    let expired =
        testkit::tokens::mint_for(&common::config(), "orders", Some("a"), 1_000_000_000, 60).unwrap();
    let reply = send(server.addr, &head("GET", "/", Some(&expired), &[]), b"");
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.header("www-authenticate"),
        Some("Bearer realm=\"fixture\", error=\"invalid_token\", error_description=\"token expired\"")
    );
    assert_eq!(reply.json()["error"], "invalid_token");

    let mut forged = token("orders", Some("a"));
    forged.replace_range(forged.len() - 4.., "AAAA");
    let reply = send(server.addr, &head("GET", "/", Some(&forged), &[]), b"");
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["error_description"], "signature mismatch");

    let reply = send(server.addr, &head("GET", "/", Some(&token("nobody", None)), &[]), b"");
    assert_eq!(reply.status, 401);
    assert_eq!(reply.json()["error_description"], "no route for audience");

    let t = token("orders", None);
    let two = format!("Authorization: Bearer {t}");
    let reply = send(server.addr, &head("GET", "/", Some(&t), &[&two]), b"");
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"], "invalid_request");

    // A head past the module's 16 KiB input buffer (hyper's own bound,
    // 32 KiB, answers 431 before the module sees a head).
    let big = format!("X-Big: {}", "a".repeat(20 << 10));
    let reply = send(server.addr, &head("GET", "/", Some(&t), &[&big]), b"");
    assert_eq!(reply.status, 431);
    assert_eq!(reply.json()["error_description"], "request head too large");

    let (status, _) = server.terminate();
    assert!(status.success());
}

#[test]
fn a_dead_upstream_is_a_502() {
    // Bind and drop a listener: nothing listens on that port afterwards.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let wasm = common::gateway_wasm();
    let target = format!("billing=http://127.0.0.1:{port}");
    let server = gateway(&["--wasm", wasm.to_str().unwrap(), "--upstream-override", &target]);
    let reply = send(
        server.addr,
        &head("POST", "/pay", Some(&token("billing", Some("b"))), &["Content-Length: 3"]),
        b"abc",
    );
    assert_eq!(reply.status, 502, "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"));
    // The body worker/ABI.md fixes for every host; the details go to the log.
    assert_eq!(reply.body, r#"{"error_description":"upstream unavailable"}"#);
    assert_eq!(reply.header("www-authenticate"), None);
    let (_, log) = server.terminate();
    assert!(log.contains("upstream unreachable"), "{log}");
}

#[test]
fn failing_guests_get_503_or_500_and_the_server_goes_on() {
    // Bodies as worker/ABI.md fixes them for every host; the detailed reason
    // goes to the access log.
    for (fixture, status, body, reason) in [
        ("loop", 503, "gateway module out of time", "guest exceeded its CPU deadline"),
        ("trap", 500, "gateway module failed", "guest trapped: wasm `unreachable` instruction executed"),
        ("grow", 500, "gateway module failed", "guest exceeded its memory limit"),
    ] {
        let wasm = common::fixture(fixture);
        for isolation in ["fresh", "reuse"] {
            let server =
                gateway(&["--wasm", wasm.to_str().unwrap(), "--deadline-ms", "20", "--isolation", isolation]);
            for _ in 0..3 {
                let reply = send(server.addr, &head("GET", "/", None, &[]), b"");
                assert_eq!(reply.status, status, "{fixture} {isolation}");
                assert_eq!(reply.json()["error_description"], body, "{reply:?}");
                assert_eq!(reply.header("content-type"), Some("application/json"));
                assert_eq!(reply.header("www-authenticate"), None);
            }
            let (exit, log) = server.terminate();
            assert!(exit.success(), "{fixture}: {log}");
            assert_eq!(log.matches(reason).count(), 3, "{fixture} {isolation}: {log}");
        }
    }
}
