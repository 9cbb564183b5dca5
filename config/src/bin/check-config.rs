//! `check-config PATH`: validates a gateway config the way the worker's build
//! will, and prints a one-line summary, or a one-line error and exit code 1.
//! `make worker` runs it first, so a bad config is reported without cargo's
//! build-script noise.
//!
//! `check-config PATH --fixture-json OUT` also writes the config as JSON for
//! test harnesses in other languages (the workerd tests), so that nothing
//! parses TOML twice. It carries the key material, so it refuses any config
//! whose keys are not all inline demo keys: only a public test fixture is
//! ever written out.

use std::path::PathBuf;
use std::process::ExitCode;

use gateway_config::GatewayConfig;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let (path, json_out) = match args.as_slice() {
        [path] => (PathBuf::from(path), None),
        [path, flag, out] if flag == "--fixture-json" => (PathBuf::from(path), Some(PathBuf::from(out))),
        _ => {
            eprintln!("usage: check-config PATH [--fixture-json OUT]");
            return ExitCode::from(2);
        }
    };
    let config = match gateway_config::load(&path) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let issuer = config.issuer.as_deref().unwrap_or("any issuer");
    println!(
        "config: {}: {} route(s), {} key(s), issuer {issuer}, leeway {} s",
        path.display(),
        config.routes.len(),
        config.keys.len() + config.public_keys.len(),
        config.leeway_secs
    );
    if config.has_demo_key() {
        println!("config: WARNING: this build carries the public DEMO key: never deploy it");
    }
    let Some(out) = json_out else { return ExitCode::SUCCESS };
    if !config.keys.iter().all(|k| k.is_demo()) {
        eprintln!(
            "error: {}: --fixture-json writes key material, so every key must be an inline demo key",
            path.display()
        );
        return ExitCode::FAILURE;
    }
    match std::fs::write(&out, fixture_json(&config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}

/// The config as the test harnesses read it: keys as hex, routes with their
/// origin and base path.
fn fixture_json(config: &GatewayConfig) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let keys: Vec<String> = config
        .keys
        .iter()
        .map(|k| {
            let hex: String = k.secret().iter().map(|b| format!("{b:02x}")).collect();
            format!("{{\"kid\":{},\"secret_hex\":\"{hex}\"}}", quote(&k.kid))
        })
        .collect();
    let routes: Vec<String> = config
        .routes
        .iter()
        .map(|r| {
            format!(
                "{{\"aud\":{},\"upstream\":{},\"origin\":{},\"base_path\":{}}}",
                quote(&r.aud),
                quote(&r.upstream),
                quote(r.origin()),
                quote(r.base_path())
            )
        })
        .collect();
    let issuer = config.issuer.as_deref().map_or("null".to_owned(), quote);
    format!(
        "{{\"realm\":{},\"issuer\":{issuer},\"leeway_secs\":{},\"max_token_bytes\":{},\"keys\":[{}],\"routes\":[{}]}}\n",
        quote(&config.realm),
        config.leeway_secs,
        config.max_token_bytes,
        keys.join(","),
        routes.join(",")
    )
}
