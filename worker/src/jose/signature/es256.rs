//! ES256: ECDSA on P-256 with SHA-256 (RFC 7518 section 3.4), with `p256`
//! and `ecdsa`.
//!
//! The signature is the JOSE form, `r || s`, 32 bytes each (the caller
//! decodes exactly 64 bytes, so DER is refused by its length).
//! `Signature::from_slice` refuses r or s zero or not below the group order
//! n, which is the check whose absence was CVE-2022-21449 ("psychic
//! signatures"). A high s (above n/2) is accepted: RFC 7518 does not forbid
//! it, ECDSA verifies both s and n - s, and `jsonwebtoken` accepts it; a
//! token is not made more or less trustworthy by it, since either form needs
//! the private key.

use p256::ecdsa::signature::Verifier;
use p256::ecdsa::{Signature, VerifyingKey};

pub use crate::keys::EcKey;
use crate::reject::Rejection;

/// Checks the 64-byte `r || s` `signature` over `signing_input` with `key`.
pub fn verify(key: &EcKey<'_>, signing_input: &[u8], signature: &[u8; 64]) -> Result<(), Rejection> {
    // The point was validated at build time; this only loads it into the
    // crate's field representation (a few microseconds, measured in the README).
    let key = VerifyingKey::from_sec1_bytes(key.sec1).map_err(|_| Rejection::BadSignature)?;
    let signature = Signature::from_slice(signature).map_err(|_| Rejection::BadSignature)?;
    key.verify(signing_input, &signature).map_err(|_| Rejection::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jose::signature::tests::{hex, vectors, wycheproof};

    /// Wycheproof's ECDSA P-256 SHA-256 signatures in the IEEE P1363 form,
    /// which is JOSE's `r || s`: among them r or s zero, equal to n or
    /// above it, and signatures that are not 64 bytes.
    #[test]
    fn wycheproof_vectors() {
        let checked = wycheproof("wycheproof-ecdsa_secp256r1_sha256_p1363_test.json", |group, msg, sig| {
            let point = hex(group["publicKey"]["uncompressed"].as_str().expect("point"));
            let sec1: [u8; 65] = point.as_slice().try_into().expect("65-byte point");
            match <[u8; 64]>::try_from(sig) {
                Ok(sig) => verify(&EcKey { kid: "w", sec1: &sec1 }, msg, &sig),
                // Another length cannot reach verify: decode_signature refuses it.
                Err(_) => Err(Rejection::BadSignature),
            }
        });
        assert!(checked >= 250, "{checked}");
    }

    #[test]
    fn psychic_signature_is_refused() {
        // CVE-2022-21449: r = s = 0 verified any message in some JDKs.
        let file = vectors("wycheproof-ecdsa_secp256r1_sha256_p1363_test.json");
        let point = hex(file["testGroups"][0]["publicKey"]["uncompressed"].as_str().expect("point"));
        let sec1: [u8; 65] = point.as_slice().try_into().expect("65-byte point");
        let key = EcKey { kid: "w", sec1: &sec1 };
        assert_eq!(verify(&key, b"any message", &[0u8; 64]), Err(Rejection::BadSignature));
        let n = hex("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551");
        let mut r_s_n = [0u8; 64];
        r_s_n[..32].copy_from_slice(&n);
        r_s_n[32..].copy_from_slice(&n);
        assert_eq!(verify(&key, b"any message", &r_s_n), Err(Rejection::BadSignature));
    }
}
