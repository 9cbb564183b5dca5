//! One key of a JWK set: its members as written, whether the gateway
//! verifies with it ([`verdict`]), and its material, validated for its
//! algorithm ([`material`]).

use super::error::{JwksError, JwksErrorKind, KidText, Skip};
use super::model::{Alg, MAX_KID_BYTES, MAX_RSA_BITS, MIN_RSA_BITS, Material, PRIVATE_MEMBERS};
use crate::base64url;
use crate::json::{RawString, Reader, unescape};

/// The registered `key_ops` values (RFC 7517 section 4.3), each a bit of
/// [`Members::key_ops`]; other values are allowed and ignored.
const KEY_OPS: [&str; 8] =
    ["sign", "verify", "encrypt", "decrypt", "wrapKey", "unwrapKey", "deriveKey", "deriveBits"];

/// `verify`'s bit.
const VERIFY: u8 = 1 << 1;

/// The signature operations' bits (`sign`, `verify`); the others are
/// encryption's.
const SIGNATURE_OPS: u8 = 0b11;

/// The members of a key the gateway reads, as written.
#[derive(Default, Clone, Copy)]
pub(super) struct Members<'d> {
    pub(super) kty: Option<RawString<'d>>,
    pub(super) kid: Option<RawString<'d>>,
    pub(super) use_: Option<RawString<'d>>,
    /// The registered operations `key_ops` lists (bits of [`KEY_OPS`]).
    pub(super) key_ops: Option<u8>,
    pub(super) alg: Option<RawString<'d>>,
    pub(super) crv: Option<RawString<'d>>,
    pub(super) n: Option<RawString<'d>>,
    pub(super) e: Option<RawString<'d>>,
    pub(super) x: Option<RawString<'d>>,
    pub(super) y: Option<RawString<'d>>,
}

/// What the gateway does with a key.
pub(super) enum Verdict {
    /// Verifies with it, by this algorithm, once its material is validated.
    Verify(Alg),
    /// Leaves it out, for this reason.
    Skip(Skip),
}

/// Reads one key object: the members the gateway reads, and the private
/// members it holds (bits of [`PRIVATE_MEMBERS`]).
pub(super) fn read_key<'d>(reader: &mut Reader<'d>, index: usize) -> Result<(Members<'d>, u8), JwksError> {
    let fail = |kind| JwksError { key: Some((index, KidText::EMPTY)), kind };
    let mut members = Members::default();
    let mut private = 0u8;
    let mut more = reader.open(b'{', b'}').ok_or(fail(JwksErrorKind::NotJwks))?;
    while more {
        // Long enough for every name read (`key_ops`), escapes decoded.
        let mut buf = [0u8; 8];
        let name = reader.name().ok_or(fail(JwksErrorKind::NotJwks))?;
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
            None if name == Some("key_ops") => {
                let ops = key_ops(reader).ok_or(fail(JwksErrorKind::KeyOps))?;
                if members.key_ops.replace(ops).is_some() {
                    return Err(fail(JwksErrorKind::KeyOps));
                }
            }
            None if reader.skip_value(2) => {}
            None => return Err(fail(JwksErrorKind::NotJwks)),
        }
        more = reader.more(b'}').ok_or(fail(JwksErrorKind::NotJwks))?;
    }
    Ok((members, private))
}

/// A `key_ops` array: the registered operations it lists, each at most
/// once; `None` when it is not an array of strings.
fn key_ops(reader: &mut Reader<'_>) -> Option<u8> {
    let mut ops = 0u8;
    let mut more = reader.open(b'[', b']')?;
    while more {
        let op = reader.string()?;
        let mut buf = [0u8; 10];
        if let Some(bit) = text_of(op, &mut buf).and_then(|op| KEY_OPS.iter().position(|known| *known == op))
        {
            if ops & (1 << bit) != 0 {
                return None;
            }
            ops |= 1 << bit;
        }
        more = reader.more(b']')?;
    }
    Some(ops)
}

/// Whether the gateway verifies with the key whose members are `m`, when
/// it is built with `built`; `Err` when the key contradicts itself.
pub(super) fn verdict(m: &Members<'_>, built: &[Alg]) -> Result<Verdict, JwksErrorKind> {
    let mut use_buf = [0u8; 8];
    let use_ = m.use_.map(|u| text_of(u, &mut use_buf));
    if let (Some(ops), Some(use_)) = (m.key_ops, use_) {
        let disagree = match use_ {
            Some("sig") => ops & !SIGNATURE_OPS != 0,
            Some("enc") => ops & SIGNATURE_OPS != 0,
            _ => false,
        };
        if disagree {
            return Err(JwksErrorKind::UseKeyOps(shown(m.use_)));
        }
    }
    if !matches!(use_, None | Some(Some("sig"))) {
        return Ok(Verdict::Skip(Skip::Use(shown(m.use_))));
    }
    if m.key_ops.is_some_and(|ops| ops & VERIFY == 0) {
        return Ok(Verdict::Skip(Skip::KeyOps));
    }
    let kty = m.kty.ok_or(JwksErrorKind::NoKty)?;
    let (mut kty_buf, mut crv_buf) = ([0u8; 8], [0u8; 16]);
    let alg = match text_of(kty, &mut kty_buf) {
        Some("RSA") => Alg::Rs256,
        Some(kind @ ("EC" | "OKP")) => {
            let (curve, alg) = if kind == "EC" { ("P-256", Alg::Es256) } else { ("Ed25519", Alg::EdDsa) };
            let crv = m.crv.ok_or(JwksErrorKind::Missing("crv"))?;
            if text_of(crv, &mut crv_buf) != Some(curve) {
                return Ok(Verdict::Skip(Skip::Curve(shown(Some(crv)))));
            }
            alg
        }
        _ => return Ok(Verdict::Skip(Skip::Kty(shown(Some(kty))))),
    };
    if let Some(named) = m.alg {
        match text_of(named, &mut [0u8; 8]).and_then(Alg::from_name) {
            Some(named_alg) if named_alg == alg => {}
            Some(_) => return Err(JwksErrorKind::AlgMismatch(shown(Some(named)), alg)),
            None => return Ok(Verdict::Skip(Skip::Alg(shown(Some(named))))),
        }
    }
    match built.contains(&alg) {
        true => Ok(Verdict::Verify(alg)),
        false => Ok(Verdict::Skip(Skip::NotBuilt(alg))),
    }
}

/// The key's material for `alg` (what [`verdict`] chose), validated.
pub(super) fn material<'b>(
    members: &Members<'_>,
    alg: Alg,
    modulus_buf: &'b mut [u8],
) -> Result<Material<'b>, JwksErrorKind> {
    match alg {
        Alg::Rs256 => {
            let mut e_buf = [0u8; 16];
            let exponent = bytes_of(members.e, "e", &mut e_buf)?;
            let exponent = rsa_exponent(exponent)?;
            let modulus = bytes_of(members.n, "n", modulus_buf)?;
            rsa_modulus(modulus).map(|modulus| Material::Rsa { modulus, exponent })
        }
        Alg::Es256 => {
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
        Alg::EdDsa => {
            let mut coordinate = [0u8; 33];
            let x = bytes_of(members.x, "x", &mut coordinate)?;
            let public: [u8; 32] = x.try_into().map_err(|_| JwksErrorKind::Length("x", x.len(), 32))?;
            check_ed25519(&public)?;
            Ok(Material::Ed25519 { public })
        }
    }
}

/// A member's decoded text as an error shows it (empty when it does not decode).
pub(super) fn shown(raw: Option<RawString<'_>>) -> KidText {
    let mut buf = [0u8; MAX_KID_BYTES];
    KidText::of(raw.and_then(|raw| text_of(raw, &mut buf))).unwrap_or(KidText::EMPTY)
}

/// The decoded text of a member, when it fits `buf`.
pub(super) fn text_of<'b>(raw: RawString<'b>, buf: &'b mut [u8]) -> Option<&'b str> {
    match raw.escaped {
        false => Some(raw.text),
        true => unescape(raw, buf).ok(),
    }
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
