//! Why a JWK set, or one of its keys, was refused, and why a key was
//! skipped: one line each, naming the key by its index and kid.

use core::fmt;

use super::model::{Alg, MAX_DOCUMENT_BYTES, MAX_RSA_BITS, MIN_RSA_BITS, PRIVATE_MEMBERS};
use crate::json::JsonFault;

/// Why a document, or one of its keys, was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JwksError {
    /// The key, when one key is at fault: its index and its kid (cut short).
    pub key: Option<(usize, KidText)>,
    /// What is wrong.
    pub kind: JwksErrorKind,
}

/// A member's text as an error message shows it (a kid, a curve, an alg),
/// cut at [`KidText::MAX`] bytes: errors borrow nothing from the document.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct KidText {
    bytes: [u8; KidText::MAX],
    len: u8,
}

impl KidText {
    /// The most bytes of a member an error message shows.
    pub const MAX: usize = 40;
    pub(super) const EMPTY: KidText = KidText { bytes: [0; KidText::MAX], len: 0 };

    /// The text, cut at [`KidText::MAX`] bytes on a character boundary.
    pub(super) fn of(text: Option<&str>) -> Option<KidText> {
        let text = text?;
        let mut bytes = [0u8; KidText::MAX];
        let mut len = text.len().min(KidText::MAX);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
        Some(KidText { bytes, len: len as u8 })
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Debug for KidText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// What is wrong with a document or a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JwksErrorKind {
    /// Longer than [`MAX_DOCUMENT_BYTES`].
    TooLarge(usize),
    /// Not strict JSON: where, and how.
    NotJson(JsonFault),
    /// Not an object with a `keys` array of objects.
    NotJwks,
    /// A key holds these private members: bits of [`PRIVATE_MEMBERS`].
    PrivateMembers(u8),
    /// More signing keys than allowed.
    TooManyKeys(usize),
    /// No signing key this gateway verifies: how many keys were skipped,
    /// and the first of them (its index and why; small, so that every
    /// error stays a few words).
    NoSigningKey(u32, Option<(u32, Skip)>),
    /// A member is not a string, or appears twice.
    BadMember(&'static str),
    /// `key_ops` is not an array of strings, lists a registered operation
    /// twice, or appears twice.
    KeyOps,
    /// `use` (as written) and `key_ops` say different things.
    UseKeyOps(KidText),
    /// No `kty`.
    NoKty,
    /// A required member is missing.
    Missing(&'static str),
    /// A member is not base64url.
    Encoding(&'static str),
    /// A member decodes to this many bytes, not the length its key needs.
    Length(&'static str, usize, usize),
    /// An RSA modulus shorter than [`MIN_RSA_BITS`].
    RsaTooShort(usize),
    /// An RSA modulus longer than [`MAX_RSA_BITS`].
    RsaTooLong(usize),
    /// An even RSA modulus.
    EvenModulus,
    /// An RSA exponent that is even or below 3 (its value), or not below
    /// 2^64 (`None`).
    Exponent(Option<u64>),
    /// Not a point on P-256.
    NotOnCurve,
    /// An Ed25519 point that does not decompress, or of small order.
    WeakEd25519,
    /// `alg` (as written) names one of the gateway's algorithms, but not
    /// the key type's.
    AlgMismatch(KidText, Alg),
    /// The key's algorithm is not built in (a PEM key's check).
    NotBuilt(Alg),
    /// No `kid`.
    NoKid,
    /// A `kid` longer than [`MAX_KID_BYTES`](super::MAX_KID_BYTES) or with
    /// characters it may not hold.
    BadKid,
    /// Two keys with one `kid`.
    DuplicateKid,
}

/// Why a key of a document is not used: it is not for verifying
/// signatures, or not for a signature this gateway verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// A `use` other than `sig`, as written (`enc`, or a value of another
    /// registry).
    Use(KidText),
    /// A `key_ops` without `verify`.
    KeyOps,
    /// A `kty` other than `RSA`, `EC` and `OKP`, as written.
    Kty(KidText),
    /// An EC curve other than P-256, or an OKP curve other than Ed25519.
    Curve(KidText),
    /// An `alg` other than the key type's algorithm here, as written.
    Alg(KidText),
    /// An algorithm the caller is built without.
    NotBuilt(Alg),
}

/// A key left out of a document: its index, its kid (cut short, empty when
/// it has none) and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    /// The key's index in `keys`.
    pub index: usize,
    /// Its `kid`, as an error shows it.
    pub kid: KidText,
    /// Why it was skipped.
    pub why: Skip,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::Use(use_) => write!(f, "use {use_:?} is not \"sig\""),
            Skip::KeyOps => f.write_str("key_ops does not include \"verify\""),
            Skip::Kty(kty) => write!(f, "kty {kty:?} is not verified by this gateway"),
            Skip::Curve(crv) => write!(f, "curve {crv:?} is not verified by this gateway"),
            Skip::Alg(alg) => write!(f, "alg {alg:?} is not verified by this gateway"),
            Skip::NotBuilt(alg) => write!(f, "{} is not verified by this build", alg.name()),
        }
    }
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_key(f, self.index, &self.kid)?;
        write!(f, ": {}", self.why)
    }
}

/// `key <index>`, with ` (kid "...")` when it has one.
fn write_key(f: &mut fmt::Formatter<'_>, index: usize, kid: &KidText) -> fmt::Result {
    match kid.as_str().is_empty() {
        false => write!(f, "key {index} (kid {kid:?})"),
        true => write!(f, "key {index}"),
    }
}

impl fmt::Display for JwksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((index, kid)) = &self.key {
            write_key(f, *index, kid)?;
            f.write_str(" ")?;
        }
        match self.kind {
            JwksErrorKind::TooLarge(n) => {
                write!(f, "is {n} bytes; a JWKS document may be at most {MAX_DOCUMENT_BYTES} bytes")
            }
            JwksErrorKind::NotJson(fault) => write!(f, "is not a JWKS document: {fault}"),
            JwksErrorKind::NotJwks => f.write_str("is not a JWKS document: an object with a \"keys\" array"),
            JwksErrorKind::PrivateMembers(bits) => {
                f.write_str("holds private key material (")?;
                let held = PRIVATE_MEMBERS.iter().enumerate().filter(|(i, _)| bits & (1 << i) != 0);
                for (n, (_, member)) in held.enumerate() {
                    write!(f, "{}{member:?}", if n == 0 { "" } else { ", " })?;
                }
                f.write_str(
                    "): the document leaked a private key; rotate the key and publish only the public keys (the jwks_uri document)",
                )
            }
            JwksErrorKind::TooManyKeys(max) => write!(f, "holds more than {max} signing keys"),
            JwksErrorKind::NoSigningKey(skipped, first) => {
                f.write_str("holds no signing key this gateway verifies")?;
                match first {
                    Some((index, why)) => write!(f, " ({skipped} skipped; key {index}: {why})"),
                    None => Ok(()),
                }
            }
            JwksErrorKind::BadMember(member) => write!(f, "has a {member:?} that is not one string"),
            JwksErrorKind::KeyOps => f.write_str("has a \"key_ops\" that is not an array of distinct strings"),
            JwksErrorKind::UseKeyOps(use_) => write!(
                f,
                "has use {use_:?} and key_ops that disagree (RFC 7517 section 4.3): one of them would make it a signing key"
            ),
            JwksErrorKind::NoKty => f.write_str("has no kty"),
            JwksErrorKind::Missing(member) => write!(f, "has no {member:?}"),
            JwksErrorKind::Encoding(member) => write!(f, "has a {member:?} that is not base64url"),
            JwksErrorKind::Length(member, got, want) => {
                write!(f, "has a {member:?} of {got} bytes, not {want} bytes")
            }
            JwksErrorKind::RsaTooShort(bits) => {
                write!(f, "is a {bits}-bit RSA key; RS256 needs at least {MIN_RSA_BITS} bits")
            }
            JwksErrorKind::RsaTooLong(bits) => {
                write!(f, "is a {bits}-bit RSA key; at most {MAX_RSA_BITS} bits are supported")
            }
            JwksErrorKind::EvenModulus => f.write_str("has an even RSA modulus"),
            JwksErrorKind::Exponent(Some(e)) => {
                write!(f, "has RSA exponent {e}; it must be odd and at least 3")
            }
            JwksErrorKind::Exponent(None) => {
                f.write_str("has an RSA exponent wider than 64 bits; it must be odd and at least 3, below 2^64")
            }
            JwksErrorKind::NotOnCurve => f.write_str("is not a point on P-256"),
            JwksErrorKind::WeakEd25519 => {
                f.write_str("is not an Ed25519 point, or one of small order, which verifies forged signatures")
            }
            JwksErrorKind::AlgMismatch(given, alg) => {
                write!(f, "has alg {given:?}, but the key is for {}", alg.name())
            }
            JwksErrorKind::NotBuilt(alg) => write!(f, "is {}, which this build does not verify", alg.name()),
            JwksErrorKind::NoKid => f.write_str("has no kid: tokens could not select it"),
            JwksErrorKind::BadKid => f.write_str(
                "has a kid that is longer than 200 bytes or holds characters other than visible ASCII without quotes or backslashes",
            ),
            JwksErrorKind::DuplicateKid => f.write_str("has a kid another key of the document has"),
        }
    }
}
