//! Compiles the gateway configuration into the worker.
//!
//! Reads the config `gateway_config::resolve_path` names (`GATEWAY_CONFIG`,
//! default `gateway.toml` at the workspace root), validates it, writes
//! `$OUT_DIR/config.rs`, and turns on the `policy_*` cfgs of the policies it
//! uses. A wasm module carries only those (pay for what you configure); a
//! native build, which tests and embedders drive with configs of their own,
//! carries every policy. A bad config stops the build with one line that
//! names the file and the entry.

use std::path::PathBuf;

use gateway_config::PublicAlg;

/// Every policy cfg the worker's code tests for.
const POLICY_CFGS: [&str; 9] = [
    "policy_rules",
    "policy_cors",
    "policy_claims",
    "policy_sources",
    "policy_issuers",
    "runtime_keys",
    "policy_limits",
    "policy_dpop",
    "policy_certificate",
];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let path = gateway_config::resolve_path(&manifest.join(".."));
    println!("cargo:rerun-if-env-changed=GATEWAY_CONFIG");
    println!("cargo:rerun-if-changed={}", path.display());

    // The algorithms beside HS256 that this build has (its cargo features):
    // a config with a key for another one is refused rather than compiled
    // without it.
    let built: Vec<PublicAlg> = [PublicAlg::Rs256, PublicAlg::Es256, PublicAlg::EdDsa]
        .into_iter()
        .filter(|alg| std::env::var_os(format!("CARGO_FEATURE_{}", alg.feature().to_uppercase())).is_some())
        .collect();
    let config = match gateway_config::load(&path).and_then(|c| c.check_algorithms(&path, &built).map(|()| c))
    {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    for warning in &config.warnings {
        println!("cargo:warning={}: {warning}", path.display());
    }
    for key in config.public_keys() {
        println!("cargo:rerun-if-changed={}", key.file.display());
    }
    for key in config.hs256_keys().chain(config.dpop_nonce.as_ref().map(|n| &n.key)) {
        match &key.source {
            gateway_config::KeySource::Env(var) => println!("cargo:rerun-if-env-changed={var}"),
            gateway_config::KeySource::File(file) => println!("cargo:rerun-if-changed={}", file.display()),
            gateway_config::KeySource::Demo => {}
        }
    }
    for cfg in POLICY_CFGS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    let wasm = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|arch| arch == "wasm32");
    let used = config.policy_cfgs();
    // Keys fetched at run time are public keys: a build that verifies none
    // has no use for the store (the config check refuses such a wasm build).
    let usable = |cfg: &&str| match *cfg {
        "runtime_keys" => !built.is_empty(),
        // DPoP proofs are ES256 or EdDSA: a build with neither verifies none
        // (the config check refuses such a wasm build).
        "policy_dpop" => built.iter().any(|alg| matches!(alg, PublicAlg::Es256 | PublicAlg::EdDsa)),
        _ => true,
    };
    for cfg in POLICY_CFGS.into_iter().filter(|cfg| (!wasm || used.contains(cfg)) && usable(cfg)) {
        println!("cargo:rustc-cfg={cfg}");
    }
    // Installing a fetched RSA key computes its Montgomery parameters
    // (crypto-bigint's Karatsuba products of 3072- and 4096-bit numbers),
    // which needs more than the 32 KiB stack of .cargo/config.toml: a
    // module that fetches keys gets 64 KiB (wasm-ld takes the last
    // `stack-size`, and a build script's link arguments come after the
    // target's rustflags).
    if wasm && used.contains(&"runtime_keys") && usable(&"runtime_keys") {
        println!("cargo:rustc-link-arg=-zstack-size={}", 64 << 10);
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("config.rs");
    std::fs::write(&out, config.to_rust()).expect("write config.rs");
}
