//! Base64url without padding (RFC 4648 section 5, as RFC 7515 section 2
//! uses it), canonical only: a character outside the alphabet, padding, or
//! set bits after the last whole byte (another spelling of the same bytes)
//! are refused, so each byte string has one spelling. One 256-entry table
//! ([`value`]): one load per character instead of a chain of range checks,
//! and no base64 crate in the module.

/// [`value`] of the `.` that separates a compact JWS's parts.
pub const DOT: u8 = 0x40;

/// [`value`] of every byte outside the alphabet and not `.`.
pub const INVALID: u8 = 0xff;

/// The byte's base64url value (0 to 63), [`DOT`] or [`INVALID`]: anything
/// at 64 or above is not a base64url character, so the OR of a part's
/// values tells whether the whole part is.
#[inline(always)]
pub const fn value(byte: u8) -> u8 {
    !COMPLEMENTS[byte as usize]
}

/// Each byte's [`value`], complemented: the bytes outside the alphabet (most
/// of them) are zero, and a wasm module's data leaves runs of zeros out
/// (its memory starts zeroed), so the module carries only the alphabet's
/// span of the table (`-` to `z`) rather than all 256 bytes.
const COMPLEMENTS: [u8; 256] = {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut table = [!INVALID; 256];
    let mut i = 0;
    while i < alphabet.len() {
        table[alphabet[i] as usize] = !(i as u8);
        i += 1;
    }
    table[b'.' as usize] = !DOT;
    table
};

/// How many of `text`'s first bytes are in the base64url alphabet, counted
/// in whole steps of eight (a `.` or any other byte ends the run).
fn alphabet_run(text: &[u8]) -> usize {
    let mut run = 0;
    for &[a, b, c, d, e, f, g, h] in text.as_chunks::<8>().0 {
        if value(a) | value(b) | value(c) | value(d) | value(e) | value(f) | value(g) | value(h) >= DOT {
            break;
        }
        run += 8;
    }
    run
}

/// Calls `visit` with the place and value of every byte of `text` that
/// may be outside the base64url alphabet, in order, and stops at the first
/// error it returns. A scanner of tokens skips their plain stretches with
/// it: eight bytes per loop round (one back-edge, and one epoch check of a
/// wasm host, per eight bytes instead of per byte); the eight bytes that
/// end a stretch, and the last few, are visited one by one (those of the
/// alphabet among them too), so every other byte is visited, in order.
#[inline(always)] // each caller is the only one of its closure
pub fn visit_others<E>(text: &[u8], mut visit: impl FnMut(usize, u8) -> Result<(), E>) -> Result<(), E> {
    let mut at = 0;
    while at < text.len() {
        at += alphabet_run(&text[at..]);
        let end = text.len().min(at + 8);
        while at < end {
            visit(at, text[at])?;
            at += 1;
        }
    }
    Ok(())
}

/// The text is not canonical base64url, or not the length asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotBase64url;

/// How many bytes `chars` base64url characters without padding hold; none
/// for a length that no byte string encodes to.
#[inline]
pub const fn decoded_len(chars: usize) -> Option<usize> {
    match chars % 4 {
        1 => None,
        rest => Some(chars / 4 * 3 + rest.saturating_sub(1)),
    }
}

/// Decodes `text` into `out`, which must be `decoded_len(text.len())` bytes
/// long. Refuses a character outside the alphabet and set bits after the
/// last whole byte.
pub fn decode_into(text: &[u8], out: &mut [u8]) -> Result<(), NotBase64url> {
    if decoded_len(text.len()) != Some(out.len()) {
        return Err(NotBase64url);
    }
    let (quads, tail) = text.as_chunks::<4>();
    let (triples, rest) = out.as_chunks_mut::<3>();
    let mut seen = 0u8;
    for (&[a, b, c, d], triple) in quads.iter().zip(triples) {
        // Four lookups by name: at opt-level z an array `map` stays a loop
        // through the stack, with the host's epoch check on every lane.
        let (a, b, c, d) = (value(a), value(b), value(c), value(d));
        seen |= a | b | c | d;
        let bits = u32::from(a) << 18 | u32::from(b) << 12 | u32::from(c) << 6 | u32::from(d);
        let [_, x, y, z] = bits.to_be_bytes();
        *triple = [x, y, z];
    }
    let mut bits = 0u32;
    for (i, &ch) in tail.iter().enumerate() {
        let value = value(ch);
        seen |= value;
        bits |= u32::from(value) << (18 - 6 * i);
    }
    let [_, x, y, _] = bits.to_be_bytes();
    let whole = rest.len();
    rest.copy_from_slice(&[x, y][..whole]);
    let leftover = bits & (0x00ff_ffff >> (8 * whole));
    if seen >= DOT || leftover != 0 {
        return Err(NotBase64url);
    }
    Ok(())
}

/// Decodes `text` into the start of `buf` and returns the bytes: for a
/// value whose length is not known beforehand (a JWK's `n`).
pub fn decode<'b>(text: &[u8], buf: &'b mut [u8]) -> Result<&'b [u8], NotBase64url> {
    let len = decoded_len(text.len()).ok_or(NotBase64url)?;
    let out = buf.get_mut(..len).ok_or(NotBase64url)?;
    decode_into(text, out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(text: &str) -> Result<std::vec::Vec<u8>, NotBase64url> {
        let mut buf = [0u8; 64];
        decode(text.as_bytes(), &mut buf).map(<[u8]>::to_vec)
    }

    #[test]
    fn decodes_canonical_base64url() {
        assert_eq!(decoded(""), Ok(std::vec![]));
        assert_eq!(decoded("AQAB"), Ok(std::vec![1, 0, 1]));
        assert_eq!(decoded("_-8"), Ok(std::vec![0xff, 0xef]));
        assert_eq!(decoded("aGk"), Ok(b"hi".to_vec()));
    }

    #[test]
    fn alphabet_runs_stop_before_the_eight_that_hold_another_byte() {
        assert_eq!(alphabet_run(b""), 0);
        assert_eq!(alphabet_run(b"abcdefg"), 0);
        assert_eq!(alphabet_run(b"abcdefgh"), 8);
        assert_eq!(alphabet_run(b"abcdefgh-_012345xyz"), 16);
        assert_eq!(alphabet_run(b"abcdefgh.bcdefgh"), 8);
        assert_eq!(alphabet_run(b"abcdefghabcdef=h"), 8);
        for byte in 0..=255u8 {
            let mut text = *b"ABCDEFGHabcdefgh";
            text[11] = byte;
            let expected = if value(byte) < DOT { 16 } else { 8 };
            assert_eq!(alphabet_run(&text), expected, "byte {byte:#x}");
        }
    }

    /// Every byte outside the alphabet is visited, in order, whatever its
    /// place; the plain stretches are skipped only in whole eights.
    #[test]
    fn visits_every_other_byte_in_order() {
        let others = |text: &[u8]| {
            let mut seen = std::vec::Vec::new();
            let _ = visit_others(text, |at, b| {
                if value(b) >= DOT {
                    seen.push(at);
                }
                Ok::<(), ()>(())
            });
            seen
        };
        for len in 0..40 {
            for place in 0..len {
                for byte in [b'.', b'=', b' ', 0, 0x80, 0xff, b'+', b'/'] {
                    let mut text = std::vec![b'a'; len];
                    text[place] = byte;
                    if len > 3 {
                        text[len - 3] = b'.';
                    }
                    let expected: std::vec::Vec<usize> =
                        (0..len).filter(|&i| value(text[i]) >= DOT).collect();
                    assert_eq!(others(&text), expected, "{text:?}");
                }
            }
        }
        let first_error =
            visit_others(
                b"abcdefghijkl.mnop=qrs",
                |at, b| if b == b'.' || b == b'=' { Err(at) } else { Ok(()) },
            );
        assert_eq!(first_error, Err(12));
    }

    #[test]
    fn refuses_other_spellings() {
        for bad in ["AQAB=", "AQ==", "aGl", "a", "a+b/", "a b", "aG.k"] {
            assert_eq!(decoded(bad), Err(NotBase64url), "{bad}");
        }
    }
}
