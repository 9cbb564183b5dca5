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
//! empty segments merged, unreserved escapes decoded, the query left out,
//! so `/admin/../healthz` is `/healthz`, `//internal` is `/internal`, and
//! `/admin%2fx` never reaches a rule (it is refused as an encoded slash
//! first). A prefix matches on a segment boundary: `/admin` matches
//! `/admin`, `/admin/` and `/admin/users`, never `/administrator`. The
//! readings other servers make of the same request (another letter case,
//! `;` parameters stripped, a trailing slash or suffix ignored, an
//! overridden method) must meet the same rule: [`readings`].

// A module whose config does not use this policy compiles it out
// (`build.rs`); native builds keep it, and lint it whole.
#![cfg_attr(not(policy_rules), allow(dead_code, unused_imports))]

pub mod claim_headers;
pub mod readings;
pub mod requirements;

pub use readings::FormReach;

use crate::arena::Arena;
use crate::config::{Access, Policy, Requirements};
use crate::http::request::Head;
use crate::reject::Rejection;

/// What the first rule matching the request's method and normalized `path`
/// asks, and that rule's index; a valid token with no further requirement
/// when none matches. Every reading a server behind the gateway may make of
/// the request ([`readings`]) must meet the same rule, or the request is
/// refused. A request with a body may also meet the rules in the
/// [`FormReach`] (a `_method` in its body): [`check_reach`] and
/// [`reached_requirements`] judge those.
pub fn access<'c>(
    policy: &Policy<'c>,
    head: &Head<'_, '_>,
    path: &[u8],
    arena: &mut Arena<'_>,
) -> Result<(Access<'c>, Option<usize>, FormReach), Rejection> {
    #[cfg(policy_rules)]
    {
        let (own, reach) = readings::first_rule(policy.rules, &policy.readings, head, path, arena)?;
        let access = own.map_or(Access::Token(Requirements::NONE), |rule| policy.rules[rule].access);
        return Ok((access, own, reach));
    }
    #[allow(unreachable_code)]
    {
        let _ = (policy, head, path, arena);
        Ok((Access::Token(Requirements::NONE), None, FormReach::default()))
    }
}

/// Refuses a request with a body whose `_method` could meet a rule it can
/// never pass so: a deny rule, or one that needs a token where its own rule
/// is public (its token, if any, was never judged).
pub fn check_reach(policy: &Policy<'_>, reach: &FormReach, own: &Access<'_>) -> Result<(), Rejection> {
    for &rule in reach.rules() {
        let reached = policy.rules.get(usize::from(rule)).map(|rule| rule.access);
        match (reached, own) {
            (Some(Access::Deny { .. }), _) | (Some(Access::Token(_)), Access::Public { .. }) => {
                return Err(Rejection::MethodReadsAnotherRule);
            }
            _ => {}
        }
    }
    Ok(())
}

/// The requirements of the token rules in `reach`, which a request's
/// verified token must meet besides its own rule's.
pub fn reached_requirements<'p, 'c>(
    policy: &'p Policy<'c>,
    reach: &'p FormReach,
) -> impl Iterator<Item = &'p Requirements<'c>> + 'p {
    reach.rules().iter().filter_map(|&rule| match &policy.rules.get(usize::from(rule))?.access {
        Access::Token(requirements) => Some(requirements),
        _ => None,
    })
}

/// The rejection of a `deny` rule with `status`.
pub fn denied(status: u16) -> Rejection {
    match status {
        404 => Rejection::NotFound,
        _ => Rejection::Denied,
    }
}

#[cfg(test)]
mod tests;
