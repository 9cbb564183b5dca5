//! Keys fetched at run time: arbitrary bytes as the JWKS document a host
//! hands the module. Nothing panics; a refused document changes nothing;
//! every key the module installs passes an independent reading of the rules
//! (serde_json, base64, p256, ed25519-dalek): no private member anywhere,
//! RSA of 2048 to 4096 bits with an odd modulus and an odd exponent of at
//! least 3, P-256 points on the curve, Ed25519 points not of small order,
//! kids present and unique; and exactly the keys that reading does not
//! skip are installed (skipped: `use` other than `sig`, `key_ops` without
//! `verify`, another `kty` or curve, an `alg` not the key type's), the
//! summary counting the skipped ones.
#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use worker::config::{Config, Issuer, KeyFetch, Policy, Route, SourceKind};
use worker::keys::FetchedKeys;

const NOW: u64 = 1_800_000_000;
const FETCH: KeyFetch<'static> = KeyFetch {
    kind: SourceKind::Jwks,
    url: "https://idp.example/jwks",
    refresh_secs: 600,
    refetch_secs: 60,
    timeout_ms: 5000,
    max_stale_secs: 86_400,
    max_keys: 8,
};
const CONFIG: Config<'static> = Config {
    realm: "fuzz",
    trusted_proxy_hops: 0,
    max_token_bytes: 2048,
    issuers: &[Issuer { iss: None, leeway_secs: 0, keys: &[], audiences: &[], fetch: Some(&FETCH) }],
    routes: &[Route { audience: "a", origin: "http://a", base_path: "" }],
    policy: Policy::NONE,
};
const PRIVATE: [&str; 8] = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

fn bytes(key: &Value, member: &str) -> Vec<u8> {
    let text = key[member].as_str().expect("a string member");
    URL_SAFE_NO_PAD.decode(text).expect("base64url")
}

/// Whether the independent reading skips `key`: not for verifying
/// signatures, or for a signature the module does not verify.
fn skipped(key: &Value) -> bool {
    if key.get("use").is_some_and(|use_| use_ != "sig") {
        return true;
    }
    if let Some(ops) = key.get("key_ops") {
        let ops = ops.as_array().expect("installed a document whose key_ops is no array");
        if !ops.iter().any(|op| op == "verify") {
            return true;
        }
    }
    let alg = match (key["kty"].as_str(), key.get("crv").and_then(Value::as_str)) {
        (Some("RSA"), _) => "RS256",
        (Some("EC"), Some("P-256")) => "ES256",
        (Some("OKP"), Some("Ed25519")) => "EdDSA",
        _ => return true,
    };
    key.get("alg").is_some_and(|named| named != alg)
}

/// The independent reading of one installed key.
fn check_key(key: &Value) {
    match key["kty"].as_str() {
        Some("RSA") => {
            let n = bytes(key, "n");
            let n = &n[n.iter().take_while(|&&b| b == 0).count()..];
            let bits = n.len() * 8 - n[0].leading_zeros() as usize;
            assert!((2048..=4096).contains(&bits) && n[n.len() - 1] % 2 == 1, "installed RSA n of {bits} bits");
            let e = bytes(key, "e");
            let e = &e[e.iter().take_while(|&&b| b == 0).count()..];
            assert!(e.len() <= 8 && e.last().is_some_and(|b| b % 2 == 1), "installed RSA e");
            assert!(e.len() > 1 || e[0] >= 3, "installed RSA e below 3");
        }
        Some("EC") => {
            assert_eq!(key["crv"], "P-256");
            let mut sec1 = vec![4u8];
            sec1.extend(bytes(key, "x"));
            sec1.extend(bytes(key, "y"));
            assert!(p256::PublicKey::from_sec1_bytes(&sec1).is_ok(), "installed EC point off the curve");
        }
        Some("OKP") => {
            assert_eq!(key["crv"], "Ed25519");
            let x: [u8; 32] = bytes(key, "x").try_into().expect("32 bytes");
            let point = ed25519_dalek::VerifyingKey::from_bytes(&x).expect("installed a point that does not decompress");
            assert!(!point.is_weak(), "installed a small-order Ed25519 point");
        }
        other => panic!("installed a key of kty {other:?}"),
    }
    if let Some(alg) = key.get("alg") {
        let expected = match key["kty"].as_str() {
            Some("RSA") => "RS256",
            Some("EC") => "ES256",
            _ => "EdDSA",
        };
        assert_eq!(alg, expected, "installed a key whose alg is not its type's");
    }
}

fuzz_target!(|document: &[u8]| {
    let mut store = Box::new(FetchedKeys::new());
    let mut summary = String::new();
    let seed = br#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"seed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#;
    store.install(0, seed, NOW, &CONFIG, &mut summary).expect("the seed document");
    let before = store.used_len();
    summary.clear();
    let Ok(count) = store.install(0, document, NOW + 1, &CONFIG, &mut summary) else {
        // Refused: the seed's key is still the one installed.
        assert_eq!(store.used_len(), before, "a refused document changed the store");
        return;
    };
    // Installed: the document is strict JSON with a keys array.
    let set: Value = serde_json::from_slice(document).expect("installed a document serde_json refuses");
    let keys = set["keys"].as_array().expect("installed a document without a keys array");
    let (mut kids, mut skips) = (Vec::new(), 0);
    for key in keys {
        for member in PRIVATE {
            assert!(key.get(member).is_none(), "installed a document with private member {member}");
        }
        if skipped(key) {
            skips += 1;
            continue;
        }
        let kid = key["kid"].as_str().expect("every signing key has a kid").to_owned();
        assert!(!kids.contains(&kid), "installed a document with kid {kid} twice");
        kids.push(kid);
        check_key(key);
    }
    assert_eq!(count, kids.len(), "installed {count} keys of {} signing keys", kids.len());
    let plural = if skips == 1 { "" } else { "s" };
    assert_eq!(skips > 0, summary.contains(&format!("; skipped {skips} key{plural}: ")), "{summary}");
});
