//! EdDSA on Ed25519 (RFC 8037, RFC 8032), with `ed25519-dalek`.
//!
//! The signature is `R || S`, 64 bytes. `ed25519-dalek`'s `verify` refuses a
//! non-canonical S (S not below the group order, the malleability RFC 8032
//! section 5.1.7 forbids) and checks the equation without the cofactor, as
//! RFC 8032 describes and as `jsonwebtoken` does. Keys of small order (the
//! "weak" keys that verify forged signatures) are refused at build time.

use ed25519_dalek::{Signature, Verifier, VerifyingKey};

pub use crate::keys::EdKey;
use crate::reject::Rejection;

/// Checks the 64-byte `signature` over `signing_input` with `key`.
pub fn verify(key: &EdKey<'_>, signing_input: &[u8], signature: &[u8; 64]) -> Result<(), Rejection> {
    // Decompressing the point (validated at build time) is the one key step
    // left at run time; its cost is in the README.
    let key = VerifyingKey::from_bytes(key.public).map_err(|_| Rejection::BadSignature)?;
    key.verify(signing_input, &Signature::from_bytes(signature)).map_err(|_| Rejection::BadSignature)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jose::signature::tests::{hex, wycheproof};

    /// Wycheproof's Ed25519 cases: valid signatures, non-canonical S,
    /// truncated and extended signatures, small-order R.
    #[test]
    fn wycheproof_vectors() {
        let checked = wycheproof("wycheproof-ed25519_test.json", |group, msg, sig| {
            let pk = hex(group["publicKey"]["pk"].as_str().expect("pk"));
            let public: [u8; 32] = pk.as_slice().try_into().expect("32-byte key");
            match <[u8; 64]>::try_from(sig) {
                Ok(sig) => verify(&EdKey { kid: "w", public: &public }, msg, &sig),
                Err(_) => Err(Rejection::BadSignature),
            }
        });
        assert!(checked >= 145, "{checked}");
    }
}
