//! The golden decisions (`contract/golden/decisions.json`): the outputs a
//! host must read, each with the typed decision it stands for or the error
//! that refuses it. The decoder here and the JavaScript shim's reader
//! (`deploy/workerd/test/shim.test.mjs`) are both held to the same file.

use gateway_contract::{Cache, Decision, DecodeError, Encoder, Labels, Operation};
use serde_json::{Value, json};

fn golden() -> Vec<Value> {
    let text = include_str!("../golden/decisions.json");
    serde_json::from_str::<Value>(text).expect("golden JSON").as_array().expect("an array").clone()
}

fn error_name(error: DecodeError) -> &'static str {
    match error {
        DecodeError::NotText => "NotText",
        DecodeError::Status => "Status",
        DecodeError::Origin => "Origin",
        DecodeError::Path => "Path",
        DecodeError::Line(_) => "Line",
        DecodeError::ShortAnswer => "ShortAnswer",
        DecodeError::Reason => "Reason",
        DecodeError::Labels => "Labels",
        _ => "unknown",
    }
}

/// A label line as the golden file writes it.
fn labels_json(labels: &Labels) -> Value {
    let cache = match labels.cache {
        Cache::None => "none",
        Cache::Hit => "hit",
        Cache::Miss => "miss",
    };
    json!({ "outcome": labels.outcome, "rule": labels.rule, "route": labels.route, "issuer": labels.issuer, "cache": cache })
}

/// A decision as the golden file writes it.
fn as_json(decision: &Decision<'_>) -> Value {
    match decision {
        Decision::Forward(forward) => {
            let operations: Vec<Value> = forward
                .operations()
                .map(|op| match op {
                    Operation::DropRequestField(n) => json!(["drop_request", n]),
                    Operation::SetRequestField(n, v) => json!(["set_request", n, v]),
                    Operation::DropResponseField(n) => json!(["drop_response", n]),
                    Operation::AddResponseField(n, v) => json!(["add_response", n, v]),
                })
                .collect();
            let mut written = json!({
                "origin": forward.origin, "path": forward.path, "operations": operations,
                "labels": labels_json(&forward.labels),
            });
            // The buckets to count (`=` lines), written only when there are any.
            let buckets: Vec<Value> = forward.buckets().map(|b| json!([b.limit, b.key])).collect();
            if !buckets.is_empty() {
                written["buckets"] = json!(buckets);
            }
            json!({ "forward": written })
        }
        Decision::Answer(answer) => {
            let fields: Vec<Value> = answer.fields().map(|(n, v)| json!([n, v])).collect();
            let mut written = json!({
                "status": answer.status, "error": answer.error, "reason": answer.reason,
                "fields": fields, "body": answer.body, "labels": labels_json(&answer.labels),
            });
            if let Some(issuer) = answer.refresh_keys {
                written["refresh_keys"] = json!(issuer);
            }
            json!({ "answer": written })
        }
    }
}

#[test]
fn the_decoder_reads_every_golden_decision_as_written() {
    let cases = golden();
    assert!(cases.len() >= 30, "the golden file lost cases");
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let status = case["status"].as_u64().expect("status") as u32;
        let output = case["output"].as_str().expect("output");
        let got = match Decision::decode(status, output.as_bytes()) {
            Ok(decision) => as_json(&decision),
            Err(error) => json!({ "refused": error_name(error) }),
        };
        assert_eq!(got, case["expect"], "{name}");
    }
}

#[test]
fn what_the_encoder_writes_the_decoder_reads_back() {
    let mut buf = [0u8; 512];
    let mut out = Encoder::new(&mut buf);
    out.forward("http://10.0.0.5", &[b"/orders-svc", b"/items?x=1"]).expect("room");
    let labels = Labels { outcome: 0, rule: Some(7), route: Some(1), issuer: Some(2), cache: Cache::Hit };
    out.labels(&labels).expect("room");
    out.drop_request_field(b"X_Gateway_Subject").expect("room");
    out.set_request_field("x-forwarded-for", &[b"10.0.0.1", b", ", b"192.0.2.7"]).expect("room");
    out.drop_response_field("access-control-allow-origin").expect("room");
    out.add_response_field("vary", &[b"Origin"]).expect("room");
    let decision = Decision::decode(200, out.as_bytes()).expect("a valid forward");
    let Decision::Forward(forward) = decision else { panic!("a forward") };
    assert_eq!(forward.path, "/orders-svc/items?x=1");
    assert_eq!(forward.labels, labels);
    assert_eq!(forward.request_drops().collect::<Vec<_>>(), ["x_gateway_subject"]);
    assert_eq!(forward.request_set("X-Forwarded-For"), Some("10.0.0.1, 192.0.2.7"));
    assert_eq!(forward.response_drops().collect::<Vec<_>>(), ["access-control-allow-origin"]);
    assert_eq!(forward.response_adds().collect::<Vec<_>>(), [("vary", "Origin")]);

    let mut out = Encoder::new(&mut buf);
    out.answer("insufficient_scope", "scope required").expect("room");
    out.labels(&Labels::of(60)).expect("room");
    out.add_response_field("www-authenticate", &[b"Bearer realm=\"g\", scope=\"a b\""]).expect("room");
    out.body(&[b"{}"]).expect("room");
    let Ok(Decision::Answer(answer)) = Decision::decode(403, out.as_bytes()) else { panic!("an answer") };
    assert_eq!((answer.error, answer.reason, answer.body), ("insufficient_scope", "scope required", "{}"));
    assert_eq!(answer.field("WWW-Authenticate"), Some("Bearer realm=\"g\", scope=\"a b\""));
    assert_eq!(answer.refresh_keys, None);
    assert_eq!(answer.labels, Labels::of(60));

    for issuer in [0u8, 7, 42, 255] {
        let mut out = Encoder::new(&mut buf);
        out.answer("invalid_token", "unknown kid").expect("room");
        out.labels(&Labels { issuer: Some(issuer), ..Labels::of(39) }).expect("room");
        out.refresh_keys(issuer).expect("room");
        out.add_response_field("content-type", &[b"application/json"]).expect("room");
        out.body(&[b"{}"]).expect("room");
        let Ok(Decision::Answer(answer)) = Decision::decode(401, out.as_bytes()) else { panic!("an answer") };
        assert_eq!(answer.refresh_keys, Some(issuer));
        assert_eq!(answer.fields().collect::<Vec<_>>(), [("content-type", "application/json")]);
    }
}

#[test]
fn the_encoder_reports_a_full_buffer() {
    let mut buf = [0u8; 8];
    let mut out = Encoder::new(&mut buf);
    assert!(out.forward("http://h", &[b"/a-long-path"]).is_err());
}

/// The outcome names as the workerd shim reads them
/// (`contract/golden/outcomes.json`) are the contract's, in order.
#[test]
fn the_golden_outcomes_are_the_contracts() {
    let text = include_str!("../golden/outcomes.json");
    let names: Vec<String> = serde_json::from_str(text).expect("a JSON array of names");
    assert_eq!(names, gateway_contract::outcome::NAMES, "write it again from contract::outcome::NAMES");
}

/// The GCRA vectors every host's counter is held to
/// (`contract/golden/limits.json`) are what `contract::limits::gcra` counts.
#[test]
fn the_golden_limit_vectors_are_gcras() {
    use gateway_contract::limits::{Limit, Verdict};
    let doc: Value = serde_json::from_str(include_str!("../golden/limits.json")).expect("golden JSON");
    let cases = doc["cases"].as_array().expect("cases");
    assert!(cases.len() >= 40 && cases.iter().any(|c| c["expect"]["allowed"] == false));
    let number = |v: &Value| v.as_u64().expect("a number");
    let limit_of = |l: &'_ Value| Limit {
        name: l["name"].as_str().expect("name").to_owned().leak(),
        requests: number(&l["requests"]) as u32,
        per_secs: number(&l["per_secs"]) as u32,
        burst: number(&l["burst"]) as u32,
        fields: true,
    };
    for case in cases {
        let limit = limit_of(&case["limit"]);
        let got: Verdict = limit.count(number(&case["stored_tat_us"]), number(&case["now_us"]));
        let e = &case["expect"];
        let expect = Verdict {
            allowed: e["allowed"].as_bool().expect("allowed"),
            tat_us: number(&e["tat_us"]),
            remaining: number(&e["remaining"]) as u32,
            reset_secs: number(&e["reset_secs"]) as u32,
            retry_after_secs: number(&e["retry_after_secs"]) as u32,
        };
        assert_eq!(got, expect, "{case}");
    }
    for field in doc["fields"].as_array().expect("fields") {
        let limit = limit_of(&field["limit"]);
        let verdict = Verdict {
            allowed: true,
            tat_us: 0,
            remaining: number(&field["remaining"]) as u32,
            reset_secs: number(&field["reset_secs"]) as u32,
            retry_after_secs: 0,
        };
        assert_eq!(
            gateway_contract::limits::ratelimit_field(&limit, &verdict).to_string(),
            field["ratelimit"].as_str().expect("ratelimit")
        );
    }
}
