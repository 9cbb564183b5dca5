//! Turns on `cfg(runtime_keys)` when the core this filter embeds fetches
//! keys at run time: the config `worker/build.rs` compiles in names a JWKS
//! source (`jwks_url` or `discovery`) and the build has a public-key
//! algorithm. Then `worker::abi::Instance` has its key methods and the
//! filter compiles its fetcher; otherwise neither exists and the filter is
//! the request path alone. Likewise `cfg(response_edits)` when the config
//! has CORS, whose forwards change the upstream's response: only then does
//! the filter keep a response callback. And `cfg(label_table)` when the
//! core names its issuers (as the module's `labels` export does). A config that does not load is left to
//! `worker/build.rs`, which stops the build with the reason.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(runtime_keys)");
    println!("cargo::rustc-check-cfg=cfg(response_edits)");
    println!("cargo::rustc-check-cfg=cfg(label_table)");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let (cfgs, runtime_keys) = gateway_config::embedded_core_cfgs(&manifest.join("../../.."));
    if runtime_keys {
        println!("cargo:rustc-cfg=runtime_keys");
    }
    // The core has a label table (its issuers named by `iss`) exactly when
    // the module would export `labels` (`worker/src/abi.rs`): rules,
    // several issuers, or fetched keys. Without one, every host labels its
    // one issuer `0`, and so does the filter (`src/metrics.rs`).
    if runtime_keys || cfgs.contains(&"policy_rules") || cfgs.contains(&"policy_issuers") {
        println!("cargo:rustc-cfg=label_table");
    }
    // CORS is the only policy whose forwards change the upstream's response
    // (`worker/src/http/forward.rs`); without it the filter has no response
    // callback.
    if cfgs.contains(&"policy_cors") {
        println!("cargo:rustc-cfg=response_edits");
    }
}
