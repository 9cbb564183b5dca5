//! The proof's pieces: base64url against the `base64` crate, the header
//! and claims readers, the URI comparison, the RFC 7638 thumbprint. Whole
//! proofs, signed with real keys, go through every host in
//! `testkit/conformance/dpop.test.mjs`.

use super::*;
use base64::Engine;

#[test]
fn base64url_matches_the_base64_crate() {
    for len in 0..40 {
        let bytes: std::vec::Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
        let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
        let mut out = std::vec![0u8; expected.len()];
        encode(&bytes, &mut out);
        assert_eq!(out, expected.as_bytes(), "{len}");
    }
}

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
