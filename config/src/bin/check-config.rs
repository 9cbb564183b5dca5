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
    let issuers: Vec<String> = config
        .issuers
        .iter()
        .map(|i| {
            let mut bindings = Vec::new();
            if let Some(dpop) = i.dpop {
                bindings.push(if dpop.required { "DPoP required" } else { "DPoP accepted" });
            }
            if let Some(certificate) = i.certificate_bound {
                bindings.push(if certificate.required {
                    "certificate binding required"
                } else {
                    "certificate binding accepted"
                });
            }
            let bindings: String = bindings.iter().map(|b| format!(", {b}")).collect();
            format!("{} (leeway {} s{bindings})", i.iss.as_deref().unwrap_or("any issuer"), i.leeway_secs)
        })
        .collect();
    let policy = &config.policy;
    println!(
        "config: {}: {} route(s), {} key(s), issuer {}, {} rule(s){}{}",
        path.display(),
        config.routes.len(),
        config.hs256_keys().count() + config.public_keys().count(),
        issuers.join(", "),
        policy.rules.len(),
        if policy.cors.is_some() { ", CORS" } else { "" },
        if policy.claim_headers.is_empty() {
            String::new()
        } else {
            format!(", {} claim header(s)", policy.claim_headers.len())
        },
    );
    for limit in &policy.limits.table {
        println!(
            "config: limit {}: {} per {} s, {} at once, by {}",
            limit.name,
            limit.requests,
            limit.per_secs,
            limit.burst,
            match limit.by {
                gateway_config::policy::LimitKeyConfig::Subject => "subject".to_owned(),
                gateway_config::policy::LimitKeyConfig::Claim(i) =>
                    format!("claim {}", policy.claims.get(usize::from(i)).map_or("?", String::as_str)),
                gateway_config::policy::LimitKeyConfig::ClientAddress => "client address".to_owned(),
                gateway_config::policy::LimitKeyConfig::Route => "route".to_owned(),
                gateway_config::policy::LimitKeyConfig::ProofId => "DPoP proof (jti)".to_owned(),
            }
        );
    }
    for warning in &config.warnings {
        println!("config: warning: {warning}");
    }
    if config.has_demo_key() {
        println!("config: WARNING: this build carries the public DEMO key: never deploy it");
    }
    let Some(out) = json_out else { return ExitCode::SUCCESS };
    if !config.hs256_keys().all(|k| k.is_demo()) || config.public_keys().next().is_some() {
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

/// The config as the test harnesses read it: the first issuer's keys as
/// hex (and every issuer's, with its `iss` and leeway), routes with their
/// origin and base path.
fn fixture_json(config: &GatewayConfig) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let keys_of = |keys: &[gateway_config::KeyConfig]| -> String {
        let keys: Vec<String> = keys
            .iter()
            .map(|k| {
                let hex: String = k.secret().iter().map(|b| format!("{b:02x}")).collect();
                format!("{{\"kid\":{},\"secret_hex\":\"{hex}\"}}", quote(&k.kid))
            })
            .collect();
        format!("[{}]", keys.join(","))
    };
    let issuers: Vec<String> = config
        .issuers
        .iter()
        .map(|i| {
            format!(
                "{{\"iss\":{},\"leeway_secs\":{},\"keys\":{}}}",
                i.iss.as_deref().map_or("null".to_owned(), quote),
                i.leeway_secs,
                keys_of(&i.keys)
            )
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
    let first = config.issuers.first();
    format!(
        "{{\"realm\":{},\"issuer\":{},\"leeway_secs\":{},\"max_token_bytes\":{},\"keys\":{},\"issuers\":[{}],\"routes\":[{}]}}\n",
        quote(&config.realm),
        config.first_iss().map_or("null".to_owned(), quote),
        first.map_or(0, |i| i.leeway_secs),
        config.max_token_bytes,
        first.map_or("[]".to_owned(), |i| keys_of(&i.keys)),
        issuers.join(","),
        routes.join(",")
    )
}
