//! The proof's pieces: the header
//! and claims readers, the URI comparison, the RFC 7638 thumbprint. Whole
//! proofs, signed with real keys, go through every host in
//! `testkit/conformance/dpop.test.mjs`.

use super::*;
use base64::Engine;

#[test]
fn the_thumbprint_is_rfc_7638s() {
    // RFC 7638 section 3.1 computes it over exactly these members, in this
    // order; checked here against the same JSON hashed by the crate.
    let public = [7u8; 32];
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(public);
    let json = std::format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    let expected =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature::sha256(json.as_bytes()));
    assert_eq!(thumbprint(&Material::Ed25519 { public }).as_slice(), expected.as_bytes());
}

#[test]
fn the_header_must_be_a_dpop_proofs() {
    let jwk = r#"{"kty":"OKP","crv":"Ed25519","x":"abc"}"#;
    let header = |text: &str| read_header(text.as_bytes()).map(|(alg, jwk)| (alg, jwk.to_vec()));
    assert_eq!(
        header(&std::format!(r#"{{"typ":"dpop+jwt","alg":"EdDSA","jwk":{jwk}}}"#)),
        Some((Alg::EdDsa, jwk.as_bytes().to_vec()))
    );
    for bad in [
        std::format!(r#"{{"typ":"JWT","alg":"EdDSA","jwk":{jwk}}}"#),
        std::format!(r#"{{"typ":"dpop+jwt","alg":"HS256","jwk":{jwk}}}"#),
        std::format!(r#"{{"typ":"dpop+jwt","alg":"none","jwk":{jwk}}}"#),
        r#"{"typ":"dpop+jwt","alg":"EdDSA"}"#.to_owned(),
        std::format!(r#"{{"typ":"dpop+jwt","alg":"EdDSA","jwk":{jwk},"crit":["x"]}}"#),
        std::format!(r#"{{"typ":"dpop+jwt","alg":"EdDSA","alg":"ES256","jwk":{jwk}}}"#),
        std::format!(r#"{{"typ":"dpop+jwt","alg":"EdDSA","jwk":{jwk},"\u006awk":{jwk}}}"#),
    ] {
        assert_eq!(header(&bad), None, "{bad}");
    }
}

#[test]
fn the_claims_are_read_once_each_and_unescaped() {
    let good = r#"{"jti":"j1","htm":"GET","htu":"https://gw/x","iat":1800000000,"ath":"abc"}"#;
    let claims = read_claims(good.as_bytes()).expect("read");
    assert_eq!((claims.jti, claims.htm, claims.iat), (&b"j1"[..], &b"GET"[..], 1_800_000_000));
    for bad in [
        r#"{"htm":"GET","htu":"https://gw/x","iat":1800000000,"ath":"abc"}"#,
        r#"{"jti":"","htm":"GET","htu":"https://gw/x","iat":1800000000,"ath":"abc"}"#,
        r#"{"jti":"j","htm":"G\u0045T","htu":"https://gw/x","iat":1800000000,"ath":"abc"}"#,
        r#"{"jti":"j","htm":"GET","htm":"POST","htu":"https://gw/x","iat":1800000000,"ath":"abc"}"#,
        r#"{"jti":"j","htm":"GET","htu":"https://gw/x","iat":"1800000000","ath":"abc"}"#,
        r#"{"jti":"j","htm":"GET","htu":"https://gw/x","iat":1.8e9,"ath":"abc"}"#,
        r#"{"jti":"j","htm":"GET","htu":"https://gw/x","iat":1800000000}"#,
    ] {
        assert!(read_claims(bad.as_bytes()).is_none(), "{bad}");
    }
}

#[test]
fn htu_is_the_request_uri_without_query_case_or_default_port() {
    let mut scratch = std::vec![0u8; 4096];
    let request = Request {
        method: "GET",
        scheme: Scheme::Https,
        authority: b"API.example:443",
        path: b"/orders/1",
        token: b"t",
    };
    for (htu, same) in [
        ("https://api.example/orders/1", true),
        ("HTTPS://api.EXAMPLE:443/orders/1?x=1#f", true),
        ("https://api.example/orders/./1", true),
        ("https://api.example/%6Frders/1", true),
        ("http://api.example/orders/1", false),
        ("https://api.example:8443/orders/1", false),
        ("https://evil.example/orders/1", false),
        ("https://api.example/orders/2", false),
        ("https://api.example/orders/1/", false),
        ("https://api.example", false),
    ] {
        let mut arena = crate::arena::Arena::new(&mut scratch);
        assert_eq!(same_uri(htu.as_bytes(), &request, &mut arena), Ok(same), "{htu}");
    }
}

#[test]
fn nonces_last_their_period_and_the_next_and_are_the_keys() {
    let config =
        crate::config::DpopNonce { secs: 60, key: crate::jose::signature::tests::keyed(b"nonce-key") };
    let other =
        crate::config::DpopNonce { secs: 60, key: crate::jose::signature::tests::keyed(b"another-key") };
    let now = 1_800_000_030;
    let issued = nonce(&config, now);
    assert!(issued.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    // Issued the same way at any time of its period, by any instance.
    assert_eq!(nonce(&config, now - 30), issued);
    assert_ne!(nonce(&config, now + 30), issued);
    assert!(nonce_is_fresh(&config, &issued, now));
    assert!(nonce_is_fresh(&config, &issued, now + 60), "through the next period");
    assert!(!nonce_is_fresh(&config, &issued, now + 120), "not after it");
    assert!(!nonce_is_fresh(&config, &issued, now - 60), "not before it was issued");
    assert!(!nonce_is_fresh(&other, &issued, now), "another key's");
    let mut altered = issued;
    altered[NONCE_LEN - 1] ^= 1;
    assert!(!nonce_is_fresh(&config, &altered, now));
    assert!(!nonce_is_fresh(&config, &issued[..NONCE_LEN - 1], now));
    // The period in front, the HMAC behind: a nonce of another period
    // with this one's number is not this one's.
    let mut spliced = nonce(&config, now - 600);
    spliced[..5].copy_from_slice(&issued[..5]);
    assert!(!nonce_is_fresh(&config, &spliced, now));
}

/// RFC 7638 section 3.1's own example: an RSA key and its thumbprint.
#[cfg(feature = "rs256")]
#[test]
fn the_rsa_thumbprint_is_rfc_7638s_example() {
    let jwk = br#"{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}"#;
    let mut modulus = [0u8; MODULUS_BYTES];
    let (alg, material) = jwks::read_public_key(jwk, PROOF_ALGS, &mut modulus).expect("a sound RSA key");
    assert_eq!(alg, Alg::Rs256);
    assert_eq!(thumbprint(&material).as_slice(), b"NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs");
}
