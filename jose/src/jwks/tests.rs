use super::*;

const ALL: Limits = Limits { max_keys: 8, built: &[Alg::Rs256, Alg::Es256, Alg::EdDsa] };

fn fixture() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../testkit/keys/idp-jwks.json"))
        .expect("the fixture JWKS");
    serde_json::from_str(&text).expect("JSON")
}

/// The kids and algorithms `document` yields, or the error line.
fn read_all(
    document: &str,
    limits: &Limits,
) -> Result<std::vec::Vec<(std::string::String, Alg)>, std::string::String> {
    let mut keys = std::vec::Vec::new();
    read(document.as_bytes(), limits, |entry| {
        if let Entry::Key(jwk) = entry {
            keys.push((jwk.kid.into(), jwk.material.alg()));
        }
        Ok(())
    })
    .map(|_| keys)
    .map_err(|e| std::format!("{e}"))
}

/// The fixture with key `i` changed by `edit`.
fn with_key(
    i: usize,
    edit: impl FnOnce(&mut serde_json::Map<std::string::String, serde_json::Value>),
) -> std::string::String {
    let mut jwks = fixture();
    edit(jwks["keys"][i].as_object_mut().expect("an object"));
    jwks.to_string()
}

#[test]
fn reads_every_signing_key_and_skips_encryption_keys() {
    let keys = read_all(&fixture().to_string(), &ALL).expect("valid");
    let expected = [("rsa-a2", Alg::Rs256), ("ec-a3", Alg::Es256), ("ed-8037", Alg::EdDsa)];
    assert_eq!(keys, expected.map(|(k, a)| (k.into(), a)));
}

#[test]
fn the_material_is_what_the_jwk_says() {
    let mut rsa = None;
    read(fixture().to_string().as_bytes(), &ALL, |entry| {
        if let Entry::Key(Jwk { material: Material::Rsa { modulus, exponent }, .. }) = entry {
            rsa = Some((modulus.len(), modulus[0] != 0, exponent));
        }
        Ok(())
    })
    .expect("valid");
    assert_eq!(rsa, Some((256, true, 65537)));
}

#[test]
fn member_values_are_decoded_before_they_are_read() {
    let escaped = with_key(0, |k| {
        k.insert("kid".into(), "rsa-a2-escaped".into());
    })
    .replace("rsa-a2-escaped", "rsa\\u002da2-escaped")
    .replace("\"kty\":\"RSA\"", "\"kty\":\"\\u0052SA\"");
    let keys = read_all(&escaped, &ALL).expect("valid");
    assert_eq!(keys[0].0, "rsa-a2-escaped");
}

#[test]
fn a_private_member_in_any_key_refuses_the_document() {
    for member in PRIVATE_MEMBERS {
        for key in [0, 3] {
            let line = read_all(
                &with_key(key, |k| {
                    k.insert(member.into(), "AQAB".into());
                }),
                &ALL,
            )
            .expect_err("leaked");
            assert!(line.contains("the document leaked a private key"), "{member} in {key}: {line}");
            assert!(line.starts_with(&std::format!("key {key} ")), "{line}");
        }
    }
    // Found before any other fault of the document.
    let two_faults = with_key(0, |k| {
        k.insert("n".into(), "AQAB".into());
    });
    let two_faults = serde_json::from_str::<serde_json::Value>(&two_faults).expect("JSON");
    let mut two_faults = two_faults;
    two_faults["keys"][2]["d"] = "x".into();
    assert!(read_all(&two_faults.to_string(), &ALL).expect_err("leaked").contains("leaked"));
}

#[test]
fn refuses_keys_the_gateway_cannot_trust_naming_the_key() {
    let n_1024 = "1".repeat(0) + &"_".repeat(170) + "w";
    for (edit, expected) in [
        (
            with_key(0, |k| {
                k.insert("n".into(), n_1024.clone().into());
            }),
            "key 0 (kid \"rsa-a2\") is a 1024-bit RSA key",
        ),
        (
            with_key(0, |k| {
                k.insert("e".into(), "Ag".into());
            }),
            "has RSA exponent 2; it must be odd",
        ),
        (
            with_key(0, |k| {
                k.insert("e".into(), "AQ".into());
            }),
            "has RSA exponent 1; it must be odd and at least 3",
        ),
        (
            with_key(0, |k| {
                k.insert("e".into(), "AQAAAAAAAAAB".into());
            }),
            "wider than 64 bits",
        ),
        (
            with_key(0, |k| {
                k.remove("n");
            }),
            "has no \"n\"",
        ),
        (
            with_key(0, |k| {
                k.insert("n".into(), "a+b".into());
            }),
            "\"n\" that is not base64url",
        ),
        (
            with_key(0, |k| {
                k.insert("n".into(), 7.into());
            }),
            "\"n\" that is not one string",
        ),
        (
            with_key(0, |k| {
                k.insert("alg".into(), "ES256".into());
            }),
            "has alg \"ES256\", but the key is for RS256",
        ),
        (
            with_key(0, |k| {
                k.remove("kid");
            }),
            "key 0 has no kid",
        ),
        (
            with_key(0, |k| {
                k.insert("kid".into(), "a b".into());
            }),
            "has a kid that is longer",
        ),
        (
            with_key(0, |k| {
                k.insert("kid".into(), "ec-a3".into());
            }),
            "key 1 (kid \"ec-a3\") has a kid another key",
        ),
        (
            with_key(1, |k| {
                k.insert("y".into(), k["x"].clone());
            }),
            "is not a point on P-256",
        ),
        (
            with_key(1, |k| {
                k.insert("x".into(), "AQAB".into());
            }),
            "has a \"x\" of 3 bytes, not 32 bytes",
        ),
        (
            with_key(2, |k| {
                k.insert("x".into(), "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into());
            }),
            "small order",
        ),
        (
            with_key(2, |k| {
                k.remove("kty");
            }),
            "has no kty",
        ),
        (
            with_key(1, |k| {
                k.remove("crv");
            }),
            "key 1 (kid \"ec-a3\") has no \"crv\"",
        ),
        (
            with_key(0, |k| {
                k.insert("alg".into(), "EdDSA".into());
            }),
            "has alg \"EdDSA\", but the key is for RS256",
        ),
    ] {
        let line = read_all(&edit, &ALL).expect_err(expected);
        assert!(line.contains(expected), "{expected}: {line}");
        assert!(!line.contains('\n'));
    }
}

#[test]
fn refuses_documents_that_are_not_key_sets() {
    for (document, expected) in [
        ("", "is not a JWKS document"),
        ("{\"keys\":[", "is not a JWKS document"),
        ("[]", "an object with a \"keys\" array"),
        ("{\"kids\":[]}", "an object with a \"keys\" array"),
        ("{\"keys\":{}}", "an object with a \"keys\" array"),
        ("{\"keys\":[1]}", "an object with a \"keys\" array"),
        ("{\"keys\":[]}", "holds no signing key"),
        ("{\"keys\":[],\"keys\":[]}", "an object with a \"keys\" array"),
        ("{\"keys\":[]} x", "not strict JSON"),
    ] {
        assert!(read_all(document, &ALL).expect_err(document).contains(expected), "{document}");
    }
    let huge = std::format!("{{\"keys\":[],\"pad\":\"{}\"}}", "a".repeat(MAX_DOCUMENT_BYTES));
    assert!(read_all(&huge, &ALL).expect_err("huge").contains("at most 65536 bytes"));
}

#[test]
fn limits_the_keys_and_the_algorithms() {
    let two = Limits { max_keys: 2, ..ALL };
    assert!(read_all(&fixture().to_string(), &two).expect_err("three").contains("more than 2 signing keys"));
    // A module built without an algorithm skips its keys.
    let rsa_only = Limits { built: &[Alg::Rs256], ..ALL };
    let mut entries = std::vec::Vec::new();
    let count = read(fixture().to_string().as_bytes(), &rsa_only, |entry| {
        entries.push(match entry {
            Entry::Key(jwk) => std::format!("read {}", jwk.kid),
            Entry::Skipped(skip) => std::format!("{skip}"),
        });
        Ok(())
    });
    assert_eq!(count, Ok(1));
    assert_eq!(
        entries,
        [
            "read rsa-a2",
            r#"key 1 (kid "ec-a3"): ES256 is not verified by this build"#,
            r#"key 2 (kid "ed-8037"): EdDSA is not verified by this build"#,
            r#"key 3 (kid "enc-skipped"): use "enc" is not "sig""#,
        ]
    );
    let nothing_built = Limits { max_keys: 8, built: &[] };
    let line = read_all(&fixture().to_string(), &nothing_built).expect_err("none");
    assert_eq!(
        line,
        r#"holds no signing key this gateway verifies (4 skipped; key 0: RS256 is not verified by this build)"#
    );
}

/// A P-384 signing key as providers publish them beside P-256 keys (its
/// point is never read: a key of a curve the gateway does not verify is
/// not validated).
const P384: &str = r#"{"kty":"EC","crv":"P-384","kid":"p384","use":"sig","alg":"ES384",
    "x":"g1D3n0E8MUu1Rqa-fGKCfWNfeeKbPVBsErRLIjJDpQtBAnDd3HEv8eaMjNvNjn5p","y":"aT69zNAl0jOlRjKjLRk6EBfBdPEiPbsAW5i3fQfWTWzCwZ7ChDdMQ5a8nIeIEPUW"}"#;

/// The fixture's keys, then `extra`: the kids read and the keys skipped (as their lines).
fn read_with(
    extra: &[&str],
) -> Result<(std::vec::Vec<std::string::String>, std::vec::Vec<std::string::String>), std::string::String> {
    // Appended as written, so that a repeated member stays repeated.
    let mut document = fixture().to_string();
    let end = document.rfind("]}").expect("the end of keys");
    document.truncate(end);
    for key in extra {
        document.push(',');
        document.push_str(key);
    }
    document.push_str("]}");
    let (mut kids, mut skipped) = (std::vec::Vec::new(), std::vec::Vec::new());
    read(document.as_bytes(), &ALL, |entry| {
        match entry {
            Entry::Key(jwk) => kids.push(jwk.kid.into()),
            Entry::Skipped(skip) => skipped.push(std::format!("{skip}")),
        }
        Ok(())
    })
    .map_err(|e| std::format!("{e}"))?;
    Ok((kids, skipped))
}

const RSA_N: &str = "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ";

/// An RSA key with kid `kid` and the members `extra` (JSON members, comma first).
fn rsa(kid: &str, extra: &str) -> std::string::String {
    std::format!(r#"{{"kty":"RSA","kid":"{kid}","n":"{RSA_N}","e":"AQAB"{extra}}}"#)
}

#[test]
fn keys_this_gateway_does_not_verify_are_skipped_and_named() {
    let short_n = "_".repeat(170) + "w";
    let cases: &[(std::string::String, &str)] = &[
        (P384.into(), r#"key 4 (kid "p384"): curve "P-384" is not verified by this gateway"#),
        (
            r#"{"kty":"EC","crv":"P-521","kid":"p521","x":"AA","y":"AA"}"#.into(),
            r#"key 4 (kid "p521"): curve "P-521" is not verified by this gateway"#,
        ),
        (
            r#"{"kty":"EC","crv":"secp256k1","kid":"k1","alg":"ES256K","x":"AA","y":"AA"}"#.into(),
            r#"curve "secp256k1" is not verified by this gateway"#,
        ),
        (
            r#"{"kty":"OKP","crv":"Ed448","kid":"ed448","use":"sig","x":"AA"}"#.into(),
            r#"key 4 (kid "ed448"): curve "Ed448" is not verified by this gateway"#,
        ),
        (
            r#"{"kty":"OKP","crv":"X25519","kid":"x","x":"AA"}"#.into(),
            r#"curve "X25519" is not verified by this gateway"#,
        ),
        (
            rsa("ps256", r#","use":"sig","alg":"PS256""#),
            r#"key 4 (kid "ps256"): alg "PS256" is not verified by this gateway"#,
        ),
        (rsa("rs384", r#","alg":"RS384""#), r#"alg "RS384" is not verified by this gateway"#),
        (rsa("oaep", r#","alg":"RSA-OAEP""#), r#"alg "RSA-OAEP" is not verified by this gateway"#),
        (rsa("hs", r#","alg":"HS256""#), r#"alg "HS256" is not verified by this gateway"#),
        // RFC 7517 section 4.3: key_ops says what the key is for.
        (
            rsa("enc-ops", r#","key_ops":["encrypt"]"#),
            r#"key 4 (kid "enc-ops"): key_ops does not include "verify""#,
        ),
        (rsa("sign-ops", r#","key_ops":["sign"]"#), r#"key_ops does not include "verify""#),
        (rsa("wrap", r#","key_ops":["wrapKey","unwrapKey"]"#), r#"key_ops does not include "verify""#),
        (rsa("other-use", r#","use":"other""#), r#"key 4 (kid "other-use"): use "other" is not "sig""#),
        (rsa("case", r#","use":"SIG""#), r#"use "SIG" is not "sig""#),
        (
            r#"{"kty":"DSA","kid":"dsa"}"#.into(),
            r#"key 4 (kid "dsa"): kty "DSA" is not verified by this gateway"#,
        ),
        (r#"{"kty":"oct","kid":"oct"}"#.into(), r#"kty "oct" is not verified by this gateway"#),
        // Not validated: a key the gateway never uses cannot be at fault.
        (
            rsa("short-rs384", &std::format!(r#","alg":"RS384","n":"{short_n}""#)).replacen(
                &std::format!(r#""n":"{RSA_N}","#),
                "",
                1,
            ),
            r#"alg "RS384""#,
        ),
        (P384.replace("g1D3", "!!!!"), r#"curve "P-384""#),
    ];
    for (key, expected) in cases {
        let (kids, skipped) = read_with(&[key]).unwrap_or_else(|e| panic!("{key}: {e}"));
        assert_eq!(kids, ["rsa-a2", "ec-a3", "ed-8037"], "{key}");
        assert_eq!(skipped.len(), 2, "{key}: {skipped:?}");
        assert_eq!(skipped[0], r#"key 3 (kid "enc-skipped"): use "enc" is not "sig""#);
        assert!(skipped[1].contains(expected), "{key}: {skipped:?}");
    }
    // Keys that say they verify signatures are read.
    for extra in [
        r#","key_ops":["verify"]"#,
        r#","use":"sig","key_ops":["verify","sign"]"#,
        r#","key_ops":["verify","x-custom"]"#,
    ] {
        let (kids, _) = read_with(&[&rsa("ops", extra)]).unwrap_or_else(|e| panic!("{extra}: {e}"));
        assert_eq!(kids.last().map(std::string::String::as_str), Some("ops"), "{extra}");
    }
    // A kid shared with a skipped key is no duplicate (RFC 7517 section 4.5).
    let (kids, _) = read_with(&[&P384.replace("\"p384\"", "\"rsa-a2\"")]).expect("valid");
    assert_eq!(kids.len(), 3);
}

#[test]
fn use_and_key_ops_must_agree_and_key_ops_must_be_distinct_strings() {
    for (extra, expected) in [
        (r#","use":"sig","key_ops":["encrypt"]"#, r#"has use "sig" and key_ops that disagree"#),
        (r#","use":"sig","key_ops":["verify","deriveKey"]"#, r#"has use "sig" and key_ops that disagree"#),
        (r#","use":"enc","key_ops":["verify"]"#, r#"has use "enc" and key_ops that disagree"#),
        (r#","key_ops":"verify""#, r#"has a "key_ops" that is not an array of distinct strings"#),
        (r#","key_ops":["verify","verify"]"#, r#"has a "key_ops" that is not an array of distinct strings"#),
        (r#","key_ops":["verify",1]"#, r#"has a "key_ops" that is not an array of distinct strings"#),
        (
            r#","key_ops":[],"key_ops":["verify"]"#,
            r#"has a "key_ops" that is not an array of distinct strings"#,
        ),
    ] {
        let line = read_with(&[&rsa("k", extra)]).expect_err(extra);
        // A member's fault is found while the key is read, before its kid may be.
        assert!(line.starts_with("key 4 "), "{extra}: {line}");
        assert!(line.contains(expected), "{extra}: {line}");
    }
}

#[test]
fn no_signing_key_names_the_first_key_skipped() {
    let line = read_all(&std::format!(r#"{{"keys":[{P384}]}}"#), &ALL).expect_err("nothing to verify with");
    assert_eq!(
        line,
        r#"holds no signing key this gateway verifies (1 skipped; key 0: curve "P-384" is not verified by this gateway)"#
    );
}

/// The fixture document as a provider serves it: compact, and pretty-printed.
fn served_documents() -> [std::string::String; 2] {
    let compact = fixture().to_string();
    let pretty = serde_json::to_string_pretty(&fixture()).expect("JSON");
    [compact, pretty]
}

#[test]
fn a_document_cut_short_anywhere_is_a_json_fault_never_a_key_fault() {
    for document in served_documents() {
        for cut in 0..document.len() {
            let line = read_all(&document[..cut], &ALL).expect_err("cut short");
            let expected = match document[..cut].trim().is_empty() {
                true => std::string::String::from("is not a JWKS document: it is empty"),
                false => std::format!("is not a JWKS document: its JSON is cut short after {cut} bytes"),
            };
            assert_eq!(line, expected, "cut at {cut}: {:?}", &document[cut.saturating_sub(20)..cut]);
        }
        assert!(read_all(&document, &ALL).is_ok());
    }
}

#[test]
fn malformed_json_is_named_with_where_it_stops_being_json() {
    let good = fixture().to_string();
    let n_at = good.find(RSA_N).expect("n");
    let quoted = good.replacen("\"kty\"", "'kty'", 1);
    for (document, expected) in [
        (
            "<html>maintenance</html>".to_owned(),
            "is not a JWKS document: not strict JSON at byte 0".to_owned(),
        ),
        (
            std::format!("{good} x"),
            std::format!("is not a JWKS document: not strict JSON at byte {}", good.len() + 1),
        ),
        (
            std::format!("{good}{good}"),
            std::format!("is not a JWKS document: not strict JSON at byte {}", good.len()),
        ),
        (
            quoted.clone(),
            std::format!(
                "is not a JWKS document: not strict JSON at byte {}",
                quoted.find("'kty'").expect("kty")
            ),
        ),
        (
            good.replacen(RSA_N, &std::format!("ab\u{1}{}", &RSA_N[3..]), 1),
            std::format!("is not a JWKS document: not strict JSON at byte {}", n_at + 3),
        ),
        (
            std::format!("{{\"keys\":[],\"x\":{}1{}}}", "[".repeat(20), "]".repeat(20)),
            "is not a JWKS document: not strict JSON at byte 30".to_owned(),
        ),
        ("  \n ".to_owned(), "is not a JWKS document: it is empty".to_owned()),
        (
            "{\"keys\":[tr".to_owned(),
            "is not a JWKS document: its JSON is cut short after 11 bytes".to_owned(),
        ),
        (
            "{\"keys\":[nul".to_owned(),
            "is not a JWKS document: its JSON is cut short after 12 bytes".to_owned(),
        ),
    ] {
        assert_eq!(read_all(&document, &ALL).expect_err(&expected), expected);
    }
    let mut latin1 = good.clone().into_bytes();
    latin1[n_at + 5] = 0xff;
    let line = read(&latin1, &ALL, |_| Ok(())).map(|_| ()).map_err(|e| std::format!("{e}"));
    assert_eq!(line, Err(std::format!("is not a JWKS document: not UTF-8 at byte {}", n_at + 5)));
}
