use std::string::String;

use super::*;
use crate::config::{KeyFetch, Policy, Route, SourceKind};
use crate::keys::{Alg, HmacKey, Hs256Key};

const NOW: u64 = 1_800_000_000;
/// A JWKS source (the decide tests fetch from it too).
pub(crate) const FETCH: KeyFetch<'static> = KeyFetch {
    kind: SourceKind::Jwks,
    url: "http://127.0.0.1:9/jwks",
    refresh_secs: 600,
    refetch_secs: 60,
    timeout_ms: 5000,
    max_stale_secs: 3600,
    max_keys: 4,
};
const PINNED: VerifyingKey<'static> = VerifyingKey::Hs256(Hs256Key {
    kid: "pinned",
    secret: b"0123456789abcdef0123456789abcdef",
    hmac: HmacKey::UNKEYED,
});
const ISSUERS: &[Issuer<'static>] = &[
    Issuer {
        iss: Some("https://a.example"),
        leeway_secs: 0,
        keys: &[PINNED],
        audiences: &[],
        fetch: Some(&FETCH),
    },
    Issuer { iss: Some("https://b.example"), leeway_secs: 0, keys: &[], audiences: &[], fetch: Some(&FETCH) },
    Issuer { iss: Some("https://c.example"), leeway_secs: 0, keys: &[PINNED], audiences: &[], fetch: None },
];
const CONFIG: Config<'static> = Config {
    realm: "gw",
    trusted_proxy_hops: 0,
    max_token_bytes: 256,
    issuers: ISSUERS,
    routes: &[Route { audience: "a", origin: "http://a", base_path: "" }],
    policy: Policy::NONE,
};

/// The test JWKS: RFC 7515's RSA and P-256 keys and RFC 8037's Ed25519 key.
fn jwks() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../testkit/keys/idp-jwks.json"))
        .expect("the fixture JWKS");
    serde_json::from_str(&text).expect("JSON")
}

/// The document with only the keys whose kid passes `keep`, kids renamed by `rename`.
fn document(keep: &[&str], rename: &[(&str, &str)]) -> String {
    let mut set = jwks();
    let keys = set["keys"].as_array_mut().expect("keys");
    keys.retain(|k| k["use"] != "enc" && keep.contains(&k["kid"].as_str().unwrap_or("")));
    for key in keys.iter_mut() {
        if let Some((_, to)) = rename.iter().find(|(from, _)| key["kid"] == *from) {
            key["kid"] = (*to).into();
        }
    }
    set.to_string()
}

fn install(
    store: &mut FetchedKeys,
    issuer: usize,
    document: &str,
    now: u64,
) -> Result<(usize, String), String> {
    let mut summary = String::new();
    store
        .install(issuer, document.as_bytes(), now, &CONFIG, &mut summary)
        .map(|n| (n, summary))
        .map_err(|e| e.to_string())
}

fn header(alg: Alg, kid: &str) -> TokenHeader<'_> {
    TokenHeader { alg, kid: Some(kid) }
}

fn selected(
    store: &FetchedKeys,
    issuer: usize,
    token: TokenHeader<'_>,
    now: u64,
) -> Result<String, Rejection> {
    store.select(&token, issuer, &ISSUERS[issuer], now).map(|key| key.kid().into())
}

#[test]
fn nothing_installed_fails_closed_and_compiled_keys_still_verify() {
    let store = std::boxed::Box::new(FetchedKeys::new());
    assert_eq!(selected(&store, 0, header(Alg::Hs256, "pinned"), NOW), Ok("pinned".into()));
    #[cfg(feature = "rs256")]
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "rsa-a2"), NOW), Err(Rejection::KeysUnavailable));
    assert_eq!(
        store.select(&TokenHeader { alg: Alg::Hs256, kid: None }, 0, &ISSUERS[0], NOW).map(|_| ()),
        Err(Rejection::KeyIdRequired)
    );
    // An issuer that fetches nothing: its compiled keys, as before.
    assert_eq!(selected(&store, 2, header(Alg::Hs256, "other"), NOW), Err(Rejection::UnknownKey));
    assert_eq!(
        store.select(&TokenHeader { alg: Alg::Hs256, kid: None }, 2, &ISSUERS[2], NOW).map(|k| k.kid()),
        Ok("pinned")
    );
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn installs_replaces_and_expires_an_issuers_keys() {
    let mut store = std::boxed::Box::new(FetchedKeys::new());
    let (count, summary) =
        install(&mut store, 0, &document(&["rsa-a2", "ec-a3", "ed-8037"], &[]), NOW).expect("valid");
    assert_eq!(count, 3);
    assert_eq!(summary, r#"installed "rsa-a2" "ec-a3" "ed-8037": 3 keys for issuer 0"#);
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "rsa-a2"), NOW), Ok("rsa-a2".into()));
    assert_eq!(selected(&store, 0, header(Alg::Es256, "ec-a3"), NOW), Ok("ec-a3".into()));
    assert_eq!(selected(&store, 0, header(Alg::EdDsa, "ed-8037"), NOW), Ok("ed-8037".into()));
    // The header must agree with the key; a kid of another issuer is unknown.
    assert_eq!(selected(&store, 0, header(Alg::Es256, "rsa-a2"), NOW), Err(Rejection::UnsupportedAlgorithm));
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "nope"), NOW), Err(Rejection::UnknownKey));
    assert_eq!(install(&mut store, 1, &document(&["ec-a3"], &[("ec-a3", "b-key")]), NOW).map(|r| r.0), Ok(1));
    assert_eq!(selected(&store, 0, header(Alg::Es256, "b-key"), NOW), Err(Rejection::UnknownKey));
    assert_eq!(selected(&store, 1, header(Alg::Es256, "b-key"), NOW), Ok("b-key".into()));
    // Rotation: a new document replaces issuer 0's keys, issuer 1's stay.
    let rotated = document(&["rsa-a2"], &[("rsa-a2", "rsa-next")]);
    assert_eq!(install(&mut store, 0, &rotated, NOW + 10).map(|r| r.0), Ok(1));
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "rsa-a2"), NOW + 10), Err(Rejection::UnknownKey));
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "rsa-next"), NOW + 10), Ok("rsa-next".into()));
    assert_eq!(selected(&store, 1, header(Alg::Es256, "b-key"), NOW + 10), Ok("b-key".into()));
    assert_eq!(store.used, 2);
    // Stale after max_stale_secs: fails closed, per issuer.
    let late = NOW + 10 + 3601;
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "rsa-next"), late), Err(Rejection::KeysUnavailable));
    assert_eq!(selected(&store, 0, header(Alg::Hs256, "pinned"), late), Ok("pinned".into()));
    assert_eq!(selected(&store, 1, header(Alg::Es256, "b-key"), NOW + 3600), Ok("b-key".into()));
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn a_refused_document_changes_nothing() {
    let mut store = std::boxed::Box::new(FetchedKeys::new());
    install(&mut store, 0, &document(&["rsa-a2", "ec-a3"], &[]), NOW).expect("valid");
    let before = (
        store.used,
        store.installed_at,
        store.slots[..store.used].iter().map(|s| s.kid().to_vec()).collect::<std::vec::Vec<_>>(),
    );
    let mut bad = jwks();
    bad["keys"][1]["x"] = "AQAB".into();
    for (document, expected) in [
        (bad.to_string(), "JWKS key 1 (kid \"ec-a3\") has a \"x\" of 3 bytes, not 32 bytes"),
        ("not json".into(), "JWKS document is not a JWKS document"),
        (r#"{"keys":[]}"#.into(), "JWKS document holds no signing key this gateway verifies"),
        (
            document(&["rsa-a2", "ec-a3", "ed-8037"], &[("ec-a3", "rsa-a2")]),
            "has a kid another key of the document has",
        ),
    ] {
        let line = install(&mut store, 0, &document, NOW + 5).expect_err(expected);
        assert!(line.contains(expected), "{expected}: {line}");
        let after = (
            store.used,
            store.installed_at,
            store.slots[..store.used].iter().map(|s| s.kid().to_vec()).collect::<std::vec::Vec<_>>(),
        );
        assert_eq!(after, before, "{expected}");
    }
    assert_eq!(
        install(&mut store, 2, &document(&["rsa-a2"], &[]), NOW),
        Err("issuer 2 fetches no keys".into())
    );
    assert_eq!(
        install(&mut store, 9, &document(&["rsa-a2"], &[]), NOW),
        Err("issuer 9 fetches no keys".into())
    );
    // More keys than the issuer's max_keys.
    let mut many = jwks();
    let keys = many["keys"].as_array_mut().expect("keys");
    keys.retain(|k| k["use"] != "enc");
    let extra: std::vec::Vec<_> = (0..3)
        .map(|i| {
            let mut k = keys[0].clone();
            k["kid"] = std::format!("extra-{i}").into();
            k
        })
        .collect();
    keys.extend(extra);
    let line = install(&mut store, 0, &many.to_string(), NOW).expect_err("six keys");
    assert!(line.contains("holds more than 4 signing keys"), "{line}");
}

#[cfg(feature = "rs256")]
#[test]
fn a_fetched_key_with_a_compiled_kid_is_ignored() {
    let mut store = std::boxed::Box::new(FetchedKeys::new());
    let (count, summary) =
        install(&mut store, 0, &document(&["rsa-a2"], &[("rsa-a2", "pinned")]), NOW).expect("valid");
    assert_eq!(count, 0);
    assert!(summary.ends_with("0 keys for issuer 0; 1 with a compiled kid ignored (pinned)"), "{summary}");
    // The compiled HS256 key answers for the kid; an RS256 header does not reach the fetched key.
    assert_eq!(selected(&store, 0, header(Alg::Hs256, "pinned"), NOW), Ok("pinned".into()));
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "pinned"), NOW), Err(Rejection::UnsupportedAlgorithm));
}

#[cfg(feature = "rs256")]
#[test]
fn installed_keys_verify_as_the_same_keys_compiled_in() {
    // RFC 7515 appendix A.2: the RSA key and its signed example.
    let mut store = std::boxed::Box::new(FetchedKeys::new());
    install(&mut store, 0, &document(&["rsa-a2"], &[]), NOW).expect("valid");
    let key = store.select(&header(Alg::Rs256, "rsa-a2"), 0, &ISSUERS[0], NOW).expect("installed");
    let token = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw";
    let parts = crate::jose::jws::split(token.as_bytes()).expect("three parts");
    assert_eq!(crate::jose::signature::verify_jws(&key, parts.signing_input, parts.signature), Ok(()));
    let mut forged = String::from(token);
    forged.pop();
    forged.push('x');
    let parts = crate::jose::jws::split(forged.as_bytes()).expect("three parts");
    assert!(crate::jose::signature::verify_jws(&key, parts.signing_input, parts.signature).is_err());
}

#[test]
fn the_store_is_one_region_without_pointers() {
    let store = std::boxed::Box::new(FetchedKeys::new());
    assert_eq!(store.used_len(), core::mem::offset_of!(FetchedKeys, slots));
    // Copied bytes are the same keys: every field is plain data.
    #[cfg(feature = "rs256")]
    {
        let mut store = store;
        install(&mut store, 0, &document(&["rsa-a2"], &[]), NOW).expect("valid");
        let mut copy = std::boxed::Box::new(FetchedKeys::new());
        let len = store.used_len();
        // SAFETY-free check: compare through the public lookup after a
        // field-by-field copy of the used prefix.
        copy.installed_at = store.installed_at;
        copy.used = store.used;
        copy.generation = store.generation;
        copy.slots[..store.used].copy_from_slice(&store.slots[..store.used]);
        assert!(len > core::mem::offset_of!(FetchedKeys, slots));
        assert_eq!(selected(&copy, 0, header(Alg::Rs256, "rsa-a2"), NOW), Ok("rsa-a2".into()));
    }
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn keys_the_module_does_not_verify_are_skipped_and_named_and_the_others_installed() {
    let mut store = std::boxed::Box::new(FetchedKeys::new());
    let mut set = jwks();
    let keys = set["keys"].as_array_mut().expect("keys");
    let p384 = serde_json::json!({"kty": "EC", "crv": "P-384", "kid": "p384", "use": "sig", "alg": "ES384",
        "x": "g1D3n0E8MUu1Rqa-fGKCfWNfeeKbPVBsErRLIjJDpQtBAnDd3HEv8eaMjNvNjn5p",
        "y": "aT69zNAl0jOlRjKjLRk6EBfBdPEiPbsAW5i3fQfWTWzCwZ7ChDdMQ5a8nIeIEPUW"});
    let mut encrypting = keys[0].clone();
    let encrypting_key = encrypting.as_object_mut().expect("a key");
    encrypting_key.remove("use");
    encrypting_key.remove("alg");
    encrypting_key.insert("kid".into(), "enc-ops".into());
    encrypting_key.insert("key_ops".into(), serde_json::json!(["encrypt"]));
    keys.push(p384.clone());
    keys.push(encrypting);
    let (count, summary) = install(&mut store, 0, &set.to_string(), NOW).expect("the others install");
    assert_eq!(count, 3);
    assert_eq!(
        summary,
        r#"installed "rsa-a2" "ec-a3" "ed-8037": 3 keys for issuer 0; skipped 3 keys: key 3 (kid "enc-skipped"): use "enc" is not "sig", key 4 (kid "p384"): curve "P-384" is not verified by this gateway, key 5 (kid "enc-ops"): key_ops does not include "verify""#
    );
    assert_eq!(selected(&store, 0, header(Alg::Es256, "ec-a3"), NOW), Ok("ec-a3".into()));
    assert_eq!(selected(&store, 0, header(Alg::Rs256, "enc-ops"), NOW), Err(Rejection::UnknownKey));
    assert_eq!(selected(&store, 0, header(Alg::Es256, "p384"), NOW), Err(Rejection::UnknownKey));
    // Many skipped keys: the first four named, the rest counted.
    let keys = set["keys"].as_array_mut().expect("keys");
    for i in 0..4 {
        let mut more = p384.clone();
        more["kid"] = std::format!("p384-{i}").into();
        keys.push(more);
    }
    let (_, summary) = install(&mut store, 0, &set.to_string(), NOW).expect("valid");
    assert!(
        summary
            .ends_with(r#"key 6 (kid "p384-0"): curve "P-384" is not verified by this gateway and 3 more"#),
        "{summary}"
    );
    assert!(summary.contains("; skipped 7 keys: "), "{summary}");
}

#[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
#[test]
fn a_document_cut_short_is_refused_as_json_at_every_cut() {
    let mut store = std::boxed::Box::new(FetchedKeys::new());
    let whole = document(&["rsa-a2", "ec-a3", "ed-8037"], &[]);
    for cut in 1..whole.len() {
        let line = install(&mut store, 0, &whole[..cut], NOW).expect_err("cut short");
        assert_eq!(
            line,
            std::format!("JWKS document is not a JWKS document: its JSON is cut short after {cut} bytes")
        );
    }
    assert_eq!(install(&mut store, 0, &whole, NOW).map(|r| r.0), Ok(3));
}
