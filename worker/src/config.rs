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
        assert!(COMPILED.keys.iter().all(|k| k.secret.len() >= 32));
    }

    #[test]
    fn debug_hides_the_secret() {
        let key = Key { kid: "k", secret: b"super-secret-material-0123456789" };
        let shown = std::format!("{key:?}");
        assert!(!shown.contains("super-secret"), "{shown}");
    }
}
