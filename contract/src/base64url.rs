//! Unpadded base64url (RFC 4648 section 5), the encoding of JOSE values: a
//! certificate thumbprint in the context line, a DPoP proof's hashes and
//! key thumbprints in the module. Written here because the contract has no
//! dependencies; tested against the `base64` crate.

/// Base64url without padding of `bytes` into `out`, which holds exactly its
/// length (`ceil(4 * len / 3)`); a shorter `out` takes the prefix.
pub fn encode(bytes: &[u8], out: &mut [u8]) {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut at = 0;
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            if let Some(slot) = out.get_mut(at) {
                *slot = ALPHABET[(n >> (18 - 6 * i) & 63) as usize];
            }
            at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    #[test]
    fn matches_the_base64_crate() {
        for len in 0..40 {
            let bytes: std::vec::Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&bytes);
            let mut out = std::vec![0u8; expected.len()];
            super::encode(&bytes, &mut out);
            assert_eq!(out, expected.as_bytes(), "{len}");
        }
    }
}
