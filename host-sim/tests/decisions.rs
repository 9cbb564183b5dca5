//! Decisions of the real module (built from the test fixture) for every rejection the module
//! can give with the compiled-in config, and for forwards: through the
//! exports in wasmtime (both isolation modes) and through `host-sim eval`.
#![allow(clippy::unwrap_used)]

mod common;

use std::io::Write;
use std::process::Stdio;

use common::NOW;
use contract::Decision;
use contract::owned::DecisionBuf;
use runtime::Reusable;
use testkit::tokens::{Claims, b64url, mint, sign};
use worker::Rejection;

/// One case: a name, a request head, the clock, and the expected answer.
struct Case {
    name: &'static str,
    head: String,
    now: f64,
    expect: Expect,
}

enum Expect {
    Forward { upstream: &'static str, sub: Option<&'static str> },
    Reject(Rejection),
}

fn req(token: &str) -> String {
    format!("POST /v1/orders?x=1 HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer {token}\r\n\r\n")
}

/// Every case. The demo config has one key, so `KeyIdRequired` (no kid with
/// several keys) cannot happen, and `ScratchExhausted` is a bug path the
/// request path never reaches: both are listed in `UNREACHABLE`.
fn cases() -> Vec<Case> {
    let config = common::config();
    let key = config.issuers[0].keys[0].secret().to_vec();
    let iss = config.first_iss().unwrap().to_owned();
    let header = Claims::header("fixture");
    let exp = NOW + 600;
    let claims = |aud: &str| Claims::new(aud, exp).issuer(&iss).subject("alice").to_json();
    let tok = |h: &str, c: &str| mint(h, c, &key);
    let good = tok(&header, &claims("orders"));
    let mut parts = good.split('.');
    let (h, p, s) = (
        parts.next().unwrap().to_owned(),
        parts.next().unwrap().to_owned(),
        parts.next().unwrap().to_owned(),
    );
    let raw = |c: String| tok(&header, &c);
    let now = NOW as f64;
    let reject = |name, head: String, r| Case { name, head, now, expect: Expect::Reject(r) };
    vec![
        Case {
            name: "valid orders",
            head: req(&good),
            now,
            expect: Expect::Forward {
                upstream: "http://127.0.0.1:9201/orders-svc/v1/orders?x=1",
                sub: Some("alice"),
            },
        },
        Case {
            name: "valid billing, no sub",
            head: req(&raw(Claims::new("billing", exp).issuer(&iss).to_json())),
            now,
            expect: Expect::Forward {
                upstream: "http://127.0.0.1:9201/billing-svc/v1/orders?x=1",
                sub: None,
            },
        },
        Case {
            name: "valid users, within leeway",
            head: req(&raw(Claims::new("users", NOW - 10).issuer(&iss).subject("bob").to_json())),
            now,
            expect: Expect::Forward { upstream: "http://127.0.0.1:9202/v1/orders?x=1", sub: Some("bob") },
        },
        reject("garbage head", "NOT HTTP\r\n\r\n".into(), Rejection::MalformedRequest),
        reject("truncated head", req(&good).replace("\r\n\r\n", "\r\n"), Rejection::IncompleteRequest),
        reject(
            "head over 16 KiB",
            format!("GET / HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(17 << 10)),
            Rejection::HeadTooLarge,
        ),
        reject(
            "65 headers",
            format!("GET / HTTP/1.1\r\n{}\r\n", "A: b\r\n".repeat(65)),
            Rejection::TooManyHeaders,
        ),
        reject(
            "no authorization",
            "GET / HTTP/1.1\r\nHost: gw\r\n\r\n".into(),
            Rejection::MissingAuthorization,
        ),
        reject(
            "basic scheme",
            "GET / HTTP/1.1\r\nHost: gw\r\nAuthorization: Basic YTpi\r\n\r\n".into(),
            Rejection::UnsupportedScheme,
        ),
        reject(
            "two authorization headers",
            req(&good).replace("\r\n\r\n", &format!("\r\nAuthorization: Bearer {good}\r\n\r\n")),
            Rejection::DuplicateAuthorization,
        ),
        reject(
            "tab after scheme",
            req(&good).replace("Bearer ", "Bearer\t"),
            Rejection::MalformedAuthorization,
        ),
        reject(
            "token over max_token_bytes",
            req(&"a".repeat(testkit::fixture::config().max_token_bytes + 1)),
            Rejection::TokenTooLong,
        ),
        reject("one dot", req(&format!("{h}.{p}")), Rejection::MalformedToken),
        reject("padding", req(&format!("{h}.{p}.{s}=")), Rejection::BadEncoding),
        reject("header not JSON", req(&format!("{}.{p}.{s}", b64url(b"nope"))), Rejection::MalformedHeader),
        reject(
            "alg none",
            req(&tok(r#"{"alg":"none"}"#, &claims("orders"))),
            Rejection::UnsupportedAlgorithm,
        ),
        reject(
            "alg HS512",
            req(&tok(r#"{"alg":"HS512","kid":"fixture"}"#, &claims("orders"))),
            Rejection::UnsupportedAlgorithm,
        ),
        reject(
            "typ JOSE",
            req(&tok(r#"{"alg":"HS256","typ":"JOSE","kid":"fixture"}"#, &claims("orders"))),
            Rejection::UnsupportedType,
        ),
        reject(
            "crit",
            req(&tok(r#"{"alg":"HS256","kid":"fixture","crit":["b64"]}"#, &claims("orders"))),
            Rejection::CriticalHeader,
        ),
        reject(
            "unknown kid",
            req(&tok(r#"{"alg":"HS256","kid":"k9"}"#, &claims("orders"))),
            Rejection::UnknownKey,
        ),
        reject("empty signature", req(&format!("{h}.{p}.")), Rejection::MissingSignature),
        reject(
            "bad signature",
            req(&format!("{h}.{p}.{}", sign(b"wrong key", "x"))),
            Rejection::BadSignature,
        ),
        reject("claims not JSON", req(&raw("{".into())), Rejection::MalformedClaims),
        reject(
            "lone surrogate in aud",
            req(&raw(format!(r#"{{"iss":"{iss}","aud":"\ud800rders","exp":{exp}}}"#))),
            Rejection::LoneSurrogate,
        ),
        reject("no exp", req(&raw(format!(r#"{{"iss":"{iss}","aud":"orders"}}"#))), Rejection::MissingExpiry),
        reject(
            "bound to its sender (cnf)",
            req(&raw(format!(r#"{{"iss":"{iss}","aud":"orders","exp":{exp},"cnf":{{"jkt":"x"}}}}"#))),
            Rejection::BoundToken,
        ),
        reject(
            "expired",
            req(&raw(Claims::new("orders", NOW - 31).issuer(&iss).to_json())),
            Rejection::Expired,
        ),
        reject(
            "nbf in the future",
            req(&raw(Claims::new("orders", exp).issuer(&iss).not_before(NOW + 31).to_json())),
            Rejection::NotYetValid,
        ),
        reject(
            "wrong iss",
            req(&raw(Claims::new("orders", exp).issuer("https://evil").to_json())),
            Rejection::WrongIssuer,
        ),
        reject("no aud", req(&raw(format!(r#"{{"iss":"{iss}","exp":{exp}}}"#))), Rejection::MissingAudience),
        reject(
            "aud with no route",
            req(&raw(Claims::new("zzz", exp).issuer(&iss).to_json())),
            Rejection::NoRoute,
        ),
        reject(
            "sub not header-safe",
            req(&raw(Claims::new("orders", exp).issuer(&iss).subject("zoë").to_json())),
            Rejection::SubjectNotHeaderSafe,
        ),
        Case {
            name: "clock negative",
            head: req(&good),
            now: -1.0,
            expect: Expect::Reject(Rejection::InvalidClock),
        },
    ]
}

/// Rejections the demo config cannot produce (see `cases`), and those of the
/// request's shape and target, which security/tests/attacks.rs and the
/// forwarding conformance corpus drive through this same module.
const UNREACHABLE: [Rejection; 37] = [
    Rejection::KeyIdRequired,
    Rejection::ScratchExhausted,
    Rejection::InvalidContext,
    Rejection::InvalidFieldValue,
    Rejection::MissingHost,
    Rejection::DuplicateHost,
    Rejection::MalformedHost,
    Rejection::ConflictingFraming,
    Rejection::InvalidContentLength,
    Rejection::UnsupportedTransferEncoding,
    Rejection::ContentOnGetOrHead,
    Rejection::ConnectNotAllowed,
    Rejection::AsteriskForm,
    Rejection::MalformedTarget,
    Rejection::ControlInTarget,
    Rejection::EncodedSlash,
    Rejection::PathAboveRoot,
    Rejection::DotSegmentParameters,
    Rejection::DoubleEncodedPath,
    Rejection::MethodNotUpperCase,
    Rejection::TargetTooLong,
    // The policies' rejections need the policy fixture: the policy corpus
    // (testkit/conformance/policies.jsonl) covers each, on every host.
    Rejection::MalformedTokenField,
    Rejection::ConflictingTokens,
    Rejection::AmbiguousTokenCookie,
    Rejection::IssuerNotAllowed,
    Rejection::ClaimNotHeaderSafe,
    Rejection::ClaimTypeMismatch,
    Rejection::InsufficientScope,
    Rejection::MissingRole,
    Rejection::ClaimMismatch,
    Rejection::Denied,
    Rejection::NotFound,
    Rejection::PreflightRefused,
    Rejection::PreflightWithBody,
    Rejection::PathReadsAnotherRule,
    Rejection::MethodReadsAnotherRule,
    Rejection::WhitespaceAtSegmentEdge,
];

fn check(case: &Case, decision: &DecisionBuf) {
    match (&case.expect, decision.view()) {
        (Expect::Forward { upstream, sub }, Decision::Forward(plan)) => {
            assert_eq!(format!("{}{}", plan.origin, plan.path), *upstream, "{}", case.name);
            assert_eq!(plan.request_set(contract::fields::SUBJECT), *sub, "{}", case.name);
            assert!(plan.request_drops().any(|name| name == "authorization"), "{}", case.name);
        }
        (Expect::Reject(r), Decision::Answer(got)) => {
            assert_eq!(got.status, r.status(), "{}", case.name);
            assert_eq!(got.reason, r.reason(), "{}", case.name);
            assert_eq!(got.error, r.error_code().map_or("", |c| c.as_str()), "{}", case.name);
            let body: serde_json::Value = serde_json::from_str(got.body).unwrap();
            assert_eq!(body["error_description"], r.reason(), "{}", case.name);
            assert_eq!(got.field("content-type"), Some("application/json"), "{}", case.name);
            match r.status() {
                500 => assert_eq!(got.field("www-authenticate"), None, "{}", case.name),
                _ => assert!(
                    got.field("www-authenticate").unwrap().starts_with("Bearer realm=\"fixture\""),
                    "{}",
                    case.name
                ),
            }
        }
        (_, other) => panic!("{}: got {other:?}", case.name),
    }
}

#[test]
fn every_reachable_rejection_is_covered() {
    let cases = cases();
    for &rejection in Rejection::ALL {
        let covered = cases.iter().any(|c| matches!(c.expect, Expect::Reject(r) if r == rejection));
        // Keys fetched at run time (a variant of builds that fetch them):
        // testkit/jwks/ covers it on every host.
        let fetched_keys = format!("{rejection:?}") == "KeysUnavailable";
        // A spent bucket is answered by `limited`, not `handle`: tests/traffic.rs.
        let limited = format!("{rejection:?}") == "RateLimited";
        // DPoP needs an issuer that accepts it: testkit/conformance/dpop.test.mjs
        // covers each of its refusals on every host.
        let dpop = format!("{rejection:?}").starts_with("Dpop");
        // So does a certificate binding: testkit/conformance/certificate.test.mjs.
        let dpop = dpop || format!("{rejection:?}").starts_with("Certificate");
        assert!(
            covered || fetched_keys || limited || dpop || UNREACHABLE.contains(&rejection),
            "no case for {rejection:?}"
        );
    }
}

#[test]
fn the_real_module_decides_every_case_fresh_and_reused() {
    let runtime = common::runtime();
    let mut reusable = Reusable::default();
    for case in cases() {
        let fresh = runtime
            .decide_fresh(case.head.as_bytes(), case.now)
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        check(&case, &fresh);
        let reused = runtime.decide_reused(&mut reusable, case.head.as_bytes(), case.now).unwrap();
        assert_eq!(reused, fresh, "{}", case.name);
    }
    assert!(reusable.is_live());
}

#[test]
fn a_sibling_on_its_own_engine_decides_every_case_as_its_runtime_does() {
    // What each serving thread of `serve` decides with (Runtime::sibling).
    let runtime = common::runtime();
    let sibling = runtime.sibling(&common::relaxed(), 2).unwrap();
    let mut reusable = Reusable::default();
    for case in cases() {
        let expected = runtime.decide_fresh(case.head.as_bytes(), case.now).unwrap();
        let fresh = sibling.decide_fresh(case.head.as_bytes(), case.now).unwrap();
        assert_eq!(fresh, expected, "{}", case.name);
        let reused = sibling.decide_reused(&mut reusable, case.head.as_bytes(), case.now).unwrap();
        assert_eq!(reused, expected, "{}", case.name);
    }
    // Options other than the runtime's: wasmtime refuses the code.
    let other = runtime::EngineOptions { no_deadline: true, ..common::relaxed() };
    assert!(runtime.sibling(&other, 2).is_err(), "code compiled for other settings is refused");
}

#[test]
fn the_request_mix_gets_the_expected_answers() {
    let runtime = common::runtime();
    let mix = testkit::mix::Mix::new(&common::config(), NOW, 3);
    for request in mix.generate(200) {
        let decision = runtime.decide_fresh(request.head.as_bytes(), NOW as f64).unwrap();
        assert_eq!(decision.status(), request.kind.expected_status(), "{:?}", request.kind);
        if let Decision::Answer(r) = decision.view() {
            assert_eq!(Some(r.reason), request.kind.expected_reason());
        }
    }
}

#[test]
fn eval_binary_answers_every_case_in_order() {
    // Fail clearly if the fixture module is missing.
    common::gateway_wasm();
    let cases = cases();
    let mut input = String::new();
    for case in &cases {
        input.push_str(&serde_json::json!({ "request": case.head, "now": case.now }).to_string());
        input.push('\n');
    }
    input.push_str("this line is not JSON\n");
    input.push_str(&serde_json::json!({ "request": cases[0].head }).to_string());
    input.push('\n');
    for isolation in ["fresh", "reuse"] {
        let mut child = common::bin()
            .args(["eval", "--isolation", isolation, "--now", &NOW.to_string(), "--wasm"])
            .arg(common::gateway_wasm())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let lines: Vec<serde_json::Value> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), cases.len() + 2);
        for (case, line) in cases.iter().zip(&lines) {
            match &case.expect {
                Expect::Forward { upstream, sub } => {
                    assert_eq!(line["status"], 200, "{}", case.name);
                    assert_eq!(line["upstream"], *upstream, "{}", case.name);
                    assert_eq!(line["sub"].as_str(), *sub, "{}", case.name);
                    assert!(line["error"].is_null() && line["reason"].is_null(), "{}", case.name);
                }
                Expect::Reject(r) => {
                    assert_eq!(line["status"], r.status(), "{}", case.name);
                    assert_eq!(line["reason"], r.reason(), "{}", case.name);
                    assert_eq!(line["error"].as_str(), r.error_code().map(|c| c.as_str()), "{}", case.name);
                    assert!(line["upstream"].is_null() && line["sub"].is_null(), "{}", case.name);
                }
            }
        }
        let bad = &lines[cases.len()];
        assert!(bad["status"].is_null());
        assert!(bad["input_error"].as_str().unwrap().contains("not JSON"));
        // The line after the bad one still works, with the --now flag's clock.
        assert_eq!(lines[cases.len() + 1]["status"], 200);
    }
}

#[test]
fn token_command_mints_tokens_the_module_accepts() {
    common::gateway_wasm();
    let mint = |args: &[&str]| {
        let out = common::bin()
            .arg("token")
            .arg("--config")
            .arg(common::fixture_toml())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let runtime = common::runtime();
    let now = runtime::unix_now();
    let valid = mint(&["--aud", "users", "--sub", "carol"]);
    let decision = runtime.decide_fresh(req(&valid).as_bytes(), now).unwrap();
    let Decision::Forward(plan) = decision.view() else { panic!("valid token refused: {decision:?}") };
    assert_eq!(
        (plan.origin, plan.request_set(contract::fields::SUBJECT)),
        ("http://127.0.0.1:9202", Some("carol"))
    );
    let expired = mint(&["--aud", "users", "--exp-in", "-3600"]);
    let decision = runtime.decide_fresh(req(&expired).as_bytes(), now).unwrap();
    let Decision::Answer(r) = decision.view() else { panic!("expired token forwarded") };
    assert_eq!(r.reason, "token expired");
}
