//! HMAC-SHA256's two key states (RFC 2104 section 2), computed once at build
//! time so that a request runs two SHA-256 compressions fewer.
//!
//! HMAC(K, m) = H((K' ^ opad) || H((K' ^ ipad) || m)), where K' is the key
//! zero-padded to SHA-256's 64-byte block (or first hashed, when longer).
//! Each of the two hashes starts by compressing one block that depends on
//! the key alone; the chaining value after that block is all the worker
//! needs to finish the hash over the message. The worker's tests compute
//! the states of arbitrary keys (RFC 4231, Wycheproof) with this function.

use sha2::Digest as _;
use sha2::Sha256;
use sha2::block_api::compress256;

/// SHA-256's initial hash value (FIPS 180-4 section 5.3.3).
const SHA256_IV: [u32; 8] =
    [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// The chaining values after the inner (`K' ^ ipad`) and the outer
/// (`K' ^ opad`) key block, in that order.
pub fn hmac_sha256_states(secret: &[u8]) -> ([u32; 8], [u32; 8]) {
    let mut block = [0u8; 64];
    if secret.len() > block.len() {
        block[..32].copy_from_slice(&Sha256::digest(secret));
    } else {
        block[..secret.len()].copy_from_slice(secret);
    }
    let after = |pad: u8| {
        let mut state = SHA256_IV;
        compress256(&mut state, &[block.map(|b| b ^ pad)]);
        state
    };
    (after(0x36), after(0x5c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_iv_is_sha256s_and_a_short_key_is_zero_padded() {
        // The empty message's digest, from the IV and one padding block.
        let mut state = SHA256_IV;
        let mut padding = [0u8; 64];
        padding[0] = 0x80;
        compress256(&mut state, &[padding]);
        let digest: Vec<u8> = state.iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(digest.as_slice(), Sha256::digest(b"").as_slice());
        // A key of 64 bytes is used as it is; a longer one is hashed first.
        let long = [7u8; 65];
        let mut hashed = [0u8; 64];
        hashed[..32].copy_from_slice(&Sha256::digest(long));
        assert_eq!(hmac_sha256_states(&long), hmac_sha256_states(&hashed));
        assert_eq!(hmac_sha256_states(b"k"), hmac_sha256_states(b"k\0\0"));
    }
}
