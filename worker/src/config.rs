//! The gateway configuration as the request path reads it: borrowed tables,
//! no allocation, and one compiled-in instance generated from `gateway.toml`
//! by `build.rs`.

use core::fmt;

/// What the gateway checks and where it routes.
#[derive(Debug, Clone, Copy)]
pub struct Config<'c> {
    /// The realm named in `WWW-Authenticate` challenges.
    pub realm: &'c str,
    /// When set, `iss` must equal it exactly.
    pub issuer: Option<&'c str>,
    /// Clock skew tolerated on `exp` and `nbf`, in seconds.
    pub leeway_secs: u64,
    /// HS256 keys by kid.
    pub keys: &'c [Key<'c>],
    /// Routes sorted by audience in byte order, without duplicates (the build
    /// guarantees it; [`Config::routes_are_sorted`] checks it).
    pub routes: &'c [Route<'c>],
}

/// One HS256 key.
#[derive(Clone, Copy)]
pub struct Key<'c> {
    /// The `kid` that selects it.
    pub kid: &'c str,
    /// The key material, at least 32 bytes.
    pub secret: &'c [u8],
}

impl fmt::Debug for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key").field("kid", &self.kid).field("secret", &format_args!("{{ ... }}")).finish()
    }
}

/// One route: tokens for `audience` go to `upstream`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route<'c> {
    /// The audience, compared byte for byte.
    pub audience: &'c str,
    /// The upstream base URL, without a trailing slash.
    pub upstream: &'c str,
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
        assert!(COMPILED.keys.iter().all(|k| k.secret.len() >= 32));
    }

    #[test]
    fn debug_hides_the_secret() {
        let key = Key { kid: "k", secret: b"super-secret-material-0123456789" };
        let shown = std::format!("{key:?}");
        assert!(!shown.contains("super-secret"), "{shown}");
    }
}
