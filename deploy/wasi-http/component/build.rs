//! Turns on `cfg(runtime_keys)` when the core this component embeds fetches
//! keys at run time: the config `worker/build.rs` compiles in names a JWKS
//! source (`jwks_url` or `discovery`) and the build has a public-key
//! algorithm. Then `worker::abi::Instance` has its key methods and the
//! component compiles its fetcher; otherwise neither exists. A config that
//! does not load is left to `worker/build.rs`, which stops the build with
//! the reason. `cfg(policy_limits)` likewise when the config has rate
//! limits, which the component counts. Also makes cargo rebuild when the
//! WIT changes, and warns when the config takes certificate-bound tokens,
//! which a component, seeing no client certificate, refuses every time.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(runtime_keys)");
    println!("cargo::rustc-check-cfg=cfg(policy_limits)");
    println!("cargo:rerun-if-changed=wit");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let (cfgs, runtime_keys) = gateway_config::embedded_core_cfgs(&manifest.join("../../.."));
    if runtime_keys {
        println!("cargo:rustc-cfg=runtime_keys");
    }
    // Rate limits: the component counts them in its own memory.
    if cfgs.contains(&"policy_limits") {
        println!("cargo:rustc-cfg=policy_limits");
    }
    if cfgs.contains(&"policy_certificate") {
        println!(
            "cargo:warning=the config takes certificate-bound tokens (certificate_bound), but wasi:http shows a component no client certificate: it refuses every such token"
        );
    }
}
