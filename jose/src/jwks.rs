//! JWK sets (RFC 7517) as identity providers publish them at their
//! `jwks_uri`, validated key by key with the rules every key of the gateway
//! meets: the build reads a JWKS file with this code (`config`), and the
//! module reads a fetched document with it at run time, so both accept and
//! refuse exactly the same keys.
//!
//! - The document is strict JSON ([`crate::json`]) of at most
//!   [`MAX_DOCUMENT_BYTES`]: an object whose `keys` is an array of objects.
//! - A private member of RFC 7518 section 6 (`d`, `p`, `q`, `dp`, `dq`, `qi`,
//!   `oth`, `k`) in any key, one the gateway would skip included, refuses the
//!   whole document: it leaked a private key.
//! - A key whose `use` is `enc` is skipped; any other `use` but `sig` is
//!   refused.
//! - RSA: `n` of 2048 to 4096 bits, odd; `e` odd, at least 3, below 2^64.
//!   EC: `crv` `P-256`, `x` and `y` 32 bytes each, a point on the curve.
//!   OKP: `crv` `Ed25519`, `x` 32 bytes, a point not of small order (those
//!   verify forged signatures). `oct` (a secret) and other types are
//!   refused. `alg`, when present, must be the key type's one algorithm.
//! - Every signing key has a `kid` (tokens select keys by it), visible ASCII
//!   without quotes or backslashes, at most [`MAX_KID_BYTES`], each once.
//! - At least one signing key, at most the caller's limit. A key of an
//!   algorithm the caller does not verify is refused, or skipped when the
//!   caller says so ([`Limits::skip_unbuilt`]: a provider's document).
//!
//! Member values may be written with JSON escapes; they are decoded first.
//! Nothing here allocates: each key is handed to the caller as it is
//! validated, with its bytes borrowed from buffers on the stack.

mod error;
mod model;

pub use error::{JwksError, JwksErrorKind, KidText};
pub use model::{
    Alg, Jwk, MAX_DOCUMENT_BYTES, MAX_KID_BYTES, MAX_RSA_BITS, MIN_RSA_BITS, Material, PRIVATE_MEMBERS,
};

use crate::base64url;
use crate::json::{RawString, Reader, unescape};

/// What the caller allows.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The most signing keys a document may hold.
    pub max_keys: usize,
    /// The algorithms the caller verifies.
    pub built: &'static [Alg],
    /// A key of another algorithm is skipped (a provider's document, which
    /// may publish keys for algorithms the module leaves out) rather than
    /// refused (a file the operator chose).
    pub skip_unbuilt: bool,
}

/// The members of a key the gateway reads, as written.
#[derive(Default, Clone, Copy)]
struct Members<'d> {
    kty: Option<RawString<'d>>,
    kid: Option<RawString<'d>>,
    use_: Option<RawString<'d>>,
    alg: Option<RawString<'d>>,
    crv: Option<RawString<'d>>,
    n: Option<RawString<'d>>,
    e: Option<RawString<'d>>,
    x: Option<RawString<'d>>,
    y: Option<RawString<'d>>,
}

/// Reads the JWKS `document`, validating every key, and hands each signing
/// key to `each` in document order; returns how many it handed. A refusal
/// may come after some keys were handed: a caller that installs keys stages
/// them and commits only when this returns `Ok`.
pub fn read(
    document: &[u8],
    limits: &Limits,
    mut each: impl FnMut(Jwk<'_>) -> Result<(), JwksError>,
) -> Result<usize, JwksError> {
    let fail = |kind| JwksError { key: None, kind };
    if document.len() > MAX_DOCUMENT_BYTES {
        return Err(fail(JwksErrorKind::TooLarge(document.len())));
    }
    // First pass: the whole document, every key's members and the private
    // members anywhere, before any key is taken.
    for_each_key(document, &mut |index, members, private| match private {
        0 => Ok(()),
        bits => Err(JwksError {
            key: Some((index, shown(members.kid))),
            kind: JwksErrorKind::PrivateMembers(bits),
        }),
    })?;
    let mut count = 0usize;
    let mut kids: [(usize, usize); 64] = [(0, 0); 64];
    for_each_key(document, &mut |index, members, _| {
        let error = |kind| JwksError { key: Some((index, shown(members.kid))), kind };
        if let Some(use_) = members.use_ {
            match text_of(use_, &mut [0u8; 8]) {
                Some("enc") => return Ok(()),
                Some("sig") => {}
                _ => return Err(error(JwksErrorKind::Use(shown(Some(use_))))),
            }
        }
        let mut modulus = [0u8; MAX_RSA_BITS / 8 + 1];
        let material = match material(members, &mut modulus) {
            Err(JwksErrorKind::NotBuilt(_)) if limits.skip_unbuilt => None,
            Err(kind) => return Err(error(kind)),
            Ok(material) => Some(material),
        };
        let Some(material) = material.filter(|m| limits.built.contains(&m.alg()) || !limits.skip_unbuilt)
        else {
            return Ok(());
        };
        if let Some(alg) = members.alg
            && text_of(alg, &mut [0u8; 8]).and_then(Alg::from_name) != Some(material.alg())
        {
            return Err(error(JwksErrorKind::AlgMismatch(shown(Some(alg)), material.alg())));
        }
        if !limits.built.contains(&material.alg()) {
            return Err(error(JwksErrorKind::NotBuilt(material.alg())));
        }
        let mut kid_buf = [0u8; MAX_KID_BYTES];
        let raw_kid = members.kid.ok_or(error(JwksErrorKind::NoKid))?;
        let kid =
            text_of(raw_kid, &mut kid_buf).filter(|kid| is_kid(kid)).ok_or(error(JwksErrorKind::BadKid))?;
        // A duplicate kid: compared by the raw spans' decoded text.
        let span = (raw_kid.text.as_ptr() as usize - document.as_ptr() as usize, raw_kid.text.len());
        for &(start, len) in &kids[..count.min(kids.len())] {
            let other = RawString { text: span_text(document, start, len), escaped: true };
            if crate::json::decoded_eq(other, kid) == Ok(true) {
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
        each(Jwk { kid, material })
    })?;
    if count == 0 {
        return Err(fail(JwksErrorKind::NoSigningKey));
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

/// A member's decoded text as an error shows it (empty when it does not decode).
fn shown(raw: Option<RawString<'_>>) -> KidText {
    let mut buf = [0u8; MAX_KID_BYTES];
    KidText::of(raw.and_then(|raw| text_of(raw, &mut buf))).unwrap_or(KidText::EMPTY)
}

/// The decoded text of a member, when it fits `buf`.
fn text_of<'b>(raw: RawString<'b>, buf: &'b mut [u8]) -> Option<&'b str> {
    match raw.escaped {
        false => Some(raw.text),
        true => unescape(raw, buf).ok(),
    }
}

/// Calls `each` with every key's members and the private members it holds
/// (bits of [`PRIVATE_MEMBERS`]), checking the document's shape as strict JSON.
fn for_each_key<'d>(
    document: &'d [u8],
    each: &mut dyn FnMut(usize, &Members<'d>, u8) -> Result<(), JwksError>,
) -> Result<(), JwksError> {
    let fail = |kind| JwksError { key: None, kind };
    let mut reader = Reader::new(document).ok_or(fail(JwksErrorKind::NotJson))?;
    let mut found_keys = false;
    reader.skip_whitespace();
    let mut more = reader.open(b'{', b'}').ok_or(fail(JwksErrorKind::NotJwks))?;
    while more {
        let mut name = [0u8; 4];
        let is_keys = reader
            .name()
            .ok_or(fail(JwksErrorKind::NotJson))
            .map(|n| text_of(n, &mut name) == Some("keys"))?;
        if is_keys && !found_keys {
            found_keys = true;
            let mut keys_more = reader.open(b'[', b']').ok_or(fail(JwksErrorKind::NotJwks))?;
            let mut index = 0;
            while keys_more {
                let (members, private) = read_key(&mut reader, index)?;
                each(index, &members, private)?;
                index += 1;
                keys_more = reader.more(b']').ok_or(fail(JwksErrorKind::NotJson))?;
            }
        } else if is_keys {
            return Err(fail(JwksErrorKind::NotJwks));
        } else if !reader.skip_value(1) {
            return Err(fail(JwksErrorKind::NotJson));
        }
        more = reader.more(b'}').ok_or(fail(JwksErrorKind::NotJson))?;
    }
    if !reader.at_end() {
        return Err(fail(JwksErrorKind::NotJson));
    }
    match found_keys {
        true => Ok(()),
        false => Err(fail(JwksErrorKind::NotJwks)),
    }
}

/// Reads one key object: the members the gateway reads, and the first
/// private members it holds (bits of [`PRIVATE_MEMBERS`]).
fn read_key<'d>(reader: &mut Reader<'d>, index: usize) -> Result<(Members<'d>, u8), JwksError> {
    let fail = |kind| JwksError { key: Some((index, KidText::EMPTY)), kind };
    let mut members = Members::default();
    let mut private = 0u8;
    let mut more = reader.open(b'{', b'}').ok_or(fail(JwksErrorKind::NotJwks))?;
    while more {
        let mut buf = [0u8; 4];
        let name = reader.name().ok_or(fail(JwksErrorKind::NotJson))?;
        let name = text_of(name, &mut buf);
        let slot = match name {
            Some("kty") => Some((&mut members.kty, "kty")),
            Some("kid") => Some((&mut members.kid, "kid")),
            Some("use") => Some((&mut members.use_, "use")),
            Some("alg") => Some((&mut members.alg, "alg")),
            Some("crv") => Some((&mut members.crv, "crv")),
            Some("n") => Some((&mut members.n, "n")),
            Some("e") => Some((&mut members.e, "e")),
            Some("x") => Some((&mut members.x, "x")),
            Some("y") => Some((&mut members.y, "y")),
            _ => None,
        };
        if let Some(bit) = name.and_then(|n| PRIVATE_MEMBERS.iter().position(|m| *m == n)) {
            private |= 1 << bit;
        }
        match slot {
            Some((slot, member)) => {
                let value = reader.string().ok_or(fail(JwksErrorKind::BadMember(member)))?;
                if slot.replace(value).is_some() {
                    return Err(fail(JwksErrorKind::BadMember(member)));
                }
            }
            None if reader.skip_value(2) => {}
            None => return Err(fail(JwksErrorKind::NotJson)),
        }
        more = reader.more(b'}').ok_or(fail(JwksErrorKind::NotJson))?;
    }
    Ok((members, private))
}

/// Decodes the base64url member `raw` named `member` into `buf`.
fn bytes_of<'b>(
    raw: Option<RawString<'_>>,
    member: &'static str,
    buf: &'b mut [u8],
) -> Result<&'b [u8], JwksErrorKind> {
    let raw = raw.ok_or(JwksErrorKind::Missing(member))?;
    let mut text_buf = [0u8; (MAX_RSA_BITS / 6) + 8];
    let text = text_of(raw, &mut text_buf).ok_or(JwksErrorKind::Encoding(member))?;
    base64url::decode(text.as_bytes(), buf).map_err(|_| JwksErrorKind::Encoding(member))
}

/// The key's material, validated for its type.
fn material<'b>(members: &Members<'_>, modulus_buf: &'b mut [u8]) -> Result<Material<'b>, JwksErrorKind> {
    let mut kty_buf = [0u8; 8];
    let mut crv_buf = [0u8; 16];
    match members.kty.map(|k| text_of(k, &mut kty_buf)) {
        Some(Some("RSA")) => {
            let mut e_buf = [0u8; 16];
            let exponent = bytes_of(members.e, "e", &mut e_buf)?;
            let exponent = rsa_exponent(exponent)?;
            let modulus = bytes_of(members.n, "n", modulus_buf)?;
            rsa_modulus(modulus).map(|modulus| Material::Rsa { modulus, exponent })
        }
        Some(Some("EC")) => {
            if members.crv.and_then(|c| text_of(c, &mut crv_buf)) != Some("P-256") {
                return Err(JwksErrorKind::EcCurve(shown(members.crv)));
            }
            let mut sec1 = [4u8; 65];
            let mut coordinate = [0u8; 33];
            let x = bytes_of(members.x, "x", &mut coordinate)?;
            let x: &[u8; 32] = x.try_into().map_err(|_| JwksErrorKind::Length("x", x.len(), 32))?;
            sec1[1..33].copy_from_slice(x);
            let y = bytes_of(members.y, "y", &mut coordinate)?;
            let y: &[u8; 32] = y.try_into().map_err(|_| JwksErrorKind::Length("y", y.len(), 32))?;
            sec1[33..].copy_from_slice(y);
            check_p256(&sec1)?;
            Ok(Material::P256 { sec1 })
        }
        Some(Some("OKP")) => {
            if members.crv.and_then(|c| text_of(c, &mut crv_buf)) != Some("Ed25519") {
                return Err(JwksErrorKind::OkpCurve(shown(members.crv)));
            }
            let mut coordinate = [0u8; 33];
            let x = bytes_of(members.x, "x", &mut coordinate)?;
            let public: [u8; 32] = x.try_into().map_err(|_| JwksErrorKind::Length("x", x.len(), 32))?;
            check_ed25519(&public)?;
            Ok(Material::Ed25519 { public })
        }
        Some(Some("oct")) => Err(JwksErrorKind::Secret),
        Some(_) => Err(JwksErrorKind::Kty),
        None => Err(JwksErrorKind::NoKty),
    }
}

/// An RSA modulus without its leading zero bytes: 2048 to 4096 bits, odd.
pub fn rsa_modulus(modulus: &[u8]) -> Result<&[u8], JwksErrorKind> {
    let modulus = &modulus[modulus.iter().take_while(|&&b| b == 0).count()..];
    let bits = modulus.first().map_or(0, |&b| modulus.len() * 8 - b.leading_zeros() as usize);
    if bits < MIN_RSA_BITS {
        return Err(JwksErrorKind::RsaTooShort(bits));
    }
    if bits > MAX_RSA_BITS {
        return Err(JwksErrorKind::RsaTooLong(bits));
    }
    if modulus.last().is_none_or(|b| b % 2 == 0) {
        return Err(JwksErrorKind::EvenModulus);
    }
    Ok(modulus)
}

/// An RSA public exponent: odd, at least 3, below 2^64.
pub fn rsa_exponent(bytes: &[u8]) -> Result<u64, JwksErrorKind> {
    let significant = &bytes[bytes.iter().take_while(|&&b| b == 0).count()..];
    if significant.len() > 8 {
        return Err(JwksErrorKind::Exponent(None));
    }
    let exponent = significant.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    match exponent >= 3 && exponent % 2 == 1 {
        true => Ok(exponent),
        false => Err(JwksErrorKind::Exponent(Some(exponent))),
    }
}

/// `sec1` is an uncompressed point on P-256.
pub fn check_p256(sec1: &[u8; 65]) -> Result<(), JwksErrorKind> {
    #[cfg(feature = "es256")]
    {
        if sec1[0] != 4 || p256::PublicKey::from_sec1_bytes(sec1).is_err() {
            return Err(JwksErrorKind::NotOnCurve);
        }
        Ok(())
    }
    #[cfg(not(feature = "es256"))]
    {
        let _ = sec1;
        Err(JwksErrorKind::NotBuilt(Alg::Es256))
    }
}

/// `public` is an Ed25519 point that decompresses and is not of small order.
pub fn check_ed25519(public: &[u8; 32]) -> Result<(), JwksErrorKind> {
    #[cfg(feature = "eddsa")]
    {
        match ed25519_dalek::VerifyingKey::from_bytes(public) {
            Ok(key) if !key.is_weak() => Ok(()),
            _ => Err(JwksErrorKind::WeakEd25519),
        }
    }
    #[cfg(not(feature = "eddsa"))]
    {
        let _ = public;
        Err(JwksErrorKind::NotBuilt(Alg::EdDsa))
    }
}

// The rules are tested with every algorithm's checks built in (the
// workspace's test build turns both features on).
#[cfg(all(test, feature = "es256", feature = "eddsa"))]
mod tests;
