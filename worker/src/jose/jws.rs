//! Split: a compact JWS into its three base64url parts, and base64url
//! decoding into the arena.
//!
//! The split is strict (RFC 7515 section 7.1, RFC 8725 section 3.11): exactly
//! two dots, non-empty parts, and only the 64 characters of the base64url
//! alphabet. Decoding forbids padding and refuses non-canonical trailing
//! bits, so each token has one spelling (`gateway_jose::base64url`, whose
//! table the split reads too).

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

use gateway_jose::base64url::{self, DOT};

/// Splits `token` at its two dots.
pub fn split(token: &[u8]) -> Result<CompactJws<'_>, Rejection> {
    let mut dots = [0usize; 2];
    let mut count = 0;
    // Byte by byte in order, the plain stretches eight at a time.
    base64url::visit_others(token, |i, b| match base64url::value(b) {
        0..DOT => Ok(()),
        DOT => {
            *dots.get_mut(count).ok_or(Rejection::MalformedToken)? = i;
            count += 1;
            Ok(())
        }
        _ => Err(Rejection::BadEncoding),
    })?;
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

/// Decodes one base64url part into a slice of the arena.
pub fn decode<'a>(part: &[u8], arena: &mut Arena<'a>) -> Result<&'a [u8], Rejection> {
    let len = decoded_len(part.len()).ok_or(Rejection::BadEncoding)?;
    let buf = arena.alloc(len)?;
    decode_into(part, buf)?;
    Ok(buf)
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
    decode_into(part, out)
}

/// How many bytes `chars` base64url characters without padding hold; none
/// for a length that no byte string encodes to.
fn decoded_len(chars: usize) -> Option<usize> {
    base64url::decoded_len(chars)
}

/// Decodes `part` into `out` (canonical base64url, exactly its length).
fn decode_into(part: &[u8], out: &mut [u8]) -> Result<(), Rejection> {
    base64url::decode_into(part, out).map_err(|_| Rejection::BadEncoding)
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

    /// The split byte by byte, as it was before the plain stretches were
    /// skipped eight at a time: the same answer, the same reason first.
    fn split_byte_by_byte(token: &[u8]) -> Result<[usize; 2], Rejection> {
        let mut dots = [0usize; 2];
        let mut count = 0;
        for (i, &b) in token.iter().enumerate() {
            match base64url::value(b) {
                0..DOT => {}
                DOT => {
                    *dots.get_mut(count).ok_or(Rejection::MalformedToken)? = i;
                    count += 1;
                }
                _ => return Err(Rejection::BadEncoding),
            }
        }
        if count != 2 {
            return Err(Rejection::MalformedToken);
        }
        Ok(dots)
    }

    #[test]
    fn skipping_eight_at_a_time_finds_what_a_byte_scan_finds() {
        // Tokens of every length up to 40 with dots and one foreign byte
        // at assorted places, the foreign byte before, between and after
        // the dots.
        for len in 1..=40usize {
            for first in 0..len {
                for second in [first + 1, first + 7, first + 9, len - 1] {
                    for bad in [None, Some(0), Some(len / 2), Some(len - 1)] {
                        let mut token = std::vec![b'A'; len];
                        token[first] = b'.';
                        if second < len {
                            token[second] = b'.';
                        }
                        if let Some(at) = bad {
                            token[at] = b'+';
                        }
                        let expected = split_byte_by_byte(&token);
                        let got = split(&token);
                        match expected {
                            Ok([a, b]) if a > 0 && b > a + 1 && b + 1 < len => {
                                let jws = got.expect("valid");
                                assert_eq!((jws.header.len(), jws.signing_input.len()), (a, b), "{token:?}");
                            }
                            Ok(_) => assert!(got.is_err(), "{token:?}"),
                            Err(reason) => assert_eq!(got.map(|_| ()), Err(reason), "{token:?}"),
                        }
                    }
                }
            }
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
    fn agrees_with_the_base64_crate() {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;
        // Every string of up to 3 characters over a sample that holds each
        // character class and each run of trailing bits, then longer ones.
        let sample = b"AQgwBCDPaz09-_+/=.~ \x80";
        let mut inputs: std::vec::Vec<std::vec::Vec<u8>> = std::vec![std::vec::Vec::new()];
        for len in 1..=3 {
            let mut next = std::vec::Vec::new();
            for prefix in inputs.iter().filter(|p| p.len() == len - 1) {
                for &c in sample {
                    let mut s = prefix.clone();
                    s.push(c);
                    next.push(s);
                }
            }
            inputs.extend(next);
        }
        for len in 4..=40 {
            for shift in 0..sample.len() {
                inputs.push((0..len).map(|i| sample[(i * 7 + shift) % 16]).collect());
                inputs.push((0..len).map(|i| sample[(i * 5 + shift) % sample.len()]).collect());
            }
        }
        for input in inputs {
            let mut region = [0u8; 64];
            let mut arena = Arena::new(&mut region);
            let ours = decode(&input, &mut arena).map(|b| b.to_vec());
            let theirs = URL_SAFE_NO_PAD.decode(&input).map_err(|_| Rejection::BadEncoding);
            assert_eq!(ours, theirs, "{:?}", std::string::String::from_utf8_lossy(&input));
        }
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
