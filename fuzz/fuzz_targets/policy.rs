//! The policies, against any request: with the policy fixture
//! (`testkit/fixture-policies.toml`), no request reaches an upstream unless
//! the first rule for its method and normalized path lets it: a deny rule
//! forwards nothing, a public rule forwards no identity, and anything else
//! needs a token this target signed itself that carries what the rule
//! requires. A preflight is answered 204 only for a listed origin.
//!
//! Input: a method (byte 0), what token to send and where (byte 1), which
//! claims it carries (bytes 2 and 3), then the target up to the first `\n`,
//! then header fields, one per line. The oracle reads the rules from the
//! config crate's model and matches them with its own few lines.
#![no_main]

use std::sync::OnceLock;

use contract::Decision;
use gateway_config::GatewayConfig;
use gateway_config::policy::{AccessConfig, LiteralConfig, PathMatchConfig, RequirementsConfig};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

const METHODS: [&str; 8] = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "PROPFIND"];
const SCOPES: [&str; 4] = ["orders:write", "orders:read", "reports:read", "admin"];
const ROLES: [&str; 3] = ["admin", "ops", "viewer"];
const AUDIENCES: [&str; 4] = ["orders", "billing", "site", "nowhere"];

fn loaded() -> &'static GatewayConfig {
    static CONFIG: OnceLock<GatewayConfig> = OnceLock::new();
    CONFIG.get_or_init(testkit::fixture::policies_config)
}

/// The claims a token built from `bits` carries.
fn claims(issuer: usize, bits: u16) -> Value {
    let pick = |list: &[&str], shift: u16| -> Vec<String> {
        list.iter().enumerate().filter(|(i, _)| bits >> (shift + *i as u16) & 1 == 1).map(|(_, s)| (*s).to_owned()).collect()
    };
    let mut claims = json!({
        "iss": loaded().issuers[issuer].iss,
        "aud": AUDIENCES[usize::from(bits & 3)],
        "sub": "alice",
        "exp": 4102444800u64,
    });
    let scopes = pick(&SCOPES, 2);
    if bits >> 6 & 1 == 1 {
        claims["scp"] = json!(scopes);
    } else {
        claims["scope"] = json!(scopes.join(" "));
    }
    claims["roles"] = json!(pick(&ROLES, 7));
    if bits >> 10 & 1 == 1 {
        claims["tenant"] = json!(if bits >> 11 & 1 == 1 { "acme" } else { "other" });
    }
    if bits >> 12 & 1 == 1 {
        claims["email_verified"] = json!(bits >> 13 & 1 == 1);
    }
    claims
}

/// A token over `claims`, signed by the issuer's key.
fn token(issuer: usize, claims: &Value) -> String {
    let key = &loaded().issuers[issuer].keys[0];
    let header = json!({ "alg": "HS256", "typ": "JWT", "kid": key.kid });
    testkit::tokens::mint(header.to_string(), claims.to_string(), key.secret())
}

/// `path` is `prefix` or below it, on a segment boundary.
fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    path == prefix || path.starts_with(&format!("{prefix}/"))
}

/// The first rule for `method` and `path`, as the config states them.
fn rule_for<'c>(method: &str, path: &str) -> Option<&'c AccessConfig> {
    let rules: &'c [gateway_config::policy::RuleConfig] = &loaded().policy.rules;
    rules.iter().find(|r| {
        let path_ok = match &r.path {
            PathMatchConfig::Exact(p) => p == path,
            PathMatchConfig::Prefix(p) => under(path, p),
        };
        path_ok && (r.methods.is_empty() || r.methods.iter().any(|m| m == method))
    })
    .map(|r| &r.access)
}

/// Whether `claims` carry what `requirements` ask.
fn meets(requirements: &RequirementsConfig, claims: &Value) -> bool {
    let mut scopes: Vec<String> = claims["scope"].as_str().unwrap_or("").split(' ').map(str::to_owned).collect();
    scopes.extend(claims["scp"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)));
    let has = |s: &String| scopes.contains(s);
    let roles: Vec<&str> = claims["roles"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    requirements.scopes_all.iter().all(has)
        && (requirements.scopes_any.is_empty() || requirements.scopes_any.iter().any(has))
        && requirements.roles.as_ref().is_none_or(|r| {
            r.all.iter().all(|x| roles.contains(&x.as_str()))
                && (r.any.is_empty() || r.any.iter().any(|x| roles.contains(&x.as_str())))
        })
        && requirements.claim_values.iter().all(|v| {
            let name = &loaded().policy.claims[usize::from(v.claim)];
            match &v.value {
                LiteralConfig::String(s) => claims[name] == json!(s),
                LiteralConfig::Integer(n) => claims[name] == json!(n),
                LiteralConfig::Bool(b) => claims[name] == json!(b),
            }
        })
}

fuzz_target!(|data: &[u8]| {
    let [method, kind, bits_lo, bits_hi, rest @ ..] = data else { return };
    let method = METHODS[usize::from(method & 7)];
    let bits = u16::from_le_bytes([*bits_lo, *bits_hi]);
    let (target, fields) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    // What token is sent, where: none, or one signed by an issuer, maybe
    // tampered with, in Authorization, the cookie or the token header.
    let issuer = usize::from(kind >> 2 & 1);
    let claims = claims(issuer, bits);
    let mut sent = match kind & 3 {
        0 => None,
        _ => Some(token(issuer, &claims)),
    };
    let tampered = kind >> 3 & 1 == 1;
    if let (true, Some(t)) = (tampered, sent.as_mut()) {
        let last = t.pop();
        t.push(if last == Some('A') { 'B' } else { 'A' });
    }
    let mut head = format!("{method} ").into_bytes();
    head.extend_from_slice(target);
    head.extend_from_slice(b" HTTP/1.1\r\nHost: gw\r\n");
    if let Some(t) = &sent {
        let field = match kind >> 4 & 3 {
            0 | 3 => format!("Authorization: Bearer {t}"),
            1 => format!("Cookie: a=1; __Host-access={t}"),
            _ => format!("X-Api-Token: Token {t}"),
        };
        head.extend_from_slice(field.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    for &b in fields {
        if b == b'\n' { head.extend_from_slice(b"\r\n") } else { head.push(b) }
    }
    head.extend_from_slice(b"\r\n\r\n");

    let config = testkit::fixture::policies_worker_config();
    let mut input = b"http 127.0.0.1\n".to_vec();
    input.extend_from_slice(&head);
    let mut scratch = vec![0u8; worker::abi::SCRATCH_CAPACITY];
    let outcome = worker::handle(&input, 1_800_000_000.0, config, &mut scratch);
    let decision = Decision::decode(u32::from(outcome.status), outcome.output)
        .unwrap_or_else(|e| panic!("invariant: a decision the contract reads: {e}"));
    let forward = match decision {
        Decision::Answer(answer) if answer.status == 204 => {
            let origin = answer.field("access-control-allow-origin").expect("a preflight answer has an origin");
            let listed = &loaded().policy.cors.as_ref().expect("the fixture has CORS").origins;
            assert!(listed.iter().any(|o| o == origin), "invariant: preflight answered for {origin}");
            assert_eq!(method, "OPTIONS", "invariant: only a preflight is answered 204");
            return;
        }
        Decision::Answer(_) => return, // refusing is always safe
        Decision::Forward(forward) => forward,
    };
    // The path the rules saw: the forward's, less its route's base path and query.
    let route = loaded().routes.iter().find(|r| forward.origin == r.origin() && forward.path.starts_with(&format!("{}/", r.base_path())))
        .unwrap_or_else(|| panic!("invariant: forwarded under a route: {}{}", forward.origin, forward.path));
    let path = forward.path[route.base_path().len()..].split('?').next().unwrap_or("/");
    let subject = forward.request_set(contract::fields::SUBJECT);
    // A server that strips `;` parameters (Tomcat, Jetty, Spring) reads
    // another path, also one that decodes `%3B` (or `%253B`, decoding
    // twice) to `;` first: the same rule must apply to it.
    let stripped: String =
        semicolons_decoded(path).split('/').map(|s| s.split(';').next().unwrap_or("")).collect::<Vec<_>>().join("/");
    assert!(
        rule_for(method, path).map(std::ptr::from_ref) == rule_for(method, &stripped).map(std::ptr::from_ref),
        "invariant: {path} and {stripped} meet different rules"
    );
    match rule_for(method, path) {
        Some(AccessConfig::Deny { .. }) => panic!("invariant: a deny rule forwarded {method} {path}"),
        Some(AccessConfig::Public { route: index }) => {
            assert_eq!(route.aud, loaded().routes[usize::from(*index)].aud, "invariant: the public rule's route");
            assert!(subject.is_none(), "invariant: a public rule forwards no identity");
            assert!(forward.request_sets().all(|(n, _)| !n.starts_with("x-gateway-") || n == "x-gateway-subject"));
        }
        other => {
            // A preflight the config does not answer may fall through to
            // the rules only when its fallback is configured (it is not).
            let requirements = match other {
                Some(AccessConfig::Token(r)) => r.clone(),
                _ => RequirementsConfig::default(),
            };
            assert!(sent.is_some() && !tampered, "invariant: {method} {path} forwarded without a valid token");
            let allowed = &loaded().issuers[issuer].audiences;
            assert!(allowed.is_empty() || allowed.contains(&route.aud), "invariant: the issuer may not use {}", route.aud);
            assert_eq!(claims["aud"], json!(route.aud), "invariant: routed by the token's audience");
            assert!(meets(&requirements, &claims), "invariant: {method} {path} forwarded without {requirements:?}");
            assert_eq!(subject, Some("alice"));
        }
    }
    // The token itself never travels: not in a field the plan sets.
    if let Some(t) = &sent {
        assert!(forward.request_sets().all(|(_, v)| !v.contains(t.as_str())), "invariant: the token travels");
    }
});

/// `path` (ASCII) with every `%3B`, `%253B`, `%25253B`, ... (any case) as `;`.
fn semicolons_decoded(path: &str) -> String {
    let lower = path.to_ascii_lowercase();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while let Some(c) = path[i..].chars().next() {
        if c == '%' {
            let mut j = i + 1;
            while lower[j..].starts_with("25") {
                j += 2;
            }
            if lower[j..].starts_with("3b") {
                out.push(';');
                i = j + 2;
                continue;
            }
        }
        out.push(c);
        i += c.len_utf8();
    }
    out
}
