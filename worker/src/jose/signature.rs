//! Verify: the signature over the signing input, checked with the
//! selected key's own algorithm and nothing else.
//!
//! HS256 is HMAC-SHA256 compared in constant time (`ct`, on `subtle`); it is always
//! built. HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)) (RFC 2104): the
//! first block of each hash depends on the key alone, so the build
//! compresses it (`gateway_config::hmac_key`) and the worker starts from the
//! two chaining values in [`HmacKey`], two SHA-256 compressions fewer per
//! request; the message blocks and FIPS 180-4's padding are finished here
//! with `sha2`'s compression function. RS256, ES256 and EdDSA are build
//! features, one submodule each. A key carries its algorithm ([`Alg`]), the
//! header phase has already required the token's `alg` to equal it, and
//! [`verify_jws`] dispatches on the key, never on the token: an RSA or EC
//! key cannot verify an HMAC, and an HMAC secret cannot verify anything but
//! HS256 (RFC 8725 section 2.1, algorithm confusion).
//!
//! Keys are parsed and validated before any request (at build time, by
//! `config`): the module holds them in the form each algorithm computes
//! with ([`crate::keys`]).

use sha2::block_api::compress256;

use crate::jose::jws;
use crate::keys::VerifyingKey;
pub use crate::keys::{Alg, HmacKey};
use crate::reject::Rejection;

#[cfg(feature = "eddsa")]
pub mod eddsa;
#[cfg(feature = "es256")]
pub mod es256;
#[cfg(feature = "rs256")]
pub mod rs256;

/// Checks the base64url `signature` part over `signing_input` with `key`,
/// by the key's algorithm. Each algorithm decodes exactly its own signature
/// size: 32 bytes for HS256, the modulus length for RS256, 64 bytes
/// (`r || s`, or `R || S`) for ES256 and EdDSA.
pub fn verify_jws(key: &VerifyingKey<'_>, signing_input: &[u8], signature: &[u8]) -> Result<(), Rejection> {
    match key {
        VerifyingKey::Hs256(key) => verify(&key.hmac, signing_input, &jws::decode_signature(signature)?),
        #[cfg(feature = "rs256")]
        VerifyingKey::Rs256(key) => rs256::verify(key, signing_input, signature),
        #[cfg(feature = "es256")]
        VerifyingKey::Es256(key) => es256::verify(key, signing_input, &jws::decode_signature(signature)?),
        #[cfg(feature = "eddsa")]
        VerifyingKey::EdDsa(key) => eddsa::verify(key, signing_input, &jws::decode_signature(signature)?),
    }
}

/// Checks that `signature` is the HMAC-SHA256 of `signing_input` under `key`.
pub fn verify(key: &HmacKey, signing_input: &[u8], signature: &[u8; 32]) -> Result<(), Rejection> {
    let tag = hmac(key, signing_input);
    if bool::from(crate::ct::eq(&tag, signature)) { Ok(()) } else { Err(Rejection::BadSignature) }
}

/// The HMAC-SHA256 of `message` under `key`.
pub fn hmac(key: &HmacKey, message: &[u8]) -> [u8; 32] {
    let inner = finish(key.inner, message);
    finish(key.outer, &inner)
}

/// SHA-256's initial state (FIPS 180-4 section 5.3.3).
const SHA256_IV: [u32; 8] =
    [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// The SHA-256 of `message`, on the compression function HMAC already
/// uses (the cache keeps long tokens by it; `sha2`'s `Digest` would add its
/// buffering code to the module).
pub fn sha256(message: &[u8]) -> [u8; 32] {
    finish_after(SHA256_IV, 0, message)
}

/// Finishes a SHA-256 whose first 64-byte block is already in `state`:
/// absorbs `message` and the padding (a 1 bit, zeros, the length in bits
/// including the first block, big-endian), and returns the digest.
fn finish(state: [u32; 8], message: &[u8]) -> [u8; 32] {
    finish_after(state, 64, message)
}

/// Finishes a SHA-256 that has absorbed `absorbed` bytes (whole blocks)
/// into `state`: `message`, the padding and the total length.
fn finish_after(mut state: [u32; 8], absorbed: u64, message: &[u8]) -> [u8; 32] {
    let (blocks, tail) = message.as_chunks::<64>();
    compress256(&mut state, blocks);
    let mut last = [0u8; 128];
    last[..tail.len()].copy_from_slice(tail);
    last[tail.len()] = 0x80;
    let end = if tail.len() < 56 { 64 } else { 128 };
    let bits = (absorbed + message.len() as u64) * 8;
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

    #[test]
    fn sha256_agrees_with_the_sha2_crate_at_every_padding_boundary() {
        use sha2::Digest as _;
        for len in (0..200).chain([447, 448, 1000, 1024, 2048]) {
            let message: std::vec::Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert_eq!(sha256(&message), <[u8; 32]>::from(sha2::Sha256::digest(&message)), "{len} bytes");
        }
    }

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

    /// Hex to bytes, for the vector files.
    pub(crate) fn hex(text: &str) -> std::vec::Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
    }

    /// Runs a Wycheproof signature file: `check(group, msg, sig)` must accept
    /// exactly the cases marked valid. Returns how many cases ran.
    #[cfg(any(feature = "rs256", feature = "es256", feature = "eddsa"))]
    pub(crate) fn wycheproof(
        name: &str,
        check: impl Fn(&serde_json::Value, &[u8], &[u8]) -> Result<(), Rejection>,
    ) -> usize {
        let file = vectors(name);
        let mut checked = 0;
        for group in file["testGroups"].as_array().expect("groups") {
            for test in group["tests"].as_array().expect("tests") {
                let msg = hex(test["msg"].as_str().expect("msg"));
                let sig = hex(test["sig"].as_str().expect("sig"));
                let valid = test["result"] == "valid";
                let verdict = check(group, &msg, &sig);
                assert_eq!(verdict.is_ok(), valid, "{name} tcId {} {}", test["tcId"], test["comment"]);
                checked += 1;
            }
        }
        checked
    }

    /// A vector file of `tests/data`, parsed.
    pub(crate) fn vectors(name: &str) -> serde_json::Value {
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

    /// RFC 7515 appendix A.2 (RS256) and A.3 (ES256), RFC 8037 appendix A.4
    /// (Ed25519): each complete JWS verifies with its key, through the
    /// dispatch, and fails with a flipped signature bit or another key type.
    #[test]
    #[cfg(all(feature = "rs256", feature = "es256", feature = "eddsa"))]
    fn rfc_public_key_vectors() {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;

        let file = vectors("rfc-public-key-jws.json");
        let b64 = |v: &serde_json::Value| {
            URL_SAFE_NO_PAD.decode(v.as_str().expect("base64url")).expect("base64url")
        };
        let n = b64(&file["rs256"]["jwk"]["n"]);
        let n_hex: std::string::String = n.iter().map(|b| std::format!("{b:02x}")).collect();
        let params = rs256::params_2048(&n_hex);
        let ec = file["es256"]["jwk"].clone();
        let mut sec1 = [4u8; 65];
        sec1[1..33].copy_from_slice(&b64(&ec["x"]));
        sec1[33..].copy_from_slice(&b64(&ec["y"]));
        let ed: [u8; 32] = b64(&file["eddsa"]["jwk"]["x"]).try_into().expect("32 bytes");
        let keys = [
            (
                "rs256",
                VerifyingKey::Rs256(rs256::RsaKey {
                    kid: "a2",
                    len: 256,
                    exponent: 65537,
                    modulus: rs256::Modulus::Bits2048(&params),
                }),
            ),
            ("es256", VerifyingKey::Es256(es256::EcKey { kid: "a3", sec1: &sec1 })),
            ("eddsa", VerifyingKey::EdDsa(eddsa::EdKey { kid: "a4", public: &ed })),
        ];
        for (name, key) in &keys {
            let jws = file[*name]["jws"].as_str().expect("jws");
            let (signing_input, signature) = jws.rsplit_once('.').expect("two dots");
            assert_eq!(verify_jws(key, signing_input.as_bytes(), signature.as_bytes()), Ok(()), "{name}");
            let mut tampered = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
            tampered[10] ^= 1;
            let tampered = URL_SAFE_NO_PAD.encode(tampered);
            assert_eq!(
                verify_jws(key, signing_input.as_bytes(), tampered.as_bytes()),
                Err(Rejection::BadSignature),
                "{name}"
            );
            // Each other key refuses the token, whatever its algorithm.
            for (other, other_key) in &keys {
                if other != name {
                    assert!(
                        verify_jws(other_key, signing_input.as_bytes(), signature.as_bytes()).is_err(),
                        "{name} by {other}"
                    );
                }
            }
        }
    }

    #[test]
    fn algorithms_are_named_exactly() {
        assert_eq!(Alg::from_name("HS256"), Some(Alg::Hs256));
        for name in ["hs256", "none", "HS512", "", "HS256 "] {
            assert_eq!(Alg::from_name(name), None, "{name}");
        }
        #[cfg(feature = "rs256")]
        assert_eq!(Alg::from_name("RS256"), Some(Alg::Rs256));
        #[cfg(feature = "es256")]
        assert_eq!(Alg::from_name("ES256"), Some(Alg::Es256));
        #[cfg(feature = "eddsa")]
        assert_eq!(
            (Alg::from_name("EdDSA"), Alg::from_name("EDDSA"), Alg::from_name("Ed25519")),
            (Some(Alg::EdDsa), None, None)
        );
    }
}
