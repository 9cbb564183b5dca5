//! Claims: the token's payload, read in one strict pass after the signature
//! has been verified, and checked against the clock and the config.
//!
//! - The text must be strict JSON (RFC 8259) in UTF-8, an object nested at
//!   most 16 deep ([`crate::jose::json`]); members the gateway does not read
//!   are checked as JSON and skipped. A member the gateway reads may appear
//!   once: a second `exp`, `nbf`, `iat`, `iss`, `sub`, `aud` or claim the
//!   policy reads refuses the token, also when its name is spelled with
//!   escapes (`"\u0061ud"` is `aud`).
//! - Strings are decoded (RFC 8259 section 7) before they are compared or
//!   forwarded, so `"https:\/\/issuer"` is `https://issuer` and `"\u006frders"`
//!   routes exactly like `"orders"`. A decoded string is then judged like any
//!   other. A `\uXXXX` naming half a surrogate pair is no text at all: in
//!   `iss`, `sub` or `aud` it is refused ("lone surrogate escape in a claim").
//!   Escaped strings are decoded into the request arena, never a heap.
//! - `exp` is required; `nbf` and `iat` are optional; `null` reads as absent.
//!   Each is a NumericDate (RFC 7519 section 2): a JSON number, fractions
//!   and exponents allowed (`1800000600.5`, `1.8e9`), read exactly (no
//!   floating point) and rounded toward safety: `exp` down, `nbf` up. A
//!   negative value, or one past 2^64 - 1 seconds (`1e400`), is "malformed
//!   claims"; `-0` is zero. The host's clock is floored to whole seconds
//!   (`now`). Expired means `now >= exp + leeway` (RFC 7519 section 4.1.4:
//!   the time must be before `exp`, so a token is refused from its `exp`
//!   second on, as PyJWT does); not yet valid means `now + leeway < nbf`
//!   (section 4.1.5: on or after `nbf` is valid), the leeway being the
//!   issuer's.
//! - `iss` selects the issuer: with one issuer it must equal its `iss` when
//!   that is configured; with several it must equal one of theirs (the
//!   token's `iss`, read before the signature as Envoy does, also chose the
//!   keys it was verified with: [`issuer_index`]).
//! - `aud` is a string or an array of at most [`MAX_AUDIENCES`] strings; the
//!   first audience, in token order, that has a route the issuer may use wins.
//! - `sub`, when present, is forwarded upstream as a header, so it must
//!   travel intact: visible ASCII and inner spaces only, no leading or
//!   trailing space (which HTTP would trim). It is refused, never trimmed,
//!   so a subject decoded to a control (`"\u0000"`, `"\r\n"`) is refused.
//!   An empty `sub` names no one: no subject is forwarded, as without one.
//! - `cnf` (RFC 7800), when present and not `null`, binds the token to a
//!   key its sender must prove (DPoP's `jkt`, a certificate's `x5t#S256`).
//!   A binding the token's issuer accepts (`dpop`, `certificate_bound`) is
//!   kept for the request to prove (`crate::decide`); any other, or a `cnf`
//!   with more than one member, is refused ("token bound to a key (cnf) not
//!   verified here"), never accepted as a bearer token: RFC 9449 section
//!   7.2, RFC 8705 section 3.
//! - The claims the policy reads (scopes, roles, claim values, claim
//!   headers) are kept as the raw JSON of their values, checked by the same
//!   pass; `crate::policy` judges them.

use crate::arena::Arena;
use crate::config::{Config, Issuer, Route};
use crate::jose::json::{self, RawString, Reader, Unescape};
use crate::reject::Rejection;
use crate::route;

/// The most audiences an `aud` array may list.
pub const MAX_AUDIENCES: usize = 8;

/// The most claims the policy may read (the config refuses more).
pub const MAX_POLICY_CLAIMS: usize = 16;

/// The longest claim name the policy may read, in bytes (the config refuses longer).
pub const MAX_CLAIM_NAME: usize = 64;

/// The buffer a member name is decoded into: the longest name read (`exp`,
/// `aud`, ... or a claim the policy reads).
const NAME_BUFFER: usize = if cfg!(policy_claims) { MAX_CLAIM_NAME } else { 3 };

/// What an accepted token establishes: where it may go, who it speaks for,
/// and the claims the policy reads.
#[derive(Debug, Clone, Copy)]
pub struct Verified<'c, 'a> {
    /// The route chosen by the token's audience.
    pub route: &'c Route<'c>,
    /// The issuer whose key verified the token, and its index in
    /// [`Config::issuers`].
    pub issuer: (usize, &'c Issuer<'c>),
    /// Whether its signature was verified now or found in the cache.
    pub cache: contract::Cache,
    /// The token's subject, when it has one.
    pub subject: Option<&'a str>,
    /// The raw JSON values of the claims the policy reads.
    pub claims: ClaimValues<'a>,
    /// The thumbprint of the DPoP key the token is bound to (`cnf.jkt`),
    /// when its issuer accepts DPoP: the request must prove that key
    /// (`crate::jose::dpop`).
    #[cfg(policy_dpop)]
    pub jkt: Option<&'a str>,
    /// The thumbprint of the client certificate the token is bound to
    /// (`cnf["x5t#S256"]`), when its issuer accepts certificate-bound
    /// tokens: the connection must have presented that certificate.
    #[cfg(policy_certificate)]
    pub x5t: Option<&'a str>,
}

/// The raw JSON value of each claim the policy reads, by its index in the
/// policy's claim list; `None` for an absent claim. Empty in a module whose
/// policy reads no claim.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaimValues<'a> {
    #[cfg(policy_claims)]
    values: [Option<&'a [u8]>; MAX_POLICY_CLAIMS],
    #[cfg(not(policy_claims))]
    values: core::marker::PhantomData<&'a [u8]>,
}

impl<'a> ClaimValues<'a> {
    /// The value of the claim at `index`, as written (a `null` included).
    pub fn get(&self, index: u8) -> Option<&'a [u8]> {
        #[cfg(policy_claims)]
        return self.values.get(usize::from(index)).copied().flatten();
        #[cfg(not(policy_claims))]
        {
            let _ = index;
            None
        }
    }
}

/// The claims the gateway reads, as found in one pass.
#[derive(Default)]
struct Claims<'c, 'a> {
    exp: Option<u64>,
    nbf: Option<u64>,
    iss: Option<&'a str>,
    sub: Option<&'a str>,
    /// Whether `cnf` binds the token to a key its sender must prove.
    bound: bool,
    /// `cnf.jkt` or `cnf["x5t#S256"]`, when `cnf` holds one of them alone.
    #[cfg(any(policy_dpop, policy_certificate))]
    confirmation: Confirmation<'a>,
    /// How many audiences `aud` lists (a string is one).
    audiences: usize,
    /// The route of the first audience that has one.
    route: Option<&'c Route<'c>>,
    /// The routes of the audiences that have one, in token order (the
    /// issuer's audiences are known only once the whole object is read).
    #[cfg(policy_issuers)]
    routes: [Option<&'c Route<'c>>; MAX_AUDIENCES],
    /// The policy's claims.
    values: ClaimValues<'a>,
}

/// The members the gateway reads, each a bit of the set already seen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Member {
    Exp = 1,
    Nbf = 2,
    Iat = 4,
    Iss = 8,
    Sub = 16,
    Aud = 32,
    Cnf = 64,
}

/// Checks the decoded claims JSON at time `now` (Unix seconds). Escaped
/// strings are decoded into `arena`.
pub fn check<'c, 'a>(
    claims_json: &'a [u8],
    now: u64,
    config: &Config<'c>,
    arena: &mut Arena<'a>,
) -> Result<Verified<'c, 'a>, Rejection> {
    let claims = read(claims_json, config, arena)?;
    judge(&claims, now, config)
}

/// The index of the issuer whose keys verify a token with these (not yet
/// verified) claims; `None` when the config has no issuer. With one issuer
/// nothing is read; with several, `iss` picks one and a token naming none
/// of them is refused before its signature.
pub fn issuer_index(claims_json: &[u8], config: &Config<'_>) -> Result<Option<usize>, Rejection> {
    match config.issuers {
        [] => Ok(None),
        [_] => Ok(Some(0)),
        #[cfg(policy_issuers)]
        several => read_issuer(claims_json, several).map(Some),
        #[cfg(not(policy_issuers))]
        _ => {
            let _ = claims_json;
            Err(Rejection::WrongIssuer)
        }
    }
}

/// The issuer among `issuers` that the `iss` of unverified claims names,
/// read with the same strict pass (escapes decoded as they are compared).
#[cfg(policy_issuers)]
fn read_issuer(json: &[u8], issuers: &[Issuer<'_>]) -> Result<usize, Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    let mut reader = Reader::new(json).ok_or(MALFORMED)?;
    let mut found: Option<Option<usize>> = None;
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}').ok_or(MALFORMED)?;
    while more {
        let mut buf = [0u8; MAX_CLAIM_NAME];
        let is_iss = json::member_name(reader.name().ok_or(MALFORMED)?, &mut buf) == Some("iss");
        if is_iss && found.is_some() {
            return Err(MALFORMED);
        }
        if is_iss && !reader.null() {
            let raw = reader.string().ok_or(MALFORMED)?;
            let mut matching = None;
            for (i, issuer) in issuers.iter().enumerate() {
                let Some(iss) = issuer.iss else { continue };
                if json::decoded_eq(raw, iss).map_err(|_| Rejection::LoneSurrogate)? {
                    matching = Some(i);
                }
            }
            found = Some(matching);
        } else if is_iss {
            found = Some(None);
        } else if !reader.skip_value(1) {
            return Err(MALFORMED);
        }
        more = reader.more(b'}').ok_or(MALFORMED)?;
    }
    if !reader.at_end() {
        return Err(MALFORMED);
    }
    found.flatten().ok_or(Rejection::WrongIssuer)
}

/// Reads the whole object, checking it as strict JSON, and keeps the claims.
fn read<'c, 'a>(
    json: &'a [u8],
    config: &Config<'c>,
    arena: &mut Arena<'a>,
) -> Result<Claims<'c, 'a>, Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    let mut reader = Reader::new(json).ok_or(MALFORMED)?;
    let mut claims = Claims::default();
    let mut seen = 0u8;
    let mut seen_policy = 0u32;
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}').ok_or(MALFORMED)?;
    while more {
        let mut buf = [0u8; NAME_BUFFER];
        let name = json::member_name(reader.name().ok_or(MALFORMED)?, &mut buf);
        let start = reader.position();
        let member = name.and_then(member);
        let policy_claim = name.and_then(|name| policy_claim(name, config));
        match member {
            Some(member) => {
                if seen & member as u8 != 0 {
                    return Err(MALFORMED);
                }
                seen |= member as u8;
                read_member(&mut reader, member, &mut claims, config, arena)?;
            }
            None if reader.skip_value(1) => {}
            None => return Err(MALFORMED),
        }
        #[cfg(policy_claims)]
        if let Some(index) = policy_claim {
            if seen_policy & (1 << index) != 0 {
                return Err(MALFORMED);
            }
            seen_policy |= 1 << index;
            claims.values.values[index] = Some(&json[start..reader.position()]);
        }
        let _ = (start, policy_claim, &mut seen_policy);
        more = reader.more(b'}').ok_or(MALFORMED)?;
    }
    if !reader.at_end() {
        return Err(MALFORMED);
    }
    Ok(claims)
}

/// The member a decoded name stands for. Every one is three letters:
/// matched as an array, byte by byte, where string arms would each call
/// `memcmp` (a byte loop in wasm).
fn member(name: &str) -> Option<Member> {
    let &[a, b, c] = name.as_bytes() else { return None };
    Some(match [a, b, c] {
        [b'e', b'x', b'p'] => Member::Exp,
        [b'n', b'b', b'f'] => Member::Nbf,
        [b'i', b'a', b't'] => Member::Iat,
        [b'i', b's', b's'] => Member::Iss,
        [b's', b'u', b'b'] => Member::Sub,
        [b'a', b'u', b'd'] => Member::Aud,
        [b'c', b'n', b'f'] => Member::Cnf,
        _ => return None,
    })
}

/// The index of `name` among the claims the policy reads.
fn policy_claim(name: &str, config: &Config<'_>) -> Option<usize> {
    #[cfg(policy_claims)]
    {
        config.policy.claims.iter().take(MAX_POLICY_CLAIMS).position(|claim| *claim == name)
    }
    #[cfg(not(policy_claims))]
    {
        let _ = (name, config);
        None
    }
}

/// Reads the value of `member` into `claims`. `null` leaves it absent.
fn read_member<'c, 'a>(
    reader: &mut Reader<'a>,
    member: Member,
    claims: &mut Claims<'c, 'a>,
    config: &Config<'c>,
    arena: &mut Arena<'a>,
) -> Result<(), Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    if reader.null() {
        return Ok(());
    }
    match member {
        Member::Exp => claims.exp = Some(numeric_date(reader.number().ok_or(MALFORMED)?, Round::Down)?),
        Member::Nbf => claims.nbf = Some(numeric_date(reader.number().ok_or(MALFORMED)?, Round::Up)?),
        Member::Iat => {
            numeric_date(reader.number().ok_or(MALFORMED)?, Round::Down)?;
        }
        Member::Iss => claims.iss = Some(text(reader.string().ok_or(MALFORMED)?, arena)?),
        Member::Sub => claims.sub = Some(text(reader.string().ok_or(MALFORMED)?, arena)?),
        Member::Cnf => {
            claims.bound = true;
            #[cfg(any(policy_dpop, policy_certificate))]
            {
                claims.confirmation = confirmation(reader, arena)?;
            }
            #[cfg(not(any(policy_dpop, policy_certificate)))]
            if !reader.skip_value(1) {
                return Err(MALFORMED);
            }
        }
        Member::Aud => match reader.open(b'[', b']') {
            None => audience(text(reader.string().ok_or(MALFORMED)?, arena)?, claims, config),
            Some(mut more) => {
                while more {
                    if claims.audiences == MAX_AUDIENCES {
                        return Err(MALFORMED);
                    }
                    audience(text(reader.string().ok_or(MALFORMED)?, arena)?, claims, config);
                    more = reader.more(b']').ok_or(MALFORMED)?;
                }
            }
        },
    }
    Ok(())
}

/// Counts one audience and keeps its route, if it has one.
fn audience<'c>(aud: &str, claims: &mut Claims<'c, '_>, config: &Config<'c>) {
    let route = route::lookup(config.routes, aud);
    #[cfg(policy_issuers)]
    if let Some(slot) = claims.routes.get_mut(claims.audiences) {
        *slot = route;
    }
    claims.route = claims.route.or(route);
    claims.audiences += 1;
}

/// The text a string stands for: the string itself, or its escapes decoded
/// into the arena.
fn text<'a>(raw: RawString<'a>, arena: &mut Arena<'a>) -> Result<&'a str, Rejection> {
    if !raw.escaped {
        return Ok(raw.text);
    }
    let out = arena.alloc(raw.text.len())?;
    json::unescape(raw, out).map_err(|e| match e {
        Unescape::LoneSurrogate => Rejection::LoneSurrogate,
        // The buffer is as long as the escaped text, which is never shorter.
        Unescape::TooLong => Rejection::ScratchExhausted,
    })
}

/// Which way a NumericDate with a fraction is rounded to whole seconds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Round {
    Down,
    Up,
}

/// The whole seconds of a JSON number `literal` (already checked against the
/// grammar), computed exactly from its digits: no float rounding, whatever
/// the exponent. Negative values and values past `u64::MAX` are refused.
fn numeric_date(literal: &[u8], round: Round) -> Result<u64, Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    let (negative, literal) = match literal.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, literal),
    };
    let mantissa_len = literal.iter().position(|&b| b == b'e' || b == b'E').unwrap_or(literal.len());
    let (mantissa, exponent) = literal.split_at(mantissa_len);
    let integer_len = mantissa.iter().position(|&b| b == b'.').unwrap_or(mantissa.len());
    // How many digits stand before the decimal point once the exponent moved it.
    let point = integer_len as i64 + exponent_value(exponent);
    let (mut whole, mut count, mut fraction) = (0u64, 0i64, false);
    for &digit in mantissa.iter().filter(|&&b| b != b'.') {
        if count < point {
            whole = times_ten(whole).and_then(|w| w.checked_add(u64::from(digit - b'0'))).ok_or(MALFORMED)?;
        } else {
            fraction |= digit != b'0';
        }
        count += 1;
    }
    if whole == 0 && !fraction {
        return Ok(0); // zero, however written (`-0`, `0.0e9`)
    }
    if negative {
        return Err(MALFORMED);
    }
    // Zeros the exponent adds after the last digit (zero stays zero; past
    // 20 digits it overflows, so this loop is short).
    if whole != 0 {
        for _ in count..point {
            whole = times_ten(whole).ok_or(MALFORMED)?;
        }
    }
    match (round, fraction) {
        (Round::Up, true) => whole.checked_add(1).ok_or(MALFORMED),
        _ => Ok(whole),
    }
}

/// `value * 10`, or `None` past `u64::MAX`. Compared rather than
/// `checked_mul`, whose overflow check on wasm32 is a 128-bit multiply.
pub(crate) fn times_ten(value: u64) -> Option<u64> {
    (value <= u64::MAX / 10).then(|| value * 10)
}

/// The value of an exponent part (`e+12`, `E-3`, or empty), clamped to
/// ±1,000,000, far past any exponent that leaves a representable time.
fn exponent_value(exponent: &[u8]) -> i64 {
    let Some((_, rest)) = exponent.split_first() else { return 0 };
    let (sign, digits) = match rest.split_first() {
        Some((b'-', digits)) => (-1, digits),
        Some((b'+', digits)) => (1, digits),
        _ => (1, rest),
    };
    let magnitude = digits.iter().fold(0i64, |acc, &d| (acc * 10 + i64::from(d - b'0')).min(1_000_000));
    sign * magnitude
}

/// The issuer the claims' `iss` selects, and its index.
fn issuer<'c>(iss: Option<&str>, config: &Config<'c>) -> Result<(usize, &'c Issuer<'c>), Rejection> {
    match config.issuers {
        [only] if only.iss.is_none() || only.iss == iss => Ok((0, only)),
        #[cfg(policy_issuers)]
        several => several
            .iter()
            .enumerate()
            .find(|(_, i)| i.iss.is_some() && i.iss == iss)
            .ok_or(Rejection::WrongIssuer),
        #[cfg(not(policy_issuers))]
        _ => Err(Rejection::WrongIssuer),
    }
}

/// The route of the first audience the issuer may use.
fn route_for<'c>(claims: &Claims<'c, '_>, issuer: &Issuer<'_>) -> Option<&'c Route<'c>> {
    #[cfg(policy_issuers)]
    if !issuer.audiences.is_empty() {
        for route in claims.routes.iter().take(claims.audiences).flatten() {
            if issuer.audiences.contains(&route.audience) {
                return Some(route);
            }
        }
        return None;
    }
    let _ = issuer;
    claims.route
}

/// Judges the claims read against the clock and the config.
fn judge<'c, 'a>(
    claims: &Claims<'c, 'a>,
    now: u64,
    config: &Config<'c>,
) -> Result<Verified<'c, 'a>, Rejection> {
    let exp = claims.exp.ok_or(Rejection::MissingExpiry)?;
    let (index, issuer) = issuer(claims.iss, config)?;
    // A binding the gateway can verify for this issuer is kept for the
    // request to prove; any other is refused.
    #[cfg(policy_dpop)]
    let jkt = claims.confirmation.jkt.filter(|_| config.policy.dpop.of(index).accept);
    #[cfg(not(policy_dpop))]
    let jkt: Option<&str> = None;
    #[cfg(policy_certificate)]
    let x5t = claims
        .confirmation
        .x5t
        .filter(|_| crate::config::BindingMode::of(config.policy.certificate_bound, index).accept);
    #[cfg(not(policy_certificate))]
    let x5t: Option<&str> = None;
    if claims.bound && jkt.is_none() && x5t.is_none() {
        return Err(Rejection::BoundToken);
    }
    // RFC 7519 section 4.1.4: the current time must be before `exp`. `now`
    // is the host's clock floored, so a token is refused from the second
    // `exp + leeway` on, never a fraction of a second after it.
    if now >= exp.saturating_add(issuer.leeway_secs) {
        return Err(Rejection::Expired);
    }
    if let Some(nbf) = claims.nbf
        && now.saturating_add(issuer.leeway_secs) < nbf
    {
        return Err(Rejection::NotYetValid);
    }
    let subject = match claims.sub {
        Some("") => None,
        Some(sub) if !travels_intact(sub) => return Err(Rejection::SubjectNotHeaderSafe),
        other => other,
    };
    if claims.audiences == 0 {
        return Err(Rejection::MissingAudience);
    }
    let route = route_for(claims, issuer).ok_or(Rejection::NoRoute)?;
    Ok(Verified {
        route,
        issuer: (index, issuer),
        cache: contract::Cache::None,
        subject,
        claims: claims.values,
        #[cfg(policy_dpop)]
        jkt,
        #[cfg(policy_certificate)]
        x5t,
    })
}

/// The confirmation methods of `cnf` the gateway can verify: a DPoP key's
/// thumbprint (`jkt`, RFC 9449 section 6.1) or a client certificate's
/// (`x5t#S256`, RFC 8705 section 3.1).
#[cfg(any(policy_dpop, policy_certificate))]
#[derive(Debug, Clone, Copy, Default)]
struct Confirmation<'a> {
    jkt: Option<&'a str>,
    x5t: Option<&'a str>,
}

/// The `cnf` object's `jkt` or `x5t#S256` when it is the one member, a
/// string; neither for any other confirmation (another method, or several
/// at once), which this gateway does not verify.
#[cfg(any(policy_dpop, policy_certificate))]
fn confirmation<'a>(reader: &mut Reader<'a>, arena: &mut Arena<'a>) -> Result<Confirmation<'a>, Rejection> {
    const MALFORMED: Rejection = Rejection::MalformedClaims;
    let Some(mut more) = reader.open(b'{', b'}') else {
        return match reader.skip_value(1) {
            true => Ok(Confirmation::default()),
            false => Err(MALFORMED),
        };
    };
    let (mut found, mut members) = (Confirmation::default(), 0u8);
    while more {
        // The longest name read here, `x5t#S256`, decoded.
        let mut buf = [0u8; 8];
        let name = reader.name().ok_or(MALFORMED)?;
        members = members.saturating_add(1);
        let slot = match json::member_name(name, &mut buf) {
            Some("jkt") => Some(&mut found.jkt),
            Some("x5t#S256") => Some(&mut found.x5t),
            _ => None,
        };
        match slot {
            Some(slot) if slot.is_none() => *slot = Some(text(reader.string().ok_or(MALFORMED)?, arena)?),
            Some(_) => return Err(MALFORMED),
            None => {
                if !reader.skip_value(2) {
                    return Err(MALFORMED);
                }
            }
        }
        more = reader.more(b'}').ok_or(MALFORMED)?;
    }
    Ok(if members == 1 { found } else { Confirmation::default() })
}

/// True when `value` reaches the upstream as the same bytes in a header:
/// visible ASCII with inner spaces, nothing an HTTP parser would trim.
pub fn travels_intact(value: &str) -> bool {
    let bytes = value.as_bytes();
    let visible = |b: Option<&u8>| b.is_some_and(|b| (0x21..=0x7e).contains(b));
    visible(bytes.first()) && visible(bytes.last()) && bytes.iter().all(|b| (0x20..=0x7e).contains(b))
}

#[cfg(test)]
mod tests;
