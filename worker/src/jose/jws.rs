//! Split: a compact JWS into its three base64url parts, and base64url
//! decoding into the arena.
//!
//! The split is strict (RFC 7515 section 7.1, RFC 8725 section 3.11): exactly
//! two dots, non-empty parts, and only the 64 characters of the base64url
//! alphabet. Decoding forbids padding and refuses non-canonical trailing
//! bits, so each token has one spelling. Both read one 256-entry table
//! ([`VALUES`]): one load per character instead of a chain of range checks,
//! and no base64 crate in the module.

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

/// [`VALUES`] of the `.` that separates the parts.
const DOT: u8 = 0x40;
/// [`VALUES`] of every byte outside the alphabet and not `.`.
const INVALID: u8 = 0xff;

/// Each byte's base64url value (0 to 63), [`DOT`] or [`INVALID`]: anything
/// at 64 or above is not a base64url character, so the OR of a part's values
/// tells whether the whole part is.
const VALUES: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut table = [INVALID; 256];
    let mut i = 0;
    while i < alphabet.len() {
        table[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    table[b'.' as usize] = DOT;
    table
};

/// Splits `token` at its two dots.
pub fn split(token: &[u8]) -> Result<CompactJws<'_>, Rejection> {
    let mut dots = [0usize; 2];
    let mut count = 0;
    for (i, &b) in token.iter().enumerate() {
        match VALUES[usize::from(b)] {
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
    match chars % 4 {
        1 => None,
        rest => Some(chars / 4 * 3 + rest.saturating_sub(1)),
    }
}

/// Decodes `part` into `out`, which must be `decoded_len(part.len())` bytes long.
/// Refuses a character outside the alphabet and set bits after the last
/// whole byte (another spelling of the same bytes).
fn decode_into(part: &[u8], out: &mut [u8]) -> Result<(), Rejection> {
    if decoded_len(part.len()) != Some(out.len()) {
        return Err(Rejection::BadEncoding);
    }
    let (quads, tail) = part.as_chunks::<4>();
    let (triples, rest) = out.as_chunks_mut::<3>();
    let mut seen = 0u8;
    for (quad, triple) in quads.iter().zip(triples) {
        let [a, b, c, d] = quad.map(|ch| VALUES[usize::from(ch)]);
        seen |= a | b | c | d;
        let bits = u32::from(a) << 18 | u32::from(b) << 12 | u32::from(c) << 6 | u32::from(d);
        let [_, x, y, z] = bits.to_be_bytes();
        *triple = [x, y, z];
    }
    let mut bits = 0u32;
    for (i, &ch) in tail.iter().enumerate() {
        let value = VALUES[usize::from(ch)];
        seen |= value;
        bits |= u32::from(value) << (18 - 6 * i);
    }
    let [_, x, y, _] = bits.to_be_bytes();
    let whole = rest.len();
    rest.copy_from_slice(&[x, y][..whole]);
    let leftover = bits & (0x00ff_ffff >> (8 * whole));
    if seen >= DOT || leftover != 0 {
        return Err(Rejection::BadEncoding);
    }
    Ok(())
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
