//! The config loader (`gateway_config::parse`, run by `worker/build.rs`) on
//! arbitrary text, with a fake environment and a config folder that does not
//! exist (so relative `file` keys fail without touching the disk).
#![no_main]

use std::path::Path;

use gateway_config::{MAX_LEEWAY_SECS, MIN_KEY_BYTES};
use libfuzzer_sys::fuzz_target;

/// Variables whose name starts with `K` hold a 40-byte key; `S` a short one.
fn fake_env(var: &str) -> Option<String> {
    match var.as_bytes().first() {
        Some(b'K') => Some("k".repeat(40)),
        Some(b'S') => Some("short".into()),
        _ => None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    // An absolute `file` could name a device (/dev/zero, /dev/stdin): the
    // config is trusted build input, so skip those rather than hang.
    if text.contains("/dev") || text.contains("/proc") || text.contains("/sys") {
        return;
    }
    match gateway_config::parse(text, Path::new("/nonexistent-fuzz-config/gateway.toml"), &fake_env) {
        Ok(config) => {
            assert!(!config.issuers.is_empty() && !config.routes.is_empty());
            for issuer in &config.issuers {
                assert!(issuer.leeway_secs <= MAX_LEEWAY_SECS);
                assert!(!issuer.keys.is_empty() || !issuer.public_keys.is_empty());
                assert!(issuer.keys.iter().all(|k| k.secret().len() >= MIN_KEY_BYTES));
                for (i, k) in issuer.keys.iter().enumerate() {
                    assert!(issuer.keys[..i].iter().all(|o| o.kid != k.kid), "duplicate kid");
                }
            }
            let sorted = config.routes.windows(2).all(|w| w[0].aud.as_bytes() < w[1].aud.as_bytes());
            assert!(sorted, "routes sorted, without duplicates");
            let visible = |s: &str| {
                !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\')
            };
            assert!(config.routes.iter().all(|r| visible(&r.aud)));
            // Upstreams: http:// or https://, a host, no trailing slash, only
            // URL characters (no quotes, backslashes, query or fragment).
            assert!(config.routes.iter().all(|r| {
                let rest = r.upstream.strip_prefix("http://").or_else(|| r.upstream.strip_prefix("https://"));
                rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
                    && !r.upstream.ends_with('/')
                    && r.upstream
                        .bytes()
                        .all(|b| (0x21..=0x7e).contains(&b) && !b"\"\\?#<>^`{|}".contains(&b))
            }));
            assert!(config.hs256_keys().all(|k| visible(&k.kid)));
            assert!(config.issuers.iter().all(|i| i.iss.as_deref().is_none_or(visible)));
            assert!(config.realm.bytes().all(|b| (0x20..=0x7e).contains(&b) && b != b'"' && b != b'\\'));
            // Every header the policy names is a lower-case token, none twice.
            let headers: Vec<&str> = config.policy.claim_headers.iter().map(|h| h.header.as_str()).collect();
            assert!(headers.iter().all(|h| h.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')));
            assert!(headers.iter().enumerate().all(|(i, h)| !headers[..i].contains(h)));
            let rust = config.to_rust();
            assert!(rust.contains("pub static COMPILED"));
        }
        Err(e) => {
            // Errors are one line that names the file.
            let line = e.to_string();
            assert!(line.starts_with("/nonexistent-fuzz-config/gateway.toml: "), "{line}");
            assert!(!line.contains('\n'), "a multi-line error: {line:?}");
        }
    }
});
