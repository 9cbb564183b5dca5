//! Turns on `cfg(runtime_keys)` when the core this filter embeds fetches
//! keys at run time: the config `worker/build.rs` compiles in names a JWKS
//! source (`jwks_url` or `discovery`) and the build has a public-key
//! algorithm. Then `worker::abi::Instance` has its key methods and the
//! filter compiles its fetcher; otherwise neither exists and the filter is
//! the request path alone. Likewise `cfg(response_edits)` when the config
//! has CORS or rate limits, whose forwards change the upstream's response: only then does
//! the filter keep a response callback. A config that does not load is left to
//! `worker/build.rs`, which stops the build with the reason. And
//! `cfg(limits)` when the config has rate limits: the filter hands each
//! forward's buckets to Envoy's `local_ratelimit` and, on the response
//! path, turns its refusal into the module's 429 (`src/limits.rs`). And
//! `cfg(counting)` unless the feature `uncounted` compiles the counting
//! out (`src/metrics/`); `cfg(ticks)` when the build counts or fetches
//! keys: the root context's `proxy_on_configure` and `proxy_on_tick`.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(runtime_keys)");
    println!("cargo::rustc-check-cfg=cfg(response_edits)");
    println!("cargo::rustc-check-cfg=cfg(limits)");
    println!("cargo::rustc-check-cfg=cfg(counting)");
    println!("cargo::rustc-check-cfg=cfg(ticks)");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let (cfgs, runtime_keys) = gateway_config::embedded_core_cfgs(&manifest.join("../../.."));
    if runtime_keys {
        println!("cargo:rustc-cfg=runtime_keys");
    }
    // CORS and rate limits (a forward with buckets adds its limits'
    // `ratelimit-policy`) are the policies whose forwards change the
    // upstream's response (`worker/src/http/forward.rs`); without them the
    // filter has no response callback.
    if cfgs.contains(&"policy_cors") || cfgs.contains(&"policy_limits") {
        println!("cargo:rustc-cfg=response_edits");
    }
    if cfgs.contains(&"policy_limits") {
        println!("cargo:rustc-cfg=limits");
    }
    // Every build counts, but the one that measures what counting costs
    // (feature `uncounted`); a build that counts, or fetches keys, has the
    // root context's ticks.
    let counting = std::env::var_os("CARGO_FEATURE_UNCOUNTED").is_none();
    if counting {
        println!("cargo:rustc-cfg=counting");
    }
    if counting || runtime_keys {
        println!("cargo:rustc-cfg=ticks");
    }
}
