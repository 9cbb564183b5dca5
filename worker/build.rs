//! Compiles the gateway configuration into the worker.
//!
//! Reads `GATEWAY_CONFIG` (default: `gateway.toml` at the workspace root),
//! validates it with `gateway-config`, and writes `$OUT_DIR/config.rs`. A bad
//! config stops the build with one line that names the file and the entry.

use std::path::PathBuf;

use gateway_config::PublicAlg;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let path = match std::env::var_os("GATEWAY_CONFIG") {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            if p.is_absolute() { p } else { manifest.join("..").join(p) }
        }
        _ => manifest.join("../gateway.toml"),
    };
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
    for key in &config.public_keys {
        println!("cargo:rerun-if-changed={}", key.file.display());
    }
    for key in &config.keys {
        match &key.source {
            gateway_config::KeySource::Env(var) => println!("cargo:rerun-if-env-changed={var}"),
            gateway_config::KeySource::File(file) => println!("cargo:rerun-if-changed={}", file.display()),
            gateway_config::KeySource::Demo => {}
        }
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("config.rs");
    std::fs::write(&out, config.to_rust()).expect("write config.rs");
}
