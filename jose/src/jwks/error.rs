//! Why a JWK set, or one of its keys, was refused: one line each, naming
//! the key by its index and kid.

use core::fmt;

use super::model::{Alg, MAX_DOCUMENT_BYTES, MAX_RSA_BITS, MIN_RSA_BITS, PRIVATE_MEMBERS};

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
    /// Not strict JSON.
    NotJson,
    /// Not an object with a `keys` array of objects.
    NotJwks,
    /// A key holds these private members: bits of [`PRIVATE_MEMBERS`].
    PrivateMembers(u8),
    /// More signing keys than allowed.
    TooManyKeys(usize),
    /// No signing key at all.
    NoSigningKey,
    /// A member is not a string, or appears twice.
    BadMember(&'static str),
    /// A `use` other than `sig` or `enc`, as written.
    Use(KidText),
    /// No `kty`.
    NoKty,
    /// A secret (`kty` `oct`).
    Secret,
    /// A `kty` no algorithm here uses.
    Kty,
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
    /// An EC curve other than P-256, as written.
    EcCurve(KidText),
    /// An OKP curve other than Ed25519, as written.
    OkpCurve(KidText),
    /// Not a point on P-256.
    NotOnCurve,
    /// An Ed25519 point that does not decompress, or of small order.
    WeakEd25519,
    /// `alg` (as written) is not the key type's algorithm.
    AlgMismatch(KidText, Alg),
    /// The key's algorithm is not built in.
    NotBuilt(Alg),
    /// No `kid`.
    NoKid,
    /// A `kid` longer than [`MAX_KID_BYTES`] or with characters it may not hold.
    BadKid,
    /// Two keys with one `kid`.
    DuplicateKid,
}

impl fmt::Display for JwksError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some((index, kid)) if !kid.as_str().is_empty() => write!(f, "key {index} (kid {kid:?}) ")?,
            Some((index, _)) => write!(f, "key {index} ")?,
            None => {}
        }
        match self.kind {
            JwksErrorKind::TooLarge(n) => {
                write!(f, "is {n} bytes; a JWKS document may be at most {MAX_DOCUMENT_BYTES} bytes")
            }
            JwksErrorKind::NotJson => f.write_str("is not a JWKS document: not strict JSON"),
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
            JwksErrorKind::NoSigningKey => f.write_str("holds no signing key this gateway verifies"),
            JwksErrorKind::BadMember(member) => write!(f, "has a {member:?} that is not one string"),
            JwksErrorKind::Use(use_) => write!(f, "has use {use_:?}; signing keys have \"sig\""),
            JwksErrorKind::NoKty => f.write_str("has no kty"),
            JwksErrorKind::Secret => {
                f.write_str("is a secret (kty \"oct\"): configure HS256 secrets with env or file")
            }
            JwksErrorKind::Kty => f.write_str("has a kty which no algorithm here uses"),
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
            JwksErrorKind::EcCurve(crv) => write!(f, "is on curve {crv:?}; ES256 is P-256 only"),
            JwksErrorKind::OkpCurve(crv) => write!(f, "is on curve {crv:?}; EdDSA here is Ed25519 only"),
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
