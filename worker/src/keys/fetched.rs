//! Keys fetched at run time (`ABI.md`, "Keys fetched at run time"): the
//! JWKS documents hosts hand the module, validated with the build's own
//! validator ([`gateway_jose::jwks`]) and kept in the form each algorithm
//! computes with, beside the compiled keys.
//!
//! - **Atomic installs.** A document's keys are validated into the free
//!   slots after the installed ones; only when the whole document passed do
//!   they replace the issuer's old keys. A refused document changes nothing.
//! - **Pinned kids.** A kid compiled into the config keeps its compiled key:
//!   a fetched key with that kid is ignored (and named in the summary), so a
//!   provider's document can never replace a key the operator pinned.
//! - **Skipped keys.** A key the validator skips (not for signatures, or for
//!   a signature this module does not verify: `gateway_jose::jwks`) is named
//!   in the summary with why; the document's other keys are installed.
//! - **Failing closed.** Keys installed more than the issuer's
//!   `max_stale_secs` ago, or never, verify nothing: a token that needs them
//!   is answered 503, and the answer asks the host to fetch.
//! - **One region.** The store holds no pointers: its bytes
//!   ([`FetchedKeys::as_bytes`]) copied into another instance of the module,
//!   at the same address, are the same keys (`key_store_ptr`).

use core::fmt;

use gateway_jose::jwks::{self, Entry, JwksError, MAX_KID_BYTES, Material, Skipped};

use crate::config::{Config, Issuer, KeyFetch};
use crate::keys::{TokenHeader, VerifyingKey, agree, pick};
use crate::reject::Rejection;

/// The largest document a host may hand over.
pub const DOCUMENT_CAPACITY: usize = jwks::MAX_DOCUMENT_BYTES;

/// Fetched keys the store has room for: the compiled config's need in a
/// wasm module; a native embedder's configs get a fixed room.
const SLOTS: usize = if cfg!(target_arch = "wasm32") { crate::config::FETCHED_KEY_SLOTS } else { 64 };

/// Issuers the store keeps a clock for.
pub(super) const ISSUERS: usize = if cfg!(target_arch = "wasm32") { crate::config::ISSUER_COUNT } else { 16 };

/// The skipped keys a summary names; it counts the others.
const NAMED_SKIPS: usize = 4;

/// The algorithms a fetched key may be for: the ones this build verifies.
const BUILT: &[jwks::Alg] = &[
    #[cfg(feature = "rs256")]
    jwks::Alg::Rs256,
    #[cfg(feature = "es256")]
    jwks::Alg::Es256,
    #[cfg(feature = "eddsa")]
    jwks::Alg::EdDsa,
];

/// The installed keys of every issuer that fetches keys.
#[repr(C)]
pub struct FetchedKeys {
    /// When each issuer's keys were installed (Unix seconds), by issuer index.
    installed_at: [Option<u64>; ISSUERS],
    /// How many slots hold keys; the others are free.
    used: usize,
    /// Counts the installs: a cache of verified tokens is bound to one
    /// generation, so an instance that receives a newer store (an install,
    /// or a host's copy of another instance's store) forgets its tokens.
    generation: u32,
    /// The keys, each tagged with its issuer.
    slots: [Slot; SLOTS],
}

#[derive(Clone, Copy)]
struct Slot {
    issuer: u8,
    kid_len: u8,
    kid: [u8; MAX_KID_BYTES],
    key: Stored,
}

/// A key in the form its algorithm computes with.
#[derive(Clone, Copy)]
#[allow(clippy::large_enum_variant)] // a slot holds any key in place: no heap, no pointers
enum Stored {
    Empty,
    #[cfg(feature = "rs256")]
    Rsa2048(RsaStored<{ crypto_bigint::U2048::LIMBS }>),
    #[cfg(feature = "rs256")]
    Rsa3072(RsaStored<{ crypto_bigint::U3072::LIMBS }>),
    #[cfg(feature = "rs256")]
    Rsa4096(RsaStored<{ crypto_bigint::U4096::LIMBS }>),
    #[cfg(feature = "es256")]
    P256([u8; 65]),
    #[cfg(feature = "eddsa")]
    Ed25519([u8; 32]),
}

#[cfg(feature = "rs256")]
#[derive(Clone, Copy)]
struct RsaStored<const LIMBS: usize> {
    len: usize,
    exponent: u64,
    params: crypto_bigint::modular::FixedMontyParams<LIMBS>,
}

const EMPTY_SLOT: Slot = Slot { issuer: 0, kid_len: 0, kid: [0; MAX_KID_BYTES], key: Stored::Empty };

/// Why a document was not installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallError {
    /// The issuer index names no issuer that fetches keys.
    NotFetching(usize),
    /// The document, or a key in it, is refused.
    Document(JwksError),
    /// The module has no room for the document's keys.
    NoRoom,
    /// The host's clock is not a time.
    Clock,
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::NotFetching(i) => write!(f, "issuer {i} fetches no keys"),
            InstallError::Document(e) if e.key.is_some() => write!(f, "JWKS {e}"),
            InstallError::Document(e) => write!(f, "JWKS document {e}"),
            InstallError::NoRoom => f.write_str("the module has no room for more fetched keys"),
            InstallError::Clock => f.write_str("host clock invalid"),
        }
    }
}

impl FetchedKeys {
    /// No keys installed (zeroed: in wasm it costs no bytes of module).
    pub const fn new() -> Self {
        FetchedKeys { installed_at: [None; ISSUERS], used: 0, generation: 0, slots: [EMPTY_SLOT; SLOTS] }
    }

    /// When issuer `issuer`'s keys were installed (Unix seconds), if ever.
    pub fn installed_at(&self, issuer: usize) -> Option<u64> {
        self.installed_at.get(issuer).copied().flatten()
    }

    /// The generation of the installed keys (see the field).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The bytes that hold every installed key: the start of the store up
    /// to its last used slot.
    pub fn used_len(&self) -> usize {
        core::mem::offset_of!(FetchedKeys, slots) + self.used * core::mem::size_of::<Slot>()
    }

    /// Validates the JWKS `document` for issuer `issuer` of `config` and,
    /// when all of it is valid, replaces that issuer's fetched keys with its
    /// keys, at time `now`. Writes a one-line summary into `summary`;
    /// returns how many keys were installed.
    pub fn install(
        &mut self,
        issuer: usize,
        document: &[u8],
        now: u64,
        config: &Config<'_>,
        summary: &mut dyn fmt::Write,
    ) -> Result<usize, InstallError> {
        let entry = config.issuers.get(issuer).filter(|_| issuer < ISSUERS && issuer <= usize::from(u8::MAX));
        let (Some(entry), Some(fetch)) = (entry, entry.and_then(|i| i.fetch)) else {
            return Err(InstallError::NotFetching(issuer));
        };
        let limits = jwks::Limits { max_keys: usize::from(fetch.max_keys), built: BUILT };
        let start = self.used;
        let mut next = start;
        let mut pinned = 0usize;
        let (mut skipped, mut skips) = (0usize, [None::<Skipped>; NAMED_SKIPS]);
        let _ = summary.write_str("installed");
        let read = jwks::read(document, &limits, |found| {
            let jwk = match found {
                Entry::Key(jwk) => jwk,
                Entry::Skipped(skip) => {
                    if let Some(slot) = skips.get_mut(skipped) {
                        *slot = Some(skip);
                    }
                    skipped += 1;
                    return Ok(());
                }
            };
            if entry.keys.iter().any(|key| key.kid() == jwk.kid) {
                pinned += 1;
                return Ok(());
            }
            let slot = self.slots.get_mut(next).ok_or(NO_ROOM)?;
            *slot = Slot::of(issuer as u8, jwk.kid, &jwk.material).ok_or(NO_ROOM)?;
            next += 1;
            let _ = write!(summary, " {:?}", jwk.kid);
            Ok(())
        });
        match read {
            Err(e) if e == NO_ROOM => return Err(InstallError::NoRoom),
            Err(e) => return Err(InstallError::Document(e)),
            Ok(_) => {}
        }
        // The document passed: its keys replace the issuer's old ones.
        let installed = next - start;
        let mut kept = 0;
        for i in 0..next {
            let old = i < start && self.slots[i].issuer == issuer as u8;
            if !old {
                self.slots[kept] = self.slots[i];
                kept += 1;
            }
        }
        self.slots[kept..next].fill(EMPTY_SLOT);
        self.used = kept;
        self.installed_at[issuer] = Some(now);
        self.generation = self.generation.wrapping_add(1);
        let plural = if installed == 1 { "" } else { "s" };
        let _ = write!(summary, ": {installed} key{plural} for issuer {issuer}");
        if pinned > 0 {
            let _ = write!(summary, "; {pinned} with a compiled kid ignored (pinned)");
        }
        if skipped > 0 {
            let plural = if skipped == 1 { "" } else { "s" };
            let _ = write!(summary, "; skipped {skipped} key{plural}: ");
            for (i, skip) in skips.iter().flatten().enumerate() {
                let _ = write!(summary, "{}{skip}", if i == 0 { "" } else { ", " });
            }
            if skipped > NAMED_SKIPS {
                let _ = write!(summary, " and {} more", skipped - NAMED_SKIPS);
            }
        }
        Ok(installed)
    }

    /// The key for a checked header among issuer `index`'s keys: compiled
    /// first (pinned), then fetched when the issuer fetches keys and they
    /// are fresh at `now`.
    pub fn select<'k>(
        &'k self,
        token: &TokenHeader<'_>,
        index: usize,
        issuer: &'k Issuer<'k>,
        now: u64,
    ) -> Result<VerifyingKey<'k>, Rejection> {
        let Some(fetch) = issuer.fetch else {
            return pick(token, issuer.keys).copied();
        };
        let kid = token.kid.ok_or(Rejection::KeyIdRequired)?;
        if let Some(key) = issuer.keys.iter().find(|key| key.kid() == kid) {
            agree(token, key)?;
            return Ok(*key);
        }
        if !self.fresh(index, fetch, now) {
            return Err(Rejection::KeysUnavailable);
        }
        let slot = self.slots[..self.used]
            .iter()
            .find(|slot| usize::from(slot.issuer) == index && slot.kid() == kid.as_bytes())
            .ok_or(Rejection::UnknownKey)?;
        let key = slot.verifying_key().ok_or(Rejection::UnknownKey)?;
        agree(token, &key)?;
        Ok(key)
    }
}

impl FetchedKeys {
    /// True when issuer `index`'s fetched keys were installed at most
    /// `max_stale_secs` before `now`: only then do they verify anything.
    pub fn fresh(&self, index: usize, fetch: &KeyFetch<'_>, now: u64) -> bool {
        let installed_at = self.installed_at.get(index).copied().flatten();
        installed_at.is_some_and(|at| now.saturating_sub(at) <= u64::from(fetch.max_stale_secs))
    }
}

impl Default for FetchedKeys {
    fn default() -> Self {
        Self::new()
    }
}

/// The error `install` uses to stop the validator when the slots run out.
const NO_ROOM: JwksError = JwksError { key: None, kind: jwks::JwksErrorKind::TooManyKeys(usize::MAX) };

impl Slot {
    /// A slot for a validated key, its RSA parameters computed.
    fn of(issuer: u8, kid: &str, material: &Material<'_>) -> Option<Slot> {
        let mut slot = Slot { issuer, kid_len: u8::try_from(kid.len()).ok()?, ..EMPTY_SLOT };
        slot.kid.get_mut(..kid.len())?.copy_from_slice(kid.as_bytes());
        slot.key = match *material {
            #[cfg(feature = "rs256")]
            Material::Rsa { modulus, exponent } => rsa::stored(modulus, exponent)?,
            #[cfg(feature = "es256")]
            Material::P256 { sec1 } => Stored::P256(sec1),
            #[cfg(feature = "eddsa")]
            Material::Ed25519 { public } => Stored::Ed25519(public),
            #[allow(unreachable_patterns)] // every algorithm built in
            _ => return None,
        };
        Some(slot)
    }

    fn kid(&self) -> &[u8] {
        &self.kid[..usize::from(self.kid_len)]
    }

    /// The key as verification reads it, borrowing the slot.
    fn verifying_key(&self) -> Option<VerifyingKey<'_>> {
        let kid = core::str::from_utf8(self.kid()).ok()?;
        match &self.key {
            Stored::Empty => None,
            #[cfg(feature = "rs256")]
            Stored::Rsa2048(rsa) => Some(rsa::key(kid, rsa, crate::keys::Modulus::Bits2048(&rsa.params))),
            #[cfg(feature = "rs256")]
            Stored::Rsa3072(rsa) => Some(rsa::key(kid, rsa, crate::keys::Modulus::Bits3072(&rsa.params))),
            #[cfg(feature = "rs256")]
            Stored::Rsa4096(rsa) => Some(rsa::key(kid, rsa, crate::keys::Modulus::Bits4096(&rsa.params))),
            #[cfg(feature = "es256")]
            Stored::P256(sec1) => Some(VerifyingKey::Es256(crate::keys::EcKey { kid, sec1 })),
            #[cfg(feature = "eddsa")]
            Stored::Ed25519(public) => Some(VerifyingKey::EdDsa(crate::keys::EdKey { kid, public })),
        }
    }
}

#[cfg(feature = "rs256")]
mod rsa {
    //! RSA keys at run time: the Montgomery parameters the build computes
    //! for a compiled key ([`crate::keys::params_2048`]), computed once here
    //! when the key is installed.

    use crypto_bigint::{U2048, U3072, U4096};

    use super::{RsaStored, Stored};
    use crate::keys::{MAX_MODULUS_BYTES, Modulus, RsaKey, VerifyingKey};

    /// The stored form of a validated modulus (odd, 2048 to 4096 bits).
    pub(super) fn stored(modulus: &[u8], exponent: u64) -> Option<Stored> {
        match modulus.len() {
            0..=256 => Some(Stored::Rsa2048(at_width::<{ U2048::LIMBS }>(modulus, exponent)?)),
            257..=384 => Some(Stored::Rsa3072(at_width::<{ U3072::LIMBS }>(modulus, exponent)?)),
            385..=MAX_MODULUS_BYTES => {
                Some(Stored::Rsa4096(at_width::<{ U4096::LIMBS }>(modulus, exponent)?))
            }
            _ => None,
        }
    }

    fn at_width<const LIMBS: usize>(modulus: &[u8], exponent: u64) -> Option<RsaStored<LIMBS>> {
        Some(RsaStored { len: modulus.len(), exponent, params: crate::keys::params_of::<LIMBS>(modulus)? })
    }

    pub(super) fn key<'k, const LIMBS: usize>(
        kid: &'k str,
        rsa: &'k RsaStored<LIMBS>,
        modulus: Modulus<'k>,
    ) -> VerifyingKey<'k> {
        VerifyingKey::Rs256(RsaKey { kid, len: rsa.len, exponent: rsa.exponent, modulus })
    }
}

#[cfg(test)]
pub(crate) mod tests;
