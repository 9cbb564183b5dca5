//! Turns on `cfg(runtime_keys)` when the core this component embeds fetches
//! keys at run time: the config `worker/build.rs` compiles in names a JWKS
//! source (`jwks_url` or `discovery`) and the build has a public-key
//! algorithm. Then `worker::abi::Instance` has its key methods and the
//! component compiles its fetcher; otherwise neither exists. A config that
//! does not load is left to `worker/build.rs`, which stops the build with
//! the reason. Also makes cargo rebuild when the WIT changes.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(runtime_keys)");
    println!("cargo:rerun-if-env-changed=GATEWAY_CONFIG");
    println!("cargo:rerun-if-changed=wit");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let path = gateway_config::resolve_path(&manifest.join("../../.."));
    println!("cargo:rerun-if-changed={}", path.display());
    // The same test as worker/build.rs: a build without RS256, ES256 or
    // EdDSA verifies no fetched key, so the worker has no key store.
    let public_keys = ["RS256", "ES256", "EDDSA"]
        .iter()
        .any(|alg| std::env::var_os(format!("CARGO_FEATURE_{alg}")).is_some());
    let cfgs = gateway_config::load(&path).map(|c| c.policy_cfgs()).unwrap_or_default();
    if public_keys && cfgs.contains(&"runtime_keys") {
        println!("cargo:rustc-cfg=runtime_keys");
    }
}
