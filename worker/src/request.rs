//! Phase 1, parse: the request head, zero-copy, and its one bearer token.
//!
//! `httparse` parses the head into slices of the input (it is `no_std`,
//! zero-copy and fuzzed). This phase then finds exactly one `Authorization`
//! header, checks the `Bearer` scheme (case-insensitive, RFC 7235 section
//! 2.1) followed by one or more spaces (RFC 6750 section 2.1), and copies the
//! token into a fixed 256-byte buffer. Nothing else of the request is kept:
//! routing is by the token's audience, and the host keeps the body.

use crate::reject::Rejection;

/// The most header fields a request head may carry.
pub const MAX_HEADERS: usize = 64;

/// The longest token the gateway accepts, in bytes.
pub const TOKEN_CAPACITY: usize = 256;

/// A bearer token copied out of the request head into a fixed buffer.
pub struct TokenBuf {
    bytes: [u8; TOKEN_CAPACITY],
    len: usize,
}

impl TokenBuf {
    /// An empty buffer.
    pub const fn new() -> Self {
        TokenBuf { bytes: [0; TOKEN_CAPACITY], len: 0 }
    }

    /// The token.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn set(&mut self, token: &[u8]) -> Result<(), Rejection> {
        let slot = self.bytes.get_mut(..token.len()).ok_or(Rejection::TokenTooLong)?;
        slot.copy_from_slice(token);
        self.len = token.len();
        Ok(())
    }
}

impl Default for TokenBuf {
    fn default() -> Self {
        Self::new()
    }
}

/// Parses `head` and copies its bearer token into `token`.
pub fn extract_bearer(head: &[u8], token: &mut TokenBuf) -> Result<(), Rejection> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(Rejection::IncompleteRequest),
        Err(httparse::Error::TooManyHeaders) => return Err(Rejection::TooManyHeaders),
        Err(_) => return Err(Rejection::MalformedRequest),
    }

    let mut authorization = None;
    for header in request.headers.iter() {
        if header.name.eq_ignore_ascii_case("authorization") {
            if authorization.is_some() {
                return Err(Rejection::DuplicateAuthorization);
            }
            authorization = Some(header.value);
        }
    }
    let value = authorization.ok_or(Rejection::MissingAuthorization)?;
    token.set(bearer_credentials(value)?)
}

/// The token of an `Authorization: Bearer <token>` value.
fn bearer_credentials(value: &[u8]) -> Result<&[u8], Rejection> {
    const SCHEME: &[u8] = b"bearer";
    let scheme_end = value.iter().position(|&b| b == b' ' || b == b'\t').unwrap_or(value.len());
    let (scheme, rest) = value.split_at(scheme_end);
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return Err(Rejection::UnsupportedScheme);
    }
    // RFC 6750: credentials = "Bearer" 1*SP b64token. A tab is not SP.
    let token = match rest.iter().position(|&b| b != b' ') {
        Some(start) if rest.first() == Some(&b' ') => &rest[start..],
        _ => return Err(Rejection::MalformedAuthorization),
    };
    // Characters first: a runtime that joins repeated headers with ", "
    // (workerd, fetch) turns two tokens into one long value, which is a
    // malformed request (400), not a long token.
    if !is_b64token(token) {
        return Err(Rejection::MalformedAuthorization);
    }
    if token.len() > TOKEN_CAPACITY {
        return Err(Rejection::TokenTooLong);
    }
    Ok(token)
}

/// RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
fn is_b64token(token: &[u8]) -> bool {
    let body_len = token.len() - token.iter().rev().take_while(|&&b| b == b'=').count();
    body_len > 0
        && token[..body_len]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(head: &str) -> Result<std::vec::Vec<u8>, Rejection> {
        let mut token = TokenBuf::new();
        extract_bearer(head.as_bytes(), &mut token).map(|()| token.as_bytes().to_vec())
    }

    fn with_auth(value: &str) -> std::string::String {
        std::format!("GET /orders HTTP/1.1\r\nHost: gw\r\nAuthorization: {value}\r\n\r\n")
    }

    macro_rules! cases {
        ($($name:ident: $head:expr => $expected:expr;)*) => {$(
            #[test]
            fn $name() {
                assert_eq!(extract(&$head), $expected);
            }
        )*};
    }

    cases! {
        bearer_token_is_copied: with_auth("Bearer a.b.c") => Ok(b"a.b.c".to_vec());
        scheme_is_case_insensitive: with_auth("bEaReR a.b.c") => Ok(b"a.b.c".to_vec());
        several_spaces_after_scheme: with_auth("Bearer   a.b.c") => Ok(b"a.b.c".to_vec());
        header_name_is_case_insensitive: "GET / HTTP/1.1\r\naUtHoRiZaTiOn: Bearer x\r\n\r\n" => Ok(b"x".to_vec());
        no_authorization_header: "GET / HTTP/1.1\r\nHost: gw\r\n\r\n" => Err(Rejection::MissingAuthorization);
        basic_scheme: with_auth("Basic dXNlcjpwYXNz") => Err(Rejection::UnsupportedScheme);
        scheme_prefix_only: with_auth("Bearerx a.b.c") => Err(Rejection::UnsupportedScheme);
        empty_value: with_auth("") => Err(Rejection::UnsupportedScheme);
        scheme_without_token: with_auth("Bearer") => Err(Rejection::MalformedAuthorization);
        tab_after_scheme: with_auth("Bearer\ta.b.c") => Err(Rejection::MalformedAuthorization);
        space_inside_token: with_auth("Bearer a.b c") => Err(Rejection::MalformedAuthorization);
        comma_inside_token: with_auth("Bearer a.b,c") => Err(Rejection::MalformedAuthorization);
        only_padding: with_auth("Bearer ==") => Err(Rejection::MalformedAuthorization);
        two_authorization_headers: "GET / HTTP/1.1\r\nAuthorization: Bearer a\r\nauthorization: Bearer a\r\n\r\n" => Err(Rejection::DuplicateAuthorization);
        token_of_256_bytes_fits: with_auth(&std::format!("Bearer {}", "a".repeat(256))) => Ok(std::vec![b'a'; 256]);
        token_of_257_bytes: with_auth(&std::format!("Bearer {}", "a".repeat(257))) => Err(Rejection::TokenTooLong);
        joined_duplicates_are_malformed: with_auth(&std::format!("Bearer {0}, Bearer {0}", "a".repeat(200))) => Err(Rejection::MalformedAuthorization);
        truncated_head: "GET / HTTP/1.1\r\nAuthorization: Bearer a.b.c\r\n" => Err(Rejection::IncompleteRequest);
        truncated_request_line: "GET / HT" => Err(Rejection::IncompleteRequest);
        empty_head: "" => Err(Rejection::IncompleteRequest);
        garbage_head: "\x01\x02\x03 nonsense\r\n\r\n" => Err(Rejection::MalformedRequest);
        bad_header_name: "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n" => Err(Rejection::MalformedRequest);
        too_many_headers: std::format!("GET / HTTP/1.1\r\n{}\r\n", "X-A: 1\r\n".repeat(MAX_HEADERS + 1)) => Err(Rejection::TooManyHeaders);
    }
}
