//! Rate limits on the request path: the buckets a forward names, from what
//! was verified only, and the 429 that replaces it.

use super::*;
use crate::abi::Instance;
use crate::config::{Access, Limit, LimitKey, Limits, PathMatch, Requirements, Rule};
use crate::http::cors::tests::CORS;

const RULES: &[Rule<'static>] = &[
    Rule { methods: &[], path: PathMatch::Exact("/healthz"), access: Access::Public { route: 1 } },
    Rule { methods: &[], path: PathMatch::Prefix("/tenants"), access: Access::Token(Requirements::NONE) },
    Rule { methods: &[], path: PathMatch::Prefix("/open"), access: Access::Public { route: 1 } },
];
const TABLE: &[Limit<'static>] = &[
    Limit { name: "per-user", requests: 3, per_secs: 60, burst: 3, by: LimitKey::Subject, fields: true },
    Limit { name: "per-tenant", requests: 5, per_secs: 60, burst: 2, by: LimitKey::Claim(0), fields: false },
    Limit {
        name: "per-address",
        requests: 4,
        per_secs: 3600,
        burst: 4,
        by: LimitKey::ClientAddress,
        fields: true,
    },
    Limit { name: "route", requests: 2, per_secs: 60, burst: 2, by: LimitKey::Route, fields: true },
];
const POLICY: Policy<'static> = Policy {
    rules: RULES,
    cors: Some(CORS),
    claims: &["tenant"],
    rule_names: &["health", "tenants", "open"],
    limits: Limits { table: TABLE, by_rule: &[&[2], &[1, 0, 3], &[]], unmatched: &[0] },
    ..Policy::NONE
};

fn config() -> Config<'static> {
    Config { policy: POLICY, ..*CONFIG }
}

fn decided(head: &str) -> (u16, String) {
    decided_with(&config(), head)
}

fn buckets(plan: &str) -> std::vec::Vec<(u8, String)> {
    let Ok(contract::Decision::Forward(forward)) = contract::Decision::decode(200, plan.as_bytes()) else {
        panic!("a forward: {plan}")
    };
    forward.buckets().map(|b| (b.limit, b.key.into())).collect()
}

fn bearer(claims: &str) -> String {
    let token = token(HEADER, &std::format!(r#"{{"iss":"iss","aud":"b","exp":{}{claims}}}"#, NOW + 60));
    std::format!("Authorization: Bearer {token}\r\n")
}

#[test]
fn a_forward_names_its_rules_buckets_from_what_was_verified() {
    let (status, plan) = decided(&std::format!(
        "GET /tenants/x HTTP/1.1\r\nHost: gw\r\n{}\r\n",
        bearer(r#","sub":"a b","tenant":"acme""#)
    ));
    assert_eq!(status, 200, "{plan}");
    assert_eq!(
        buckets(&plan),
        [(1, "per-tenant:c:0.acme".into()), (0, "per-user:s:0.a%20b".into()), (3, "route:r:1".into())]
    );
    // Only the limits that show their fields add a policy field.
    let policies: std::vec::Vec<&str> =
        plan.lines().filter(|l| l.starts_with(">ratelimit-policy:")).collect();
    assert_eq!(policies, [">ratelimit-policy:\"per-user\";q=3;w=60", ">ratelimit-policy:\"route\";q=2;w=60"]);

    // No rule: the default limits; a public rule: the address the host saw.
    let (_, plan) =
        decided(&std::format!("GET /x HTTP/1.1\r\nHost: gw\r\n{}\r\n", bearer(r#","sub":"bob""#)));
    assert_eq!(buckets(&plan), [(0, "per-user:s:0.bob".into())]);
    let (_, plan) = decided("GET /healthz HTTP/1.1\r\nHost: gw\r\nX-Forwarded-For: 10.9.9.9\r\n\r\n");
    assert_eq!(buckets(&plan), [(2, "per-address:a:192.0.2.1".into())], "the peer, never a client's field");
    let (_, plan) = decided("GET /open HTTP/1.1\r\nHost: gw\r\n\r\n");
    assert!(buckets(&plan).is_empty() && !plan.contains("ratelimit"), "{plan}");
}

#[test]
fn tokens_without_the_key_share_one_bucket_and_values_never_collide() {
    let (_, plan) = decided(&std::format!("GET /tenants HTTP/1.1\r\nHost: gw\r\n{}\r\n", bearer("")));
    assert_eq!(buckets(&plan)[..2], [(1, "per-tenant:c:0.".into()), (0, "per-user:s:0.".into())]);
    let (_, plan) =
        decided(&std::format!("GET /tenants HTTP/1.1\r\nHost: gw\r\n{}\r\n", bearer(r#","tenant":7"#)));
    assert_eq!(buckets(&plan)[0], (1, "per-tenant:c:0.7".into()));
    let (_, plan) = decided(&std::format!(
        "GET /tenants HTTP/1.1\r\nHost: gw\r\n{}\r\n",
        bearer(r#","tenant":"a:b%20""#)
    ));
    assert_eq!(buckets(&plan)[0], (1, "per-tenant:c:0.a:b%2520".into()));
}

#[test]
fn a_refused_request_names_no_bucket() {
    let (status, answer) = decided("GET /tenants HTTP/1.1\r\nHost: gw\r\n\r\n");
    assert_eq!(status, 401);
    assert!(!answer.contains("\n="), "{answer}");
}

#[test]
fn limited_replaces_the_last_forward_with_a_429() {
    let mut instance = std::boxed::Box::new(Instance::new());
    let config = config();
    let head = std::format!(
        "https 192.0.2.1\nGET /tenants/x HTTP/1.1\r\nHost: gw\r\nOrigin: https://app.example\r\n{}\r\n",
        bearer(r#","sub":"alice","tenant":"acme""#)
    );
    instance.input_mut()[..head.len()].copy_from_slice(head.as_bytes());
    assert_eq!(instance.handle(head.len() as u32, NOW as f64, &config), 200);
    let labels = match contract::Decision::decode(200, instance.output()) {
        Ok(contract::Decision::Forward(forward)) => forward.labels,
        other => panic!("{other:?}"),
    };
    assert_eq!(instance.limited(1, 7, 42, &config), 429);
    let output = String::from_utf8(instance.output().to_vec()).expect("ASCII");
    let Ok(contract::Decision::Answer(answer)) = contract::Decision::decode(429, output.as_bytes()) else {
        panic!("an answer: {output}")
    };
    assert_eq!(answer.labels, contract::Labels { outcome: contract::outcome::RATE_LIMITED, ..labels });
    assert_eq!(answer.reason, "rate limit exceeded");
    assert_eq!(answer.field("retry-after"), Some("7"));
    assert_eq!(answer.field("ratelimit-policy"), Some("\"per-user\";q=3;w=60"));
    assert_eq!(answer.field("ratelimit"), Some("\"per-user\";r=0;t=42"));
    assert_eq!(answer.field("access-control-allow-origin"), Some("https://app.example"));
    assert_eq!(answer.body, r#"{"error_description":"rate limit exceeded","limit":"per-user"}"#);
    assert_eq!(answer.field("www-authenticate"), None);
    // A bucket the forward did not name, or no forward at all: 500, nothing.
    assert_eq!(instance.limited(3, 1, 1, &config), 500);
    assert!(instance.output().is_empty());
    let head = "https 192.0.2.1\nGET /tenants HTTP/1.1\r\nHost: gw\r\n\r\n";
    instance.input_mut()[..head.len()].copy_from_slice(head.as_bytes());
    assert_eq!(instance.handle(head.len() as u32, NOW as f64, &config), 401);
    assert_eq!(instance.limited(0, 1, 1, &config), 500);
}
