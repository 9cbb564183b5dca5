//! Constant-time equality of byte strings, a word at a time.
//!
//! `subtle`'s comparison of two slices passes every byte through its
//! optimisation barrier, which in wasm is a call (and a host's epoch check)
//! per byte: 32 for an HMAC tag, up to 256 for a cached token. This one
//! passes each 8-byte word through the same barrier (`u64::ct_eq`) and each
//! byte of the rest, and so keeps `subtle`'s guarantee at an eighth of the
//! calls: no branch on the bytes' values, every byte read.

use subtle::{Choice, ConstantTimeEq as _};

/// `a == b`, in time that depends on the lengths only.
pub fn eq(a: &[u8], b: &[u8]) -> Choice {
    if a.len() != b.len() {
        return Choice::from(0);
    }
    let (a_words, a_rest) = a.as_chunks::<8>();
    let (b_words, b_rest) = b.as_chunks::<8>();
    let mut same = a_rest.ct_eq(b_rest);
    for (x, y) in a_words.iter().zip(b_words) {
        same &= u64::from_ne_bytes(*x).ct_eq(&u64::from_ne_bytes(*y));
    }
    same
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same answer as `subtle`'s slice comparison, for every length up
    /// to 40 and a difference at every position.
    #[test]
    fn agrees_with_subtle() {
        for len in 0..=40usize {
            let a: std::vec::Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            assert!(bool::from(eq(&a, &a.clone())), "len {len}");
            for at in 0..len {
                for flip in [1u8, 0x80, 0xff] {
                    let mut b = a.clone();
                    b[at] ^= flip;
                    assert_eq!(bool::from(eq(&a, &b)), bool::from(a.ct_eq(&b)), "len {len}, byte {at}");
                    assert!(!bool::from(eq(&a, &b)));
                }
            }
            assert!(!bool::from(eq(&a, &a[..len.saturating_sub(1)])) || len == 0);
        }
    }
}
