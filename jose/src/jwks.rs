//! JWK sets (RFC 7517) as identity providers publish them at their
//! `jwks_uri`, validated key by key with the rules every key of the gateway
//! meets: the build reads a JWKS file with this code (`config`), and the
//! module reads a fetched document with it at run time, so both install,
//! skip and refuse exactly the same keys.
//!
//! Providers publish keys for many purposes side by side: RSA, EC and OKP
//! keys, keys for RS384, PS256 or ES384, encryption keys. A document is
//! therefore read in three verdicts, key by key:
//!
//! - **Refused, the whole document** (the installed keys stay): anything
//!   that says the document is broken or poisoned. Not strict JSON
//!   ([`crate::json`], and the refusal says where: a document cut short in
//!   transit is named as that); longer than [`MAX_DOCUMENT_BYTES`]; not an
//!   object whose `keys` is an array of objects; a member the gateway reads
//!   (`kty`, `kid`, `use`, `alg`, `crv`, `n`, `e`, `x`, `y`) that is not
//!   one string, or `key_ops` that is not one array of distinct strings; a
//!   private member of RFC 7518 section 6 (`d`, `p`, `q`, `dp`, `dq`, `qi`,
//!   `oth`, `k`) in any key, a skipped one included: it leaked a private
//!   key; `use` and `key_ops` that disagree (RFC 7517 section 4.3: one
//!   reading would make it a signing key, the other not); a key without
//!   `kty`, or an EC or OKP key without `crv`; a key the gateway would
//!   verify with that is not sound (RSA `n` below 2048 or above 4096 bits
//!   or even, `e` even, below 3 or past 2^64, a P-256 point not on the
//!   curve, an Ed25519 point of small order, a member that is not
//!   base64url or of the wrong length), that names one of the gateway's
//!   algorithms for another key type (`alg` `ES256` on an RSA key), or
//!   that has no usable `kid`; two such keys with one `kid`; more of them
//!   than the caller's limit, or none at all.
//! - **Skipped, and named** ([`Entry::Skipped`]): a key that is not for
//!   verifying signatures (`use` other than `sig`, or `key_ops` without
//!   `verify`), or one for a signature this gateway does not verify: a
//!   `kty` other than `RSA`, `EC`, `OKP`; a curve other than `P-256` and
//!   `Ed25519`; an `alg` other than the key type's one algorithm here
//!   (`RS256`, `ES256`, `EdDSA`); an algorithm the caller is built
//!   without. RFC 7517 section 5 asks readers to ignore keys they do not
//!   understand. A skipped key is never used, so it is not validated
//!   further; its kid may repeat another key's (section 4.5).
//! - **Read** ([`Entry::Key`]): every other key, in document order.
//!
//! Member values may be written with JSON escapes; they are decoded first.
//! Nothing here allocates: each key is handed to the caller as it is
//! validated, with its bytes borrowed from buffers on the stack.

mod error;
mod key;
mod model;

pub use error::{JwksError, JwksErrorKind, KidText, Skip, Skipped};
pub use model::{
    Alg, Jwk, MAX_DOCUMENT_BYTES, MAX_KID_BYTES, MAX_RSA_BITS, MIN_RSA_BITS, Material, PRIVATE_MEMBERS,
};

pub use key::{check_ed25519, check_p256, rsa_exponent, rsa_modulus};

use crate::json::{RawString, Reader, decoded_eq};
use key::{Members, Verdict, read_key, shown, text_of};

/// What the caller allows.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most signing keys a document may hold.
    pub max_keys: usize,
    /// The algorithms the caller verifies; a key of another one is skipped.
    pub built: &'static [Alg],
}

/// One key of a document, as [`read`] hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'b> {
    /// A signing key the caller verifies with, validated.
    Key(Jwk<'b>),
    /// A key the gateway does not verify with, and why.
    Skipped(Skipped),
}

/// Reads the JWKS `document`, validating every key, and hands each key to
/// `each` in document order, read or skipped; returns how many were read.
/// A refusal may come after some keys were handed: a caller that installs
/// keys stages them and commits only when this returns `Ok`.
pub fn read(
    document: &[u8],
    limits: &Limits,
    mut each: impl FnMut(Entry<'_>) -> Result<(), JwksError>,
) -> Result<usize, JwksError> {
    let fail = |kind| JwksError { key: None, kind };
    if document.len() > MAX_DOCUMENT_BYTES {
        return Err(fail(JwksErrorKind::TooLarge(document.len())));
    }
    // The whole text first: a fault of the JSON is named as one, wherever
    // it falls, before any key is looked at.
    crate::json::check(document).map_err(|fault| fail(JwksErrorKind::NotJson(fault)))?;
    // Then every key's members and the private members anywhere, before
    // any key is taken.
    for_each_key(document, &mut |index, members, private| match private {
        0 => Ok(()),
        bits => Err(JwksError {
            key: Some((index, shown(members.kid))),
            kind: JwksErrorKind::PrivateMembers(bits),
        }),
    })?;
    let mut count = 0usize;
    let mut skipped = (0u32, None);
    let mut kids: [(usize, usize); 64] = [(0, 0); 64];
    for_each_key(document, &mut |index, members, _| {
        let error = |kind| JwksError { key: Some((index, shown(members.kid))), kind };
        let alg = match key::verdict(members, limits.built).map_err(error)? {
            Verdict::Skip(why) => {
                let first = (u32::try_from(index).unwrap_or(u32::MAX), why);
                skipped = (skipped.0.saturating_add(1), skipped.1.or(Some(first)));
                return each(Entry::Skipped(Skipped { index, kid: shown(members.kid), why }));
            }
            Verdict::Verify(alg) => alg,
        };
        let mut modulus = [0u8; MAX_RSA_BITS / 8 + 1];
        let material = key::material(members, alg, &mut modulus).map_err(error)?;
        let mut kid_buf = [0u8; MAX_KID_BYTES];
        let raw_kid = members.kid.ok_or(error(JwksErrorKind::NoKid))?;
        let kid =
            text_of(raw_kid, &mut kid_buf).filter(|kid| is_kid(kid)).ok_or(error(JwksErrorKind::BadKid))?;
        // A duplicate kid: compared by the raw spans' decoded text.
        let span = (raw_kid.text.as_ptr() as usize - document.as_ptr() as usize, raw_kid.text.len());
        for &(start, len) in &kids[..count.min(kids.len())] {
            let other = RawString { text: span_text(document, start, len), escaped: true };
            if decoded_eq(other, kid) == Ok(true) {
                return Err(error(JwksErrorKind::DuplicateKid));
            }
        }
        if count >= limits.max_keys {
            return Err(fail(JwksErrorKind::TooManyKeys(limits.max_keys)));
        }
        if let Some(slot) = kids.get_mut(count) {
            *slot = span;
        }
        count += 1;
        each(Entry::Key(Jwk { kid, material }))
    })?;
    if count == 0 {
        return Err(fail(JwksErrorKind::NoSigningKey(skipped.0, skipped.1)));
    }
    Ok(count)
}

/// The text of the document between `start` and `start + len` (a kid span).
fn span_text(document: &[u8], start: usize, len: usize) -> &str {
    document.get(start..start + len).and_then(|b| core::str::from_utf8(b).ok()).unwrap_or("")
}

/// A kid the gateway can compare and echo: visible ASCII, no `"` or `\`.
fn is_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid.len() <= MAX_KID_BYTES
        && kid.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
}

/// Calls `each` with every key's members and the private members it holds
/// (bits of [`PRIVATE_MEMBERS`]), checking the document's shape. The text
/// is strict JSON ([`crate::json::check`] passed), so a reader step that
/// fails here is a shape the document may not have.
/// Reads one public key object on its own (a DPoP proof's `jwk` header
/// member, RFC 9449 section 4.2) with the rules of a JWKS key: no private
/// member, a signing key of an algorithm in `built`, its material
/// validated. No `kid` is needed. An RSA modulus is decoded into
/// `modulus_buf` (512 bytes hold the largest, 4096 bits).
pub fn read_public_key<'b>(
    jwk: &[u8],
    built: &[Alg],
    modulus_buf: &'b mut [u8],
) -> Result<(Alg, Material<'b>), JwksErrorKind> {
    let mut reader = Reader::new(jwk).ok_or(JwksErrorKind::NotJwks)?;
    reader.skip_whitespace();
    let (members, private) = read_key(&mut reader, 0).map_err(|e| e.kind)?;
    if !reader.at_end() {
        return Err(JwksErrorKind::NotJwks);
    }
    if private != 0 {
        return Err(JwksErrorKind::PrivateMembers(private));
    }
    let alg = match key::verdict(&members, built)? {
        Verdict::Verify(alg) => alg,
        _ => return Err(JwksErrorKind::NotJwks),
    };
    Ok((alg, key::material(&members, alg, modulus_buf)?))
}

fn for_each_key<'d>(
    document: &'d [u8],
    each: &mut dyn FnMut(usize, &Members<'d>, u8) -> Result<(), JwksError>,
) -> Result<(), JwksError> {
    let not_jwks = JwksError { key: None, kind: JwksErrorKind::NotJwks };
    let mut reader = Reader::new(document).ok_or(not_jwks)?;
    let mut found_keys = false;
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}').ok_or(not_jwks)?;
    while more {
        let mut name = [0u8; 4];
        let is_keys = reader.name().ok_or(not_jwks).map(|n| text_of(n, &mut name) == Some("keys"))?;
        if is_keys && !found_keys {
            found_keys = true;
            let mut keys_more = reader.open(b'[', b']').ok_or(not_jwks)?;
            let mut index = 0;
            while keys_more {
                let (members, private) = read_key(&mut reader, index)?;
                each(index, &members, private)?;
                index += 1;
                keys_more = reader.more(b']').ok_or(not_jwks)?;
            }
        } else if is_keys || !reader.skip_value(1) {
            return Err(not_jwks);
        }
        more = reader.more(b'}').ok_or(not_jwks)?;
    }
    match found_keys {
        true => Ok(()),
        false => Err(not_jwks),
    }
}

// The rules are tested with every algorithm's checks built in (the
// workspace's test build turns both features on).
#[cfg(all(test, feature = "es256", feature = "eddsa"))]
mod tests;
