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
pub fn access<'c>(rules: &'c [Rule<'c>], method: &str, path: &[u8]) -> Access<'c> {
    #[cfg(policy_rules)]
    if let Some(rule) = rules.iter().find(|rule| matches(rule, method, path)) {
        return rule.access;
    }
    let _ = (rules, method, path);
    Access::Token(Requirements::NONE)
}

/// True when `rule` applies to `method` and `path`.
#[cfg(policy_rules)]
fn matches(rule: &Rule<'_>, method: &str, path: &[u8]) -> bool {
    let method_ok = rule.methods.is_empty() || rule.methods.contains(&method);
    method_ok
        && match rule.path {
            PathMatch::Exact(exact) => path == exact.as_bytes(),
            PathMatch::Prefix(prefix) => under(path, prefix.as_bytes()),
        }
}

/// True when `path` is `prefix` or below it, on a segment boundary.
#[cfg(policy_rules)]
fn under(path: &[u8], prefix: &[u8]) -> bool {
    let prefix = prefix.strip_suffix(b"/").unwrap_or(prefix);
    match path.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(b"/"),
        None => false,
    }
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
        match access(RULES, method, path.as_bytes()) {
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

    #[test]
    fn no_rules_need_a_token() {
        assert!(matches!(access(&[], "GET", b"/healthz"), Access::Token(r) if r.scopes_all.is_empty()));
    }

    #[test]
    fn prefixes_with_and_without_a_trailing_slash_are_the_same() {
        for prefix in ["/v1", "/v1/"] {
            assert!(under(b"/v1", prefix.as_bytes()) && under(b"/v1/x", prefix.as_bytes()), "{prefix}");
            assert!(!under(b"/v10", prefix.as_bytes()), "{prefix}");
        }
        assert!(under(b"/anything", b"/"));
    }
}
