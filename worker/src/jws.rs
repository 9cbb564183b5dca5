//! Phase 2, split: a compact JWS into its three base64url parts, and base64url
//! decoding into the arena.
//!
//! The split is strict (RFC 7515 section 7.1, RFC 8725 section 3.11): exactly
//! two dots, non-empty parts, and only the 64 characters of the base64url
//! alphabet. Decoding uses the `base64` crate's URL-safe engine with padding
//! forbidden and non-canonical trailing bits refused, so each token has one
//! spelling.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::arena::Arena;
use crate::reject::Rejection;

/// The three parts of a compact JWS, still base64url-encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactJws<'t> {
    /// The JOSE header part.
    pub header: &'t [u8],
    /// The payload (claims) part.
    pub payload: &'t [u8],
    /// `header.payload`: the bytes the signature covers.
    pub signing_input: &'t [u8],
    /// The signature part.
    pub signature: &'t [u8],
}

/// Splits `token` at its two dots.
pub fn split(token: &[u8]) -> Result<CompactJws<'_>, Rejection> {
    let mut dots = [0usize; 2];
    let mut count = 0;
    for (i, &b) in token.iter().enumerate() {
        if b == b'.' {
            *dots.get_mut(count).ok_or(Rejection::MalformedToken)? = i;
            count += 1;
        } else if !is_base64url(b) {
            return Err(Rejection::BadEncoding);
        }
    }
    if count != 2 {
        return Err(Rejection::MalformedToken);
    }
    let [first, second] = dots;
    let jws = CompactJws {
        header: &token[..first],
        payload: &token[first + 1..second],
        signing_input: &token[..second],
        signature: &token[second + 1..],
    };
    if jws.header.is_empty() || jws.payload.is_empty() {
        return Err(Rejection::MalformedToken);
    }
    if jws.signature.is_empty() {
        return Err(Rejection::MissingSignature);
    }
    Ok(jws)
}

fn is_base64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// Decodes one base64url part into a slice of the arena.
pub fn decode<'a>(part: &[u8], arena: &mut Arena<'a>) -> Result<&'a [u8], Rejection> {
    let buf = arena.alloc(part.len() * 3 / 4 + 1)?;
    let len = URL_SAFE_NO_PAD.decode_slice(part, buf).map_err(|_| Rejection::BadEncoding)?;
    Ok(&buf[..len])
}

/// Decodes a signature part that must hold exactly `N` bytes: 32 (43
/// characters) for HS256, 64 (86 characters) for ES256 and EdDSA.
pub fn decode_signature<const N: usize>(part: &[u8]) -> Result<[u8; N], Rejection> {
    let mut signature = [0u8; N];
    decode_exact(part, &mut signature)?;
    Ok(signature)
}

/// Decodes a signature part that must fill `out` exactly (an RS256
/// signature is as long as the key's modulus).
pub fn decode_exact(part: &[u8], out: &mut [u8]) -> Result<(), Rejection> {
    if part.len() != (out.len() * 4).div_ceil(3) {
        return Err(Rejection::BadSignature);
    }
    match URL_SAFE_NO_PAD.decode_slice(part, out) {
        Ok(len) if len == out.len() => Ok(()),
        Ok(_) => Err(Rejection::BadSignature),
        Err(_) => Err(Rejection::BadEncoding),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_three_parts() {
        let jws = split(b"aGk.eyJ9.c2ln").expect("valid");
        assert_eq!(jws.header, b"aGk");
        assert_eq!(jws.payload, b"eyJ9");
        assert_eq!(jws.signing_input, b"aGk.eyJ9");
        assert_eq!(jws.signature, b"c2ln");
    }

    #[test]
    fn refuses_wrong_dot_counts_and_empty_parts() {
        assert_eq!(split(b"aGk.eyJ9"), Err(Rejection::MalformedToken));
        assert_eq!(split(b"a.b.c.d"), Err(Rejection::MalformedToken));
        assert_eq!(split(b"a.b.c.d.e"), Err(Rejection::MalformedToken));
        assert_eq!(split(b"abc"), Err(Rejection::MalformedToken));
        assert_eq!(split(b".b.c"), Err(Rejection::MalformedToken));
        assert_eq!(split(b"a..c"), Err(Rejection::MalformedToken));
        assert_eq!(split(b"a.b."), Err(Rejection::MissingSignature));
    }

    #[test]
    fn refuses_characters_outside_base64url() {
        for bad in [&b"a+b.c.d"[..], b"a.b/.c", b"a.b.c=", b"a.b.c~", b"a b.c.d"] {
            assert_eq!(split(bad), Err(Rejection::BadEncoding), "{bad:?}");
        }
    }

    #[test]
    fn decodes_canonical_base64url_only() {
        let mut region = [0u8; 64];
        let mut arena = Arena::new(&mut region);
        assert_eq!(decode(b"aGk", &mut arena), Ok(&b"hi"[..]));
        // "aGl" has non-zero trailing bits: another spelling of "hi".
        assert_eq!(decode(b"aGl", &mut arena), Err(Rejection::BadEncoding));
        // A lone sixth of a byte is never valid.
        assert_eq!(decode(b"aGkaa", &mut arena), Err(Rejection::BadEncoding));
    }

    #[test]
    fn signature_must_be_32_bytes() {
        let good = [b'A'; 43];
        assert_eq!(decode_signature(&good), Ok([0u8; 32]));
        assert_eq!(decode_signature::<32>(&good[..42]), Err(Rejection::BadSignature));
        let mut non_canonical = good;
        non_canonical[42] = b'B';
        assert_eq!(decode_signature::<32>(&non_canonical), Err(Rejection::BadEncoding));
    }

    #[test]
    fn signatures_are_decoded_at_their_exact_size() {
        let sixty_four = [b'A'; 86];
        assert_eq!(decode_signature(&sixty_four), Ok([0u8; 64]));
        assert_eq!(decode_signature::<64>(&sixty_four[..85]), Err(Rejection::BadSignature));
        assert_eq!(decode_signature::<32>(&sixty_four), Err(Rejection::BadSignature));
        // A 2048-bit RSA signature: 256 bytes, 342 characters.
        let mut out = [1u8; 256];
        assert_eq!(decode_exact(&[b'A'; 342], &mut out), Ok(()));
        assert_eq!(out, [0u8; 256]);
        assert_eq!(decode_exact(&[b'A'; 343], &mut out), Err(Rejection::BadSignature));
    }
}
