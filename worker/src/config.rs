//! The gateway configuration as the request path reads it: borrowed tables,
//! no allocation, and one compiled-in instance generated from `gateway.toml`
//! by `build.rs`.

use core::fmt;

use crate::signature::Alg;
pub use crate::signature::HmacKey;

/// What the gateway checks and where it routes.
#[derive(Debug, Clone, Copy)]
pub struct Config<'c> {
    /// The realm named in `WWW-Authenticate` challenges.
    pub realm: &'c str,
    /// When set, `iss` must equal it exactly.
    pub issuer: Option<&'c str>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// Proxies in front of the gateway whose `X-Forwarded-For` is trusted:
    /// 0 (an edge gateway, the first hop) replaces the client's value with
    /// the peer address; more keeps it and appends the peer, as Envoy's
    /// `xff_num_trusted_hops` does.
    pub trusted_proxy_hops: u32,
    /// The longest bearer token accepted, in bytes (`max_token_bytes`, 256
    /// to 8 KiB). A module's regions are sized for its compiled value
    /// ([`crate::request::TOKEN_CAPACITY`]); a larger value here than they
    /// hold fails closed as "scratch exhausted", never overruns.
    pub max_token_bytes: usize,
    /// Keys by kid, each with its algorithm.
    pub keys: &'c [VerifyingKey<'c>],
    /// Routes sorted by audience in byte order, without duplicates (the build
    /// guarantees it; [`Config::routes_are_sorted`] checks it).
    pub routes: &'c [Route<'c>],
}

/// One key and the one algorithm it verifies. Built from `gateway.toml` at
/// build time, in the form its algorithm computes with: no key is parsed
/// while a request waits.
#[derive(Debug, Clone, Copy)]
pub enum VerifyingKey<'c> {
    /// An HMAC secret: verifies HS256 only.
    Hs256(Key<'c>),
    /// An RSA public key: verifies RS256 only.
    #[cfg(feature = "rs256")]
    Rs256(crate::signature::rs256::RsaKey<'c>),
    /// A P-256 public key: verifies ES256 only.
    #[cfg(feature = "es256")]
    Es256(crate::signature::es256::EcKey<'c>),
    /// An Ed25519 public key: verifies EdDSA only.
    #[cfg(feature = "eddsa")]
    EdDsa(crate::signature::eddsa::EdKey<'c>),
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

    /// The HMAC key, when this is one (benches and tests reach the HS256
    /// path directly).
    pub fn as_hs256(&self) -> Option<&Key<'c>> {
        match self {
            VerifyingKey::Hs256(key) => Some(key),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

/// One HS256 key.
#[derive(Clone, Copy)]
pub struct Key<'c> {
    /// The `kid` that selects it.
    pub kid: &'c str,
    /// The key material, at least 32 bytes.
    pub secret: &'c [u8],
    /// The same key as verification uses it: HMAC's key states, which the
    /// build computes from `secret`.
    pub hmac: HmacKey,
}

impl fmt::Debug for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("secret", &format_args!("{{ ... }}"))
            .field("hmac", &format_args!("{{ ... }}"))
            .finish()
    }
}

/// One route: tokens for `audience` go to `origin`, under `base_path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'c> {
    /// The audience, compared byte for byte.
    pub audience: &'c str,
    /// The upstream's scheme and authority (`http://10.0.0.5:8080`), no path.
    pub origin: &'c str,
    /// The path every forwarded request stays under: empty, or `/` and
    /// segments without a trailing slash (`/orders-svc`). The build checks
    /// that it is canonical (no dot segments, no escapes a server could
    /// read as a separator).
    pub base_path: &'c str,
}

impl Config<'_> {
    /// True when the route table is strictly ascending, as binary search needs.
    pub fn routes_are_sorted(&self) -> bool {
        self.routes.windows(2).all(|w| w[0].audience.as_bytes() < w[1].audience.as_bytes())
    }
}

include!(concat!(env!("OUT_DIR"), "/config.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_config_is_sorted_and_has_keys() {
        assert!(COMPILED.routes_are_sorted());
        assert!(!COMPILED.keys.is_empty());
        assert!(COMPILED.keys.iter().filter_map(VerifyingKey::as_hs256).all(|k| k.secret.len() >= 32));
    }

    #[test]
    fn compiled_key_states_are_the_secrets() {
        for key in COMPILED.keys.iter().filter_map(VerifyingKey::as_hs256) {
            assert!(key.hmac == crate::signature::tests::keyed(key.secret), "{}", key.kid);
        }
    }

    #[test]
    fn debug_hides_the_secret() {
        let key = Key { kid: "k", secret: b"super-secret-material-0123456789", hmac: HmacKey::UNKEYED };
        let shown = std::format!("{key:?}");
        assert!(!shown.contains("super-secret"), "{shown}");
    }
}
