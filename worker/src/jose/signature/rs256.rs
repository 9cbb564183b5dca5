//! RS256: RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 section 3.3, RFC 8017
//! section 8.2.2), for moduli of 2048 to 4096 bits.
//!
//! `crypto-bigint`'s fixed-size integers (`U2048`, `U3072`, `U4096`) and
//! Montgomery arithmetic, on the stack, no heap. The Montgomery parameters
//! of each key (`R mod n`, `R^2 mod n`, `-n^-1 mod 2^w`) are computed by the
//! compiler: `FixedMontyParams::new_vartime` is a `const fn`, and the build
//! writes each key as a call to it, so a request only exponentiates.
//!
//! Verification is RSAVP1 then a comparison with the one encoding PKCS#1
//! v1.5 allows (EMSA-PKCS1-v1_5, RFC 8017 section 9.2), built from the
//! SHA-256 of the signing input: `00 01 FF..FF 00 || DigestInfo || hash`.
//! The signature must be exactly as long as the modulus and below it.
//! Everything here is public (key, signature, message), so nothing needs to
//! be constant-time.

use crypto_bigint::Uint;
use crypto_bigint::modular::{FixedMontyForm, FixedMontyParams};
use sha2::{Digest, Sha256};

use crate::jose::jws;
pub use crate::keys::{MAX_MODULUS_BYTES, Modulus, RsaKey, params_2048};
use crate::reject::Rejection;

/// The DER prefix of a DigestInfo holding a SHA-256 hash (RFC 8017 section
/// 9.2, note 1).
const SHA256_DIGEST_INFO: [u8; 19] = [
    0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00,
    0x04, 0x20,
];

/// Checks the base64url `signature` part over `signing_input` with `key`.
pub fn verify(key: &RsaKey<'_>, signing_input: &[u8], signature: &[u8]) -> Result<(), Rejection> {
    let hash = Sha256::digest(signing_input);
    match key.modulus {
        Modulus::Bits2048(params) => verify_at(params, key, &hash.into(), signature),
        Modulus::Bits3072(params) => verify_at(params, key, &hash.into(), signature),
        Modulus::Bits4096(params) => verify_at(params, key, &hash.into(), signature),
    }
}

/// RSAVP1 and the EMSA-PKCS1-v1_5 comparison at one width.
fn verify_at<const LIMBS: usize>(
    params: &FixedMontyParams<LIMBS>,
    key: &RsaKey<'_>,
    hash: &[u8; 32],
    signature: &[u8],
) -> Result<(), Rejection> {
    let width = Uint::<LIMBS>::BYTES;
    let k = key.len;
    if k > width || k < SHA256_DIGEST_INFO.len() + 32 + 11 {
        return Err(Rejection::BadSignature);
    }
    // The signature, exactly k bytes, right-aligned in the integer's width.
    let mut bytes = [0u8; MAX_MODULUS_BYTES];
    let bytes = &mut bytes[..width];
    jws::decode_exact(signature, &mut bytes[width - k..])?;
    let s = Uint::<LIMBS>::from_be_slice(bytes);
    // RFC 8017 section 5.2.2 step 1: the signature representative is below n.
    if s >= *params.modulus().as_ref() {
        return Err(Rejection::BadSignature);
    }
    let m = pow_public(&FixedMontyForm::new(&s, params), key.exponent).retrieve();
    let encoded = m.to_be_bytes();
    let (leading, em) = encoded.as_ref().split_at(width - k);
    if leading.iter().any(|&b| b != 0) || !is_pkcs1_sha256(em, hash) {
        return Err(Rejection::BadSignature);
    }
    Ok(())
}

/// `base` raised to the public `exponent`, by square-and-multiply from the
/// top bit: for 65537, 16 squarings and 1 multiplication. `pow_vartime`
/// first builds a 4-bit window's table of 15 powers (14 multiplications),
/// which a short exponent barely uses: 32 products in all, so this takes
/// about half the time for the same result (tested against it below).
fn pow_public<const LIMBS: usize>(base: &FixedMontyForm<LIMBS>, exponent: u64) -> FixedMontyForm<LIMBS> {
    let Some(top) = exponent.checked_ilog2() else {
        return FixedMontyForm::one(base.params());
    };
    let mut power = *base;
    for bit in (0..top).rev() {
        power = power.square();
        if (exponent >> bit) & 1 == 1 {
            power = power.mul(base);
        }
    }
    power
}

/// True when `em` is exactly `00 01 FF..FF 00 || DigestInfo(SHA-256) || hash`.
fn is_pkcs1_sha256(em: &[u8], hash: &[u8; 32]) -> bool {
    let tail = SHA256_DIGEST_INFO.len() + hash.len();
    let Some(padding_end) = em.len().checked_sub(tail + 1) else {
        return false;
    };
    let (head, rest) = em.split_at(padding_end);
    let (digest_info, digest) = rest[1..].split_at(SHA256_DIGEST_INFO.len());
    head.len() >= 10
        && head[0] == 0x00
        && head[1] == 0x01
        && head[2..].iter().all(|&b| b == 0xff)
        && rest[0] == 0x00
        && digest_info == SHA256_DIGEST_INFO
        && digest == hash
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jose::signature::tests::{hex, wycheproof};

    #[test]
    fn pkcs1_encoding_is_exact() {
        let hash = [7u8; 32];
        let mut em = std::vec![0x00, 0x01];
        em.extend([0xff; 202]);
        em.push(0x00);
        em.extend(SHA256_DIGEST_INFO);
        em.extend(hash);
        assert_eq!(em.len(), 256);
        assert!(is_pkcs1_sha256(&em, &hash));
        for i in 0..em.len() {
            let mut bad = em.clone();
            bad[i] ^= 0x01;
            assert!(!is_pkcs1_sha256(&bad, &hash), "byte {i}");
        }
        assert!(!is_pkcs1_sha256(&em[1..], &hash));
    }

    /// The square-and-multiply exponentiation gives what the crate's own
    /// `pow_vartime` gives, for the exponents keys use and for random
    /// ones up to 64 bits, on random odd 2048-bit moduli and bases.
    #[test]
    fn public_exponentiation_matches_the_crate() {
        use crypto_bigint::{Odd, U64, U2048};
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut random = || U2048::from_be_slice(&core::array::from_fn::<u8, 256, _>(|_| next() as u8));
        let mut exponents = std::vec![0, 1, 2, 3, 17, 65537, u64::MAX, 1 << 63];
        let mut extra = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..40 {
            extra = extra.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            exponents.push(extra >> (extra % 61));
        }
        for exponent in exponents {
            let modulus = Odd::new(random() | U2048::ONE).expect("odd");
            let params = FixedMontyParams::new_vartime(modulus);
            let base = FixedMontyForm::new(&random().rem_vartime(modulus.as_nz_ref()), &params);
            let expected = base.pow_vartime(&U64::from_u64(exponent));
            assert_eq!(pow_public(&base, exponent).retrieve(), expected.retrieve(), "exponent {exponent}");
        }
    }

    /// Runs Wycheproof's RSA PKCS#1 v1.5 2048-bit SHA-256 signatures, each
    /// as the base64url signature part of a token.
    #[test]
    fn wycheproof_vectors() {
        let checked = wycheproof("wycheproof-rsa_signature_2048_sha256_test.json", |group, msg, sig| {
            let n = hex(group["publicKey"]["modulus"].as_str().expect("modulus"));
            let e = hex(group["publicKey"]["publicExponent"].as_str().expect("exponent"));
            // Wycheproof writes the modulus as a signed integer: a leading zero byte.
            let n = n.strip_prefix(&[0u8][..]).unwrap_or(&n);
            assert_eq!(n.len(), 256);
            let exponent = e.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
            let hexed: std::string::String = n.iter().map(|b| std::format!("{b:02x}")).collect();
            let params = params_2048(&hexed);
            let key = RsaKey { kid: "w", len: 256, exponent, modulus: Modulus::Bits2048(&params) };
            let part = base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, sig);
            verify(&key, msg, part.as_bytes())
        });
        assert!(checked >= 250, "{checked}");
    }
}
