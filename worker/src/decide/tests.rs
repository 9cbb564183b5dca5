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
fn scratch() -> std::vec::Vec<u8> {
    std::vec![0u8; crate::abi::SCRATCH_CAPACITY]
}

fn decide(head: &str) -> (u16, String) {
    let mut scratch = scratch();
    let input = std::format!("http 192.0.2.1\n{head}");
    let answer = handle(input.as_bytes(), NOW as f64, &CONFIG, &mut scratch);
    (answer.status, String::from_utf8(answer.output.to_vec()).expect("ASCII output"))
}

/// `decide` through `cache`, at `now`.
fn decide_cached(head: &str, now: u64, config: &Config<'_>, cache: &mut TokenCache) -> (u16, String) {
    let mut scratch = scratch();
    let input = std::format!("http 192.0.2.1\n{head}");
    let fetched = crate::keys::FetchedKeys::none();
    let answer = handle_cached(input.as_bytes(), now as f64, config, fetched, &mut scratch, cache);
    (answer.status, String::from_utf8(answer.output.to_vec()).expect("ASCII output"))
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
        "http://b:8080\n/v1/orders?x=1\n-host\n-authorization\n+x-gateway-subject:alice\n\
         +x-forwarded-for:192.0.2.1\n+x-forwarded-proto:http\n+x-forwarded-host:gw"
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

/// A config with every policy: rules, CORS, a cookie beside `Authorization`,
/// claims as headers, the payload forwarded.
mod policies {
    use super::*;
    use crate::config::{Access, ClaimHeader, Cors, PathMatch, Requirements, Rule, TokenSource};

    const RULES: &[Rule<'static>] = &[
        Rule {
            methods: &["GET", "HEAD"],
            path: PathMatch::Exact("/healthz"),
            access: Access::Public { route: 1 },
        },
        Rule { methods: &[], path: PathMatch::Prefix("/admin"), access: Access::Deny { status: 404 } },
        Rule {
            methods: &["DELETE"],
            path: PathMatch::Prefix("/v1/orders"),
            access: Access::Token(Requirements {
                scopes_all: &["orders:write"],
                scope_attribute: "orders:write",
                ..Requirements::NONE
            }),
        },
    ];
    const CORS: Cors<'static> = Cors {
        origins: &["https://app.example"],
        methods: &["GET", "POST", "DELETE"],
        methods_joined: "GET, POST, DELETE",
        headers: &["authorization", "content-type"],
        headers_joined: "authorization, content-type",
        expose_headers: "www-authenticate",
        max_age: "600",
        credentials: true,
        unmatched_preflight_route: None,
    };
    const POLICY: Policy<'static> = Policy {
        rules: RULES,
        cors: Some(CORS),
        token_sources: &[TokenSource::Bearer, TokenSource::Cookie("__Host-at")],
        claims: &["scope", "scp", "tenant", "email"],
        scope_claims: &[0, 1],
        claim_headers: &[
            ClaimHeader { claim: 2, header: "x-gateway-tenant", percent_encode: false },
            ClaimHeader { claim: 3, header: "x-user-email", percent_encode: true },
        ],
        payload_header: Some("x-gateway-claims"),
    };

    fn config() -> Config<'static> {
        Config { policy: POLICY, ..*CONFIG }
    }

    fn decided(head: &str) -> (u16, String) {
        let mut scratch = scratch();
        let input = std::format!("https 192.0.2.1\n{head}");
        let answer = handle(input.as_bytes(), NOW as f64, &config(), &mut scratch);
        let output = String::from_utf8(answer.output.to_vec()).expect("ASCII output");
        contract::Decision::decode(u32::from(answer.status), output.as_bytes())
            .unwrap_or_else(|e| panic!("{e}: {output}"));
        (answer.status, output)
    }

    fn token_with(extra: &str) -> String {
        token(HEADER, &std::format!(r#"{{"iss":"iss","sub":"alice","aud":"b","exp":{}{extra}}}"#, NOW + 60))
    }

    #[test]
    fn a_public_path_needs_no_token_and_forwards_none() {
        let (status, plan) = decided(
            "GET /x/../healthz HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer forged.token.here\r\n\
             Cookie: __Host-at=abc; theme=dark\r\nX-Gateway-Subject: root\r\n\r\n",
        );
        assert_eq!(status, 200, "{plan}");
        assert!(plan.starts_with("http://b:8080\n/healthz\n"), "{plan}");
        for line in ["-authorization", "-cookie", "-x-gateway-subject", "+cookie:theme=dark"] {
            assert!(plan.lines().any(|l| l == line), "{line}: {plan}");
        }
        assert!(!plan.contains("+x-gateway-subject") && !plan.contains("+x-gateway-claims"), "{plan}");
        assert_eq!(decided("POST /healthz HTTP/1.1\r\nHost: gw\r\n\r\n").0, 401, "methods narrow the rule");
    }

    #[test]
    fn a_denied_path_is_404_whatever_the_token() {
        let (status, answer) = decided(&std::format!(
            "GET /admin/users HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {}\r\n\r\n",
            token_with("")
        ));
        assert_eq!(status, 404);
        assert!(answer.starts_with("\nnot found\n") && !answer.contains("www-authenticate"), "{answer}");
        assert_eq!(
            decided("GET /admin%2fusers HTTP/1.1\r\nHost: gw\r\n\r\n").0,
            400,
            "an encoded slash is refused first"
        );
        assert_eq!(decided("GET /v1/../admin HTTP/1.1\r\nHost: gw\r\n\r\n").0, 404, "normalized first");
    }

    #[test]
    fn a_scope_the_token_lacks_is_403_with_the_scope_attribute() {
        let head = |token: &str| {
            std::format!("DELETE /v1/orders/7 HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\n\r\n")
        };
        let (status, answer) = decided(&head(&token_with(r#","scope":"orders:read""#)));
        assert_eq!(status, 403);
        assert!(
            answer.contains(
                ">www-authenticate:Bearer realm=\"gw\", error=\"insufficient_scope\", \
                 error_description=\"required scope missing\", scope=\"orders:write\"\n"
            ),
            "{answer}"
        );
        let (status, plan) = decided(&head(&token_with(
            r#","scp":["orders:write"],"tenant":"acme","email":"zoë@example.com""#,
        )));
        assert_eq!(status, 200, "{plan}");
        assert!(plan.contains("\n+x-gateway-tenant:acme\n"), "{plan}");
        assert!(plan.contains("\n+x-user-email:zo%C3%AB@example.com\n"), "{plan}");
        let (status, _) = decided(&head(&token_with(r#","scope":"orders:write","tenant":"a\r\nb""#)));
        assert_eq!(status, 401, "a tenant that cannot travel intact");
        // GET needs no scope: the rule is for DELETE.
        let get = head(&token_with("")).replace("DELETE", "GET");
        assert_eq!(decided(&get).0, 200);
    }

    #[test]
    fn claim_headers_and_the_payload_replace_every_client_spelling() {
        let token = token_with(r#","tenant":"acme""#);
        let (status, plan) = decided(&std::format!(
            "GET /v1/x HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\nX_User_Email: forged\r\n\
             x-gateway-claims: forged\r\n\r\n"
        ));
        assert_eq!(status, 200);
        assert!(plan.contains("\n-x_user_email\n") && plan.contains("\n-x-gateway-claims\n"), "{plan}");
        let payload = token.split('.').nth(1).expect("payload");
        assert!(plan.contains(&std::format!("\n+x-gateway-claims:{payload}")), "{plan}");
        assert!(!plan.contains("+x-user-email"), "no email claim, no header: {plan}");
    }

    #[test]
    fn a_token_cookie_counts_once_and_never_travels() {
        let token = token_with("");
        let cookie = |value: &str| {
            std::format!("GET /v1/x HTTP/1.1\r\nHost: gw\r\nCookie: a=1; __Host-at={value}; b=2\r\n\r\n")
        };
        let (status, plan) = decided(&cookie(&token));
        assert_eq!(status, 200, "{plan}");
        assert!(plan.contains("\n-cookie\n") && plan.contains("\n+cookie:a=1; b=2\n"), "{plan}");
        assert!(!plan.contains(&token), "{plan}");
        let both =
            cookie(&token).replace("\r\n\r\n", &std::format!("\r\nAuthorization: Bearer {token}\r\n\r\n"));
        assert_eq!(decided(&both).0, 200, "the same token twice is one");
        let other = token_with(r#","x":1"#);
        let conflicting =
            cookie(&token).replace("\r\n\r\n", &std::format!("\r\nAuthorization: Bearer {other}\r\n\r\n"));
        let (status, answer) = decided(&conflicting);
        assert_eq!((status, answer.lines().nth(1)), (400, Some("more than one token")));
    }

    #[test]
    fn cors_preflights_are_answered_and_cross_origin_answers_are_readable() {
        let preflight = "OPTIONS /v1/orders/7 HTTP/1.1\r\nHost: gw\r\nOrigin: https://app.example\r\n\
                         Access-Control-Request-Method: DELETE\r\nAccess-Control-Request-Headers: authorization\r\n\r\n";
        let (status, answer) = decided(preflight);
        assert_eq!(status, 204, "{answer}");
        assert!(answer.contains(">access-control-allow-origin:https://app.example\n"), "{answer}");
        assert!(answer.contains(">access-control-allow-methods:GET, POST, DELETE\n"), "{answer}");
        let (status, answer) = decided(&preflight.replace("app.example", "evil.example"));
        assert_eq!((status, answer.lines().nth(1)), (403, Some("cors preflight not allowed")));
        assert!(!answer.contains("access-control"), "{answer}");
        // A cross-origin request whose token is bad: the page can read why.
        let (status, answer) = decided(
            "GET /v1/x HTTP/1.1\r\nHost: gw\r\nOrigin: https://app.example\r\nAuthorization: Bearer a.b.c\r\n\r\n",
        );
        assert_eq!(status, 401);
        assert!(
            answer.contains(
                ">access-control-allow-origin:https://app.example\n>access-control-allow-credentials:true\n"
            ),
            "{answer}"
        );
        // A forward: the upstream's CORS fields replaced, the origin's added.
        let (status, plan) = decided(&std::format!(
            "GET /v1/x HTTP/1.1\r\nHost: gw\r\nOrigin: https://app.example\r\nAuthorization: Bearer {}\r\n\r\n",
            token_with("")
        ));
        assert_eq!(status, 200);
        assert!(
            plan.contains("\n!access-control-allow-origin\n") && plan.ends_with("\n>vary:Origin"),
            "{plan}"
        );
        // Another origin: no CORS field added, the upstream's still removed.
        let (_, plan) = decided(&std::format!(
            "GET /v1/x HTTP/1.1\r\nHost: gw\r\nOrigin: https://evil.example\r\nAuthorization: Bearer {}\r\n\r\n",
            token_with("")
        ));
        assert!(
            plan.contains("\n!access-control-allow-origin") && !plan.contains(">access-control"),
            "{plan}"
        );
    }

    #[test]
    fn without_policies_every_request_needs_a_token_as_before() {
        for head in [
            "GET /healthz HTTP/1.1\r\nHost: gw\r\n\r\n",
            "GET /admin HTTP/1.1\r\nHost: gw\r\nCookie: __Host-at=a.b.c\r\n\r\n",
        ] {
            assert_eq!(decide(head).0, 401, "{head}");
        }
        let preflight = "OPTIONS /x HTTP/1.1\r\nHost: gw\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: GET\r\n\r\n";
        assert_eq!(rejection_of(preflight), Some(Rejection::MissingAuthorization));
    }
}
