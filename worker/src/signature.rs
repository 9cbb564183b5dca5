//! Phase 3b, verify: HMAC-SHA256 over the signing input, compared in constant
//! time (`hmac`'s `verify_slice` uses `subtle`).

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::reject::Rejection;

/// Checks that `signature` is the HMAC-SHA256 of `signing_input` under `key`.
pub fn verify(key: &[u8], signing_input: &[u8], signature: &[u8; 32]) -> Result<(), Rejection> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).map_err(|_| Rejection::BadSignature)?;
    mac.update(signing_input);
    mac.verify_slice(signature).map_err(|_| Rejection::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Rfc4231Case {
        case: u32,
        key_hex: std::string::String,
        data_hex: std::string::String,
        hmac_sha256_hex: std::string::String,
    }

    pub(crate) fn hex(text: &str) -> std::vec::Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
    }

    fn vectors(name: &str) -> serde_json::Value {
        let path = std::format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).expect("vector JSON")
    }

    #[test]
    fn rfc4231_vectors() {
        // RFC 4231 section 4: HMAC-SHA-256 with short, long and block-size keys.
        let file = vectors("rfc4231-hmac-sha256.json");
        let cases: std::vec::Vec<Rfc4231Case> = serde_json::from_value(file["cases"].clone()).expect("cases");
        assert_eq!(cases.len(), 6);
        for case in cases {
            let key = hex(&case.key_hex);
            let data = hex(&case.data_hex);
            let tag = hex(&case.hmac_sha256_hex);
            let tag: [u8; 32] = tag.as_slice().try_into().expect("32-byte tag");
            assert_eq!(verify(&key, &data, &tag), Ok(()), "case {}", case.case);
            let mut flipped = tag;
            flipped[31] ^= 1;
            assert_eq!(verify(&key, &data, &flipped), Err(Rejection::BadSignature), "case {}", case.case);
        }
    }

    #[test]
    fn wycheproof_vectors() {
        // Project Wycheproof HMAC-SHA-256: valid tags, flipped bits, truncated tags.
        let file = vectors("wycheproof-hmac-sha256.json");
        let mut checked = 0;
        for group in file["testGroups"].as_array().expect("groups") {
            for test in group["tests"].as_array().expect("tests") {
                let key = hex(test["key"].as_str().expect("key"));
                let msg = hex(test["msg"].as_str().expect("msg"));
                let tag = hex(test["tag"].as_str().expect("tag"));
                let valid = test["result"] == "valid";
                let verdict = match <[u8; 32]>::try_from(tag.as_slice()) {
                    Ok(tag) => verify(&key, &msg, &tag),
                    // A truncated tag cannot reach verify: decode_signature refuses it.
                    Err(_) => Err(Rejection::BadSignature),
                };
                let expect_ok = valid && tag.len() == 32;
                assert_eq!(verdict.is_ok(), expect_ok, "tcId {}", test["tcId"]);
                checked += 1;
            }
        }
        assert_eq!(checked, 174);
    }
}
