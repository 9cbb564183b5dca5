//! Requirements: what a valid token must carry for the rule that applied,
//! judged on its verified claims with their escapes decoded. A token that
//! lacks it is answered 403 `insufficient_scope` (RFC 6750 section 3.1),
//! the rule's scopes in the challenge's `scope` attribute.
//!
//! - Issuers: a rule may accept the tokens of some issuers only (a
//!   partner's provider never speaks for the main one's users); a token of
//!   another issuer is 401 `invalid_token`, "issuer not accepted for this
//!   path", before anything else is judged.
//! - Scopes are read from every scope claim the config names (`scope` and
//!   `scp` by default): a space-separated string (RFC 8693 section 4.2,
//!   RFC 9068), split on spaces only, or an array of strings, each one scope
//!   and never split (Okta's `scp`; some providers write `scope` so too).
//!   All of `scopes_all` and, when listed, one of `scopes_any` must be
//!   among them.
//! - Roles (or groups) are the strings of an array claim (RFC 9068 section
//!   2.2.3.1), or a string claim as one role, compared whole and never
//!   split (`"admin ops"` is the role `admin ops`, not `admin`): all of
//!   `all` and one of `any`.
//! - Claim values: a string equals the decoded claim; an integer equals a
//!   JSON number written as an integer; `true` and `false` equal themselves.
//!   A claim of another type, or absent, does not match.
//!
//! Comparisons are exact and case-sensitive; nothing is trimmed.

// A module whose config does not use this policy compiles it out
// (`build.rs`); native builds keep it, and lint it whole.
#![cfg_attr(not(policy_claims), allow(dead_code, unused_imports))]

use crate::config::{ClaimValue, Literal, Policy, Requirements, Roles};
use crate::jose::claims::{ClaimValues, Verified, times_ten};
use crate::jose::json::{self, Reader};
use crate::reject::Rejection;

/// Checks `requirements` against the verified token.
pub fn check(
    requirements: &Requirements<'_>,
    verified: &Verified<'_, '_>,
    policy: &Policy<'_>,
) -> Result<(), Rejection> {
    #[cfg(policy_issuers)]
    if !requirements.issuers.is_empty()
        && !requirements.issuers.iter().any(|&i| usize::from(i) == verified.issuer.0)
    {
        return Err(Rejection::IssuerNotAllowed);
    }
    #[cfg(policy_claims)]
    {
        let claims = &verified.claims;
        let has_scope =
            |scope: &str| policy.scope_claims.iter().any(|&index| contains(claims.get(index), scope, true));
        if !requirements.scopes_all.iter().all(|scope| has_scope(scope))
            || (!requirements.scopes_any.is_empty()
                && !requirements.scopes_any.iter().any(|scope| has_scope(scope)))
        {
            return Err(Rejection::InsufficientScope);
        }
        if let Some(roles) = &requirements.roles
            && !roles_met(roles, claims)
        {
            return Err(Rejection::MissingRole);
        }
        if !requirements.claim_values.iter().all(|required| value_met(required, claims)) {
            return Err(Rejection::ClaimMismatch);
        }
    }
    let _ = (requirements, verified, policy);
    Ok(())
}

#[cfg(policy_claims)]
fn roles_met(roles: &Roles<'_>, claims: &ClaimValues<'_>) -> bool {
    let value = claims.get(roles.claim);
    roles.all.iter().all(|role| contains(value, role, false))
        && (roles.any.is_empty() || roles.any.iter().any(|role| contains(value, role, false)))
}

/// True when the raw JSON `value` holds `wanted`: a string equal to it (or,
/// with `split`, one of its space-separated words), or an array with such a
/// string among its elements.
#[cfg(policy_claims)]
fn contains(value: Option<&[u8]>, wanted: &str, split: bool) -> bool {
    let Some(mut reader) = value.and_then(Reader::new) else { return false };
    if let Some(raw) = reader.string() {
        return match split {
            true => words_contain(raw, wanted),
            false => json::decoded_eq(raw, wanted) == Ok(true),
        };
    }
    let Some(mut more) = reader.open(b'[', b']') else { return false };
    while more {
        match reader.string() {
            Some(raw) if json::decoded_eq(raw, wanted) == Ok(true) => return true,
            Some(_) => {}
            None if reader.skip_value(1) => {}
            None => return false,
        }
        match reader.more(b']') {
            Some(next) => more = next,
            None => return false,
        }
    }
    false
}

/// True when one of the space-separated words of `raw` (decoded) is
/// `wanted`; false for a string that is no text (a lone surrogate anywhere).
#[cfg(policy_claims)]
fn words_contain(raw: json::RawString<'_>, wanted: &str) -> bool {
    let wanted = wanted.as_bytes();
    // How much of `wanted` the current word has matched; None once it differs.
    let mut at = Some(0);
    let mut found = false;
    for ch in json::decoded(raw) {
        let Ok(ch) = ch else { return false };
        if ch == ' ' {
            found |= at == Some(wanted.len());
            at = Some(0);
            continue;
        }
        let mut utf8 = [0u8; 4];
        let bytes = ch.encode_utf8(&mut utf8).as_bytes();
        at = at.filter(|&i| wanted.get(i..i + bytes.len()) == Some(bytes)).map(|i| i + bytes.len());
    }
    !wanted.is_empty() && (found || at == Some(wanted.len()))
}

/// True when the claim has exactly the required value.
#[cfg(policy_claims)]
fn value_met(required: &ClaimValue<'_>, claims: &ClaimValues<'_>) -> bool {
    let Some(mut reader) = claims.get(required.claim).and_then(Reader::new) else { return false };
    match required.value {
        Literal::String(expected) => {
            reader.string().is_some_and(|raw| json::decoded_eq(raw, expected) == Ok(true))
        }
        Literal::Bool(expected) => {
            claims.get(required.claim) == Some(if expected { b"true" } else { b"false" })
        }
        Literal::Integer(expected) => reader.number().is_some_and(|literal| integer_eq(literal, expected)),
    }
}

/// True when the JSON number `literal` is written as an integer equal to `expected`.
#[cfg(policy_claims)]
fn integer_eq(literal: &[u8], expected: i64) -> bool {
    let (negative, digits) = match literal.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, literal),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let magnitude = digits.iter().try_fold(0u64, |acc, &d| times_ten(acc)?.checked_add(u64::from(d - b'0')));
    // `-0` is zero; any other negative literal needs a negative `expected`.
    magnitude.is_some_and(|m| m == expected.unsigned_abs() && (negative == (expected < 0) || m == 0))
}

#[cfg(test)]
mod tests;
