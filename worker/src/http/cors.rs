//! CORS (the Fetch standard, "CORS protocol"): which browser origins may
//! call the API, decided here so that every host answers alike.
//!
//! - A **preflight** (`OPTIONS` with `Origin` and
//!   `Access-Control-Request-Method`; it never carries a token) is judged
//!   by the rules first, as any request (a deny rule denies it), then
//!   answered by the gateway itself: 204 with the `Access-Control-*` fields
//!   when the origin, the method and every requested header are allowed;
//!   otherwise 403, or, when `unmatched_preflight` names a route and the
//!   request's rule is public to that route, forwarded there as the public
//!   request it is, without a body (a preflight never has one). Any client
//!   can send an `OPTIONS` shaped like a preflight, and many frameworks run
//!   a handler for it, so it never passes a rule that a plain request would
//!   not.
//! - Any other request from an **allowed origin** gets, on its answer or on
//!   the upstream's response, `Access-Control-Allow-Origin` (the origin
//!   itself, or `*` when any origin is allowed and credentials are not),
//!   `Access-Control-Allow-Credentials`, `Access-Control-Expose-Headers` and
//!   `Vary: Origin`, so the page can read a 401's reason. The upstream's
//!   own `Access-Control-Allow-*` and `-Expose-Headers` fields are removed
//!   from every forwarded response: the gateway owns CORS, and an upstream
//!   cannot widen it.
//! - An origin that is not allowed gets no CORS field: the browser keeps
//!   the response from the page. CORS is not authentication: the request
//!   itself is judged as any other.
//!
//! Origins are compared exactly, as browsers serialize them; an arbitrary
//! origin is never reflected (`*` with credentials is refused by the build).

// A module whose config does not use this policy compiles it out
// (`build.rs`); native builds keep it, and lint it whole.
#![cfg_attr(not(policy_cors), allow(dead_code, unused_imports))]

use contract::{Encoder, Full, Labels};

use crate::config::{Access, Config, Cors};
use crate::http::request::{Head, trim_ows};
use crate::reject::Rejection;

/// A request's relation to the CORS config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrossOrigin<'x> {
    /// No CORS config, or no `Origin` field.
    None,
    /// An allowed origin: the value for `Access-Control-Allow-Origin`.
    Allowed(&'x str),
    /// An origin the config does not allow (or more than one `Origin`).
    Refused,
}

impl<'x> CrossOrigin<'x> {
    /// The origin to answer with CORS fields, when allowed.
    pub fn allowed(&self) -> Option<&'x str> {
        match self {
            CrossOrigin::Allowed(origin) => Some(origin),
            _ => None,
        }
    }
}

/// What a preflight gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preflight<'x> {
    /// The 204 answer, for this `Access-Control-Allow-Origin`.
    Answer(&'x str),
    /// Forwarded as the public request its rule makes it, to the route
    /// `unmatched_preflight` names.
    Forward,
}

/// How `head` relates to `cors`.
pub fn classify<'x>(head: &Head<'x, '_>, cors: Option<&Cors<'x>>) -> CrossOrigin<'x> {
    #[cfg(policy_cors)]
    if let Some(cors) = cors {
        let mut origins = head.named("origin");
        let (Some(origin), None) = (origins.next(), origins.next()) else {
            return if head.named("origin").next().is_some() {
                CrossOrigin::Refused
            } else {
                CrossOrigin::None
            };
        };
        return match cors.origins {
            ["*"] => CrossOrigin::Allowed("*"),
            allowed => match allowed.iter().find(|o| o.as_bytes() == origin) {
                Some(origin) => CrossOrigin::Allowed(origin),
                None => CrossOrigin::Refused,
            },
        };
    }
    let _ = (head, cors);
    CrossOrigin::None
}

/// True when CORS is configured and `head` is a preflight.
pub fn is_preflight(head: &Head<'_, '_>, cors: Option<&Cors<'_>>) -> bool {
    cfg!(policy_cors)
        && cors.is_some()
        && head.method == "OPTIONS"
        && head.named("origin").next().is_some()
        && head.named("access-control-request-method").next().is_some()
}

/// Judges a preflight whose rule (`access`) did not deny it: answered when
/// its origin, method and headers are allowed; else refused, or forwarded
/// when its rule is public to the route `unmatched_preflight` names and it
/// carries no body.
pub fn check_preflight<'x>(
    head: &Head<'x, '_>,
    cross_origin: &CrossOrigin<'x>,
    access: &Access<'_>,
    config: &Config<'_>,
) -> Result<Preflight<'x>, Rejection> {
    let Some(cors) = config.policy.cors.as_ref() else { return Err(Rejection::PreflightRefused) };
    if let CrossOrigin::Allowed(origin) = cross_origin
        && method_allowed(head, cors)
        && headers_allowed(head, cors)
    {
        return Ok(Preflight::Answer(origin));
    }
    match (access, cors.unmatched_preflight_route) {
        (Access::Public { route }, Some(fallback)) if *route == fallback => match head.has_content() {
            true => Err(Rejection::PreflightWithBody),
            false => Ok(Preflight::Forward),
        },
        _ => Err(Rejection::PreflightRefused),
    }
}

/// The one requested method, one of the allowed ones.
fn method_allowed(head: &Head<'_, '_>, cors: &Cors<'_>) -> bool {
    let mut methods = head.named("access-control-request-method");
    match (methods.next(), methods.next()) {
        (Some(method), None) => cors.methods.iter().any(|m| m.as_bytes() == trim_ows(method)),
        _ => false,
    }
}

/// Every requested header (comma-separated, any case) one of the allowed ones.
fn headers_allowed(head: &Head<'_, '_>, cors: &Cors<'_>) -> bool {
    head.named("access-control-request-headers").all(|value| {
        value.split(|&b| b == b',').map(trim_ows).all(|name| {
            name.is_empty()
                || cors.headers.iter().any(|allowed| allowed.as_bytes().eq_ignore_ascii_case(name))
        })
    })
}

/// Writes the 204 answer to an allowed preflight.
pub fn write_preflight(
    out: &mut Encoder<'_>,
    origin: &str,
    config: &Config<'_>,
    labels: &Labels,
) -> Result<(), Rejection> {
    let Some(cors) = config.policy.cors.as_ref() else { return Err(Rejection::PreflightRefused) };
    out.answer("", "cors preflight")?;
    out.labels(&Labels { outcome: contract::outcome::PREFLIGHT, ..*labels })?;
    write_response_fields(out, origin, cors)?;
    out.add_response_field("access-control-allow-methods", &[cors.methods_joined.as_bytes()])?;
    if !cors.headers_joined.is_empty() {
        out.add_response_field("access-control-allow-headers", &[cors.headers_joined.as_bytes()])?;
    }
    if !cors.max_age.is_empty() {
        out.add_response_field("access-control-max-age", &[cors.max_age.as_bytes()])?;
    }
    // No `Vary` on the request's Access-Control-Request-* fields: responses
    // to OPTIONS are not cacheable (RFC 9110 section 9.3.7).
    Ok(out.body(&[])?)
}

/// The fields every answer or response to an allowed origin carries.
pub fn write_response_fields(out: &mut Encoder<'_>, origin: &str, cors: &Cors<'_>) -> Result<(), Full> {
    out.add_response_field("access-control-allow-origin", &[origin.as_bytes()])?;
    if cors.credentials {
        out.add_response_field("access-control-allow-credentials", &[b"true"])?;
    }
    if !cors.expose_headers.is_empty() {
        out.add_response_field("access-control-expose-headers", &[cors.expose_headers.as_bytes()])?;
    }
    out.add_response_field("vary", &[b"Origin"])
}

/// The upstream response's CORS fields the gateway replaces: every
/// `Access-Control-Allow-*` field and `Access-Control-Expose-Headers`.
pub const UPSTREAM_FIELDS_REMOVED: [&str; 5] = [
    "access-control-allow-origin",
    "access-control-allow-credentials",
    "access-control-allow-methods",
    "access-control-allow-headers",
    "access-control-expose-headers",
];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::{Policy, Route};
    use crate::http::request::{MAX_HEADERS, parse};

    /// Two allowed origins with credentials (the decide tests use it too).
    pub(crate) const CORS: Cors<'static> = Cors {
        origins: &["https://app.example", "http://localhost:5173"],
        methods: &["GET", "POST", "DELETE"],
        methods_joined: "GET, POST, DELETE",
        headers: &["authorization", "content-type"],
        headers_joined: "authorization, content-type",
        expose_headers: "www-authenticate",
        max_age: "600",
        credentials: true,
        unmatched_preflight_route: None,
    };
    const ROUTES: &[Route<'static>] = &[Route { audience: "docs", origin: "http://d", base_path: "" }];

    fn config(cors: Cors<'static>) -> Config<'static> {
        Config {
            realm: "gw",
            trusted_proxy_hops: 0,
            max_token_bytes: 256,
            issuers: &[],
            routes: ROUTES,
            policy: Policy { cors: Some(cors), ..Policy::NONE },
        }
    }

    /// A preflight with `fields`, whose rule makes it public to route 0.
    fn preflight(fields: &str, cors: Cors<'static>) -> Result<std::string::String, Rejection> {
        judged(fields, cors, Access::Public { route: 0 })
    }

    fn judged(
        fields: &str,
        cors: Cors<'static>,
        access: Access<'static>,
    ) -> Result<std::string::String, Rejection> {
        let head = std::format!("OPTIONS /orders HTTP/1.1\r\nHost: gw\r\n{fields}\r\n");
        let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
        let config = config(cors);
        assert!(is_preflight(&head, config.policy.cors.as_ref()));
        let cross = classify(&head, config.policy.cors.as_ref());
        match check_preflight(&head, &cross, &access, &config)? {
            Preflight::Forward => Ok("forward".into()),
            Preflight::Answer(origin) => {
                let mut buf = [0u8; 1024];
                let mut out = Encoder::new(&mut buf);
                write_preflight(&mut out, origin, &config, &Labels::default())?;
                Ok(std::string::String::from_utf8(out.as_bytes().to_vec()).expect("ASCII"))
            }
        }
    }

    #[test]
    fn an_allowed_preflight_is_answered() {
        let answer = preflight(
            "Origin: https://app.example\r\nAccess-Control-Request-Method: DELETE\r\n\
             Access-Control-Request-Headers: Content-Type, authorization\r\n",
            CORS,
        )
        .expect("allowed");
        assert_eq!(
            answer,
            "\ncors preflight\n#02ffffffffff -\n>access-control-allow-origin:https://app.example\n\
             >access-control-allow-credentials:true\n>access-control-expose-headers:www-authenticate\n\
             >vary:Origin\n>access-control-allow-methods:GET, POST, DELETE\n\
             >access-control-allow-headers:authorization, content-type\n>access-control-max-age:600\n"
        );
        let decoded = contract::Decision::decode(204, answer.as_bytes());
        assert!(matches!(decoded, Ok(contract::Decision::Answer(_))), "{decoded:?}");
    }

    #[test]
    fn a_preflight_outside_the_config_is_refused_or_forwarded() {
        let method = "Access-Control-Request-Method: GET\r\n";
        for fields in [
            std::format!("Origin: https://evil.example\r\n{method}"),
            std::format!("Origin: https://app.example.evil\r\n{method}"),
            std::format!("Origin: HTTPS://APP.EXAMPLE\r\n{method}"),
            std::format!("Origin: null\r\n{method}"),
            "Origin: https://app.example\r\nAccess-Control-Request-Method: PUT\r\n".into(),
            "Origin: https://app.example\r\nAccess-Control-Request-Method: get\r\n".into(),
            std::format!(
                "Origin: https://app.example\r\n{method}Access-Control-Request-Headers: x-admin\r\n"
            ),
            std::format!("Origin: https://app.example\r\nOrigin: https://app.example\r\n{method}"),
        ] {
            assert_eq!(preflight(&fields, CORS), Err(Rejection::PreflightRefused), "{fields}");
            let fallback = Cors { unmatched_preflight_route: Some(0), ..CORS };
            assert_eq!(preflight(&fields, fallback), Ok("forward".into()), "{fields}");
            // Only where its rule is public to that route, and without a body.
            for access in [Access::Token(crate::config::Requirements::NONE), Access::Public { route: 1 }] {
                assert_eq!(judged(&fields, fallback, access), Err(Rejection::PreflightRefused), "{fields}");
            }
            let with_body = std::format!("{fields}Content-Length: 4\r\n");
            assert_eq!(preflight(&with_body, fallback), Err(Rejection::PreflightWithBody), "{fields}");
            let chunked = std::format!("{fields}Transfer-Encoding: chunked\r\n");
            assert_eq!(preflight(&chunked, fallback), Err(Rejection::PreflightWithBody), "{fields}");
        }
    }

    #[test]
    fn any_origin_without_credentials_is_a_star() {
        let any = Cors { origins: &["*"], credentials: false, ..CORS };
        let answer = preflight("Origin: https://x.example\r\nAccess-Control-Request-Method: GET\r\n", any)
            .expect("allowed");
        assert!(answer.contains(">access-control-allow-origin:*\n"), "{answer}");
        assert!(!answer.contains("credentials"), "{answer}");
    }

    #[test]
    fn classification_of_ordinary_requests() {
        let classify_fields = |fields: &str| {
            let head = std::format!("GET / HTTP/1.1\r\nHost: gw\r\n{fields}\r\n");
            let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
            let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
            match classify(&head, Some(&CORS)) {
                CrossOrigin::Allowed(origin) => std::format!("allowed {origin}"),
                other => std::format!("{other:?}"),
            }
        };
        assert_eq!(classify_fields(""), "None");
        assert_eq!(classify_fields("Origin: http://localhost:5173\r\n"), "allowed http://localhost:5173");
        assert_eq!(classify_fields("Origin: http://localhost:5174\r\n"), "Refused");
    }
}
