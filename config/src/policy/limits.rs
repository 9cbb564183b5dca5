//! Rate limits (`[[limits]]`, each rule's `limits`, `default_limits`),
//! validated and lowered: limits by index, each rule's list resolved (its
//! own, or the default), so that the worker names a request's buckets
//! without reading a name.
//!
//! The build refuses what cannot work as written: a limit no request uses,
//! a key that cannot exist under the rule it is on (`by = "subject"` on a
//! public rule, where nobody is verified), zero or absurd numbers, a name
//! used twice, and a rule with more limits than a decision names.

use super::{AccessConfig, ClaimNames, RuleConfig, invalid};
use crate::error::ConfigErrorKind;
use crate::raw::RawLimit;

/// The most limits a config may define (the decision numbers them in two
/// hex digits; a config needs a handful).
pub const MAX_LIMITS: usize = 32;

/// The most limits one request may fall under: the buckets a decision names.
pub const MAX_LIMITS_PER_RULE: usize = 4;

/// The most requests per period, and the largest burst.
const MAX_REQUESTS: u32 = 1_000_000;

/// The longest period: a year, as Kong's rate-limiting plugin allows.
const MAX_PER_SECS: u32 = 365 * 86_400;

/// The longest a full burst may take to earn back: a century.
const MAX_REFILL_SECS: u64 = 100 * 365 * 86_400;

/// The limits, in the form the worker reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitsConfig {
    /// Every limit, in the order written: the index the decision names.
    pub table: Vec<LimitConfig>,
    /// For each rule (by index), the limits its requests fall under.
    pub by_rule: Vec<Vec<u8>>,
    /// The limits of a request no rule matches (which needs a token).
    pub unmatched: Vec<u8>,
}

/// One limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitConfig {
    /// Its name: in bucket keys, counters, logs and the RateLimit fields.
    pub name: String,
    /// Requests per `per_secs`, on average.
    pub requests: u32,
    /// The period, in seconds.
    pub per_secs: u32,
    /// At most this many at once (default: `requests`).
    pub burst: u32,
    /// What a bucket is kept per.
    pub by: LimitKeyConfig,
    /// Whether forwards carry the RateLimit fields for it (default: yes).
    pub fields: bool,
}

/// What a limit's buckets are kept per: only what the gateway verified, or
/// the address the host saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKeyConfig {
    /// The token's issuer and subject.
    Subject,
    /// A verified claim (its index in the policy's claims), per issuer.
    Claim(u8),
    /// The client's address, as the host's context line gives it.
    ClientAddress,
    /// The route: one bucket for every caller.
    Route,
    /// A DPoP proof's `jti` (the `dpop-proofs` limit, which the config
    /// adds itself: `crate::dpop`).
    ProofId,
}

impl LimitKeyConfig {
    /// Whether the key needs a verified token.
    fn needs_token(self) -> bool {
        matches!(self, LimitKeyConfig::Subject | LimitKeyConfig::Claim(_))
    }
}

/// Reads `[[limits]]`, then resolves each rule's list (`rule_limits`, as
/// written, by rule index) and `default_limits` against it.
pub(super) fn read(
    raw: Vec<RawLimit>,
    default: Option<Vec<String>>,
    rules: &[RuleConfig],
    rule_limits: Vec<Option<Vec<String>>>,
    claims: &mut ClaimNames,
) -> Result<LimitsConfig, ConfigErrorKind> {
    if raw.len() > MAX_LIMITS {
        return Err(invalid("limits", format!("{} limits; at most {MAX_LIMITS} are supported", raw.len())));
    }
    let mut table = Vec::with_capacity(raw.len());
    for (i, raw) in raw.into_iter().enumerate() {
        let limit = limit(&format!("limits[{i}]"), raw, claims)?;
        if table.iter().any(|l: &LimitConfig| l.name == limit.name) {
            return Err(invalid(
                &format!("limits[{i}].name"),
                format!("{:?} names another limit too", limit.name),
            ));
        }
        table.push(limit);
    }
    let unmatched = match &default {
        Some(names) => indices("default_limits", names, &table)?,
        None => Vec::new(),
    };
    let mut used = vec![false; table.len()];
    let mut by_rule = Vec::with_capacity(rules.len());
    for (i, (rule, written)) in rules.iter().zip(rule_limits).enumerate() {
        let entry = format!("rules[{i}].limits");
        let own = written.is_some();
        let limits = match &written {
            Some(names) => indices(&entry, names, &table)?,
            None => unmatched.clone(),
        };
        let limits = match (&rule.access, own) {
            (AccessConfig::Deny { .. }, true) if !limits.is_empty() => {
                return Err(invalid(&entry, "a deny rule forwards nothing to limit"));
            }
            (AccessConfig::Deny { .. }, _) => Vec::new(),
            (AccessConfig::Public { .. }, _) => {
                if let Some(&l) = limits.iter().find(|&&l| table[usize::from(l)].by.needs_token()) {
                    let entry = if own { entry } else { "default_limits".to_owned() };
                    return Err(invalid(
                        &entry,
                        format!(
                            "limit {:?} counts per token, but rules[{i}] ({:?}) is public: nobody is verified there (use by = \"client_address\" or \"route\", or give the rule limits = [...] of its own)",
                            table[usize::from(l)].name,
                            rule.name
                        ),
                    ));
                }
                limits
            }
            (AccessConfig::Token(_), _) => limits,
        };
        for &l in &limits {
            used[usize::from(l)] = true;
        }
        by_rule.push(limits);
    }
    for &l in &unmatched {
        used[usize::from(l)] = true;
    }
    if let Some(i) = used.iter().position(|u| !u) {
        return Err(invalid(
            &format!("limits[{i}]"),
            format!("{:?} is named by no rule's limits nor by default_limits", table[i].name),
        ));
    }
    Ok(LimitsConfig { table, by_rule, unmatched })
}

fn limit(entry: &str, raw: RawLimit, claims: &mut ClaimNames) -> Result<LimitConfig, ConfigErrorKind> {
    let name_ok = !raw.name.is_empty()
        && raw.name.len() <= 64
        && raw.name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !name_ok {
        return Err(invalid(
            &format!("{entry}.name"),
            format!("{:?} must be 1 to 64 lower-case letters, digits, '-' or '_'", raw.name),
        ));
    }
    let bounded = |field: &str, value: u64, max: u32| {
        u32::try_from(value)
            .ok()
            .filter(|v| (1..=max).contains(v))
            .ok_or_else(|| invalid(&format!("{entry}.{field}"), format!("{value} must be from 1 to {max}")))
    };
    let requests = bounded("requests", raw.requests, MAX_REQUESTS)?;
    let per_secs = bounded("per_secs", raw.per_secs, MAX_PER_SECS)?;
    let burst = match raw.burst {
        Some(burst) => bounded("burst", burst, MAX_REQUESTS)?,
        None => requests,
    };
    // A full burst takes `burst * per_secs / requests` to earn back. Past a
    // century it is no limit anyone means, and past 2^53 µs (285 years) the
    // hosts that count in floating point (Redis's Lua, JavaScript) would
    // no longer count it exactly.
    let refill_secs = u64::from(burst) * u64::from(per_secs) / u64::from(requests);
    if refill_secs > MAX_REFILL_SECS {
        return Err(invalid(
            entry,
            format!(
                "a burst of {burst} at {requests} per {per_secs} s takes {} years to earn back; at most a century (lower burst or per_secs)",
                refill_secs / (365 * 86_400)
            ),
        ));
    }
    let by = match raw.by.as_str() {
        "subject" => LimitKeyConfig::Subject,
        "client_address" => LimitKeyConfig::ClientAddress,
        "route" => LimitKeyConfig::Route,
        other => match other.strip_prefix("claim:") {
            Some(claim) => LimitKeyConfig::Claim(claims.index(&format!("{entry}.by"), claim)?),
            None => {
                return Err(invalid(
                    &format!("{entry}.by"),
                    format!("{other:?} must be \"subject\", \"claim:NAME\", \"client_address\" or \"route\""),
                ));
            }
        },
    };
    Ok(LimitConfig { name: raw.name, requests, per_secs, burst, by, fields: raw.fields.unwrap_or(true) })
}

/// The indices of the limits `names` names, each once, at most
/// [`MAX_LIMITS_PER_RULE`].
fn indices(entry: &str, names: &[String], table: &[LimitConfig]) -> Result<Vec<u8>, ConfigErrorKind> {
    if names.len() > MAX_LIMITS_PER_RULE {
        return Err(invalid(
            entry,
            format!("{} limits; a request falls under at most {MAX_LIMITS_PER_RULE}", names.len()),
        ));
    }
    let mut indices = Vec::with_capacity(names.len());
    for name in names {
        let Some(index) = table.iter().position(|l| &l.name == name) else {
            return Err(invalid(entry, format!("{name:?} is no limit's name ([[limits]] name = ...)")));
        };
        let index = index as u8;
        if indices.contains(&index) {
            return Err(invalid(entry, format!("{name:?} is named twice")));
        }
        indices.push(index);
    }
    Ok(indices)
}

#[cfg(test)]
mod tests;
