//! Compiles the gateway configuration into the worker.
//!
//! Reads `GATEWAY_CONFIG` (default: `gateway.toml` at the workspace root),
//! validates it with `gateway-config`, and writes `$OUT_DIR/config.rs`. A bad
//! config stops the build with one line that names the file and the entry.

use std::path::PathBuf;

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

    let config = match gateway_config::load(&path) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
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
