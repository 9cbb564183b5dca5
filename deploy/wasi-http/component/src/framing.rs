//! The request body's framing as far as wasi:http shows it, and how a
//! forward frames it (`ABI.md`, "Forward": no body where the request had
//! none, `Content-Length` or chunked as the client's body was).
//!
//! The runtime's HTTP stack has read the framing and keeps
//! `Transfer-Encoding` to itself: what the component sees is the
//! `Content-Length` field, if any, and the body's bytes. So:
//!
//! - without `Content-Length` (or with a length of zero), the body's first
//!   bytes are read before the decision: content that follows came
//!   chunked, and a body that ends at once is no body;
//! - with a length, the body must have exactly that many bytes. hyper keeps
//!   a `Content-Length` sent before `Transfer-Encoding: chunked` and reads
//!   the chunks, so a body of another length came chunked beside its
//!   length: the module is then given both, and refuses them as it does on
//!   every host (RFC 9112 section 6.3).

/// The `Content-Length` the fields carry: `None` without one, `Some(None)`
/// for a value that is not a decimal number (the module refuses it).
pub fn content_length<N: AsRef<[u8]>, V: AsRef<[u8]>>(fields: &[(N, V)]) -> Option<Option<u64>> {
    let (_, value) = fields.iter().find(|(name, _)| name.as_ref().eq_ignore_ascii_case(b"content-length"))?;
    let value = value.as_ref();
    let decimal = !value.is_empty() && value.iter().all(u8::is_ascii_digit);
    // Digit by digit: `str::parse` would link the formatting of its errors.
    let number = || value.iter().try_fold(0u64, |n, &d| n.checked_mul(10)?.checked_add(u64::from(d - b'0')));
    Some(decimal.then(number).flatten())
}

/// Whether the body's first bytes are read before the decision: when no
/// length says whether content follows, or the length says none does.
pub fn reads_ahead(length: Option<Option<u64>>) -> bool {
    matches!(length, None | Some(Some(0)))
}

/// How a forward sends the request's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// No body, and no framing field of the runtime's (the client's
    /// `Content-Length: 0`, if it sent one, is among the fields).
    None,
    /// The body without a length: the runtime sends it chunked.
    Chunked,
    /// Exactly this many bytes, under the client's `Content-Length`.
    Length(u64),
}

/// The body a forward sends and whether the head says it came chunked,
/// from the request's `Content-Length` and whether content followed the
/// head (read ahead: see [`reads_ahead`]). Content after a length of zero
/// came chunked beside it: the head carries both.
pub fn body(length: Option<Option<u64>>, content_follows: bool) -> (Body, bool) {
    match (length, content_follows) {
        (None, true) | (Some(Some(0)), true) => (Body::Chunked, true),
        (Some(Some(n)), _) if n > 0 => (Body::Length(n), false),
        _ => (Body::None, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_length_is_read_from_the_fields() {
        assert_eq!(content_length::<&str, &str>(&[]), None);
        assert_eq!(content_length(&[("accept", "*/*"), ("Content-Length", "17")]), Some(Some(17)));
        assert_eq!(content_length(&[("content-length", "007")]), Some(Some(7)));
        for odd in ["", "+5", "5, 6", " 5", "-1", "99999999999999999999999"] {
            assert_eq!(content_length(&[("content-length", odd)]), Some(None), "{odd:?}");
        }
    }

    #[test]
    fn the_first_bytes_are_read_when_no_length_says_content_follows() {
        assert!(reads_ahead(None));
        assert!(reads_ahead(Some(Some(0))));
        assert!(!reads_ahead(Some(Some(1))));
        assert!(!reads_ahead(Some(None)));
    }

    #[test]
    fn a_forward_sends_no_body_where_the_request_had_none() {
        assert_eq!(body(None, false), (Body::None, false));
        assert_eq!(body(Some(Some(0)), false), (Body::None, false));
        assert_eq!(body(None, true), (Body::Chunked, true));
        assert_eq!(body(Some(Some(5)), false), (Body::Length(5), false));
        // Content after a length of zero: the head carries both fields.
        assert_eq!(body(Some(Some(0)), true), (Body::Chunked, true));
        assert_eq!(body(Some(None), false), (Body::None, false));
    }
}
