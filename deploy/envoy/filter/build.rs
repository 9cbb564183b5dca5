//! Turns on `cfg(runtime_keys)` when the core this filter embeds fetches
//! keys at run time: the config `worker/build.rs` compiles in names a JWKS
//! source (`jwks_url` or `discovery`) and the build has a public-key
//! algorithm. Then `worker::abi::Instance` has its key methods and the
//! filter compiles its fetcher; otherwise neither exists and the filter is
//! the request path alone. Likewise `cfg(response_edits)` when the config
//! has CORS, whose forwards change the upstream's response: only then does
//! the filter keep a response callback. A config that does not load is left to
//! `worker/build.rs`, which stops the build with the reason.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(runtime_keys)");
    println!("cargo::rustc-check-cfg=cfg(response_edits)");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let (cfgs, runtime_keys) = gateway_config::embedded_core_cfgs(&manifest.join("../../.."));
    if runtime_keys {
        println!("cargo:rustc-cfg=runtime_keys");
    }
    // CORS is the only policy whose forwards change the upstream's response
    // (`worker/src/http/forward.rs`); without it the filter has no response
    // callback.
    if cfgs.contains(&"policy_cors") {
        println!("cargo:rustc-cfg=response_edits");
    }
}
