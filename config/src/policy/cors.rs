//! CORS: the origins, methods and headers a browser may use, checked.

use super::{AccessConfig, CorsConfig, MAX_CORS_AGE_SECS, RuleConfig, invalid, is_token, route_index};
use crate::error::ConfigErrorKind;
use crate::raw::RawCors;
use crate::{MAX_TEXT_LEN, RouteConfig};

/// An origin as browsers serialize it: `http` or `https`, a lower-case host
/// (or an IPv6 literal), an optional port, nothing else.
fn is_origin(origin: &str) -> bool {
    let Some(rest) = origin.strip_prefix("https://").or_else(|| origin.strip_prefix("http://")) else {
        return false;
    };
    let (host, port) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains(']') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.'),
        None => {
            !host.is_empty()
                && host
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        }
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0) && !p.starts_with('0'));
    host_ok && port_ok && origin.len() <= MAX_TEXT_LEN
}

pub(super) fn cors(raw: RawCors, routes: &[RouteConfig]) -> Result<CorsConfig, ConfigErrorKind> {
    if raw.allow_origins.is_empty() {
        return Err(invalid("cors.allow_origins", "lists no origin"));
    }
    if raw.allow_origins.iter().any(|o| o == "*") {
        if raw.allow_origins.len() > 1 {
            return Err(invalid("cors.allow_origins", "\"*\" allows every origin: list it alone"));
        }
        if raw.allow_credentials {
            return Err(invalid(
                "cors.allow_origins",
                "\"*\" with allow_credentials = true would let any site act with the user's credentials: list the origins",
            ));
        }
    } else if let Some((i, bad)) = raw.allow_origins.iter().enumerate().find(|(_, o)| !is_origin(o)) {
        return Err(invalid(
            &format!("cors.allow_origins[{i}]"),
            format!(
                "{bad:?} must be an origin as browsers send it: http(s)://host[:port], lower case, no path"
            ),
        ));
    }
    if raw.allow_methods.is_empty() {
        return Err(invalid("cors.allow_methods", "lists no method"));
    }
    for (list, name) in [
        (&raw.allow_methods, "allow_methods"),
        (&raw.allow_headers, "allow_headers"),
        (&raw.expose_headers, "expose_headers"),
    ] {
        if let Some((i, bad)) = list.iter().enumerate().find(|(_, m)| !is_token(m) || *m == "*") {
            return Err(invalid(
                &format!("cors.{name}[{i}]"),
                format!("{bad:?} is not a token ('*' is not supported: list them)"),
            ));
        }
    }
    if raw.max_age_secs.is_some_and(|age| age > MAX_CORS_AGE_SECS) {
        return Err(invalid("cors.max_age_secs", format!("must be at most {MAX_CORS_AGE_SECS}")));
    }
    let unmatched_preflight_route = match raw.unmatched_preflight.as_deref() {
        None | Some("deny") => None,
        Some(aud) => Some(route_index("cors.unmatched_preflight", aud, routes)?),
    };
    let lower = |list: Vec<String>| list.into_iter().map(|h| h.to_ascii_lowercase()).collect();
    Ok(CorsConfig {
        origins: raw.allow_origins,
        methods: raw.allow_methods,
        headers: lower(raw.allow_headers),
        expose_headers: lower(raw.expose_headers),
        max_age_secs: raw.max_age_secs,
        credentials: raw.allow_credentials,
        unmatched_preflight_route,
    })
}

/// A preflight the config does not answer is judged by the rules and
/// reaches an upstream only where its rule is public for `OPTIONS` and
/// routes it to `unmatched_preflight`'s route: with no such rule, every one
/// would be refused, which the config would not mean.
pub(super) fn check_unmatched_preflight(
    route: u16,
    rules: &[RuleConfig],
    routes: &[RouteConfig],
) -> Result<(), ConfigErrorKind> {
    let reaches = |rule: &RuleConfig| {
        rule.access == AccessConfig::Public { route }
            && (rule.methods.is_empty() || rule.methods.iter().any(|m| m == "OPTIONS"))
    };
    match rules.iter().any(reaches) {
        true => Ok(()),
        false => Err(invalid(
            "cors.unmatched_preflight",
            format!(
                "{:?}: a preflight the gateway does not answer reaches an upstream only through a public rule for OPTIONS to that route, and no rule is one",
                routes[usize::from(route)].aud
            ),
        )),
    }
}
