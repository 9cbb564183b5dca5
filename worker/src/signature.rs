//! Phase 3b, verify: HMAC-SHA256 over the signing input, compared in constant
//! time (`subtle`).
//!
//! HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)) (RFC 2104). The first
//! block of each hash depends on the key alone, so the build compresses it
//! (`gateway_config::hmac_key`) and the worker starts from the two chaining
//! values in [`HmacKey`]: a request runs two SHA-256 compressions fewer. The
//! rest of each hash, the message blocks and FIPS 180-4's padding, is
//! finished here with `sha2`'s compression function.

use sha2::block_api::compress256;
use subtle::ConstantTimeEq as _;

use crate::reject::Rejection;

/// An HS256 key as the request path uses it: SHA-256's chaining values after
/// the key's inner and outer padded blocks (one 64-byte block each).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HmacKey {
    /// After `K' ^ ipad`.
    pub inner: [u32; 8],
    /// After `K' ^ opad`.
    pub outer: [u32; 8],
}

#[cfg(test)]
impl HmacKey {
    /// States of no key, for tests that never reach verification.
    pub(crate) const UNKEYED: HmacKey = HmacKey { inner: [0; 8], outer: [0; 8] };
}

/// Checks that `signature` is the HMAC-SHA256 of `signing_input` under `key`.
pub fn verify(key: &HmacKey, signing_input: &[u8], signature: &[u8; 32]) -> Result<(), Rejection> {
    let inner = finish(key.inner, signing_input);
    let tag = finish(key.outer, &inner);
    if bool::from(tag.ct_eq(signature)) { Ok(()) } else { Err(Rejection::BadSignature) }
}

/// Finishes a SHA-256 whose first 64-byte block is already in `state`:
/// absorbs `message` and the padding (a 1 bit, zeros, the length in bits
/// including the first block, big-endian), and returns the digest.
fn finish(mut state: [u32; 8], message: &[u8]) -> [u8; 32] {
    let (blocks, tail) = message.as_chunks::<64>();
    compress256(&mut state, blocks);
    let mut last = [0u8; 128];
    last[..tail.len()].copy_from_slice(tail);
    last[tail.len()] = 0x80;
    let end = if tail.len() < 56 { 64 } else { 128 };
    let bits = (64 + message.len() as u64) * 8;
    last[end - 8..end].copy_from_slice(&bits.to_be_bytes());
    compress256(&mut state, last[..end].as_chunks::<64>().0);
    let mut digest = [0u8; 32];
    for (bytes, word) in digest.as_chunks_mut::<4>().0.iter_mut().zip(state) {
        *bytes = word.to_be_bytes();
    }
    digest
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The key states of a raw key, as the build computes them.
    pub(crate) fn keyed(secret: &[u8]) -> HmacKey {
        let (inner, outer) = gateway_config::hmac_key::hmac_sha256_states(secret);
        HmacKey { inner, outer }
    }

    #[test]
    fn agrees_with_the_hmac_crate_at_every_padding_boundary() {
        use hmac::{Hmac, KeyInit, Mac};
        for key_len in [1, 32, 63, 64, 65, 131] {
            let secret: std::vec::Vec<u8> = (0..key_len).map(|i| i as u8 ^ 0xa5).collect();
            let key = keyed(&secret);
            for len in 0..=300 {
                let message: std::vec::Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
                let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&secret).expect("any length");
                mac.update(&message);
                let tag: [u8; 32] = mac.finalize().into_bytes().into();
                assert_eq!(finish_both(&key, &message), tag, "key {key_len}, message {len}");
                assert_eq!(verify(&key, &message, &tag), Ok(()));
            }
        }
    }

    fn finish_both(key: &HmacKey, message: &[u8]) -> [u8; 32] {
        finish(key.outer, &finish(key.inner, message))
    }

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
            assert_eq!(verify(&keyed(&key), &data, &tag), Ok(()), "case {}", case.case);
            let mut flipped = tag;
            flipped[31] ^= 1;
            assert_eq!(
                verify(&keyed(&key), &data, &flipped),
                Err(Rejection::BadSignature),
                "case {}",
                case.case
            );
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
                    Ok(tag) => verify(&keyed(&key), &msg, &tag),
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
