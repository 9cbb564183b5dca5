//! The test fixture: `testkit/fixture.toml`, the configuration every test
//! that drives a built module uses (its public test key, issuer and routes),
//! independent of the user's `gateway.toml`. `make fixture` compiles it into
//! `target/fixture/gateway.wasm`; here it is read for the tests' own side:
//! minting tokens with its key, and deciding natively with the same config.

use std::path::PathBuf;
use std::sync::OnceLock;

use gateway_config::GatewayConfig;
use worker::config::{Config, HmacKey, Key, Route, VerifyingKey};

/// The fixture's configuration file.
pub fn toml_path() -> PathBuf {
    root().join("testkit/fixture.toml")
}

/// The module built from the fixture by `make fixture`.
pub fn wasm_path() -> PathBuf {
    root().join("target/fixture/gateway.wasm")
}

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The fixture, validated as the build validates it.
///
/// # Panics
///
/// When `testkit/fixture.toml` does not load: the tests cannot run without it.
pub fn config() -> GatewayConfig {
    gateway_config::load(&toml_path()).unwrap_or_else(|e| panic!("the test fixture: {e}"))
}

/// An HS256 key as the build compiles it in (its HMAC states computed by the
/// same function), kept for the process.
pub fn hs256_key(kid: &str, secret: &[u8]) -> VerifyingKey<'static> {
    let (inner, outer) = gateway_config::hmac_key::hmac_sha256_states(secret);
    VerifyingKey::Hs256(Key {
        kid: Box::leak(kid.to_owned().into_boxed_str()),
        secret: Box::leak(secret.to_vec().into_boxed_slice()),
        hmac: HmacKey { inner, outer },
    })
}

/// The fixture as the worker reads it (built once, kept for the process).
pub fn worker_config() -> &'static Config<'static> {
    static CONFIG: OnceLock<Config<'static>> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let loaded = config();
        let keys = loaded.keys.iter().map(|k| hs256_key(&k.kid, k.secret())).collect();
        worker_config_of(&loaded, keys)
    })
}

/// `loaded` as the worker reads it, with `keys` (the caller builds them: the
/// HS256 keys with [`hs256_key`], public keys as its test needs), kept for
/// the process.
pub fn worker_config_of(loaded: &GatewayConfig, keys: Vec<VerifyingKey<'static>>) -> Config<'static> {
    let leak = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
    let routes: Vec<Route<'static>> = loaded
        .routes
        .iter()
        .map(|r| Route { audience: leak(&r.aud), origin: leak(r.origin()), base_path: leak(r.base_path()) })
        .collect();
    Config {
        realm: leak(&loaded.realm),
        issuer: loaded.issuer.as_deref().map(leak),
        leeway_secs: loaded.leeway_secs,
        max_token_bytes: loaded.max_token_bytes,
        trusted_proxy_hops: loaded.trusted_proxy_hops,
        keys: Box::leak(keys.into_boxed_slice()),
        routes: Box::leak(routes.into_boxed_slice()),
    }
}
