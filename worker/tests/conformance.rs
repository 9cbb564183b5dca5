//! The conformance corpora against the native request path: the module's
//! decision for each request, read with the contract's decoder, with its
//! plan applied to the request's own fields and to the recording upstream's
//! response, must be the outcome the corpus states. The same corpora run
//! over real HTTP through every host (`testkit/conformance/hosts.test.mjs`).
//!
//! - `forwarding.jsonl`: the forwarding rules, with `testkit/fixture.toml`;
//! - `policies.jsonl`: the policies (rules, CORS, token sources, claims to
//!   headers, two issuers), with `testkit/fixture-policies.toml`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use contract::Decision;
use serde_json::{Value, json};
use testkit::tokens::{Claims, mint};
use worker::Rejection;
use worker::config::Config;

const NOW: f64 = 1_800_000_000.0;
const CONTEXT: &str = "http 127.0.0.1\n";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Fields that belong to the HTTP stack's framing, not to the plan.
const FRAMING: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

/// The recording upstream's own response fields (`RECORDER_FIELDS` of
/// `generate.mjs`; `hosts.test.mjs`'s recorder sends them).
const RECORDER_FIELDS: [(&str, &str); 8] = [
    ("content-type", "application/json"),
    ("x-recorder", "1"),
    ("access-control-allow-origin", "*"),
    ("access-control-allow-credentials", "true"),
    ("access-control-allow-methods", "*"),
    ("access-control-allow-headers", "*"),
    ("access-control-expose-headers", "x-recorder"),
    ("vary", "Accept-Encoding"),
];

/// What the client would see: the outcome in the corpus's terms, and the
/// response's fields in order.
struct Got {
    outcome: Value,
    response: Vec<(String, String)>,
}

/// What the module decided for one request.
fn outcome(config: &Config<'_>, request: &[u8], now: f64) -> Got {
    let head_end = request.windows(4).position(|w| w == b"\r\n\r\n").map_or(request.len(), |i| i + 4);
    let (head, body) = request.split_at(head_end);
    let mut input = CONTEXT.as_bytes().to_vec();
    input.extend_from_slice(head);
    let mut scratch = vec![0u8; worker::abi::SCRATCH_CAPACITY];
    let answer = worker::handle(&input, now, config, &mut scratch);
    let decision = Decision::decode(u32::from(answer.status), answer.output)
        .unwrap_or_else(|e| panic!("not a decision ({e}): {}", String::from_utf8_lossy(answer.output)));
    let forward = match decision {
        Decision::Answer(answer) => {
            // The reason as a client reads it: the JSON body's error_description.
            let reason = serde_json::from_str::<Value>(answer.body)
                .ok()
                .and_then(|body| body.get("error_description").cloned())
                .unwrap_or(Value::Null);
            return Got {
                outcome: json!({ "status": answer.status, "reason": reason }),
                response: answer.fields().map(|(n, v)| (n.to_owned(), v.to_owned())).collect(),
            };
        }
        Decision::Forward(forward) => forward,
    };
    // Apply the plan to the request's own fields.
    let mut fields = [httparse::EMPTY_HEADER; 64];
    let mut parsed = httparse::Request::new(&mut fields);
    parsed.parse(head).expect("a forwarded head parses");
    let drops: Vec<&str> = forward.request_drops().collect();
    let sets: Vec<(String, String)> =
        forward.request_sets().map(|(n, v)| (n.to_owned(), v.to_owned())).collect();
    let mut headers: Vec<(String, String)> = parsed
        .headers
        .iter()
        .map(|h| (h.name.to_ascii_lowercase(), h.value.iter().map(|&b| char::from(b)).collect()))
        .filter(|(name, _)| !drops.contains(&name.as_str()) && !sets.iter().any(|(set, _)| set == name))
        .chain(sets.clone())
        .filter(|(name, _)| !FRAMING.contains(&name.as_str()))
        .collect();
    headers.sort();
    // And to the recording upstream's response.
    let response_drops: Vec<&str> = forward.response_drops().collect();
    let response = RECORDER_FIELDS
        .iter()
        .filter(|(name, _)| !response_drops.iter().any(|d| d.eq_ignore_ascii_case(name)))
        .map(|&(n, v)| (n.to_owned(), v.to_owned()))
        .chain(forward.response_adds().map(|(n, v)| (n.to_owned(), v.to_owned())))
        .collect();
    Got {
        outcome: json!({
            "status": 200,
            "upstream": {
                "line": format!("{} {} HTTP/1.1", parsed.method.expect("method"), forward.path),
                "origin": forward.origin,
                "headers": headers,
                "body": body_of(head, body),
            }
        }),
        response,
    }
}

/// The body as the upstream receives it: a chunked body decoded.
fn body_of(head: &[u8], body: &[u8]) -> String {
    let text: String = body.iter().map(|&b| char::from(b)).collect();
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    if !head.contains("transfer-encoding: chunked") {
        return text;
    }
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size, 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    out
}

/// The value of the response field `name`: its field lines joined with
/// ", " (RFC 9110 section 5.3), or None.
fn combined(response: &[(String, String)], name: &str) -> Option<String> {
    let values: Vec<&str> =
        response.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// A field value with the spaces around its list commas made one (RFC 9110
/// section 5.6.1).
fn list_value(value: &str) -> String {
    value.split(',').map(str::trim).collect::<Vec<_>>().join(", ")
}

/// Whether `got` is the outcome `expected` states (or one of its choices,
/// or, when the corpus pins each host's own, the native path's: `module`).
fn matches(expected: &Value, got: &Got) -> bool {
    if let Some(choices) = expected.get("any_of").and_then(Value::as_array) {
        return choices.iter().any(|choice| matches(choice, got));
    }
    if let Some(hosts) = expected.get("hosts") {
        return hosts.get("module").is_some_and(|own| matches(own, got));
    }
    let mut exact = expected.clone();
    let mut present = Value::Null;
    let mut absent = Value::Null;
    if let Some(object) = exact.as_object_mut() {
        object.remove("front_end");
        present = object.remove("response_headers").unwrap_or(Value::Null);
        absent = object.remove("absent_response_headers").unwrap_or(Value::Null);
    }
    let present_ok = present.as_array().into_iter().flatten().all(|pair| {
        let expected = pair[1].as_str().map(list_value);
        combined(&got.response, pair[0].as_str().expect("a name")).map(|v| list_value(&v)) == expected
    });
    let absent_ok = absent
        .as_array()
        .into_iter()
        .flatten()
        .all(|name| combined(&got.response, name.as_str().expect("a name")).is_none());
    exact == got.outcome && present_ok && absent_ok
}

/// Runs every single-request case of `file`; panics with every difference.
/// Returns how many cases ran and the reasons of the answers they got.
fn run_corpus(file: &str, config: &Config<'_>) -> (usize, BTreeSet<String>) {
    let corpus = std::fs::read_to_string(root().join("testkit/conformance").join(file)).expect("corpus");
    let mut checked = 0;
    let mut reasons = BTreeSet::new();
    let mut failures = Vec::new();
    for line in corpus.lines() {
        let case: Value = serde_json::from_str(line).expect("a JSON line");
        let name = case["name"].as_str().expect("name");
        let expect = case["expect"].as_array().expect("expect");
        if expect.len() != 1 {
            continue; // pipelined: judged over real HTTP only
        }
        let request: Vec<u8> = case["request"].as_str().expect("request").chars().map(|c| c as u8).collect();
        let got = outcome(config, &request, NOW);
        if matches(&expect[0], &got) {
            reasons.extend(got.outcome["reason"].as_str().map(str::to_owned));
        } else {
            failures.push(format!(
                "{name}:\n  expected {}\n  got      {} with response fields {:?}",
                expect[0], got.outcome, got.response
            ));
        }
        checked += 1;
    }
    assert!(
        failures.is_empty(),
        "{file}: {} of {checked} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    (checked, reasons)
}

#[test]
fn every_single_request_case_gets_the_stated_outcome() {
    let (checked, _) = run_corpus("forwarding.jsonl", testkit::fixture::worker_config());
    assert!(checked >= 40, "only {checked} cases");
}

/// Every answer a policy adds, each of which the policy corpus must show.
const POLICY_REJECTIONS: [Rejection; 17] = [
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
    Rejection::MethodNotUpperCase,
    Rejection::DoubleEncodedPath,
];

#[test]
fn every_policy_case_gets_the_stated_outcome() {
    let (checked, reasons) = run_corpus("policies.jsonl", testkit::fixture::policies_worker_config());
    assert!(checked >= 150, "only {checked} cases");
    for rejection in POLICY_REJECTIONS {
        assert!(reasons.contains(rejection.reason()), "no policy case is answered {rejection:?}");
    }
}

/// The partner's zero leeway beside the first issuer's 30 s, around the
/// clock: the corpus's tokens expire in 2100, so these are minted here
/// (`hosts.test.mjs` mints the same around the real clock).
#[test]
fn each_issuer_has_its_own_leeway() {
    let loaded = testkit::fixture::policies_config();
    let config = testkit::fixture::policies_worker_config();
    let now = NOW as u64;
    let decide = |issuer: usize, exp: u64, nbf: Option<u64>| {
        let issuer = &loaded.issuers[issuer];
        let key = &issuer.keys[0];
        let mut claims =
            Claims::new("orders", exp).issuer(issuer.iss.as_deref().expect("iss")).subject("alice");
        if let Some(nbf) = nbf {
            claims = claims.not_before(nbf);
        }
        let token = mint(Claims::header(&key.kid), claims.to_json(), key.secret());
        let request =
            format!("GET /orders/7 HTTP/1.1\r\nHost: gw.test\r\nAuthorization: Bearer {token}\r\n\r\n");
        let got = outcome(config, request.as_bytes(), NOW);
        (got.outcome["status"].clone(), got.outcome["reason"].clone())
    };
    let forwarded = (json!(200), Value::Null);
    assert_eq!(decide(0, now - 10, None), forwarded, "the first issuer's 30 s leeway");
    assert_eq!(decide(1, now - 10, None), (json!(401), json!("token expired")), "the partner's none");
    assert_eq!(decide(1, now + 1, None), forwarded, "expiring next second");
    // RFC 7519 section 4.1.4: valid only before exp, so expired at it.
    assert_eq!(decide(1, now, None), (json!(401), json!("token expired")), "at exp");
    assert_eq!(decide(0, now - 30, None), (json!(401), json!("token expired")), "at exp + leeway");
    assert_eq!(decide(1, now + 600, Some(now)), forwarded, "valid from nbf on");
    assert_eq!(decide(0, now + 600, Some(now + 10)), forwarded, "not before, within 30 s");
    assert_eq!(decide(1, now + 600, Some(now + 10)), (json!(401), json!("token not yet valid")));
}
