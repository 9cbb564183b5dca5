use super::*;

const ALL: Limits = Limits { max_keys: 8, built: &[Alg::Rs256, Alg::Es256, Alg::EdDsa], skip_unbuilt: false };

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
    read(document.as_bytes(), limits, |jwk| {
        keys.push((jwk.kid.into(), jwk.material.alg()));
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
    read(fixture().to_string().as_bytes(), &ALL, |jwk| {
        if let Material::Rsa { modulus, exponent } = jwk.material {
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
                k.insert("use".into(), "other".into());
            }),
            "has use \"other\"; signing keys have \"sig\"",
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
                k.insert("crv".into(), "P-384".into());
            }),
            "is on curve \"P-384\"; ES256 is P-256 only",
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
                k.insert("crv".into(), "X25519".into());
            }),
            "is on curve \"X25519\"",
        ),
        (
            with_key(2, |k| {
                k.insert("x".into(), "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into());
            }),
            "small order",
        ),
        (
            with_key(2, |k| {
                k.insert("kty".into(), "oct".into());
            }),
            "is a secret",
        ),
        (
            with_key(2, |k| {
                k.insert("kty".into(), "DSA".into());
            }),
            "kty which no algorithm",
        ),
        (
            with_key(2, |k| {
                k.remove("kty");
            }),
            "has no kty",
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
    let rsa_only = Limits { built: &[Alg::Rs256], ..ALL };
    let line = read_all(&fixture().to_string(), &rsa_only).expect_err("ES256 not built");
    assert!(line.contains("key 1 (kid \"ec-a3\") is ES256, which this build does not verify"), "{line}");
    // A provider's document: the keys of other algorithms are skipped.
    let skipping = Limits { skip_unbuilt: true, ..rsa_only };
    let mut kids = std::vec::Vec::new();
    let count = read(fixture().to_string().as_bytes(), &skipping, |jwk| {
        kids.push(jwk.kid.to_owned());
        Ok(())
    });
    assert_eq!(count, Ok(1));
    assert_eq!(kids, ["rsa-a2"]);
    let nothing_built = Limits { max_keys: 8, built: &[], skip_unbuilt: true };
    let line = read_all(&fixture().to_string(), &nothing_built).expect_err("none");
    assert!(line.contains("holds no signing key this gateway verifies"), "{line}");
}
