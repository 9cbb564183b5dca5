//! DPoP (RFC 9449): a token bound to a key (`cnf.jkt`) passes only with a
//! proof, signed by that key, made for this request.
//!
//! The request carries `Authorization: DPoP <token>` and exactly one `DPoP`
//! field, the proof: a compact JWS whose header has `typ` `dpop+jwt`, an
//! `alg` this build verifies proofs with (ES256, EdDSA), and the public key
//! in `jwk` (read with the JWKS rules, `gateway_jose::jwks`: no private
//! member, a sound key of that algorithm); signed by that key; whose claims
//! (one strict pass, each at most once) name the request's method (`htm`),
//! its URI without query (`htu`: scheme and authority compared without
//! case and default port, the path normalized as the gateway normalizes
//! targets), a time within the issuer's window and leeway (`iat`), the
//! access token's hash (`ath`), and an identifier (`jti`). The key's RFC
//! 7638 thumbprint must be the token's `cnf.jkt`. That `jti` is not used
//! twice is the host store's to keep: the forward names a bucket of the
//! `dpop-proofs` limit for it (`crate::limits`), keyed by its hash.
//!
//! Checked in this order, so the cheap refusals come first and a proof is
//! verified only once its form is right.
//!
//! Server nonces (RFC 9449 section 9), for an issuer with `dpop_nonce`: the
//! proof's `nonce` must be one the gateway issued in this period or the one
//! before ([`nonce`]). A nonce is the period's number and its HMAC under
//! the config's key, so any instance of any host issues and checks it
//! without shared state. A refusal carries a fresh one (`DPoP-Nonce`), and
//! so does every forward of a proof, so a client rarely meets the refusal.

use contract::Scheme;
use contract::base64url::encode;

use crate::arena::Arena;
use crate::config::{DpopIssuer, DpopNonce};
use crate::http::request::{Head, trim_ows};
use crate::http::target;
use crate::jose::json::{self, Reader};
use crate::jose::{jws, signature};
use crate::keys::VerifyingKey;
use crate::reject::Rejection;
use gateway_jose::jwks::{self, Alg, Material};

/// The longest proof accepted: a P-256 proof with its key is about 600
/// bytes, an RS256 proof with a 4096-bit key about 2,000.
pub const MAX_PROOF_BYTES: usize = if cfg!(feature = "rs256") { 4096 } else { 2048 };

/// The longest `jti` accepted.
const MAX_JTI_BYTES: usize = 256;

/// The key of a proof's replay bucket: its `jti`'s SHA-256, the first 16
/// bytes in base64url (22 characters).
pub type ProofId = [u8; 22];

/// The length of a nonce: 4 bytes of period and 16 of HMAC, in base64url.
pub const NONCE_LEN: usize = 27;

/// The nonce the gateway issues at `now`.
pub fn nonce(config: &DpopNonce, now: u64) -> [u8; NONCE_LEN] {
    nonce_of_period(config, now / u64::from(config.secs.max(1)))
}

/// The nonce of `period`: its number (4 bytes, big-endian, wrapping) and
/// the first 16 bytes of its HMAC, in base64url.
fn nonce_of_period(config: &DpopNonce, period: u64) -> [u8; NONCE_LEN] {
    let number = (period as u32).to_be_bytes();
    let mut message = [0u8; 14];
    message[..10].copy_from_slice(b"dpop-nonce");
    message[10..].copy_from_slice(&number);
    let mut bytes = [0u8; 20];
    bytes[..4].copy_from_slice(&number);
    bytes[4..].copy_from_slice(&signature::hmac(&config.key, &message)[..16]);
    let mut out = [0u8; NONCE_LEN];
    encode(&bytes, &mut out);
    out
}

/// Whether `presented` is the nonce of this period or the one before.
fn nonce_is_fresh(config: &DpopNonce, presented: &[u8], now: u64) -> bool {
    let period = now / u64::from(config.secs.max(1));
    let matches = |p: u64| {
        presented.len() == NONCE_LEN && bool::from(crate::ct::eq(presented, &nonce_of_period(config, p)))
    };
    matches(period) || (period > 0 && matches(period - 1))
}

/// The algorithms proofs are verified with in this build.
const PROOF_ALGS: &[Alg] = &[
    #[cfg(feature = "es256")]
    Alg::Es256,
    #[cfg(feature = "eddsa")]
    Alg::EdDsa,
    #[cfg(feature = "rs256")]
    Alg::Rs256,
];

/// Those algorithms' names, as a refusal's challenge lists them (`algs`,
/// RFC 9449 section 7.1).
pub const PROOF_ALG_NAMES: &str =
    match (cfg!(feature = "es256"), cfg!(feature = "eddsa"), cfg!(feature = "rs256")) {
        (true, true, true) => "ES256 EdDSA RS256",
        (true, true, false) => "ES256 EdDSA",
        (true, false, true) => "ES256 RS256",
        (true, false, false) => "ES256",
        (false, true, true) => "EdDSA RS256",
        (false, true, false) => "EdDSA",
        (false, false, true) => "RS256",
        (false, false, false) => "",
    };

/// The buffer a proof key's RSA modulus is decoded into: 4096 bits in a
/// build that verifies RS256 proofs, nothing otherwise.
const MODULUS_BYTES: usize = if cfg!(feature = "rs256") { 512 } else { 0 };

/// The request's DPoP proof, if it carries one: exactly one `DPoP` field.
/// A comma, which no proof holds, is two fields joined by a front end
/// that folds repeated fields into one (workerd's, fetch's): refused as
/// two, so every host answers alike.
pub fn proof<'b>(head: &Head<'b, '_>) -> Result<Option<&'b [u8]>, Rejection> {
    let mut fields = head.named("dpop");
    match (fields.next(), fields.next()) {
        (None, _) => Ok(None),
        (Some(value), None) if !value.contains(&b',') => Ok(Some(trim_ows(value))),
        (Some(_), _) => Err(Rejection::DpopProofRepeated),
    }
}

/// What the request that carries the proof is.
pub struct Request<'r> {
    /// Its method.
    pub method: &'r str,
    /// The scheme the client used (the host's context line).
    pub scheme: Scheme,
    /// Its authority: the absolute-form target's, or `Host`.
    pub authority: &'r [u8],
    /// Its normalized path, without query.
    pub path: &'r [u8],
    /// The access token it presents.
    pub token: &'r [u8],
}

/// Checks `proof` for `request` at `now`, against the token's `jkt` and its
/// issuer's window and `leeway` (and the gateway's nonces, when the issuer
/// asks for them); returns the proof's replay key.
#[allow(clippy::too_many_arguments)] // the proof, the request and what it is held to
pub fn check<'a>(
    proof: &'a [u8],
    request: &Request<'_>,
    jkt: &str,
    issuer: DpopIssuer,
    nonces: Option<&DpopNonce>,
    leeway: u64,
    now: u64,
    arena: &mut Arena<'a>,
) -> Result<ProofId, Rejection> {
    const MALFORMED: Rejection = Rejection::DpopProofMalformed;
    if proof.len() > MAX_PROOF_BYTES {
        return Err(MALFORMED);
    }
    let parts = jws::split(proof).map_err(|_| MALFORMED)?;
    let header = jws::decode(parts.header, arena).map_err(|_| MALFORMED)?;
    let (alg, jwk) = read_header(header).ok_or(MALFORMED)?;
    let mut modulus_buf = [0u8; MODULUS_BYTES];
    let (key_alg, material) =
        jwks::read_public_key(jwk, PROOF_ALGS, &mut modulus_buf).map_err(|_| MALFORMED)?;
    if key_alg != alg {
        return Err(MALFORMED);
    }
    let verified = match &material {
        #[cfg(feature = "es256")]
        Material::P256 { sec1 } => {
            let key = VerifyingKey::Es256(crate::keys::EcKey { kid: "", sec1 });
            signature::verify_jws(&key, parts.signing_input, parts.signature)
        }
        #[cfg(feature = "eddsa")]
        Material::Ed25519 { public } => {
            let key = VerifyingKey::EdDsa(crate::keys::EdKey { kid: "", public });
            signature::verify_jws(&key, parts.signing_input, parts.signature)
        }
        // The key's Montgomery parameters, derived for this proof alone.
        #[cfg(feature = "rs256")]
        Material::Rsa { modulus, exponent } => crate::keys::with_key(modulus, *exponent, |key| {
            signature::verify_jws(key, parts.signing_input, parts.signature)
        })
        .unwrap_or(Err(MALFORMED)),
        #[allow(unreachable_patterns)] // a build of every algorithm has no other key
        _ => Err(MALFORMED),
    };
    verified.map_err(|_| Rejection::DpopProofBadSignature)?;
    let payload = jws::decode(parts.payload, arena).map_err(|_| MALFORMED)?;
    let claims = read_claims(payload).ok_or(MALFORMED)?;
    if claims.htm != request.method.as_bytes() {
        return Err(Rejection::DpopProofWrongMethod);
    }
    if !same_uri(claims.htu, request, arena)? {
        return Err(Rejection::DpopProofWrongUri);
    }
    let iat = claims.iat;
    let earliest = now.saturating_sub(u64::from(issuer.window_secs) + leeway);
    if iat < earliest || iat > now.saturating_add(leeway) {
        return Err(Rejection::DpopProofStale);
    }
    let mut ath = [0u8; 43];
    encode(&signature::sha256(request.token), &mut ath);
    if claims.ath != ath {
        return Err(Rejection::DpopProofWrongToken);
    }
    if thumbprint(&material).as_slice() != jkt.as_bytes() {
        return Err(Rejection::DpopKeyMismatch);
    }
    // Last: a client that proved everything else learns the nonce to use.
    if issuer.nonce {
        let fresh = nonces.zip(claims.nonce).is_some_and(|(n, presented)| nonce_is_fresh(n, presented, now));
        if !fresh {
            return Err(Rejection::DpopNonceRequired);
        }
    }
    let mut id = [0u8; 22];
    encode(&signature::sha256(claims.jti)[..16], &mut id);
    Ok(id)
}

/// The header's `alg` (a proof algorithm) and `jwk` (its raw object);
/// `None` unless `typ` is `dpop+jwt` and no `crit` is present.
fn read_header(json: &[u8]) -> Option<(Alg, &[u8])> {
    let mut reader = Reader::new(json)?;
    let (mut alg, mut typ, mut jwk) = (None, None, None);
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}')?;
    while more {
        let mut buf = [0u8; json::NAME_BYTES];
        match json::member_name(reader.name()?, &mut buf) {
            Some("alg") if alg.is_none() => alg = Some(reader.string()?.text),
            Some("typ") if typ.is_none() => typ = Some(reader.string()?.text),
            Some("jwk") if jwk.is_none() => {
                reader.skip_whitespace();
                let start = reader.position();
                if !reader.skip_value(2) {
                    return None;
                }
                jwk = Some(json.get(start..reader.position())?);
            }
            Some("alg" | "typ" | "jwk" | "crit") => return None,
            _ => {
                if !reader.skip_value(1) {
                    return None;
                }
            }
        }
        more = reader.more(b'}')?;
    }
    if !reader.at_end() || !typ?.eq_ignore_ascii_case("dpop+jwt") {
        return None;
    }
    let alg = match alg? {
        "ES256" => Alg::Es256,
        "EdDSA" => Alg::EdDsa,
        "RS256" => Alg::Rs256,
        _ => return None,
    };
    Some((alg, jwk?))
}

/// The proof's claims the gateway reads.
struct ProofClaims<'a> {
    jti: &'a [u8],
    htm: &'a [u8],
    htu: &'a [u8],
    iat: u64,
    ath: &'a [u8],
    nonce: Option<&'a [u8]>,
}

/// Reads the proof's claims in one strict pass: each at most once, `jti`,
/// `htm`, `htu` and `ath` strings without escapes, `iat` a whole number.
fn read_claims(json: &[u8]) -> Option<ProofClaims<'_>> {
    let mut reader = Reader::new(json)?;
    let (mut jti, mut htm, mut htu, mut iat, mut ath, mut nonce) = (None, None, None, None, None, None);
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}')?;
    while more {
        // The longest claim name read, `nonce`.
        let mut buf = [0u8; 5];
        let name = json::member_name(reader.name()?, &mut buf);
        let slot = match name {
            Some("jti") => &mut jti,
            Some("htm") => &mut htm,
            Some("htu") => &mut htu,
            Some("ath") => &mut ath,
            Some("nonce") => &mut nonce,
            Some("iat") => {
                let number = reader.number()?;
                let seconds = core::str::from_utf8(number).ok()?.parse::<u64>().ok()?;
                if iat.replace(seconds).is_some() {
                    return None;
                }
                more = reader.more(b'}')?;
                continue;
            }
            _ => {
                if !reader.skip_value(1) {
                    return None;
                }
                more = reader.more(b'}')?;
                continue;
            }
        };
        let value = reader.string()?;
        if value.escaped || slot.replace(value.text.as_bytes()).is_some() {
            return None;
        }
        more = reader.more(b'}')?;
    }
    let jti = jti.filter(|j| !j.is_empty() && j.len() <= MAX_JTI_BYTES)?;
    if !reader.at_end() {
        return None;
    }
    Some(ProofClaims { jti, htm: htm?, htu: htu?, iat: iat?, ath: ath?, nonce })
}

/// Whether `htu` names the request's URI: the same scheme and authority
/// (without case, and without the scheme's default port), and the same
/// path once normalized as the gateway normalizes targets; query and
/// fragment are not compared (RFC 9449 section 4.3).
fn same_uri<'a>(htu: &'a [u8], request: &Request<'_>, arena: &mut Arena<'a>) -> Result<bool, Rejection> {
    let (scheme, default_port) = match request.scheme {
        Scheme::Http => ("http://", ":80"),
        Scheme::Https => ("https://", ":443"),
    };
    let Some(rest) =
        htu.get(scheme.len()..).filter(|_| htu[..scheme.len()].eq_ignore_ascii_case(scheme.as_bytes()))
    else {
        return Ok(false);
    };
    let rest = &rest[..rest.iter().position(|&b| b == b'?' || b == b'#').unwrap_or(rest.len())];
    let (authority, path) = rest.split_at(rest.iter().position(|&b| b == b'/').unwrap_or(rest.len()));
    let bare = |a: &'a [u8]| a.strip_suffix(default_port.as_bytes()).unwrap_or(a);
    let ours = request.authority;
    let ours = ours.strip_suffix(default_port.as_bytes()).unwrap_or(ours);
    if !bare(authority).eq_ignore_ascii_case(ours) {
        return Ok(false);
    }
    let path: &[u8] = if path.is_empty() { b"/" } else { path };
    match target::normalize(request.method, path, arena) {
        Ok(normalized) => Ok(normalized.path() == request.path),
        Err(_) => Ok(false),
    }
}

/// The key's RFC 7638 thumbprint in base64url: SHA-256 of its required
/// members in lexicographic order, without whitespace.
fn thumbprint(material: &Material<'_>) -> [u8; 43] {
    // The longest: an RSA key's, with a 4096-bit modulus in base64url (683
    // characters) and its exponent.
    let mut json = [0u8; if cfg!(feature = "rs256") { 768 } else { 160 }];
    let mut len = 0;
    let mut push = |bytes: &[u8]| {
        json[len..len + bytes.len()].copy_from_slice(bytes);
        len += bytes.len();
    };
    let mut coordinate = [0u8; 43];
    match material {
        Material::P256 { sec1 } => {
            push(br#"{"crv":"P-256","kty":"EC","x":""#);
            encode(&sec1[1..33], &mut coordinate);
            push(&coordinate);
            push(br#"","y":""#);
            encode(&sec1[33..], &mut coordinate);
            push(&coordinate);
            push(br#""}"#);
        }
        Material::Ed25519 { public } => {
            push(br#"{"crv":"Ed25519","kty":"OKP","x":""#);
            encode(public, &mut coordinate);
            push(&coordinate);
            push(br#""}"#);
        }
        Material::Rsa { modulus, exponent } => {
            // RFC 7638 section 3.3: `e`, `kty`, `n`; each integer in its
            // shortest big-endian bytes (RFC 7518 section 6.3.1).
            let exponent = exponent.to_be_bytes();
            let exponent = &exponent[exponent.iter().position(|&b| b != 0).unwrap_or(7)..];
            let mut text = [0u8; 683];
            push(br#"{"e":""#);
            let len = (4 * exponent.len()).div_ceil(3);
            encode(exponent, &mut text[..len]);
            push(&text[..len]);
            push(br#"","kty":"RSA","n":""#);
            let len = (4 * modulus.len()).div_ceil(3);
            match text.get_mut(..len) {
                Some(out) => encode(modulus, out),
                None => return [0; 43],
            }
            push(&text[..len]);
            push(br#""}"#);
        }
    }
    let mut out = [0u8; 43];
    encode(&signature::sha256(&json[..len]), &mut out);
    out
}

#[cfg(test)]
mod tests;
