//! The Envoy peer end to end: real Envoy (`make envoy` installs it under
//! target/envoy-venv) runs the bootstrap that `gateway_envoy_render::jwt_authn` renders
//! from the test fixture (testkit/fixture.toml), in front of two recording upstreams on loopback, and
//! must do the gateway's job: forward a valid token's request by its audience
//! with the subject set and the token removed, and forward nothing else.
//!
//! Skipped, with a message, when the Envoy binary is missing, unless
//! REQUIRE_ENVOY is set (`make test` sets it).
#![allow(clippy::unwrap_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Guard, head, send};
use gateway_envoy_render::bootstrap::EnvoyOptions;
use testkit::tokens::{Claims, mint, mint_for};

/// The Envoy binary: $ENVOY, or the one `make envoy` installs.
fn envoy_bin() -> Option<PathBuf> {
    let path = std::env::var_os("ENVOY")
        .map(PathBuf::from)
        .unwrap_or_else(|| common::root().join("target/envoy-venv/bin/envoy"));
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("REQUIRE_ENVOY").is_none(),
        "{} is missing and REQUIRE_ENVOY is set: run `make envoy`",
        path.display()
    );
    eprintln!("SKIPPED: {} is missing (run `make envoy`, or set ENVOY=PATH)", path.display());
    None
}

/// An upstream on loopback that records each request head it receives and
/// answers 200. It stops accepting when dropped, or after two minutes.
struct Recorder {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Recorder {
    fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (record, stopped) = (heads.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !stopped.load(Ordering::Relaxed) && Instant::now() < deadline {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let record = record.clone();
                        std::thread::spawn(move || answer(stream, &record));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Recorder { addr, heads, stop }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Records each request head on `stream` (keep-alive, bodiless requests) and answers 200.
fn answer(stream: TcpStream, record: &Mutex<Vec<String>>) {
    stream.set_nonblocking(false).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => head.push_str(&line),
            }
        }
        record.lock().unwrap().push(head);
        if writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\n\r\nrecorded").is_err() {
            return;
        }
    }
}

/// The value of header `name` in a recorded head, when it appears exactly once.
fn only_header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    let mut values = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(n, _)| n.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim());
    let first = values.next();
    assert!(values.next().is_none(), "{name} appears twice in {head:?}");
    first
}

/// A port free on loopback now (Envoy is told to listen on it).
fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// Renders the peer's bootstrap with `orders` and `billing` sent to the
/// recorders, starts Envoy on it, and waits (at most 60 s) until it listens.
fn start_envoy(envoy: &PathBuf, orders: &Recorder, billing: &Recorder) -> Guard {
    let options = EnvoyOptions {
        listen: free_port(),
        admin: None,
        upstream_overrides: [
            ("orders".to_owned(), format!("http://{}", orders.addr)),
            ("billing".to_owned(), format!("http://{}/billing-base", billing.addr)),
        ]
        .into(),
    };
    let yaml = gateway_envoy_render::jwt_authn::to_yaml(&common::config(), &options).unwrap();
    let path = common::scratch("envoy").join("jwt-authn.yaml");
    std::fs::write(&path, yaml).unwrap();
    let mut child = Command::new(envoy)
        .args(["--config-path", path.to_str().unwrap(), "--disable-hot-restart", "--concurrency", "1"])
        .args(["--log-level", "warn"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn envoy");
    let stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let mut guard = Guard { child, addr: options.listen, stderr: Some(stderr) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect_timeout(&guard.addr, Duration::from_secs(1)).is_err() {
        let exited = guard.child.try_wait().unwrap().is_some();
        if exited || Instant::now() > deadline {
            let _ = guard.child.kill();
            let log = guard.stderr.take().map(|h| h.join().unwrap_or_default()).unwrap_or_default();
            panic!("envoy did not listen on {} (exited: {exited}): {log}", guard.addr);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    guard
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

#[test]
fn native_jwt_authn_forwards_by_audience_and_refuses_the_rest() {
    let Some(envoy) = envoy_bin() else { return };
    let config = common::config();
    let (orders, billing) = (Recorder::start(), Recorder::start());
    let server = start_envoy(&envoy, &orders, &billing);
    let get = |target: &str, token: Option<&str>, extra: &[&str]| {
        send(server.addr, &head("GET", target, token, extra), b"")
    };

    // A valid token: forwarded to its audience's upstream, the client's
    // x-gateway-* headers (either spelling) replaced, the token removed.
    let valid = mint_for(&config, "orders", Some("alice"), now(), 600).unwrap();
    let forged = ["X-Gateway-Subject: mallory", "x_gateway_subject: mallory", "X-Gateway-Audience: billing"];
    let reply = get("/v1/items/42?color=red", Some(&valid), &forged);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.body, "recorded");
    let heads = orders.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let forwarded = &heads[0];
    assert!(forwarded.starts_with("GET /v1/items/42?color=red HTTP/1.1\r\n"), "{forwarded}");
    assert_eq!(only_header(forwarded, "x-gateway-subject"), Some("alice"), "{forwarded}");
    assert_eq!(only_header(forwarded, "authorization"), None, "the token must not reach the upstream");
    assert_eq!(only_header(forwarded, "x-gateway-audience"), None, "{forwarded}");
    assert_eq!(only_header(forwarded, "x_gateway_subject"), None, "{forwarded}");
    assert_eq!(only_header(forwarded, "host"), Some(orders.addr.to_string().as_str()));
    // An edge proxy, as the gateway is: the peer is the connection's, and
    // Envoy appends it to X-Forwarded-For (a loopback peer as the machine's
    // own address, Envoy's rule for an edge), and no x-envoy-* field goes
    // upstream.
    let peer = only_header(forwarded, "x-forwarded-for").unwrap_or_default();
    assert!(peer.parse::<std::net::IpAddr>().is_ok(), "one address in X-Forwarded-For: {forwarded}");
    assert_eq!(only_header(forwarded, "x-envoy-external-address"), None, "{forwarded}");

    // The audience picks the route, and the route's base path is kept.
    let for_billing = mint_for(&config, "billing", None, now(), 600).unwrap();
    let reply = get("/invoices", Some(&for_billing), &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    let heads = billing.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(heads[0].starts_with("GET /billing-base/invoices HTTP/1.1\r\n"), "{}", heads[0]);
    assert_eq!(only_header(&heads[0], "x-gateway-subject"), None, "no sub, no subject header");

    // A double-encoded climb passes Envoy's path normalization, which never
    // decodes `%25`: the peer forwards what the gateway refuses with 400
    // (deploy/envoy/README.md, "Where it answers differently").
    let reply = get("/%252e%252e/billing-base/x", Some(&valid), &[]);
    assert_eq!(reply.status, 200, "{reply:?}");
    let heads = orders.heads();
    assert!(heads[1].starts_with("GET /%252e%252e/billing-base/x HTTP/1.1\r\n"), "{heads:?}");

    // Nothing else is forwarded.
    let (kid, key) = testkit::tokens::first_key(&config).unwrap();
    let issuer = config.first_iss().unwrap_or_default().to_owned();
    let signed = |claims: &str, key: &[u8]| mint(Claims::header(kid), claims, key);
    let exp = now() + 600;
    let cases = [
        ("no token", None, 401),
        ("expired", mint_for(&config, "orders", Some("alice"), now() - 7200, 600), 401),
        (
            "bad signature",
            Some(signed(
                &Claims::new("orders", exp).issuer(&issuer).to_json(),
                b"another-key-0123456789abcdef-0123456789",
            )),
            401,
        ),
        (
            "other issuer",
            Some(signed(&Claims::new("orders", exp).issuer("https://evil.test").to_json(), key)),
            401,
        ),
        ("no exp", Some(signed(&format!(r#"{{"aud":"orders","iss":"{issuer}"}}"#), key)), 401),
        // Envoy's own answer for an audience outside the provider's list is 403.
        ("unrouted audience", mint_for(&config, "nobody", Some("alice"), now(), 600), 403),
        // A verified token whose aud is a list: the no-route answer.
        (
            "aud list",
            Some(signed(&format!(r#"{{"aud":["x","orders"],"exp":{exp},"iss":"{issuer}"}}"#), key)),
            401,
        ),
    ];
    for (name, token, status) in cases {
        let reply = get("/v1/items/42", token.as_deref(), &[]);
        assert_eq!(reply.status, status, "{name}: {reply:?}");
        let challenge = reply.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer realm="), "{name}: {reply:?}");
    }
    assert_eq!(
        orders.heads().len() + billing.heads().len(),
        3,
        "only the three valid requests were forwarded"
    );

    let (status, log) = server.terminate();
    assert!(status.success() || status.code().is_none(), "envoy: {status}: {log}");
}
