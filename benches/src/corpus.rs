//! The requests every benchmark sends, minted by `testkit::tokens` with the
//! first key of the configuration compiled into the worker:
//!
//! - the **mix**: `testkit::mix::Mix` (60% valid tokens, 10% each
//!   expired, bad signature, no token and unknown audience), drawn with the
//!   seed and length `bench-tool host` uses; every per-request row cycles
//!   through it, so every figure quoted for "the mix" is over the same mix;
//! - the **cases**: one request of each kind, for the per-kind rows;
//! - the **phases**: requests that stop at successive points of the request
//!   path, so the cost of a phase inside the module is the difference
//!   between two of them (`docs/PERFORMANCE.md`, "Where the time goes").

use std::path::PathBuf;
use std::sync::OnceLock;

use gateway_config::GatewayConfig;
use serde::Serialize;
use testkit::mix::{Mix, Request, RequestKind, SplitMix64};
use testkit::tokens::{self, Claims};
use worker::config::COMPILED;

/// The clock every in-process benchmark passes: Unix seconds, fixed so the
/// tokens stay valid.
pub const NOW: u64 = 1_800_000_000;

/// The mix's seed: `bench-tool host`'s default.
pub const SEED: u64 = 7;

/// How many requests the mix holds: as many as `bench-tool host` draws.
pub const MIX_LEN: usize = 4096;

/// The request line's method and target of the phase requests.
const PHASE_PATH: &str = "/v1/items/42";

/// A key the gateway does not hold: signatures made with it do not verify.
const OTHER_KEY: &[u8] = b"not-the-gateway-key-0123456789abcdef";

/// The configuration file the worker was built from: `GATEWAY_CONFIG`
/// (relative to the workspace root) or `gateway.toml`, as `worker/build.rs`
/// resolves it.
pub fn config_path() -> PathBuf {
    let root = crate::paths::root();
    match std::env::var_os("GATEWAY_CONFIG") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            if p.is_absolute() { p } else { root.join(p) }
        }
        _ => root.join("gateway.toml"),
    }
}

/// The worker's configuration, read once. Panics when it is not the one
/// compiled into the worker (another key, issuer or routes): the tokens
/// would then be refused and every figure would measure a rejection.
pub fn config() -> &'static GatewayConfig {
    static CONFIG: OnceLock<GatewayConfig> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let path = config_path();
        let config = gateway_config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let first = config.hs256_keys().next().map(|k| (k.kid.as_str(), k.secret()));
        let compiled = COMPILED.issuers.iter().flat_map(|i| i.keys).find_map(|k| match k {
            worker::config::VerifyingKey::Hs256(k) => Some((k.kid, k.secret)),
            #[allow(unreachable_patterns)]
            _ => None,
        });
        let audiences: Vec<&str> = config.routes.iter().map(|r| r.aud.as_str()).collect();
        let compiled_audiences: Vec<&str> = COMPILED.routes.iter().map(|r| r.audience).collect();
        assert!(
            first == compiled
                && config.first_iss() == COMPILED.issuers.first().and_then(|i| i.iss)
                && audiences == compiled_audiences,
            "{} is not the configuration compiled into the worker: build with the same GATEWAY_CONFIG",
            path.display()
        );
        config
    })
}

/// The short name of a request kind, used in benchmark ids and JSON keys.
pub fn slug(kind: RequestKind) -> &'static str {
    match kind {
        RequestKind::Valid => "valid",
        RequestKind::Expired => "expired",
        RequestKind::BadSignature => "bad_signature",
        RequestKind::NoToken => "no_token",
        RequestKind::UnknownAudience => "unknown_audience",
    }
}

/// The mix, minted for a host whose clock reads `now` (the HTTP runs pass
/// the real clock, since the servers read it).
pub fn mix_at(now: u64) -> Vec<Request> {
    Mix::new(config(), now, SEED).generate(MIX_LEN)
}

/// The mix at [`NOW`].
pub fn mix() -> Vec<Request> {
    mix_at(NOW)
}

/// The mix's request heads, as bytes.
pub fn heads(mix: &[Request]) -> Vec<Vec<u8>> {
    mix.iter().map(|r| r.head.clone().into_bytes()).collect()
}

/// The mix as the native worker reads it: each head after its context line.
pub fn inputs(mix: &[Request]) -> Vec<Vec<u8>> {
    mix.iter().map(|r| input(&r.head)).collect()
}

/// What a host writes into the module for `head` (`worker/ABI.md`): the
/// context line of a loopback client over plain HTTP, then the head.
pub fn input(head: &str) -> Vec<u8> {
    [b"http 127.0.0.1\n".as_slice(), head.as_bytes()].concat()
}

/// One request of each kind, in the order of `RequestKind::ALL` (valid first).
pub fn cases() -> Vec<Request> {
    let mix = Mix::new(config(), NOW, SEED);
    let mut rng = SplitMix64::new(SEED);
    RequestKind::ALL.iter().map(|&kind| mix.request(kind, &mut rng)).collect()
}

/// The bearer token of a head built by `testkit::tokens::request_head`.
pub fn bearer(head: &str) -> Option<&str> {
    head.lines().find_map(|line| line.strip_prefix("Authorization: Bearer "))
}

/// The valid case's token.
pub fn valid_token() -> String {
    let cases = cases();
    bearer(&cases[0].head).expect("the valid case carries a token").to_owned()
}

/// A request of the stage breakdown.
#[derive(Debug, Clone, Serialize)]
pub struct Phase {
    /// Its name, from [`PHASES`].
    pub name: &'static str,
    /// The request head.
    pub head: String,
    /// The status the worker answers with.
    pub status: u16,
}

/// The phase requests' names, in order. Each runs every phase of the one
/// before it, and then some:
///
/// | request | runs |
/// |---|---|
/// | `no_token` | parse the head, write a rejection |
/// | `bad_base64` | + copy and split the token, base64url of the header (fails at its end) |
/// | `unknown_kid` | + the whole header: base64url and JSON; no key |
/// | `bad_signature` | + the right key, base64url of the signature, HMAC-SHA256 (no match) |
/// | `unknown_audience` | + base64url and JSON of the claims, time and issuer checks, route lookup (none) |
/// | `valid` | the same, then a route is found and a grant written instead |
pub const PHASES: [&str; 6] =
    ["no_token", "bad_base64", "unknown_kid", "bad_signature", "unknown_audience", "valid"];

/// The phase requests, in the order of [`PHASES`]: the same request line and
/// fields, only the token differs.
pub fn phases() -> Vec<Phase> {
    let config = config();
    let (kid, key) = tokens::first_key(config).expect("the config has a key");
    let claims = |aud: &str| {
        let mut claims = Claims::new(aud, NOW + 600).subject("alice").issued_at(NOW - 60);
        if let Some(iss) = config.first_iss() {
            claims = claims.issuer(iss);
        }
        claims.to_json()
    };
    let audience = &config.routes[0].aud;
    let valid = tokens::mint(Claims::header(kid), claims(audience), key);
    let (input, signature) = valid.rsplit_once('.').expect("a JWS has three parts");
    let (header, _) = input.split_once('.').expect("a JWS has three parts");
    // A header part of the same length whose last character leaves non-zero
    // trailing bits: non-canonical base64url, found only at its end.
    let mut bad_header = header.to_owned();
    bad_header.pop();
    bad_header.push(if header.len() % 4 == 2 { 'B' } else { 'F' });
    let bad_base64 = format!("{bad_header}{}.{signature}", &input[header.len()..]);
    let unknown_kid = tokens::mint(Claims::header("nokey"), claims(audience), key);
    let bad_signature = format!("{input}.{}", tokens::sign(OTHER_KEY, input));
    let unknown_audience = tokens::mint(Claims::header(kid), claims("no-such-audience"), key);
    let tokens =
        [None, Some(bad_base64), Some(unknown_kid), Some(bad_signature), Some(unknown_audience), Some(valid)];
    PHASES
        .into_iter()
        .zip(tokens)
        .map(|(name, token)| Phase {
            name,
            head: tokens::request_head("GET", PHASE_PATH, token.as_deref()),
            status: if name == "valid" { 200 } else { 401 },
        })
        .collect()
}

/// Checks the mix, the cases and the phases against the native worker: the
/// status must be the expected one. Benchmarks call this first, so that a wrong corpus
/// fails loudly instead of measuring the wrong path.
pub fn check_native() {
    let mut scratch = [0u8; worker::abi::SCRATCH_CAPACITY];
    let mut status = |head: &str| worker::handle(&input(head), NOW as f64, &COMPILED, &mut scratch).status;
    for case in mix().into_iter().chain(cases()) {
        assert_eq!(status(&case.head), case.kind.expected_status(), "{}", slug(case.kind));
    }
    for phase in phases() {
        assert_eq!(status(&phase.head), phase.status, "phase {}", phase.name);
    }
}
