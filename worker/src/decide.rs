//! The request path end to end: context, parse, target, CORS, rule, token,
//! verify, claims, requirements, forward. Each phase is a module of its own;
//! this one only runs them in order and turns the outcome into the
//! decision the host executes (`ABI.md`).

use contract::outcome::{FORWARDED, PUBLIC};
use contract::{Cache, Encoder};

use crate::answer::{self, AnswerContext, OUTPUT_CAPACITY};
use crate::arena::Arena;
use crate::cache::TokenCache;
use crate::config::{Access, Config, Route};
use crate::http::cors::{self, CrossOrigin};
use crate::http::forward::{self, Grant};
use crate::http::request::{self, MAX_HEADERS};
use crate::http::{target, tokens};
use crate::jose::claims::{self, Verified};
use crate::jose::{header, jws, signature};
use crate::keys::{FetchedKeys, Lookup};
use crate::limits::Named;
use crate::policy;
use crate::reject::Rejection;

/// The largest clock value accepted: 2^53, the last integer a JavaScript
/// number holds exactly.
pub const MAX_CLOCK_SECS: f64 = 9_007_199_254_740_992.0;

/// The module's answer to one request: its status and its decision in the
/// output format of `ABI.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome<'a> {
    /// 200 to forward; otherwise the status of the direct answer.
    pub status: u16,
    /// The decision in the output format of `ABI.md`.
    pub output: &'a [u8],
    /// For a forward that names buckets, what `limited` needs to replace
    /// it with a 429 (`crate::limits`).
    pub named: Named,
}

/// Decides one request with the config's compiled keys. `input` is what
/// the host wrote into the input buffer: the context line, then the request
/// head (`ABI.md`). `now` is Unix seconds from the host's clock; `scratch`
/// is the request's arena, reset by this call. The output is always the
/// first bytes of `scratch`.
pub fn handle<'a>(input: &[u8], now: f64, config: &Config<'_>, scratch: &'a mut [u8]) -> Outcome<'a> {
    decide_with(input, now, config, FetchedKeys::none(), scratch, None)
}

/// [`handle`] for an instance that serves request after request, with the
/// keys it fetched: tokens verified before are looked up in `cache`
/// ([`crate::cache`]), which never changes a decision, only how much of it
/// is computed again.
pub fn handle_cached<'a>(
    input: &[u8],
    now: f64,
    config: &Config<'_>,
    fetched: &FetchedKeys,
    scratch: &'a mut [u8],
    cache: &mut TokenCache,
) -> Outcome<'a> {
    decide_with(input, now, config, fetched, scratch, Some(cache))
}

fn decide_with<'a>(
    input: &[u8],
    now: f64,
    config: &Config<'_>,
    fetched: &FetchedKeys,
    scratch: &'a mut [u8],
    cache: Option<&mut TokenCache>,
) -> Outcome<'a> {
    if scratch.len() < OUTPUT_CAPACITY {
        return Outcome { status: 500, output: &[], named: Named::NONE };
    }
    let (out, rest) = scratch.split_at_mut(OUTPUT_CAPACITY);
    let mut arena = Arena::new(rest);
    let mut encoder = Encoder::new(&mut *out);
    let mut context = AnswerContext::default();
    let mut keys = Lookup::new(fetched);
    let decided = clock(now)
        .and_then(|now| decide(input, now, config, &mut keys, &mut arena, &mut encoder, cache, &mut context))
        .map(|(status, named)| (status, encoder.written(), named));
    if cfg!(runtime_keys) {
        context.refresh_keys = keys.refresh;
    }
    finish(decided, config, &context, out)
}

/// Answers `rejection` without looking at a request (for checks the host
/// contract makes before the request path runs, such as the head's size).
pub fn reject<'a>(rejection: Rejection, config: &Config<'_>, scratch: &'a mut [u8]) -> Outcome<'a> {
    match scratch.get_mut(..OUTPUT_CAPACITY) {
        Some(out) => finish(Err(rejection), config, &AnswerContext::default(), out),
        None => Outcome { status: 500, output: &[], named: Named::NONE },
    }
}

/// Runs every phase and writes the decision: a forward (200) or an answer
/// the request earned without a rejection (a preflight). What a rejection
/// needs besides its reason (the rule's scopes, the browser's origin) is
/// noted in `answer_context` as the phases learn it.
#[allow(clippy::too_many_arguments)] // the request's state, each piece its own
fn decide<'x>(
    input: &'x [u8],
    now: u64,
    config: &Config<'x>,
    keys: &mut Lookup<'_>,
    arena: &mut Arena<'x>,
    out: &mut Encoder<'_>,
    cache: Option<&mut TokenCache>,
    answer_context: &mut AnswerContext<'x>,
) -> Result<(u16, Named), Rejection> {
    let (context, head_bytes) = contract::context::split_reading(input, cfg!(policy_certificate))
        .map_err(|_| Rejection::InvalidContext)?;
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let head = request::parse(head_bytes, &mut fields)?;
    let target = target::normalize(head.method, head.target, arena)?;
    let mut cross_origin = cors::classify(&head, config.policy.cors.as_ref());
    answer_context.cors = cross_origin.allowed();
    // The rules judge every request, a preflight too: a deny rule denies it.
    let (access, rule, reach) = policy::access(&config.policy, &head, target.path(), arena)?;
    let labels = &mut answer_context.labels;
    labels.rule = rule.and_then(|i| u16::try_from(i).ok());
    if let Access::Deny { status } = access {
        return Err(policy::denied(status));
    }
    policy::check_reach(&config.policy, &reach, &access)?;
    if cors::is_preflight(&head, config.policy.cors.as_ref()) {
        answer_context.cors = None;
        if let cors::Preflight::Answer(origin) = cors::check_preflight(&head, &cross_origin, &access, config)?
        {
            return cors::write_preflight(out, origin, config, &answer_context.labels)
                .map(|()| (204, Named::NONE));
        }
        // Forwarded as any request of its rule, which is public.
        cross_origin = CrossOrigin::None;
    }
    #[cfg_attr(not(policy_limits), allow(unused_mut))]
    let mut grant = match access {
        Access::Public { route } => {
            answer_context.labels.outcome = PUBLIC;
            answer_context.labels.route = Some(route);
            Grant::public(config.routes.get(usize::from(route)).ok_or(Rejection::NoRoute)?)
        }
        Access::Token(requirements) => {
            answer_context.scope = requirements.scope_attribute;
            #[cfg(policy_dpop)]
            let dpop = match config.policy.dpop.accepted() {
                true => crate::http::request::dpop(&head, config.max_token_bytes)?,
                false => None,
            };
            #[cfg(policy_dpop)]
            let token = match dpop {
                Some(token) => token,
                None => tokens::find(&head, config)?,
            };
            #[cfg(not(policy_dpop))]
            let token = tokens::find(&head, config)?;
            let verified = authorize(token, now, config, keys, arena, cache)
                .inspect_err(|_| answer_context.labels.issuer = keys.named)?;
            #[cfg(policy_dpop)]
            let proof = {
                let request = crate::jose::dpop::Request {
                    method: head.method,
                    scheme: context.scheme,
                    authority: target.authority.or_else(|| head.host()).unwrap_or_default(),
                    path: target.path(),
                    token,
                };
                prove_binding(&head, &request, dpop.is_some(), &verified, config, now, arena).inspect_err(
                    |rejection| {
                        answer_context.labels.issuer = u8::try_from(verified.issuer.0).ok();
                        answer_context.dpop_nonce =
                            fresh_nonce(*rejection == Rejection::DpopNonceRequired, config, now);
                    },
                )?
            };
            #[cfg(policy_certificate)]
            prove_certificate(&verified, context.certificate, config)
                .inspect_err(|_| answer_context.labels.issuer = u8::try_from(verified.issuer.0).ok())?;
            let labels = &mut answer_context.labels;
            labels.outcome = FORWARDED;
            // The route is an element of the table: its index is its offset.
            let offset = verified.route as *const Route as usize - config.routes.as_ptr() as usize;
            labels.route = Some((offset / core::mem::size_of::<Route>()) as u16);
            labels.issuer = u8::try_from(verified.issuer.0).ok();
            labels.cache = verified.cache;
            policy::requirements::check(&requirements, &verified, &config.policy)?;
            for reached in policy::reached_requirements(&config.policy, &reach) {
                policy::requirements::check(reached, &verified, &config.policy)
                    .inspect_err(|_| answer_context.scope = reached.scope_attribute)?;
            }
            #[cfg(policy_dpop)]
            let (grant_jkt, grant_issuer) = (verified.jkt, verified.issuer.0);
            #[cfg_attr(not(policy_dpop), allow(unused_mut))]
            let mut grant = Grant::token(verified, token);
            #[cfg(policy_dpop)]
            {
                grant.jkt = proof.and(grant_jkt);
                grant.proof = proof;
                let asks = proof.is_some() && config.policy.dpop.of(grant_issuer).nonce;
                grant.dpop_nonce = fresh_nonce(asks, config, now);
            }
            grant
        }
        Access::Deny { status } => return Err(policy::denied(status)),
    };
    #[cfg(policy_limits)]
    {
        grant.limits = crate::limits::of_rule(config, answer_context.labels.rule);
    }
    forward::write_plan(
        out,
        &grant,
        &head,
        &target,
        &context,
        config,
        &cross_origin,
        &answer_context.labels,
        arena,
    )?;
    #[cfg(policy_limits)]
    let named = crate::limits::named(&grant.keyed(), &answer_context.labels, cross_origin.allowed(), config);
    #[cfg(not(policy_limits))]
    let named = Named::NONE;
    Ok((200, named))
}

/// Checks how the token was presented against its binding (RFC 9449
/// section 7): `Authorization: DPoP` needs a token bound to a key
/// (`cnf.jkt`) and a valid proof of that key, whose replay key it returns;
/// a bearer token must be bound to no key, and is refused where its issuer
/// requires DPoP. A proof beside a bearer token is refused.
#[cfg(policy_dpop)]
fn prove_binding<'x>(
    head: &crate::http::request::Head<'x, '_>,
    request: &crate::jose::dpop::Request<'_>,
    presented_as_dpop: bool,
    verified: &Verified<'_, '_>,
    config: &Config<'_>,
    now: u64,
    arena: &mut Arena<'x>,
) -> Result<Option<crate::jose::dpop::ProofId>, Rejection> {
    if !config.policy.dpop.accepted() {
        return Ok(None);
    }
    let (index, issuer) = verified.issuer;
    let mode = config.policy.dpop.of(index);
    let proof = crate::jose::dpop::proof(head)?;
    if !presented_as_dpop {
        return match (proof, verified.jkt, mode.required) {
            (Some(_), _, _) => Err(Rejection::DpopProofWithBearer),
            (None, Some(_), _) => Err(Rejection::BoundToken),
            (None, None, true) => Err(Rejection::DpopRequired),
            (None, None, false) => Ok(None),
        };
    }
    let jkt = verified.jkt.ok_or(Rejection::DpopTokenUnbound)?;
    let proof = proof.ok_or(Rejection::DpopProofMissing)?;
    let nonces = config.policy.dpop.nonce.as_ref();
    crate::jose::dpop::check(proof, request, jkt, mode, nonces, issuer.leeway_secs, now, arena).map(Some)
}

/// The nonce to hand the client (`DPoP-Nonce`) when `asks`: a proof of an
/// issuer that asks for nonces was forwarded, or refused for want of one.
#[cfg(policy_dpop)]
fn fresh_nonce(asks: bool, config: &Config<'_>, now: u64) -> Option<[u8; crate::jose::dpop::NONCE_LEN]> {
    config.policy.dpop.nonce.as_ref().filter(|_| asks).map(|nonces| crate::jose::dpop::nonce(nonces, now))
}

/// Checks a certificate-bound token against the connection (RFC 8705
/// section 3): the client certificate the host verified in the TLS
/// handshake must be the one the token names (`cnf["x5t#S256"]`). A token
/// bound to no certificate passes, unless its issuer requires the binding.
#[cfg(policy_certificate)]
fn prove_certificate(
    verified: &Verified<'_, '_>,
    presented: Option<&str>,
    config: &Config<'_>,
) -> Result<(), Rejection> {
    let mode = crate::config::BindingMode::of(config.policy.certificate_bound, verified.issuer.0);
    match (verified.x5t, presented) {
        (None, _) if mode.required => Err(Rejection::CertificateRequired),
        (None, _) => Ok(()),
        (Some(_), None) => Err(Rejection::CertificateMissing),
        (Some(bound), Some(presented)) if bound == presented => Ok(()),
        (Some(_), Some(_)) => Err(Rejection::CertificateMismatch),
    }
}

/// Verifies `token` (or finds it verified in `cache`) and checks its claims
/// at `now`: the route its audience picks, its subject, and the claims the
/// policy reads. A hit skips the split, the header and the signature, never
/// the claims check, and never the freshness of fetched keys; only a token
/// whose claims were accepted is cached.
pub fn authorize<'c, 'a>(
    token: &'a [u8],
    now: u64,
    config: &Config<'c>,
    keys: &mut Lookup<'_>,
    arena: &mut Arena<'a>,
    cache: Option<&mut TokenCache>,
) -> Result<Verified<'c, 'a>, Rejection> {
    let generation = keys.fetched.generation();
    let (claims_json, hit) = match cache.as_deref().and_then(|c| c.claims(token, config.issuers, generation))
    {
        Some(cached) => {
            let copy = arena.alloc(cached.len())?;
            copy.copy_from_slice(cached);
            (&*copy, true)
        }
        None => (verify(token, now, config, keys, arena)?, false),
    };
    let mut verified = claims::check(claims_json, now, config, arena).inspect_err(|_| {
        keys.named =
            claims::issuer_index(claims_json, config).ok().flatten().and_then(|i| u8::try_from(i).ok());
    })?;
    if cache.is_some() {
        verified.cache = if hit { Cache::Hit } else { Cache::Miss };
    }
    // A hit never outlives the fetched keys it was verified with: once its
    // issuer's keys are past `max_stale_secs`, the token is verified again,
    // and a fetched key then answers 503 as it would for any token.
    #[cfg(runtime_keys)]
    if let (true, (index, issuer)) = (hit, verified.issuer)
        && issuer.fetch.is_some_and(|fetch| !keys.fetched.fresh(index, fetch, now))
    {
        let claims_json = verify(token, now, config, keys, arena)?;
        return claims::check(claims_json, now, config, arena).map(|v| Verified { cache: Cache::Miss, ..v });
    }
    if let (Some(cache), false) = (cache, hit) {
        cache.insert(token, claims_json, config.issuers, generation);
    }
    Ok(verified)
}

/// Splits the token, checks its header and signature with a key of its
/// issuer (compiled, or fetched and fresh at `now`), and decodes its claims.
fn verify<'a>(
    token: &'a [u8],
    now: u64,
    config: &Config<'_>,
    keys: &mut Lookup<'_>,
    arena: &mut Arena<'a>,
) -> Result<&'a [u8], Rejection> {
    let parts = jws::split(token)?;
    let header_json = jws::decode(parts.header, arena)?;
    let claims_json = jws::decode(parts.payload, arena)?;
    let index = claims::issuer_index(claims_json, config)?;
    keys.named = index.and_then(|i| u8::try_from(i).ok());
    let token_header = header::check(header_json)?;
    let issuer = index.and_then(|i| Some((i, config.issuers.get(i)?)));
    #[cfg(not(runtime_keys))]
    let key = {
        let _ = (now, &keys);
        crate::keys::pick(&token_header, issuer.map_or(&[][..], |(_, issuer)| issuer.keys))?
    };
    #[cfg(runtime_keys)]
    let key = &match issuer {
        Some((i, issuer)) => keys.fetched.select(&token_header, i, issuer, now).inspect_err(|rejection| {
            if issuer.fetch.is_some()
                && matches!(rejection, Rejection::UnknownKey | Rejection::KeysUnavailable)
            {
                keys.refresh = u8::try_from(i).ok();
            }
        })?,
        None => *crate::keys::pick(&token_header, &[])?,
    };
    signature::verify_jws(key, parts.signing_input, parts.signature)?;
    Ok(claims_json)
}

/// Converts the host's clock to whole seconds, refusing nonsense.
pub fn clock(now: f64) -> Result<u64, Rejection> {
    if (0.0..=MAX_CLOCK_SECS).contains(&now) {
        // In range and not NaN, so the cast truncates toward zero: floor.
        Ok(now as u64)
    } else {
        Err(Rejection::InvalidClock)
    }
}

/// Turns the outcome into the decision: the one already written (its
/// status and length), or the rejection written over whatever was.
fn finish<'a>(
    decided: Result<(u16, usize, Named), Rejection>,
    config: &Config<'_>,
    context: &AnswerContext<'_>,
    out: &'a mut [u8],
) -> Outcome<'a> {
    let (status, len, named) = match decided {
        Ok(decided) => decided,
        Err(rejection) => {
            let mut writer = Encoder::new(&mut *out);
            match answer::write_rejection(&mut writer, rejection, config, context) {
                Ok(()) => (rejection.status(), writer.written(), Named::NONE),
                Err(_) => (500, 0, Named::NONE),
            }
        }
    };
    let out: &'a [u8] = out;
    Outcome { status, output: &out[..len], named }
}

#[cfg(test)]
mod tests;
