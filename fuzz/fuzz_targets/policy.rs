//! The policies, against any request: with the policy fixture
//! (`testkit/fixture-policies.toml`), no request reaches an upstream unless
//! the rule for its method and path, as every common server behind the
//! gateway reads them, lets it: a deny rule forwards nothing, a public rule
//! forwards no identity, and anything else needs a token this target signed
//! itself that carries what the rule requires. A preflight is answered 204
//! only for a listed origin.
//!
//! The readings are this target's own model of each server (nginx, Express,
//! ASP.NET Core, Tomcat, Spring MVC, Werkzeug, Go, Fastify 4, and a server
//! behind an nginx that hands on its decoded path and trims it): what each
//! does to the forwarded path (decode once, strip `;` parameters, cut the
//! path at `;`, merge slashes, trim whitespace) and how it compares a route
//! with it (any case, a trailing slash, a `.ext` suffix), and the methods
//! each may run (`HEAD` as `GET`, an override header, `_method` in the query
//! as a form decodes it, and, for a request with a body, any method the
//! rules name: a `_method` in the body). It shares no code with the
//! module's.
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
    let roles = pick(&ROLES, 7);
    claims["roles"] = match (bits >> 14 & 1 == 1, roles.as_slice()) {
        (true, [one]) => json!(one),
        _ => json!(roles),
    };
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

/// How one kind of server reads the forwarded path and compares a route with it.
#[derive(Debug)]
struct Reading {
    server: &'static str,
    /// Percent-decodes the path once before routing.
    decode: bool,
    /// Strips `;` parameters from each segment: before decoding (Tomcat) or after (Spring).
    strip: Strip,
    /// Merges runs of `/`.
    merge: bool,
    /// Compares routes in any letter case.
    any_case: bool,
    /// Ignores one trailing slash.
    trailing_slash: bool,
    /// Ignores a `.ext` after a route whose last segment has no dot.
    suffix: bool,
    /// Trims whitespace off the decoded path (`strip()`, `trim()`).
    trim: bool,
}

#[derive(Debug, PartialEq)]
enum Strip {
    No,
    BeforeDecoding,
    AfterDecoding,
    /// Cuts the path at its first `;`, the rest read as the query (Fastify 4).
    Cut,
}

const READINGS: [Reading; 10] = [
    Reading { server: "as forwarded", decode: false, strip: Strip::No, merge: false, any_case: false, trailing_slash: false, suffix: false, trim: false },
    Reading { server: "nginx", decode: true, strip: Strip::No, merge: true, any_case: false, trailing_slash: false, suffix: false, trim: false },
    Reading { server: "Express", decode: false, strip: Strip::No, merge: false, any_case: true, trailing_slash: true, suffix: false, trim: false },
    Reading { server: "ASP.NET Core", decode: true, strip: Strip::No, merge: false, any_case: true, trailing_slash: true, suffix: false, trim: false },
    Reading { server: "Tomcat", decode: true, strip: Strip::BeforeDecoding, merge: true, any_case: false, trailing_slash: false, suffix: false, trim: false },
    Reading { server: "Spring MVC 5", decode: true, strip: Strip::AfterDecoding, merge: true, any_case: false, trailing_slash: true, suffix: true, trim: false },
    Reading { server: "Werkzeug", decode: true, strip: Strip::No, merge: false, any_case: false, trailing_slash: false, suffix: false, trim: false },
    Reading { server: "Go net/http", decode: false, strip: Strip::No, merge: true, any_case: false, trailing_slash: false, suffix: false, trim: false },
    Reading { server: "Fastify 4", decode: true, strip: Strip::Cut, merge: false, any_case: false, trailing_slash: false, suffix: false, trim: false },
    Reading { server: "behind nginx's decoded $uri, trimmed", decode: true, strip: Strip::No, merge: true, any_case: false, trailing_slash: false, suffix: false, trim: true },
];

impl Reading {
    /// The path this server routes.
    fn path(&self, path: &str) -> String {
        let mut path = path.to_owned();
        if self.strip == Strip::BeforeDecoding {
            path = strip_parameters(&path);
        }
        if self.strip == Strip::Cut {
            path = path.split(';').next().unwrap_or_default().to_owned();
        }
        if self.decode {
            path = percent_decoded(&path);
        }
        if self.strip == Strip::AfterDecoding {
            path = strip_parameters(&path);
        }
        if self.merge {
            while path.contains("//") {
                path = path.replace("//", "/");
            }
        }
        if self.trim {
            path = path.trim().to_owned();
        }
        path
    }

    /// Whether this server routes `path` (already read) to a handler at `route`.
    fn routes(&self, route: &PathMatchConfig, path: &str) -> bool {
        let fold = |text: &str| if self.any_case { text.to_ascii_lowercase() } else { text.to_owned() };
        let (rule, prefix) = match route {
            PathMatchConfig::Exact(p) => (fold(p), false),
            PathMatchConfig::Prefix(p) => (fold(p.strip_suffix('/').unwrap_or(p)), true),
        };
        let path = fold(path);
        let mut candidates = vec![path.clone()];
        if self.trailing_slash && path.len() > 1 && path.ends_with('/') {
            candidates.push(path[..path.len() - 1].to_owned());
        }
        let rule_ok = |candidate: &str| {
            let rule = if self.trailing_slash && !prefix && rule.len() > 1 { rule.trim_end_matches('/') } else { &rule };
            candidate == rule || (prefix && candidate.starts_with(&format!("{rule}/")))
                || (self.suffix && !rule.rsplit('/').next().unwrap_or("").contains('.')
                    && candidate.strip_prefix(rule).is_some_and(|rest| rest.starts_with('.') && !rest.contains('/')))
        };
        candidates.iter().any(|c| rule_ok(c))
    }
}

/// Each segment of `path` without its `;` parameters.
fn strip_parameters(path: &str) -> String {
    path.split('/').map(|s| s.split(';').next().unwrap_or("")).collect::<Vec<_>>().join("/")
}

/// `path` with every `%XX` decoded once (bytes that are not UTF-8 kept as escapes).
fn percent_decoded(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| path.to_owned())
}

/// The first rule a server that reads requests as `reading` runs `method` `path` under.
fn rule_for<'c>(reading: &Reading, method: &str, path: &str) -> Option<&'c AccessConfig> {
    let rules: &'c [gateway_config::policy::RuleConfig] = &loaded().policy.rules;
    let path = reading.path(path);
    rules
        .iter()
        .find(|r| reading.routes(&r.path, &path) && (r.methods.is_empty() || r.methods.iter().any(|m| m == method)))
        .map(|r| &r.access)
}

/// The methods a server may run a request of `method` as: its own, `GET`
/// for `HEAD`, what an override header or `_method` in the query names (the
/// query form-decoded, its names as PHP reads them), and for a request with
/// a body, every method the rules name (a `_method` in the body).
fn methods_read(method: &str, fields: &[u8], query: &str) -> Vec<String> {
    let mut methods = vec![method.to_owned()];
    if method == "HEAD" {
        methods.push("GET".into());
    }
    // The head ends at the first empty line: what follows is body to the module.
    let mut has_body = false;
    for line in String::from_utf8_lossy(fields).lines().take_while(|line| !line.is_empty()) {
        let Some((name, value)) = line.split_once(':') else { continue };
        let name = name.trim().to_ascii_lowercase().replace('_', "-");
        if ["x-http-method-override", "x-http-method", "x-method-override"].contains(&name.as_str()) {
            methods.extend(value.split(',').map(|m| m.trim().to_ascii_uppercase()));
        }
        has_body |= name == "transfer-encoding" || (name == "content-length" && value.trim().trim_start_matches('0') != "");
    }
    let form_decoded = |text: &str| percent_decoded(&text.replace('+', " "));
    for pair in query.split(['&', ';']) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = form_decoded(name);
        let name = name.trim_start_matches(' ');
        let php = name.strip_prefix(['_', '.', '[']);
        if php == Some("method") {
            methods.push(form_decoded(value).trim().to_ascii_uppercase());
        }
    }
    if has_body {
        methods.extend(loaded().policy.rules.iter().flat_map(|rule| rule.methods.iter().cloned()));
    }
    methods
}

/// Whether a token of issuer `issuer` with `claims` carries what `requirements` ask.
fn meets(requirements: &RequirementsConfig, issuer: usize, claims: &Value) -> bool {
    let mut scopes: Vec<String> = claims["scope"].as_str().unwrap_or("").split(' ').map(str::to_owned).collect();
    scopes.extend(claims["scp"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_owned)));
    let has = |s: &String| scopes.contains(s);
    // A string roles claim is one role, compared whole.
    let roles: Vec<&str> = match &claims["roles"] {
        Value::String(one) => vec![one.as_str()],
        other => other.as_array().into_iter().flatten().filter_map(Value::as_str).collect(),
    };
    (requirements.issuers.is_empty() || requirements.issuers.contains(&(issuer as u8)))
        && requirements.scopes_all.iter().all(has)
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
    // The path the upstream receives: the forward's, less its route's base path.
    let route = loaded().routes.iter().find(|r| forward.origin == r.origin() && forward.path.starts_with(&format!("{}/", r.base_path())))
        .unwrap_or_else(|| panic!("invariant: forwarded under a route: {}{}", forward.origin, forward.path));
    let (path, query) = forward.path[route.base_path().len()..].split_once('?').unwrap_or((&forward.path[route.base_path().len()..], ""));
    let subject = forward.request_set(contract::fields::SUBJECT);
    assert!(!path.contains("//"), "invariant: empty segments merge: {path}");
    // Every server's reading, every method it may run: its rule lets the request through.
    for reading in &READINGS {
        for read_method in methods_read(method, fields, query) {
            let what = format!("{read_method} {path} read by {}", reading.server);
            match rule_for(reading, &read_method, path) {
                Some(AccessConfig::Deny { .. }) => panic!("invariant: {what} meets a deny rule"),
                Some(AccessConfig::Public { .. }) => {}
                other => {
                    let requirements = match other {
                        Some(AccessConfig::Token(r)) => r.clone(),
                        _ => RequirementsConfig::default(),
                    };
                    assert!(sent.is_some() && !tampered, "invariant: {what} forwarded without a valid token");
                    assert!(meets(&requirements, issuer, &claims), "invariant: {what} forwarded without {requirements:?}");
                }
            }
        }
    }
    // The gateway's own reading decides the route and what travels.
    match rule_for(&READINGS[0], method, path) {
        Some(AccessConfig::Deny { .. }) => unreachable!("checked above"),
        Some(AccessConfig::Public { route: index }) => {
            assert_eq!(route.aud, loaded().routes[usize::from(*index)].aud, "invariant: the public rule's route");
            assert!(subject.is_none(), "invariant: a public rule forwards no identity");
            assert!(forward.request_sets().all(|(n, _)| !n.starts_with("x-gateway-") || n == "x-gateway-subject"));
        }
        _ => {
            let allowed = &loaded().issuers[issuer].audiences;
            assert!(allowed.is_empty() || allowed.contains(&route.aud), "invariant: the issuer may not use {}", route.aud);
            assert_eq!(claims["aud"], json!(route.aud), "invariant: routed by the token's audience");
            assert_eq!(subject, Some("alice"));
            let iss = loaded().issuers[issuer].iss.as_deref();
            assert_eq!(forward.request_set(contract::fields::ISSUER), iss, "invariant: the issuer travels with the subject");
        }
    }
    // The token itself never travels: not in a field the plan sets.
    if let Some(t) = &sent {
        assert!(forward.request_sets().all(|(_, v)| !v.contains(t.as_str())), "invariant: the token travels");
    }
});
