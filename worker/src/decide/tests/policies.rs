//! The request path with every policy: rules, CORS, a cookie beside
//! `Authorization`, claims as headers, the payload forwarded.

use super::*;
use crate::config::{Access, ClaimHeader, PathMatch, Requirements, Rule, TokenSource};
use crate::http::cors::tests::CORS;

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
const POLICY: Policy<'static> = Policy {
    rules: RULES,
    cors: Some(CORS),
    token_sources: &[TokenSource::Bearer, TokenSource::Cookie("__Host-at")],
    claims: &["scope", "scp", "tenant", "email"],
    scope_claims: &[0, 1],
    claim_headers: &[
        ClaimHeader { claim: 2, header: "x-gateway-tenant", percent_encode: false, value_type: None },
        ClaimHeader { claim: 3, header: "x-user-email", percent_encode: true, value_type: None },
    ],
    payload_header: Some("x-gateway-claims"),
    readings: crate::config::Readings::ALL,
    rule_names: &["healthz", "admin", "v1-writes"],
    limits: crate::config::Limits::NONE,
    dpop: crate::config::Dpop::NONE,
    certificate_bound: &[],
};

fn config() -> Config<'static> {
    Config { policy: POLICY, ..*CONFIG }
}

fn decided(head: &str) -> (u16, String) {
    let (status, output) = decided_with(&config(), head);
    contract::Decision::decode(u32::from(status), output.as_bytes())
        .unwrap_or_else(|e| panic!("{e}: {output}"));
    (status, output)
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
    let (status, plan) =
        decided(&head(&token_with(r#","scp":["orders:write"],"tenant":"acme","email":"zoë@example.com""#)));
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
    let both = cookie(&token).replace("\r\n\r\n", &std::format!("\r\nAuthorization: Bearer {token}\r\n\r\n"));
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
    assert!(plan.contains("\n!access-control-allow-origin\n") && plan.ends_with("\n>vary:Origin"), "{plan}");
    // Another origin: no CORS field added, the upstream's still removed.
    let (_, plan) = decided(&std::format!(
        "GET /v1/x HTTP/1.1\r\nHost: gw\r\nOrigin: https://evil.example\r\nAuthorization: Bearer {}\r\n\r\n",
        token_with("")
    ));
    assert!(plan.contains("\n!access-control-allow-origin") && !plan.contains(">access-control"), "{plan}");
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

/// Cookies written with `;` and no space grow when they are joined again
/// with `; `: the room for them is taken for the longest such field
/// (a fuzzer found a panic here).
#[test]
fn other_cookies_packed_without_spaces_fit_when_joined_again() {
    let cookies = "a;b;c;d;e;f;g;h;i;j;k;l";
    let (status, plan) =
        decided(&std::format!("GET /healthz HTTP/1.1\r\nHost: gw\r\nCookie: {cookies}\r\n\r\n"));
    assert_eq!(status, 200, "{plan}");
    assert!(plan.contains("\n+cookie:a; b; c; d; e; f; g; h; i; j; k; l"), "{plan}");
}
