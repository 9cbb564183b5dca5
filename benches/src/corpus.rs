//! The request corpus: HS256 tokens minted with the compiled-in key and the
//! request heads that carry them.
//!
//! Two sets are used. The **mix** is what a gateway sees: a valid token,
//! an expired one, a bad signature, no token, an audience with no route.
//! The **phases** are requests that stop at successive points of the request
//! path, so the cost of a phase inside the module is the difference between
//! two of them (see `docs/PERFORMANCE.md`, "Stage breakdown").

use host_sim::tokens;
use serde::Serialize;
use worker::config::COMPILED;

/// The clock every benchmark passes: Unix seconds, fixed so tokens stay valid.
pub const NOW: u64 = 1_800_000_000;

/// One request of the corpus.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    /// A short name, used as the benchmark id.
    pub name: &'static str,
    /// The request head (CRLF line ends, blank line included).
    pub head: String,
    /// The status the worker answers with.
    pub status: u16,
    /// The bearer token, when the head carries one.
    pub token: Option<String>,
}

/// The compiled-in key's secret and id.
pub fn key() -> (&'static str, &'static [u8]) {
    let key = COMPILED.keys[0];
    (key.kid, key.secret)
}

/// HMAC-SHA256 of `input` with `secret`, base64url.
pub fn sign(secret: &[u8], input: &str) -> String {
    tokens::sign(secret, input)
}

/// A compact JWS of `header` and `claims` JSON, signed with the compiled-in key.
pub fn token(header: &str, claims: &str) -> String {
    tokens::mint(header, claims, key().1)
}

/// The JOSE header of every corpus token.
pub fn header_json() -> String {
    format!(r#"{{"alg":"HS256","typ":"JWT","kid":"{}"}}"#, key().0)
}

/// A claims set like an identity provider's: issuer, subject, audience,
/// issued-at and expiry (the token comes to about 230 bytes; the worker's
/// token buffer holds 256).
pub fn claims_json(audience: &str, exp: u64) -> String {
    claims_json_at(NOW, audience, exp)
}

/// [`claims_json`] issued at `now - 60`.
pub fn claims_json_at(now: u64, audience: &str, exp: u64) -> String {
    let iss = COMPILED.issuer.unwrap_or("https://auth.example.com");
    format!(r#"{{"iss":"{iss}","sub":"alice","aud":"{audience}","iat":{},"exp":{exp}}}"#, now - 60)
}

/// The audience of the first configured route.
pub fn routed_audience() -> &'static str {
    COMPILED.routes[0].audience
}

/// A request head as a client sends it, with `authorization` when given.
pub fn head(authorization: Option<&str>) -> String {
    let mut head = String::from(
        "GET /v1/orders/42?expand=items HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: bench/1.0\r\nAccept: application/json\r\n",
    );
    if let Some(value) = authorization {
        head.push_str("Authorization: ");
        head.push_str(value);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    head
}

fn case(name: &'static str, token: Option<String>, status: u16) -> Case {
    let authorization = token.as_ref().map(|t| format!("Bearer {t}"));
    Case { name, head: head(authorization.as_deref()), status, token }
}

/// A valid token for the first route.
pub fn valid_token() -> String {
    token(&header_json(), &claims_json(routed_audience(), NOW + 3600))
}

/// The request mix: what each per-request row runs, in this order.
pub fn mix() -> Vec<Case> {
    mix_at(NOW)
}

/// The request mix for a host whose clock reads `now` (the HTTP runs use
/// the real clock).
pub fn mix_at(now: u64) -> Vec<Case> {
    let claims = |aud: &str, exp: u64| claims_json_at(now, aud, exp);
    let valid = token(&header_json(), &claims(routed_audience(), now + 3600));
    let (input, _) = valid.rsplit_once('.').expect("three parts");
    let forged = format!("{input}.{}", sign(b"some-other-key-0123456789abcdef0123", input));
    vec![
        case("valid", Some(valid.clone()), 200),
        case("expired", Some(token(&header_json(), &claims(routed_audience(), now - 3600))), 401),
        case("bad_signature", Some(forged), 401),
        case("no_token", None, 401),
        case("unknown_audience", Some(token(&header_json(), &claims("nobody", now + 3600))), 401),
    ]
}

/// Requests that stop at successive phases of the request path. Each one
/// runs every phase of the one before it, and then some:
///
/// | request | runs |
/// |---|---|
/// | `no_token` | parse the head, write a rejection |
/// | `bad_base64` | + copy and split the token, base64url of the header (fails at its end) |
/// | `unknown_kid` | + the whole header: base64url and JSON; no key |
/// | `bad_signature` | + the right key, base64url of the signature, HMAC-SHA256 (no match) |
/// | `unknown_audience` | + base64url and JSON of the claims, time and issuer checks, route lookup (none) |
/// | `valid` | the same, then a route is found and a grant written instead |
pub fn phases() -> Vec<Case> {
    let valid = valid_token();
    let mut parts = valid.split('.');
    let (h, p, s) = (parts.next().expect("h"), parts.next().expect("p"), parts.next().expect("s"));
    // A header part of the same length whose last character leaves non-zero
    // trailing bits: non-canonical base64url, found only at the end.
    let mut bad_h = h.to_string();
    bad_h.pop();
    bad_h.push(if h.len() % 4 == 2 { 'B' } else { 'F' });
    let unknown_kid =
        token(r#"{"alg":"HS256","typ":"JWT","kid":"nokey"}"#, &claims_json(routed_audience(), NOW + 3600));
    let forged = format!("{h}.{p}.{}", sign(b"some-other-key-0123456789abcdef0123", &format!("{h}.{p}")));
    vec![
        case("no_token", None, 401),
        case("bad_base64", Some(format!("{bad_h}.{p}.{s}")), 401),
        case("unknown_kid", Some(unknown_kid), 401),
        case("bad_signature", Some(forged), 401),
        case("unknown_audience", Some(token(&header_json(), &claims_json("nobody", NOW + 3600))), 401),
        case("valid", Some(valid), 200),
    ]
}

/// Checks every case against the native worker: the status must match.
/// Benchmarks call this first so that a wrong corpus fails loudly.
pub fn check_native(cases: &[Case]) {
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    for case in cases {
        let answer = worker::handle(case.head.as_bytes(), NOW as f64, &COMPILED, &mut scratch);
        assert_eq!(answer.status, case.status, "{}: {}", case.name, String::from_utf8_lossy(answer.output));
    }
}
