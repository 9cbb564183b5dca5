//! Traffic control: the buckets a forward falls in, and the 429 that
//! replaces it when a host's count says one is spent (`ABI.md`, "Rate
//! limits").
//!
//! The module decides what is limited and by which key; the host only
//! counts. A key is built from what the request path verified (the issuer
//! and subject, a claim of the verified token, the route) or from the peer
//! address the host put in the context line, never from anything else a
//! client sends, so no client can spend another's budget or escape its
//! own by spelling a request differently. Values are percent-encoded into
//! printable ASCII without spaces, so two values never spell one key.
//!
//! A module without limits keeps only [`Named`], which is then empty.
#![cfg_attr(not(policy_limits), allow(dead_code, unused_imports))]

use contract::{Encoder, Full, Labels};

use crate::answer::Refusal;
use crate::config::{Config, LimitKey};
use crate::jose::claims::ClaimValues;

/// The most buckets one forward names: the config allows four limits per
/// rule, and a DPoP proof adds its replay bucket.
pub const MAX_BUCKETS: usize = 5;

/// What `limited` needs of the forward it replaces, if the last decision
/// was one that names buckets. Nothing in a module without limits, which
/// keeps nothing for `limited`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Named {
    #[cfg(policy_limits)]
    kept: Option<Kept>,
}

/// A forward's labels, its browser origin (an index into the CORS
/// origins) and its limits.
#[cfg(policy_limits)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kept {
    labels: Labels,
    cors: Option<u8>,
    limits: [u8; MAX_BUCKETS],
    count: u8,
}

impl Named {
    /// Nothing named: the last decision was no forward with buckets.
    pub const NONE: Named = Named {
        #[cfg(policy_limits)]
        kept: None,
    };
}

/// What a forward's buckets are keyed by: its limits, and what the
/// request path verified (a view of the forward's grant).
#[derive(Debug, Clone, Copy)]
pub struct Keyed<'c, 'a> {
    /// The limits of its rule, by index.
    pub limits: &'c [u8],
    /// Its DPoP proof's replay key, when it came with one.
    pub proof: Option<&'a [u8]>,
    /// The token's subject.
    pub subject: Option<&'a str>,
    /// The claims the policy reads.
    pub claims: Option<ClaimValues<'a>>,
}

/// The limits a forward by rule `rule` (none: no rule matched) falls under.
pub fn of_rule<'c>(config: &Config<'c>, rule: Option<u16>) -> &'c [u8] {
    let limits = &config.policy.limits;
    match rule {
        Some(rule) => limits.by_rule.get(usize::from(rule)).copied().unwrap_or(&[]),
        None => limits.unmatched,
    }
}

/// What `limited` will need, for a forward whose plan was written.
#[cfg(policy_limits)]
pub fn named(keyed: &Keyed<'_, '_>, labels: &Labels, origin: Option<&str>, config: &Config<'_>) -> Named {
    let mut limits = [0; MAX_BUCKETS];
    let mut count = 0;
    for index in replay_limit(keyed, config).into_iter().chain(keyed.limits.iter().copied()) {
        if let Some(slot) = limits.get_mut(count) {
            *slot = index;
            count += 1;
        }
    }
    if count == 0 {
        return Named::NONE;
    }
    let cors = origin.and_then(|origin| {
        let origins = config.policy.cors.as_ref()?.origins;
        u8::try_from(origins.iter().position(|o| *o == origin)?).ok()
    });
    Named { kept: Some(Kept { labels: *labels, cors, limits, count: count as u8 }) }
}

/// Writes a forward's `=` lines, right after its label line: one bucket
/// per limit of `keyed`, keyed `<name>:<kind>:<value>`.
#[cfg(policy_limits)]
pub fn write_buckets(
    out: &mut Encoder<'_>,
    keyed: &Keyed<'_, '_>,
    labels: &Labels,
    peer: &str,
    config: &Config<'_>,
) -> Result<(), Full> {
    #[cfg(policy_dpop)]
    if let (Some(index), Some(proof)) = (replay_limit(keyed, config), keyed.proof) {
        let name = config.policy.limits.table.get(usize::from(index)).map_or("", |l| l.name);
        out.bucket(index)?;
        out.extend_value(&[name.as_bytes(), b":j:"])?;
        out.extend_decimal(u32::from(labels.issuer.unwrap_or(0xff)))?;
        out.extend_value(&[b".", proof])?;
    }
    for &index in keyed.limits {
        let Some(limit) = config.policy.limits.table.get(usize::from(index)) else { continue };
        out.bucket(index)?;
        let issuer = labels.issuer.unwrap_or(0xff);
        out.extend_value(&[limit.name.as_bytes(), b":"])?;
        match limit.by {
            LimitKey::Subject => {
                out.extend_value(&[b"s:"])?;
                out.extend_decimal(u32::from(issuer))?;
                out.extend_value(&[b"."])?;
                write_encoded(out, keyed.subject.unwrap_or("").as_bytes())?;
            }
            LimitKey::Claim(claim) => {
                out.extend_value(&[b"c:"])?;
                out.extend_decimal(u32::from(issuer))?;
                out.extend_value(&[b"."])?;
                let value = keyed.claims.and_then(|claims| claims.get(claim)).unwrap_or_default();
                let unquoted = match value {
                    [b'"', inner @ .., b'"'] => inner,
                    other => other,
                };
                write_encoded(out, unquoted)?;
            }
            LimitKey::ClientAddress => {
                out.extend_value(&[b"a:"])?;
                write_encoded(out, peer.as_bytes())?;
            }
            LimitKey::Route => {
                out.extend_value(&[b"r:"])?;
                out.extend_decimal(u32::from(labels.route.unwrap_or(0xffff)))?;
            }
            // Named by the DPoP phase alone (above), never by a rule.
            LimitKey::ProofId => {}
        }
    }
    Ok(())
}

/// The `dpop-proofs` limit, when the forward's token came with a DPoP
/// proof: its bucket comes first, so a replayed proof spends no budget.
#[cfg(policy_limits)]
fn replay_limit(keyed: &Keyed<'_, '_>, config: &Config<'_>) -> Option<u8> {
    #[cfg(policy_dpop)]
    if keyed.proof.is_some() {
        return Some(config.policy.dpop.replay_limit);
    }
    let _ = (keyed, config);
    None
}

/// Adds a forward's `RateLimit-Policy` fields to its response, one per
/// limit that shows its fields; the host adds the `RateLimit` field with
/// the counts it has.
#[cfg(policy_limits)]
pub fn write_policy_fields(
    out: &mut Encoder<'_>,
    keyed: &Keyed<'_, '_>,
    config: &Config<'_>,
) -> Result<(), Full> {
    for &index in keyed.limits {
        if let Some(limit) = config.policy.limits.table.get(usize::from(index)).filter(|l| l.fields) {
            out.ratelimit_policy_field(limit.name, limit.requests, limit.per_secs)?;
        }
    }
    Ok(())
}

/// Writes the 429 that replaces the forward `named` described, for its
/// bucket at position `bucket` (among its `=` lines), into `out`; returns
/// the status and the length written, or `None` when `named` has no such
/// bucket.
#[cfg(policy_limits)]
pub fn write_limited(
    named: &Named,
    bucket: u32,
    retry_after: u32,
    reset: u32,
    config: &Config<'_>,
    out: &mut [u8],
) -> Option<(u16, usize)> {
    use crate::answer::{self, AnswerContext};
    use crate::reject::Rejection;
    let named = named.kept.as_ref()?;
    let limit = *named.limits[..usize::from(named.count)].get(usize::try_from(bucket).ok()?)?;
    let cors = named.cors.and_then(|i| config.policy.cors.as_ref()?.origins.get(usize::from(i)).copied());
    let refusal = Refusal { limit, retry_after: retry_after.max(1), reset };
    // A proof's replay bucket spent is a proof used twice: DPoP's answer.
    let replayed =
        config.policy.limits.table.get(usize::from(limit)).is_some_and(|l| l.by == LimitKey::ProofId);
    let (rejection, limited) = match replayed {
        #[cfg(policy_dpop)]
        true => (Rejection::DpopProofReplayed, None),
        _ => (Rejection::RateLimited, Some(refusal)),
    };
    let context = AnswerContext { cors, labels: named.labels, limited, ..AnswerContext::default() };
    let mut writer = Encoder::new(out);
    answer::write_rejection(&mut writer, rejection, config, &context).ok()?;
    Some((rejection.status(), writer.written()))
}

/// Writes `bytes` with every byte outside `A-Z a-z 0-9 - . _ ~ ! $ & ' (
/// ) * + , ; = : @ /` as `%XX`.
fn write_encoded(out: &mut Encoder<'_>, bytes: &[u8]) -> Result<(), Full> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let kept = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b);
    let mut rest = bytes;
    while !rest.is_empty() {
        let run = rest.iter().position(|&b| !kept(b)).unwrap_or(rest.len());
        out.extend_value(&[&rest[..run]])?;
        let Some(&b) = rest.get(run) else { break };
        out.extend_value(&[&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]])?;
        rest = &rest[run + 1..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_percent_encoded_so_no_two_spell_one_key() {
        let mut buf = [0u8; 64];
        let mut out = Encoder::new(&mut buf);
        write_encoded(&mut out, "a b%c:d/é\"\n".as_bytes()).expect("room");
        assert_eq!(out.as_bytes(), b"a%20b%25c:d/%C3%A9%22%0A");
    }
}
