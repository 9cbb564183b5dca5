//! Policy: what a request needs, by its method and normalized path, decided
//! from the config's rules before any token is read.
//!
//! Rules are tried in the order written; the first whose methods and path
//! match decides (the build refuses a rule an earlier one hides entirely,
//! and warns when two overlap with different outcomes). A rule makes the
//! request `public` (forwarded to a named route with no token: a token sent
//! anyway is neither read nor forwarded), needs a `token` (routed by its
//! audience, with the rule's scopes, roles and claim values:
//! [`requirements`]), or is `deny` (403 or 404, never forwarded). A
//! request no rule matches needs a valid token, as without rules.
//!
//! Paths are matched as the module forwards them: dot segments removed,
//! unreserved escapes decoded, the query left out, so `/admin/../healthz`
//! is `/healthz`, and `/admin%2fx` never reaches a rule (it is refused as
//! an encoded slash first). A prefix matches on a segment boundary: `/admin`
//! matches `/admin`, `/admin/` and `/admin/users`, never `/administrator`.

// A module whose config does not use this policy compiles it out
// (`build.rs`); native builds keep it, and lint it whole.
#![cfg_attr(not(policy_rules), allow(dead_code, unused_imports))]

pub mod claim_headers;
pub mod requirements;

use crate::config::{Access, PathMatch, Requirements, Rule};
use crate::reject::Rejection;

/// What the first rule matching `method` and `path` asks; a valid token
/// with no further requirement when none matches.
///
/// A path with `;` parameters is also read as servers that strip them read
/// it (Tomcat, Jetty and Spring route `/admin;x/users` as `/admin/users`):
/// when the two readings pick different rules, the request is refused, so a
/// parameter can never step around a rule. An encoded `;` (`%3B`, or
/// `%253B` and deeper) counts as one, for a server or framework that
/// decodes the path before it strips them.
pub fn access<'c>(rules: &'c [Rule<'c>], method: &str, path: &[u8]) -> Result<Access<'c>, Rejection> {
    #[cfg(policy_rules)]
    {
        let first = |strip| rules.iter().position(|rule| matches(rule, method, path, strip));
        let literal = first(false);
        if (0..path.len()).any(|at| parameters_start(path, at)) && first(true) != literal {
            return Err(Rejection::PathParametersChangeRule);
        }
        if let Some(rule) = literal.and_then(|i| rules.get(i)) {
            return Ok(rule.access);
        }
    }
    let _ = (rules, method, path);
    Ok(Access::Token(Requirements::NONE))
}

/// True when `;` parameters start at `at` in `path`: a raw `;`, or `%3B`
/// with any number of `25` after the `%` (`%253B`, `%25253b`), which a
/// server that decodes once or more before stripping parameters reads as
/// `;`. (The normalized path writes an escape's own hex digits in upper
/// case; those after `%25` are plain text, in either case.)
#[cfg(policy_rules)]
fn parameters_start(path: &[u8], at: usize) -> bool {
    match path.get(at..).unwrap_or_default() {
        [b';', ..] => true,
        [b'%', rest @ ..] => {
            let mut rest = rest;
            while let [b'2', b'5', after @ ..] = rest {
                rest = after;
            }
            matches!(rest, [b'3', b'b' | b'B', ..])
        }
        _ => false,
    }
}

/// True when `rule` applies to `method` and `path`, read with its `;`
/// parameters, or without them when `strip` (each segment's parameters,
/// raw or encoded, left out up to the next `/`). A prefix matches on a
/// segment boundary.
#[cfg(policy_rules)]
fn matches(rule: &Rule<'_>, method: &str, path: &[u8], strip: bool) -> bool {
    if !rule.methods.is_empty() && !rule.methods.contains(&method) {
        return false;
    }
    let (text, prefix) = match rule.path {
        PathMatch::Exact(exact) => (exact.as_bytes(), false),
        PathMatch::Prefix(prefix) => (prefix.strip_suffix('/').unwrap_or(prefix).as_bytes(), true),
    };
    let mut matched = 0;
    let mut in_parameters = false;
    for (at, &b) in path.iter().enumerate() {
        if strip {
            in_parameters = b != b'/' && (in_parameters || parameters_start(path, at));
            if in_parameters {
                continue;
            }
        }
        match text.get(matched) {
            Some(&expected) if expected == b => matched += 1,
            Some(_) => return false,
            // Past the rule's path: only a prefix continues, with a new segment.
            None => return prefix && b == b'/',
        }
    }
    matched == text.len()
}

/// The rejection of a `deny` rule with `status`.
pub fn denied(status: u16) -> Rejection {
    match status {
        404 => Rejection::NotFound,
        _ => Rejection::Denied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &[Rule<'static>] = &[
        Rule {
            methods: &["GET", "HEAD"],
            path: PathMatch::Exact("/healthz"),
            access: Access::Public { route: 0 },
        },
        Rule { methods: &[], path: PathMatch::Prefix("/admin"), access: Access::Deny { status: 404 } },
        Rule { methods: &[], path: PathMatch::Prefix("/"), access: Access::Public { route: 1 } },
    ];

    fn which(method: &str, path: &str) -> std::string::String {
        match access(RULES, method, path.as_bytes()).expect("no parameters") {
            Access::Public { route } => std::format!("public {route}"),
            Access::Deny { status } => std::format!("deny {status}"),
            Access::Token(_) => "token".into(),
        }
    }

    #[test]
    fn the_first_matching_rule_decides() {
        assert_eq!(which("GET", "/healthz"), "public 0");
        assert_eq!(which("HEAD", "/healthz"), "public 0");
        assert_eq!(which("POST", "/healthz"), "public 1", "methods narrow the rule");
        assert_eq!(which("GET", "/healthz/"), "public 1", "exact is exact");
        assert_eq!(which("GET", "/admin"), "deny 404");
        assert_eq!(which("GET", "/admin/"), "deny 404");
        assert_eq!(which("DELETE", "/admin/users/7"), "deny 404");
        assert_eq!(which("GET", "/administrator"), "public 1", "a prefix ends on a segment boundary");
        assert_eq!(which("get", "/healthz"), "public 1", "methods are case-sensitive (RFC 9110 section 9.1)");
    }

    /// Servers that read `;` parameters (Tomcat, Jetty, Spring) strip them
    /// from each segment before routing: `/admin;x/users` is `/admin/users`
    /// to them. A rule must not be dodged that way.
    #[test]
    fn path_parameters_cannot_dodge_a_rule() {
        let rules = |method: &str, path: &str| match access(RULES, method, path.as_bytes()) {
            Ok(Access::Public { route }) => std::format!("public {route}"),
            Ok(Access::Deny { status }) => std::format!("deny {status}"),
            Ok(Access::Token(_)) => "token".into(),
            Err(rejection) => std::format!("{rejection:?}"),
        };
        for path in ["/admin;x/users", "/admin;jsessionid=1", "/admin;/users"] {
            let got = rules("GET", path);
            assert!(got == "deny 404" || got == "PathParametersChangeRule", "{path}: {got}");
        }
        assert_eq!(rules("GET", "/admin;x/users"), "PathParametersChangeRule");
        assert_eq!(
            rules("GET", "/healthz;v=1"),
            "PathParametersChangeRule",
            "exact /healthz to a stripping server"
        );
        // Encoded once or more, in either case: a server that decodes first reads ';'.
        for path in
            ["/admin%3Bx/users", "/admin%3bx", "/admin%253Bx/users", "/admin%25253b/users", "/healthz%3Bv=1"]
        {
            assert_eq!(rules("GET", path), "PathParametersChangeRule", "{path}");
        }
        // Other escapes and a '%25' that spells no ';' are no parameters.
        assert_eq!(rules("GET", "/admin%3Ax/users"), "public 1");
        assert_eq!(rules("GET", "/admin%2533/users"), "public 1");
        // Parameters that change no rule pass, as they are.
        assert_eq!(rules("GET", "/docs;v=1/x"), "public 1");
        assert_eq!(rules("GET", "/admin/users;x"), "deny 404");
    }

    #[test]
    fn no_rules_need_a_token() {
        assert!(matches!(access(&[], "GET", b"/healthz"), Ok(Access::Token(r)) if r.scopes_all.is_empty()));
    }

    #[test]
    fn prefixes_with_and_without_a_trailing_slash_are_the_same() {
        let under = |path: &[u8], prefix: &'static str| {
            let rule =
                Rule { methods: &[], path: PathMatch::Prefix(prefix), access: Access::Deny { status: 403 } };
            matches(&rule, "GET", path, false)
        };
        for prefix in ["/v1", "/v1/"] {
            assert!(under(b"/v1", prefix) && under(b"/v1/x", prefix), "{prefix}");
            assert!(!under(b"/v10", prefix), "{prefix}");
        }
        assert!(under(b"/anything", "/") && under(b"/", "/"));
    }
}
