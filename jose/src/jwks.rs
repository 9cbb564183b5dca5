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

use core::fmt;

use crate::base64url;
use crate::json::{RawString, Reader, unescape};

/// The largest document read: providers' sets are a few KiB.
pub const MAX_DOCUMENT_BYTES: usize = 64 << 10;

/// The longest `kid`, in bytes.
pub const MAX_KID_BYTES: usize = 200;

/// The smallest RSA modulus accepted, in bits (RFC 7518 section 3.3).
pub const MIN_RSA_BITS: usize = 2048;

/// The largest RSA modulus accepted, in bits (the worker's widest integer).
pub const MAX_RSA_BITS: usize = 4096;

/// The private members of RFC 7518 section 6 (6.2.2 for EC and OKP `d`,
/// 6.3.2 for RSA, 6.4 for a secret's `k`).
pub const PRIVATE_MEMBERS: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/// A public-key algorithm a JWK can be for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// EdDSA on Ed25519.
    EdDsa,
}

impl Alg {
    /// The JOSE name (`alg`).
    pub const fn name(self) -> &'static str {
        match self {
            Alg::Rs256 => "RS256",
            Alg::Es256 => "ES256",
            Alg::EdDsa => "EdDSA",
        }
    }

    /// The algorithm a JOSE `alg` names, exactly.
    pub fn from_name(name: &str) -> Option<Alg> {
        [Alg::Rs256, Alg::Es256, Alg::EdDsa].into_iter().find(|alg| alg.name() == name)
    }
}

/// A validated key's material, in the form each algorithm computes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Material<'b> {
    /// RSA: the modulus (big-endian, no leading zero byte) and the exponent.
    Rsa {
        /// `n`, 2048 to 4096 bits, odd.
        modulus: &'b [u8],
        /// `e`, odd and at least 3.
        exponent: u64,
    },
    /// P-256: the uncompressed SEC1 point `04 || x || y`, on the curve.
    P256 {
        /// `04 || x || y`.
        sec1: [u8; 65],
    },
    /// Ed25519: the compressed point, not of small order.
    Ed25519 {
        /// RFC 8032 section 5.1.2.
        public: [u8; 32],
    },
}

impl Material<'_> {
    /// The one algorithm the key verifies.
    pub fn alg(&self) -> Alg {
        match self {
            Material::Rsa { .. } => Alg::Rs256,
            Material::P256 { .. } => Alg::Es256,
            Material::Ed25519 { .. } => Alg::EdDsa,
        }
    }
}

/// One validated signing key of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jwk<'b> {
    /// Its `kid`, decoded.
    pub kid: &'b str,
    /// Its material.
    pub material: Material<'b>,
}

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
    const EMPTY: KidText = KidText { bytes: [0; KidText::MAX], len: 0 };

    fn of(text: Option<&str>) -> Option<KidText> {
        let text = text?;
        let mut bytes = [0u8; KidText::MAX];
        let mut len = text.len().min(KidText::MAX);
        while !text.is_char_boundary(len) {
            len -= 1;
        }
        bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
        Some(KidText { bytes, len: len as u8 })
    }

    /// The decoded text of a member, or empty when it does not decode.
    fn of_member(raw: Option<RawString<'_>>) -> KidText {
        let mut buf = [0u8; MAX_KID_BYTES];
        KidText::of(raw.and_then(|raw| text_of(raw, &mut buf))).unwrap_or(KidText::EMPTY)
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
            key: Some((index, KidText::of_member(members.kid))),
            kind: JwksErrorKind::PrivateMembers(bits),
        }),
    })?;
    let mut count = 0usize;
    let mut kids: [(usize, usize); 64] = [(0, 0); 64];
    for_each_key(document, &mut |index, members, _| {
        let error = |kind| JwksError { key: Some((index, KidText::of_member(members.kid))), kind };
        if let Some(use_) = members.use_ {
            match text_of(use_, &mut [0u8; 8]) {
                Some("enc") => return Ok(()),
                Some("sig") => {}
                _ => return Err(error(JwksErrorKind::Use(KidText::of_member(Some(use_))))),
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
            return Err(error(JwksErrorKind::AlgMismatch(KidText::of_member(Some(alg)), material.alg())));
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
                return Err(JwksErrorKind::EcCurve(KidText::of_member(members.crv)));
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
                return Err(JwksErrorKind::OkpCurve(KidText::of_member(members.crv)));
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
