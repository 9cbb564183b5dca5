use super::*;
use crate::config::{Issuer, Policy, Route};
use crate::http::request;
use crate::keys::{Hs256Key as Key, VerifyingKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use std::string::String;

const NOW: u64 = 1_800_000_000;
const SECRET: &[u8] = b"test-key-0123456789abcdef0123456789";
const ROUTES: &[Route<'static>] = &[
    Route { audience: "a", origin: "http://a", base_path: "/a-svc" },
    Route { audience: "b", origin: "http://b:8080", base_path: "" },
];

static CONFIG: std::sync::LazyLock<Config<'static>> = std::sync::LazyLock::new(|| {
    with_issuer(
        Some("iss"),
        std::vec![key("k1", SECRET), key("k2", b"another-key-0123456789abcdef01234")].leak(),
    )
});

/// The test config with one issuer, `iss`, whose keys are `keys`.
fn with_issuer(iss: Option<&'static str>, keys: &'static [VerifyingKey<'static>]) -> Config<'static> {
    let issuers = std::vec![Issuer { iss, leeway_secs: 0, keys, audiences: &[], fetch: None }].leak();
    Config {
        realm: "gw",
        trusted_proxy_hops: 0,
        max_token_bytes: 256,
        issuers,
        routes: ROUTES,
        policy: Policy::NONE,
    }
}

/// A key with the states the build would compute for `secret`.
fn key(kid: &'static str, secret: &'static [u8]) -> VerifyingKey<'static> {
    VerifyingKey::Hs256(Key { kid, secret, hmac: crate::jose::signature::tests::keyed(secret) })
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn sign(secret: &[u8], signing_input: &str) -> String {
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret).expect("any key length");
    mac.update(signing_input.as_bytes());
    b64(&mac.finalize().into_bytes())
}

fn token(header: &str, claims: &str) -> String {
    let input = std::format!("{}.{}", b64(header.as_bytes()), b64(claims.as_bytes()));
    std::format!("{input}.{}", sign(SECRET, &input))
}

fn valid_claims() -> String {
    std::format!(r#"{{"iss":"iss","sub":"alice","aud":"b","exp":{}}}"#, NOW + 60)
}

const HEADER: &str = r#"{"alg":"HS256","typ":"JWT","kid":"k1"}"#;

fn request(token: &str) -> String {
    std::format!("POST /v1/orders?x=1 HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\n\r\n")
}

/// The scratch region an instance has.
/// Decides `head` from 192.0.2.1 over https with `config`: the status and
/// the output.
fn decided_with(config: &Config<'_>, head: &str) -> (u16, String) {
    let mut scratch = scratch();
    let input = std::format!("https 192.0.2.1\n{head}");
    let answer = handle(input.as_bytes(), NOW as f64, config, &mut scratch);
    (answer.status, String::from_utf8(answer.output.to_vec()).expect("ASCII output"))
}

fn scratch() -> std::vec::Vec<u8> {
    std::vec![0u8; crate::abi::SCRATCH_CAPACITY]
}

fn decide(head: &str) -> (u16, String) {
    let mut scratch = scratch();
    let input = std::format!("http 192.0.2.1\n{head}");
    let answer = handle(input.as_bytes(), NOW as f64, &CONFIG, &mut scratch);
    (answer.status, String::from_utf8(answer.output.to_vec()).expect("ASCII output"))
}

/// `decide` through `cache`, at `now`, with the label line's cache word
/// read as `-` (a hit is labelled `h`, a verification `m`): what the host
/// executes, which a hit never changes.
fn decide_cached(head: &str, now: u64, config: &Config<'_>, cache: &mut TokenCache) -> (u16, String) {
    let mut scratch = scratch();
    let input = std::format!("http 192.0.2.1\n{head}");
    let fetched = crate::keys::FetchedKeys::none();
    let answer = handle_cached(input.as_bytes(), now as f64, config, fetched, &mut scratch, cache);
    let output = String::from_utf8(answer.output.to_vec()).expect("ASCII output");
    let lines: std::vec::Vec<String> = output
        .split('\n')
        .map(|line| match line.strip_prefix('#').and_then(|l| l.rsplit_once(' ')) {
            Some((rest, "h" | "m")) => std::format!("#{rest} -"),
            _ => line.into(),
        })
        .collect();
    (answer.status, lines.join("\n"))
}

#[test]
fn the_label_line_says_whether_the_signature_came_from_the_cache() {
    let mut cache = std::boxed::Box::new(TokenCache::new());
    let head = request(&token(HEADER, &valid_claims()));
    let label = |cache: &mut TokenCache| {
        let mut scratch = scratch();
        let input = std::format!("http 192.0.2.1\n{head}");
        let fetched = crate::keys::FetchedKeys::none();
        let answer = handle_cached(input.as_bytes(), NOW as f64, &CONFIG, fetched, &mut scratch, cache);
        String::from_utf8(answer.output.to_vec()).expect("ASCII").lines().nth(2).map(String::from)
    };
    // Admitted on its second verification, a hit from the third on.
    assert_eq!(label(&mut cache).as_deref(), Some("#00ffff000100 m"));
    assert_eq!(label(&mut cache).as_deref(), Some("#00ffff000100 m"));
    assert_eq!(label(&mut cache).as_deref(), Some("#00ffff000100 h"));
    assert_eq!(decide(&head).1.lines().nth(2), Some("#00ffff000100 -"), "no cache, no word");
}

#[test]
fn a_refused_token_is_labelled_with_the_issuer_that_judged_it() {
    // The label line's issuer: `#` outcome (2) rule (4) route (4) issuer (2).
    let issuer_of = |head: &str| {
        let (_, output) = decide(head);
        output.lines().find(|line| line.starts_with('#')).map(|line| String::from(&line[11..13]))
    };
    let expired = std::format!(r#"{{"iss":"iss","sub":"alice","aud":"b","exp":{}}}"#, NOW - 60);
    assert_eq!(
        issuer_of(&request(&token(HEADER, &expired))).as_deref(),
        Some("00"),
        "refused for its claims"
    );
    let input = std::format!("{}.{}", b64(HEADER.as_bytes()), b64(valid_claims().as_bytes()));
    let forged = std::format!("{input}.{}", sign(b"not-the-key-0123456789abcdef0123456", &input));
    assert_eq!(issuer_of(&request(&forged)).as_deref(), Some("00"), "refused for its signature");
    assert_eq!(issuer_of("GET /v1/orders HTTP/1.1\r\nHost: gw\r\n\r\n").as_deref(), Some("ff"), "no token");
    assert_eq!(issuer_of(&request("a.b")).as_deref(), Some("ff"), "claims never read");
}

fn rejection_of(head: &str) -> Option<Rejection> {
    let (status, output) = decide(head);
    let reason = output.split('\n').nth(1)?;
    let found = Rejection::ALL.iter().copied().find(|r| r.reason() == reason)?;
    assert_eq!(found.status(), status);
    Some(found)
}

/// `authorize` on `head` alone, as the request path runs it after parsing.
fn authorized(head: &str, now: u64, config: &Config<'_>) -> Result<(), Rejection> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let head = request::parse(head.as_bytes(), &mut fields)?;
    let token = crate::http::tokens::find(&head, config)?;
    let mut scratch = scratch();
    let mut arena = Arena::new(&mut scratch);
    let fetched = crate::keys::FetchedKeys::none();
    authorize(token, now, config, &mut crate::keys::Lookup::new(fetched), &mut arena, None).map(|_| ())
}

#[test]
fn a_valid_token_is_forwarded_with_its_plan() {
    let (status, plan) = decide(&request(&token(HEADER, &valid_claims())));
    assert_eq!(status, 200);
    assert_eq!(
        plan,
        "http://b:8080\n/v1/orders?x=1\n#00ffff000100 -\n-host\n-authorization\n+x-gateway-subject:alice\n\
         +x-gateway-issuer:iss\n+x-forwarded-for:192.0.2.1\n+x-forwarded-proto:http\n+x-forwarded-host:gw"
    );
}

#[test]
fn the_route_base_path_confines_the_target() {
    let claims = std::format!(r#"{{"iss":"iss","aud":"a","exp":{}}}"#, NOW + 60);
    let head = request(&token(HEADER, &claims)).replace("/v1/orders?x=1", "/x/../y/./z");
    let (status, plan) = decide(&head);
    assert_eq!(
        (status, plan.split('\n').take(2).collect::<std::vec::Vec<_>>()),
        (200, std::vec!["http://a", "/a-svc/y/z"])
    );
    let climbing = request(&token(HEADER, &claims)).replace("/v1/orders?x=1", "/../b-svc");
    assert_eq!(rejection_of(&climbing), Some(Rejection::PathAboveRoot));
}

#[test]
fn request_shape_is_judged_before_the_token() {
    // A malformed request is a 400 whether or not it carries a valid token.
    for head in ["CONNECT evil:443 HTTP/1.1\r\nHost: gw\r\n\r\n", "OPTIONS * HTTP/1.1\r\nHost: gw\r\n\r\n"] {
        assert_eq!(decide(head).0, 400, "{head}");
    }
    let valid = request(&token(HEADER, &valid_claims()));
    assert_eq!(
        rejection_of(&valid.replace("POST /v1/orders?x=1", "CONNECT evil:443")),
        Some(Rejection::ConnectNotAllowed)
    );
    assert_eq!(rejection_of(&valid.replace("/v1/orders?x=1", "/%2e%2e/x")), Some(Rejection::PathAboveRoot));
}

#[test]
fn a_bad_context_line_is_the_hosts_failure() {
    let mut scratch = scratch();
    let head = request(&token(HEADER, &valid_claims()));
    for input in
        [head.clone(), std::format!("gopher 1.2.3.4\n{head}"), std::format!("http 1.2.3.4\r\n{head}")]
    {
        let answer = handle(input.as_bytes(), NOW as f64, &CONFIG, &mut scratch);
        assert_eq!(answer.status, 500);
        assert!(answer.output.starts_with(b"\nhost context invalid\n"));
    }
}

#[test]
fn rfc7515_a1_vector_verifies_and_then_expires() {
    // RFC 7515 appendix A.1: HS256 with a 64-byte key, no kid, CRLF in the JSON.
    let text = std::fs::read_to_string(std::format!(
        "{}/tests/data/rfc7515-a1-hs256.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("vector file");
    let vector: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let secret = URL_SAFE_NO_PAD.decode(vector["jwk_k_base64url"].as_str().expect("k")).expect("b64");
    let compact = vector["compact"].as_str().expect("compact");
    let keys = [key("unused", secret.leak())];
    let config = with_issuer(Some("joe"), keys.to_vec().leak());
    let head = request(compact);
    // Before exp the signature and claims check out; the vector has no aud.
    assert_eq!(authorized(&head, 1_300_819_000, &config), Err(Rejection::MissingAudience));
    assert_eq!(authorized(&head, NOW, &config), Err(Rejection::Expired));
    let mut forged = String::from(compact);
    forged.pop();
    forged.push('Y');
    assert_eq!(authorized(&request(&forged), 1_300_819_000, &config), Err(Rejection::BadSignature));
}

#[test]
fn every_rejection_the_request_path_can_produce() {
    let good = token(HEADER, &valid_claims());
    let (h, p, s) = {
        let mut parts = good.split('.');
        (parts.next().expect("h"), parts.next().expect("p"), parts.next().expect("s"))
    };
    let exp_ok = NOW + 60;
    let claims = |body: &str| token(HEADER, body);
    let cases: std::vec::Vec<(&str, String, Rejection)> = std::vec![
        ("garbage head", "NOT HTTP\r\n\r\n".into(), Rejection::MalformedRequest),
        ("truncated head", request(&good).replace("\r\n\r\n", "\r\n"), Rejection::IncompleteRequest),
        (
            "too many headers",
            std::format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(65)),
            Rejection::TooManyHeaders
        ),
        ("no authorization", "GET / HTTP/1.1\r\nHost: gw\r\n\r\n".into(), Rejection::MissingAuthorization),
        (
            "basic scheme",
            "GET / HTTP/1.1\r\nHost: gw\r\nAuthorization: Basic YTpi\r\n\r\n".into(),
            Rejection::UnsupportedScheme
        ),
        (
            "two authorization headers",
            request(&good).replace("\r\n\r\n", &std::format!("\r\nAuthorization: Bearer {good}\r\n\r\n")),
            Rejection::DuplicateAuthorization
        ),
        (
            "tab after scheme",
            request(&good).replace("Bearer ", "Bearer\t"),
            Rejection::MalformedAuthorization
        ),
        ("token over the buffer", request(&"a".repeat(request::TOKEN_CAPACITY + 1)), Rejection::TokenTooLong),
        ("one dot", request(&std::format!("{h}.{p}")), Rejection::MalformedToken),
        ("three dots", request(&std::format!("{h}.{p}.{s}.{s}")), Rejection::MalformedToken),
        ("padding", request(&std::format!("{h}.{p}.{s}=")), Rejection::BadEncoding),
        ("padding inside", request(&std::format!("{h}=.{p}.{s}")), Rejection::MalformedAuthorization),
        ("bad base64 header", request(&std::format!("a.{p}.{s}")), Rejection::BadEncoding),
        ("header not JSON", request(&std::format!("{}.{p}.{s}", b64(b"nope"))), Rejection::MalformedHeader),
        ("alg none", request(&token(r#"{"alg":"none"}"#, &valid_claims())), Rejection::UnsupportedAlgorithm),
        ("alg None", request(&token(r#"{"alg":"None"}"#, &valid_claims())), Rejection::UnsupportedAlgorithm),
        (
            "alg RS256 for an HS256 key",
            request(&token(r#"{"alg":"RS256","kid":"k1"}"#, &valid_claims())),
            Rejection::UnsupportedAlgorithm
        ),
        (
            "alg HS512",
            request(&token(r#"{"alg":"HS512"}"#, &valid_claims())),
            Rejection::UnsupportedAlgorithm
        ),
        (
            "typ JOSE",
            request(&token(r#"{"alg":"HS256","typ":"JOSE","kid":"k1"}"#, &valid_claims())),
            Rejection::UnsupportedType
        ),
        (
            "crit",
            request(&token(r#"{"alg":"HS256","kid":"k1","crit":["b64"]}"#, &valid_claims())),
            Rejection::CriticalHeader
        ),
        (
            "unknown kid",
            request(&token(r#"{"alg":"HS256","kid":"k9"}"#, &valid_claims())),
            Rejection::UnknownKey
        ),
        (
            "no kid, two keys",
            request(&token(r#"{"alg":"HS256"}"#, &valid_claims())),
            Rejection::KeyIdRequired
        ),
        ("empty signature", request(&std::format!("{h}.{p}.")), Rejection::MissingSignature),
        (
            "bad signature",
            request(&std::format!("{h}.{p}.{}", sign(b"wrong key", "x"))),
            Rejection::BadSignature
        ),
        ("truncated signature", request(&std::format!("{h}.{p}.{}", &s[..20])), Rejection::BadSignature),
        (
            "other key's signature",
            request(&token(r#"{"alg":"HS256","kid":"k2"}"#, &valid_claims())),
            Rejection::BadSignature
        ),
        ("claims not JSON", request(&claims("{")), Rejection::MalformedClaims),
        (
            "duplicate claim",
            request(&claims(&std::format!(r#"{{"iss":"iss","aud":"b","exp":{exp_ok},"exp":{exp_ok}}}"#))),
            Rejection::MalformedClaims
        ),
        (
            "lone surrogate in aud",
            request(&claims(&std::format!(r#"{{"iss":"iss","aud":"\ud800","exp":{exp_ok}}}"#))),
            Rejection::LoneSurrogate
        ),
        ("no exp", request(&claims(r#"{"iss":"iss","aud":"b"}"#)), Rejection::MissingExpiry),
        (
            "expired",
            request(&claims(&std::format!(r#"{{"iss":"iss","aud":"b","exp":{}}}"#, NOW - 1))),
            Rejection::Expired
        ),
        (
            "nbf in the future",
            request(&claims(&std::format!(r#"{{"iss":"iss","aud":"b","exp":{exp_ok},"nbf":{}}}"#, NOW + 1))),
            Rejection::NotYetValid
        ),
        (
            "wrong iss",
            request(&claims(&std::format!(r#"{{"iss":"other","aud":"b","exp":{exp_ok}}}"#))),
            Rejection::WrongIssuer
        ),
        (
            "no aud",
            request(&claims(&std::format!(r#"{{"iss":"iss","exp":{exp_ok}}}"#))),
            Rejection::MissingAudience
        ),
        (
            "aud with no route",
            request(&claims(&std::format!(r#"{{"iss":"iss","aud":"zzz","exp":{exp_ok}}}"#))),
            Rejection::NoRoute
        ),
        (
            "sub not header-safe",
            request(&claims(&std::format!(r#"{{"iss":"iss","aud":"b","sub":"zoë","exp":{exp_ok}}}"#))),
            Rejection::SubjectNotHeaderSafe
        ),
        (
            "sub with a leading space",
            request(&claims(&std::format!(r#"{{"iss":"iss","aud":"b","sub":" admin","exp":{exp_ok}}}"#))),
            Rejection::SubjectNotHeaderSafe
        ),
        ("no host", request(&good).replace("Host: gw\r\n", ""), Rejection::MissingHost),
        (
            "smuggling",
            request(&good).replace("\r\n\r\n", "\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Rejection::ConflictingFraming
        ),
        ("asterisk", request(&good).replace("POST /v1/orders?x=1", "OPTIONS *"), Rejection::AsteriskForm),
        ("encoded slash", request(&good).replace("/v1/orders", "/v1%2forders"), Rejection::EncodedSlash),
    ];
    let mut cache = std::boxed::Box::new(TokenCache::new());
    for (name, head, expected) in cases {
        assert_eq!(rejection_of(&head), Some(expected), "{name}");
        // Through a cache, presented often enough to be a hit: the same answer.
        for _ in 0..3 {
            assert_eq!(decide_cached(&head, NOW, &CONFIG, &mut cache), decide(&head), "{name}, cached");
        }
    }
}

#[test]
fn a_cached_token_is_judged_again_at_every_request() {
    let mut cache = std::boxed::Box::new(TokenCache::new());
    let claims =
        std::format!(r#"{{"iss":"iss","sub":"alice","aud":"b","exp":{},"nbf":{}}}"#, NOW + 60, NOW - 10);
    let good = token(HEADER, &claims);
    let head = request(&good);
    for _ in 0..3 {
        assert_eq!(decide_cached(&head, NOW, &CONFIG, &mut cache), decide(&head));
    }
    assert!(cache.claims(good.as_bytes(), CONFIG.issuers, 0).is_some(), "the token is cached");
    let status = |now: u64, config: &Config<'_>, cache: &mut TokenCache| {
        let (status, output) = decide_cached(&head, now, config, cache);
        (status, output.split('\n').nth(1).map(String::from))
    };
    let reason = |r: Rejection| (r.status(), Some(String::from(r.reason())));
    // Past exp, before nbf: refused, and still cached.
    assert_eq!(status(NOW + 61, &CONFIG, &mut cache), reason(Rejection::Expired));
    assert_eq!(status(NOW - 11, &CONFIG, &mut cache), reason(Rejection::NotYetValid));
    // Another issuer or no route for the audience: the claims are checked against the config.
    let other_issuer = Config {
        issuers: CONFIG
            .issuers
            .iter()
            .map(|i| Issuer { iss: Some("other"), ..*i })
            .collect::<std::vec::Vec<_>>()
            .leak(),
        ..*CONFIG
    };
    assert_eq!(status(NOW, &other_issuer, &mut cache), reason(Rejection::WrongIssuer));
    let no_route = Config { routes: &CONFIG.routes[..1], ..*CONFIG };
    assert_eq!(status(NOW, &no_route, &mut cache), reason(Rejection::NoRoute));
    // Another key table: verified again, so a key that no longer signs it refuses it.
    let rotated = [key("k1", b"rotated-key-0123456789abcdef01234")];
    let rotated = with_issuer(Some("iss"), rotated.to_vec().leak());
    for _ in 0..3 {
        assert_eq!(status(NOW, &rotated, &mut cache), reason(Rejection::BadSignature));
    }
    assert_eq!(status(NOW, &CONFIG, &mut cache).0, 200);
    // The same header and claims under another signature: a miss, refused.
    let signing_input = &good[..good.rfind('.').expect("dots")];
    let forged = std::format!("{signing_input}.{}", sign(b"wrong key", signing_input));
    for _ in 0..3 {
        assert_eq!(
            decide_cached(&request(&forged), NOW, &CONFIG, &mut cache).0,
            Rejection::BadSignature.status()
        );
        assert!(decide_cached(&request(&forged), NOW, &CONFIG, &mut cache).1.contains("signature mismatch"));
    }
    // The forward plan is built per request: another path, another plan.
    let (status, plan) = decide_cached(&head.replace("/v1/orders?x=1", "/other"), NOW, &CONFIG, &mut cache);
    assert_eq!((status, plan.lines().nth(1)), (200, Some("/other")));
}

/// A token verified with a fetched key and admitted to the cache is
/// refused like a new one once the issuer's keys are past
/// `max_stale_secs`: a hit never decides differently from a miss.
#[cfg(all(feature = "es256", runtime_keys))]
#[test]
fn a_cached_token_never_outlives_the_fetched_keys_that_verified_it() {
    use crate::keys::FetchedKeys;
    use crate::keys::TEST_FETCH as FETCH;
    use p256::ecdsa::signature::Signer as _;

    let issuers = std::vec![Issuer {
        iss: Some("iss"),
        leeway_secs: 0,
        keys: &[],
        audiences: &[],
        fetch: Some(&FETCH)
    }];
    let config = Config { issuers: issuers.leak(), max_token_bytes: 1024, ..*CONFIG };
    // RFC 7515 appendix A.3's P-256 key (its private part is in the RFC).
    let jwks = r#"{"keys":[{"kty":"EC","crv":"P-256","kid":"ec-a3","use":"sig","alg":"ES256",
        "x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}"#;
    let d = URL_SAFE_NO_PAD.decode("jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI").expect("base64url");
    let signer = p256::ecdsa::SigningKey::from_slice(&d).expect("a P-256 scalar");
    let es256 = |claims: &str| {
        let input = std::format!("{}.{}", b64(br#"{"alg":"ES256","kid":"ec-a3"}"#), b64(claims.as_bytes()));
        let signature: p256::ecdsa::Signature = signer.sign(input.as_bytes());
        std::format!("{input}.{}", b64(&signature.to_bytes()))
    };
    let claims = |jti: u32| {
        std::format!(r#"{{"iss":"iss","sub":"alice","aud":"b","exp":{},"jti":"{jti}"}}"#, NOW + 86_400)
    };
    let mut fetched = std::boxed::Box::new(FetchedKeys::new());
    let mut summary = String::new();
    fetched.install(0, jwks.as_bytes(), NOW, &config, &mut summary).expect("a valid document");
    let mut cache = std::boxed::Box::new(TokenCache::new());
    let mut decided = |token: &str, now: u64| {
        let input = std::format!("http 192.0.2.1\n{}", request(token));
        let mut scratch = scratch();
        let answer = handle_cached(input.as_bytes(), now as f64, &config, &fetched, &mut scratch, &mut cache);
        (answer.status, String::from_utf8(answer.output.to_vec()).expect("ASCII"))
    };
    let cached = es256(&claims(1));
    for _ in 0..3 {
        assert_eq!(decided(&cached, NOW).0, 200, "verified with the fetched key, then cached");
    }
    let stale = NOW + 3601;
    let (status, output) = decided(&es256(&claims(2)), stale);
    assert_eq!((status, output.lines().nth(1)), (503, Some("signing keys unavailable")), "a new token");
    for _ in 0..3 {
        let (status, output) = decided(&cached, stale);
        assert_eq!(
            (status, output.lines().nth(1)),
            (503, Some("signing keys unavailable")),
            "the cached token"
        );
        assert!(output.lines().any(|line| line == "~0"), "and the host is asked to fetch: {output}");
    }
    assert_eq!(decided(&cached, NOW + 3600).0, 200, "fresh up to max_stale_secs");
}

#[test]
fn the_clock_must_be_sane() {
    let head = request(&token(HEADER, &valid_claims()));
    for now in [-1.0, f64::NAN, f64::INFINITY, 1e300] {
        let mut scratch = scratch();
        let input = std::format!("http 192.0.2.1\n{head}");
        let answer = handle(input.as_bytes(), now, &CONFIG, &mut scratch);
        assert_eq!(answer.status, 500, "{now}");
    }
    assert_eq!(clock(1_800_000_000.9), Ok(1_800_000_000));
    assert_eq!(clock(MAX_CLOCK_SECS), Ok(1 << 53));
}

#[test]
fn a_small_scratch_region_is_a_500_not_a_panic() {
    let head = request(&token(HEADER, &valid_claims()));
    let input = std::format!("http 192.0.2.1\n{head}");
    for size in [0, 10, OUTPUT_CAPACITY, OUTPUT_CAPACITY + 20] {
        let mut scratch = std::vec![0u8; size];
        let answer = handle(input.as_bytes(), NOW as f64, &CONFIG, &mut scratch);
        assert_eq!(answer.status, 500, "scratch of {size} bytes");
    }
}

/// The request path with every policy.
mod certificate;
mod limits;
mod policies;
