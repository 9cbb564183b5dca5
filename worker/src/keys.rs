//! Verifying keys, in the form each algorithm computes with: what the
//! config holds and what verification reads. Built from `gateway.toml` at
//! build time (the generated config names only the types of this module and
//! of [`crate::config`]), or at run time by a native embedder; no key is
//! parsed while a request waits.
//!
//! Each key verifies exactly one algorithm ([`Alg`]), fixed when it is
//! made: the header phase requires the token's `alg` to equal it, and
//! verification dispatches on the key, never on the token (RFC 8725
//! section 2.1).

use core::fmt;

use crate::reject::Rejection;

/// A JWS algorithm this build verifies (RFC 7518 section 3.1, RFC 8037).
/// Only the algorithms built in exist, so a header naming another one is
/// refused before any key is looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// HMAC with SHA-256.
    Hs256,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    #[cfg(feature = "rs256")]
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    #[cfg(feature = "es256")]
    Es256,
    /// EdDSA on Ed25519.
    #[cfg(feature = "eddsa")]
    EdDsa,
}

impl Alg {
    /// The algorithm a JOSE header's `alg` names, compared byte for byte
    /// (case matters: `hs256` is not `HS256`).
    pub fn from_name(name: &str) -> Option<Alg> {
        match name {
            "HS256" => Some(Alg::Hs256),
            #[cfg(feature = "rs256")]
            "RS256" => Some(Alg::Rs256),
            #[cfg(feature = "es256")]
            "ES256" => Some(Alg::Es256),
            #[cfg(feature = "eddsa")]
            "EdDSA" => Some(Alg::EdDsa),
            _ => None,
        }
    }
}

/// One key and the one algorithm it verifies.
#[derive(Debug, Clone, Copy)]
pub enum VerifyingKey<'c> {
    /// An HMAC secret: verifies HS256 only.
    Hs256(Hs256Key<'c>),
    /// An RSA public key: verifies RS256 only.
    #[cfg(feature = "rs256")]
    Rs256(RsaKey<'c>),
    /// A P-256 public key: verifies ES256 only.
    #[cfg(feature = "es256")]
    Es256(EcKey<'c>),
    /// An Ed25519 public key: verifies EdDSA only.
    #[cfg(feature = "eddsa")]
    EdDsa(EdKey<'c>),
}

impl<'c> VerifyingKey<'c> {
    /// The `kid` that selects the key.
    pub fn kid(&self) -> &'c str {
        match self {
            VerifyingKey::Hs256(key) => key.kid,
            #[cfg(feature = "rs256")]
            VerifyingKey::Rs256(key) => key.kid,
            #[cfg(feature = "es256")]
            VerifyingKey::Es256(key) => key.kid,
            #[cfg(feature = "eddsa")]
            VerifyingKey::EdDsa(key) => key.kid,
        }
    }

    /// The one algorithm the key verifies.
    pub fn alg(&self) -> Alg {
        match self {
            VerifyingKey::Hs256(_) => Alg::Hs256,
            #[cfg(feature = "rs256")]
            VerifyingKey::Rs256(_) => Alg::Rs256,
            #[cfg(feature = "es256")]
            VerifyingKey::Es256(_) => Alg::Es256,
            #[cfg(feature = "eddsa")]
            VerifyingKey::EdDsa(_) => Alg::EdDsa,
        }
    }
}

/// An HS256 key: the secret and HMAC's key states.
#[derive(Clone, Copy)]
pub struct Hs256Key<'c> {
    /// The `kid` that selects it.
    pub kid: &'c str,
    /// The key material, at least 32 bytes.
    pub secret: &'c [u8],
    /// The same key as verification uses it: HMAC's key states, which the
    /// build computes from `secret`.
    pub hmac: HmacKey,
}

impl fmt::Debug for Hs256Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hs256Key")
            .field("kid", &self.kid)
            .field("secret", &format_args!("{{ ... }}"))
            .field("hmac", &format_args!("{{ ... }}"))
            .finish()
    }
}

/// An HS256 key as the request path uses it: SHA-256's chaining values
/// after the key's inner and outer padded blocks (one 64-byte block each),
/// so each request compresses two blocks fewer (RFC 2104).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HmacKey {
    /// After `K' ^ ipad`.
    pub inner: [u32; 8],
    /// After `K' ^ opad`.
    pub outer: [u32; 8],
}

impl HmacKey {
    /// States of no key, for tables that never reach verification.
    pub const UNKEYED: HmacKey = HmacKey { inner: [0; 8], outer: [0; 8] };
}

/// A checked JOSE header (`crate::jose::header::check`): the algorithm it
/// names, one this build verifies, and its `kid` as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenHeader<'a> {
    /// The algorithm `alg` names.
    pub alg: Alg,
    /// The `kid`, escapes not decoded (an escaped kid names no key).
    pub kid: Option<&'a str>,
}

/// The key of `keys` a checked header selects: by `kid`, or the only key
/// when there is one and no `kid`.
pub fn pick<'k>(
    header: &TokenHeader<'_>,
    keys: &'k [VerifyingKey<'k>],
) -> Result<&'k VerifyingKey<'k>, Rejection> {
    let key = match (header.kid, keys) {
        (Some(kid), _) => keys.iter().find(|key| key.kid() == kid).ok_or(Rejection::UnknownKey)?,
        (None, [only]) => only,
        (None, _) => return Err(Rejection::KeyIdRequired),
    };
    agree(header, key)?;
    Ok(key)
}

/// The key decides the algorithm; the header only has to agree with it
/// (RFC 8725 section 3.1): an HS256 header never reaches an RSA key.
pub fn agree(header: &TokenHeader<'_>, key: &VerifyingKey<'_>) -> Result<(), Rejection> {
    match key.alg() == header.alg {
        true => Ok(()),
        false => Err(Rejection::UnsupportedAlgorithm),
    }
}

#[cfg(runtime_keys)]
mod fetched;

/// The JWKS source the tests of fetched keys use.
#[cfg(all(test, runtime_keys))]
pub(crate) use fetched::tests::FETCH as TEST_FETCH;
#[cfg(runtime_keys)]
mod rounds;
#[cfg(runtime_keys)]
pub use fetched::{DOCUMENT_CAPACITY, FetchedKeys, InstallError};
#[cfg(runtime_keys)]
pub use rounds::{MAX_SKEW_SECS, Next, Refusal, RoundError, Rounds, Stored};

/// The keys fetched at run time: none in a module whose config fetches no
/// keys (no bytes, no memory), the store of [`fetched`] otherwise.
#[cfg(not(runtime_keys))]
#[derive(Debug, Default)]
pub struct FetchedKeys;

#[cfg(not(runtime_keys))]
impl FetchedKeys {
    /// No fetched keys.
    pub const fn new() -> Self {
        FetchedKeys
    }

    /// The generation of the installed keys: always 0.
    pub const fn generation(&self) -> u32 {
        0
    }

    /// The key for a checked header among the issuer's compiled keys.
    pub fn select<'k>(
        &'k self,
        token: &TokenHeader<'_>,
        _index: usize,
        issuer: &'k crate::config::Issuer<'k>,
        _now: u64,
    ) -> Result<VerifyingKey<'k>, Rejection> {
        pick(token, issuer.keys).copied()
    }
}

impl FetchedKeys {
    /// A store with no keys, for a caller that fetches none (a static: the
    /// store is large, and never on a stack).
    pub fn none() -> &'static FetchedKeys {
        static NONE: FetchedKeys = FetchedKeys::new();
        &NONE
    }
}

/// The keys one request may be verified with: the config's, and those
/// fetched at run time; and, when the token needed fetched keys it did not
/// find, the issuer whose keys the host should fetch (`ABI.md`, the `~`
/// line).
pub struct Lookup<'k> {
    /// The installed fetched keys.
    pub fetched: &'k FetchedKeys,
    /// Set when a token named a kid its issuer's fetched keys lack, or they
    /// are stale: that issuer's index.
    pub refresh: Option<u8>,
    /// The configured issuer the token's claims name, once they are read:
    /// what labels a rejection of the token (`ABI.md`, "Labels").
    pub named: Option<u8>,
}

impl<'k> Lookup<'k> {
    /// A lookup in `fetched`.
    pub fn new(fetched: &'k FetchedKeys) -> Self {
        Lookup { fetched, refresh: None, named: None }
    }
}

#[cfg(feature = "rs256")]
pub use rsa::{
    MAX_MODULUS_BYTES, Modulus, RsaKey, params_2048, params_3072, params_4096, params_of, with_key,
};

#[cfg(feature = "rs256")]
mod rsa {
    use core::fmt;

    use crypto_bigint::modular::FixedMontyParams;
    use crypto_bigint::{Odd, U2048, U3072, U4096, Uint};

    use super::VerifyingKey;

    /// The largest modulus, in bytes (4096 bits).
    pub const MAX_MODULUS_BYTES: usize = 512;

    /// The Montgomery parameters of `modulus` (big-endian bytes) at the
    /// width of `LIMBS`; `None` for a modulus wider than that, or even.
    pub fn params_of<const LIMBS: usize>(modulus: &[u8]) -> Option<FixedMontyParams<LIMBS>> {
        let width = Uint::<LIMBS>::BYTES;
        let mut bytes = [0u8; MAX_MODULUS_BYTES];
        bytes.get_mut(width.checked_sub(modulus.len())?..width)?.copy_from_slice(modulus);
        let n = Odd::new(Uint::<LIMBS>::from_be_slice(&bytes[..width])).into_option()?;
        Some(FixedMontyParams::new_vartime(n))
    }

    /// Calls `f` with the key of `modulus` and `exponent` (validated by the
    /// JWKS rules), its parameters computed now, on the stack: for a key
    /// met once, such as a DPoP proof's. `None` for a modulus no width holds.
    pub fn with_key<R>(modulus: &[u8], exponent: u64, f: impl FnOnce(&VerifyingKey<'_>) -> R) -> Option<R> {
        let len = modulus.len();
        let with = |m: Modulus<'_>| f(&VerifyingKey::Rs256(RsaKey { kid: "", len, exponent, modulus: m }));
        match len {
            0..=256 => Some(with(Modulus::Bits2048(&params_of::<{ U2048::LIMBS }>(modulus)?))),
            257..=384 => Some(with(Modulus::Bits3072(&params_of::<{ U3072::LIMBS }>(modulus)?))),
            385..=MAX_MODULUS_BYTES => {
                Some(with(Modulus::Bits4096(&params_of::<{ U4096::LIMBS }>(modulus)?)))
            }
            _ => None,
        }
    }

    /// An RSA public key, ready to verify: its Montgomery parameters at the
    /// smallest of the three widths that holds the modulus.
    #[derive(Clone, Copy)]
    pub struct RsaKey<'c> {
        /// The `kid` that selects it.
        pub kid: &'c str,
        /// The modulus length in bytes (`k` in RFC 8017): every signature is
        /// exactly this long.
        pub len: usize,
        /// The public exponent (odd, at least 3; 65537 in practice).
        pub exponent: u64,
        /// The modulus and its Montgomery parameters.
        pub modulus: Modulus<'c>,
    }

    /// A modulus with its Montgomery parameters, at one of three widths.
    #[derive(Clone, Copy)]
    pub enum Modulus<'c> {
        /// Up to 2048 bits.
        Bits2048(&'c FixedMontyParams<{ U2048::LIMBS }>),
        /// 2049 to 3072 bits.
        Bits3072(&'c FixedMontyParams<{ U3072::LIMBS }>),
        /// 3073 to 4096 bits.
        Bits4096(&'c FixedMontyParams<{ U4096::LIMBS }>),
    }

    /// The parameters of a modulus of up to 2048 bits given as 512 hex
    /// digits. A `const fn`: the generated config calls it, so the
    /// compiler computes `R mod n`, `R^2 mod n` and `-n^-1 mod 2^w`.
    pub const fn params_2048(hex: &str) -> FixedMontyParams<{ U2048::LIMBS }> {
        FixedMontyParams::new_vartime(Odd::<U2048>::from_be_hex(hex))
    }

    /// As [`params_2048`], for 768 hex digits.
    pub const fn params_3072(hex: &str) -> FixedMontyParams<{ U3072::LIMBS }> {
        FixedMontyParams::new_vartime(Odd::<U3072>::from_be_hex(hex))
    }

    /// As [`params_2048`], for 1024 hex digits.
    pub const fn params_4096(hex: &str) -> FixedMontyParams<{ U4096::LIMBS }> {
        FixedMontyParams::new_vartime(Odd::<U4096>::from_be_hex(hex))
    }

    impl fmt::Debug for RsaKey<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("RsaKey")
                .field("kid", &self.kid)
                .field("bits", &(self.len * 8))
                .field("exponent", &self.exponent)
                .finish()
        }
    }
}

/// A P-256 public key: its uncompressed SEC1 encoding (`04 || x || y`),
/// checked to be on the curve when the key was made.
#[cfg(feature = "es256")]
#[derive(Clone, Copy)]
pub struct EcKey<'c> {
    /// The `kid` that selects it.
    pub kid: &'c str,
    /// `04 || x || y`.
    pub sec1: &'c [u8; 65],
}

#[cfg(feature = "es256")]
impl fmt::Debug for EcKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EcKey").field("kid", &self.kid).field("curve", &"P-256").finish()
    }
}

/// An Ed25519 public key (RFC 8032 section 5.1.2), checked not to be of
/// small order when the key was made.
#[cfg(feature = "eddsa")]
#[derive(Clone, Copy)]
pub struct EdKey<'c> {
    /// The `kid` that selects it.
    pub kid: &'c str,
    /// The compressed point.
    pub public: &'c [u8; 32],
}

#[cfg(feature = "eddsa")]
impl fmt::Debug for EdKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EdKey").field("kid", &self.kid).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_secret() {
        let key = Hs256Key { kid: "k", secret: b"super-secret-material-0123456789", hmac: HmacKey::UNKEYED };
        let shown = std::format!("{key:?}");
        assert!(!shown.contains("super-secret"), "{shown}");
    }

    #[test]
    fn algorithms_are_named_exactly() {
        assert_eq!(Alg::from_name("HS256"), Some(Alg::Hs256));
        for other in ["hs256", "HS512", "none", "None", ""] {
            assert_eq!(Alg::from_name(other), None, "{other}");
        }
    }
}
