//! Parse: the request head, zero-copy, checked for the shapes that
//! let one request be read two ways, and its one bearer token.
//!
//! `httparse` parses the head into slices of the input (it is `no_std`,
//! zero-copy and fuzzed). This phase then refuses what an upstream could
//! read differently from the gateway: control bytes in a field value, a
//! missing or repeated `Host`, and framing that smuggles a second request
//! (`Content-Length` beside `Transfer-Encoding`, repeated or non-numeric
//! lengths, codings other than `chunked`). The bearer token is found in
//! exactly one `Authorization` header, scheme `Bearer` (case-insensitive,
//! RFC 7235 section 2.1) followed by one or more spaces (RFC 6750 section
//! 2.1), at most `max_token_bytes` long (256 by default). The token is not
//! copied: it stays in the fixed input buffer, a slice of the head like
//! every other field.

use gateway_jose::base64url;

use crate::reject::Rejection;

/// The most header fields a request head may carry.
pub const MAX_HEADERS: usize = 64;

/// The longest token the gateway accepts, in bytes: `max_token_bytes` of
/// the config (256 by default, at most 8 KiB), fixed at build time.
pub const TOKEN_CAPACITY: usize = crate::config::MAX_TOKEN_BYTES;

/// RFC 6750 b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
pub fn is_b64token(token: &[u8]) -> bool {
    let body_len = token.len() - token.iter().rev().take_while(|&&b| b == b'=').count();
    // The base64url stretches eight at a time, the other bytes one by one.
    let allowed =
        |_, b: u8| match b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/') {
            true => Ok(()),
            false => Err(()),
        };
    body_len > 0 && base64url::visit_others(&token[..body_len], allowed).is_ok()
}

/// A parsed request head: slices of the input, nothing copied.
#[derive(Debug, Clone, Copy)]
pub struct Head<'b, 'h> {
    /// The method, a token (`GET`, `POST`, ...).
    pub method: &'b str,
    /// The request target as sent.
    pub target: &'b [u8],
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    /// The header fields in order.
    pub fields: &'h [httparse::Header<'b>],
}

impl<'b> Head<'b, '_> {
    /// The fields named `name` (ASCII case-insensitive), in order.
    pub fn named<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'b [u8]> + 's {
        // The lengths first, here: most names differ in length, and that
        // then costs no call into the byte comparison.
        let is_name =
            move |f: &&httparse::Header<'b>| f.name.len() == name.len() && f.name.eq_ignore_ascii_case(name);
        self.fields.iter().filter(is_name).map(|f| f.value)
    }

    /// The `Host` value, when there is one (`parse` allows at most one).
    pub fn host(&self) -> Option<&'b [u8]> {
        self.named("host").next()
    }

    /// True when the head frames content: chunked, or a length other than
    /// zero (`parse` allows one framing only).
    pub fn has_content(&self) -> bool {
        self.named("transfer-encoding").next().is_some()
            || self.named("content-length").any(|v| v.iter().any(|&b| b != b'0'))
    }
}

/// Parses `bytes` into a [`Head`] whose fields live in `fields`, and checks it.
pub fn parse<'b, 'h>(
    bytes: &'b [u8],
    fields: &'h mut [httparse::Header<'b>; MAX_HEADERS],
) -> Result<Head<'b, 'h>, Rejection> {
    let mut request = httparse::Request::new(fields);
    match request.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(Rejection::IncompleteRequest),
        Err(httparse::Error::TooManyHeaders) => return Err(Rejection::TooManyHeaders),
        Err(_) => return Err(Rejection::MalformedRequest),
    }
    let httparse::Request { method, path, version, headers } = request;
    let (Some(method), Some(path), Some(minor_version)) = (method, path, version) else {
        return Err(Rejection::IncompleteRequest);
    };
    let head = Head { method, target: path.as_bytes(), minor_version, fields: headers };
    check_field_values(&head)?;
    check_framing(&head)?;
    check_host(&head)?;
    Ok(head)
}

/// RFC 9110 section 5.5: a field value is visible ASCII, obs-text, spaces
/// and tabs; any other control byte is refused.
fn check_field_values(head: &Head<'_, '_>) -> Result<(), Rejection> {
    match head.fields.iter().any(|f| has_control(f.value)) {
        true => Err(Rejection::InvalidFieldValue),
        false => Ok(()),
    }
}

/// True when `value` holds a control byte other than a tab, or DEL.
/// Eight bytes at a time while a word test finds none below 0x20 and no
/// DEL (it never misses one); eight that may hold one (a tab, in a valid
/// value) are looked at byte by byte.
fn has_control(value: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let is_control = |b: &u8| (*b < 0x20 && *b != b'\t') || *b == 0x7f;
    let (words, rest) = value.as_chunks::<8>();
    for word in words {
        let x = u64::from_le_bytes(*word);
        // A byte below 0x20, and a byte equal to 0x7f (zero after the xor).
        let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGHS;
        let y = x ^ (ONES * 0x7f);
        let del = y.wrapping_sub(ONES) & !y & HIGHS;
        if below_space | del != 0 && word.iter().any(is_control) {
            return true;
        }
    }
    rest.iter().any(is_control)
}

/// One way to frame a body, spelled one way (RFC 9112 section 6).
fn check_framing(head: &Head<'_, '_>) -> Result<(), Rejection> {
    let lengths = head.named("content-length").count();
    let codings = head.named("transfer-encoding").count();
    if lengths > 0 && codings > 0 {
        return Err(Rejection::ConflictingFraming);
    }
    if lengths > 1 || head.named("content-length").any(|v| v.is_empty() || !v.iter().all(u8::is_ascii_digit))
    {
        return Err(Rejection::InvalidContentLength);
    }
    let chunked_only = |v: &[u8]| trim_ows(v).eq_ignore_ascii_case(b"chunked");
    if codings > 1
        || (codings == 1 && (head.minor_version == 0 || !head.named("transfer-encoding").all(chunked_only)))
    {
        return Err(Rejection::UnsupportedTransferEncoding);
    }
    // A length of zero frames no content.
    let has_content = codings > 0 || head.named("content-length").any(|v| v.iter().any(|&b| b != b'0'));
    if has_content && matches!(head.method, "GET" | "HEAD") {
        return Err(Rejection::ContentOnGetOrHead);
    }
    Ok(())
}

/// RFC 9112 section 3.2: exactly one `Host` in HTTP/1.1, at most one in
/// HTTP/1.0, and its value an authority (or empty).
fn check_host(head: &Head<'_, '_>) -> Result<(), Rejection> {
    match (head.named("host").count(), head.minor_version) {
        (0, 0) | (1, _) => {}
        (0, _) => return Err(Rejection::MissingHost),
        _ => return Err(Rejection::DuplicateHost),
    }
    match head.host() {
        Some(host) if !is_authority(host) => Err(Rejection::MalformedHost),
        _ => Ok(()),
    }
}

/// RFC 3986 authority characters without user info: a reg-name, an IPv4
/// address or an IPv6 literal in brackets, and an optional port. Empty is
/// allowed (RFC 9112 section 3.2). A comma is refused although a reg-name
/// may hold one: no host name does, and it is how HTTP stacks join
/// repeated fields (Envoy joins two `Host` fields as `a,b`), so a joined
/// pair is refused like the pair itself.
pub fn is_authority(text: &[u8]) -> bool {
    text.iter().all(|&b| {
        b.is_ascii_alphanumeric()
            || matches!(b, b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+')
            || matches!(b, b';' | b'=' | b':' | b'[' | b']' | b'%')
    })
}

/// The value without leading and trailing spaces and tabs.
pub fn trim_ows(value: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = value.iter().position(|b| !is_ows(b)).unwrap_or(value.len());
    let end = value.iter().rposition(|b| !is_ows(b)).map_or(start, |i| i + 1);
    &value[start..end]
}

/// The bearer token of `head`, at most `max_len` bytes.
pub fn bearer<'b>(head: &Head<'b, '_>, max_len: usize) -> Result<&'b [u8], Rejection> {
    let mut values = head.named("authorization");
    let value = values.next().ok_or(Rejection::MissingAuthorization)?;
    if values.next().is_some() {
        return Err(Rejection::DuplicateAuthorization);
    }
    let token = bearer_credentials(value)?;
    match token.len() <= max_len {
        true => Ok(token),
        false => Err(Rejection::TokenTooLong),
    }
}

/// Parses `head` and returns its bearer token: the parse phase alone, for
/// benchmarks and tests.
pub fn extract_bearer(head: &[u8], max_len: usize) -> Result<&[u8], Rejection> {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    bearer(&parse(head, &mut fields)?, max_len)
}

/// The token of `Authorization: DPoP <token>` (RFC 9449 section 7.1), or
/// `None` when the request's one `Authorization` field has another scheme
/// (or there is none: the bearer reading says what is wrong then).
#[cfg(policy_dpop)]
pub fn dpop<'b>(head: &Head<'b, '_>, max_len: usize) -> Result<Option<&'b [u8]>, Rejection> {
    let mut values = head.named("authorization");
    let (Some(value), None) = (values.next(), values.next()) else { return Ok(None) };
    let token = match credentials(value, b"dpop") {
        Err(Rejection::UnsupportedScheme) => return Ok(None),
        other => other?,
    };
    match token.len() <= max_len {
        true => Ok(Some(token)),
        false => Err(Rejection::TokenTooLong),
    }
}

/// The token of an `Authorization: Bearer <token>` value.
fn bearer_credentials(value: &[u8]) -> Result<&[u8], Rejection> {
    credentials(value, b"bearer")
}

/// The token of an `Authorization: <scheme> <token>` value, `scheme` in
/// lower case and compared in any case.
#[inline(always)]
fn credentials<'v>(value: &'v [u8], expected: &[u8]) -> Result<&'v [u8], Rejection> {
    let scheme_end = value.iter().position(|&b| b == b' ' || b == b'\t').unwrap_or(value.len());
    let (scheme, rest) = value.split_at(scheme_end);
    if !scheme.eq_ignore_ascii_case(expected) {
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
    match is_b64token(token) {
        true => Ok(token),
        false => Err(Rejection::MalformedAuthorization),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The b64token test with its alphabet stretches skipped eight at a
    /// time agrees with the byte-by-byte definition, for every byte at
    /// every place of tokens around a word's length, with and without
    /// padding.
    #[test]
    fn b64tokens_as_the_grammar_says() {
        let by_byte = |token: &[u8]| {
            let body_len = token.len() - token.iter().rev().take_while(|&&b| b == b'=').count();
            body_len > 0
                && token[..body_len].iter().all(|&b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
                })
        };
        for len in [1usize, 2, 7, 8, 9, 15, 16, 17, 25] {
            for at in 0..len {
                for byte in 0..=255u8 {
                    for tail in [&b""[..], b"=", b"=="] {
                        let mut token = std::vec![b'x'; len];
                        token[at] = byte;
                        token.extend_from_slice(tail);
                        assert_eq!(is_b64token(&token), by_byte(&token), "{token:?}");
                    }
                }
            }
        }
        assert!(!is_b64token(b"") && !is_b64token(b"==") && is_b64token(b"a.b~c+d/e=="));
    }

    /// The word test agrees with the byte test for every byte at every
    /// position of a word and of the bytes after the last word, beside a
    /// tab and beside plain text.
    #[test]
    fn control_bytes_found_in_words_and_tails() {
        let by_byte = |v: &[u8]| v.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f);
        for len in [1usize, 7, 8, 9, 16, 21] {
            for at in 0..len {
                for byte in 0..=255u8 {
                    for fill in [b'a', b'\t', 0xff, b' '] {
                        let mut value = std::vec![fill; len];
                        value[at] = byte;
                        assert_eq!(has_control(&value), by_byte(&value), "{value:?}");
                    }
                }
            }
        }
    }

    const MAX: usize = 256;

    fn extract(head: &impl AsRef<str>) -> Result<std::vec::Vec<u8>, Rejection> {
        extract_bearer(head.as_ref().as_bytes(), MAX).map(<[u8]>::to_vec)
    }

    fn with_auth(value: &str) -> std::string::String {
        std::format!("GET /orders HTTP/1.1\r\nHost: gw\r\nAuthorization: {value}\r\n\r\n")
    }

    crate::cases::cases! { extract;
        bearer_token_is_copied: with_auth("Bearer a.b.c") => Ok(b"a.b.c".to_vec());
        scheme_is_case_insensitive: with_auth("bEaReR a.b.c") => Ok(b"a.b.c".to_vec());
        several_spaces_after_scheme: with_auth("Bearer   a.b.c") => Ok(b"a.b.c".to_vec());
        header_name_is_case_insensitive: "GET / HTTP/1.1\r\nHost: gw\r\naUtHoRiZaTiOn: Bearer x\r\n\r\n" => Ok(b"x".to_vec());
        no_authorization_header: "GET / HTTP/1.1\r\nHost: gw\r\n\r\n" => Err(Rejection::MissingAuthorization);
        basic_scheme: with_auth("Basic dXNlcjpwYXNz") => Err(Rejection::UnsupportedScheme);
        scheme_prefix_only: with_auth("Bearerx a.b.c") => Err(Rejection::UnsupportedScheme);
        empty_value: with_auth("") => Err(Rejection::UnsupportedScheme);
        scheme_without_token: with_auth("Bearer") => Err(Rejection::MalformedAuthorization);
        tab_after_scheme: with_auth("Bearer\ta.b.c") => Err(Rejection::MalformedAuthorization);
        space_inside_token: with_auth("Bearer a.b c") => Err(Rejection::MalformedAuthorization);
        comma_inside_token: with_auth("Bearer a.b,c") => Err(Rejection::MalformedAuthorization);
        only_padding: with_auth("Bearer ==") => Err(Rejection::MalformedAuthorization);
        two_authorization_headers: "GET / HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer a\r\nauthorization: Bearer a\r\n\r\n" => Err(Rejection::DuplicateAuthorization);
        host_required_in_http11: "GET / HTTP/1.1\r\nAuthorization: Bearer a\r\n\r\n" => Err(Rejection::MissingHost);
        host_optional_in_http10: "GET / HTTP/1.0\r\nAuthorization: Bearer a\r\n\r\n" => Ok(b"a".to_vec());
        empty_host_allowed: "GET / HTTP/1.1\r\nHost:\r\nAuthorization: Bearer a\r\n\r\n" => Ok(b"a".to_vec());
        two_hosts: "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\nAuthorization: Bearer a\r\n\r\n" => Err(Rejection::DuplicateHost);
        host_with_user_info: "GET / HTTP/1.1\r\nHost: u@h\r\nAuthorization: Bearer a\r\n\r\n" => Err(Rejection::MalformedHost);
        host_with_space: "GET / HTTP/1.1\r\nHost: a b\r\nAuthorization: Bearer a\r\n\r\n" => Err(Rejection::MalformedHost);
        hosts_joined_by_a_proxy: "GET / HTTP/1.1\r\nHost: a,b\r\nAuthorization: Bearer a\r\n\r\n" => Err(Rejection::MalformedHost);
        content_length_and_chunked: with_auth("Bearer a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked") => Err(Rejection::ConflictingFraming);
        chunked_and_content_length: with_auth("Bearer a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5") => Err(Rejection::ConflictingFraming);
        two_equal_lengths: with_auth("Bearer a\r\nContent-Length: 5\r\nContent-Length: 5") => Err(Rejection::InvalidContentLength);
        joined_lengths: with_auth("Bearer a\r\nContent-Length: 5, 6") => Err(Rejection::InvalidContentLength);
        signed_length: with_auth("Bearer a\r\nContent-Length: +5") => Err(Rejection::InvalidContentLength);
        plain_length: with_auth("Bearer a\r\nContent-Length: 17").replace("GET", "POST") => Ok(b"a".to_vec());
        get_with_content: with_auth("Bearer a\r\nContent-Length: 17") => Err(Rejection::ContentOnGetOrHead);
        head_with_content: with_auth("Bearer a\r\nContent-Length: 1").replace("GET", "HEAD") => Err(Rejection::ContentOnGetOrHead);
        get_chunked: with_auth("Bearer a\r\nTransfer-Encoding: chunked") => Err(Rejection::ContentOnGetOrHead);
        get_with_zero_length: with_auth("Bearer a\r\nContent-Length: 00") => Ok(b"a".to_vec());
        get_lower_case_is_another_method: with_auth("Bearer a\r\nContent-Length: 3").replace("GET", "get") => Ok(b"a".to_vec());
        chunked_then_identity: with_auth("Bearer a\r\nTransfer-Encoding: chunked, identity") => Err(Rejection::UnsupportedTransferEncoding);
        gzip_then_chunked: with_auth("Bearer a\r\nTransfer-Encoding: gzip, chunked") => Err(Rejection::UnsupportedTransferEncoding);
        two_chunked_fields: with_auth("Bearer a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked") => Err(Rejection::UnsupportedTransferEncoding);
        chunked_in_any_case: with_auth("Bearer a\r\nTransfer-Encoding: ChUnKeD").replace("GET", "PUT") => Ok(b"a".to_vec());
        chunked_on_http10: "POST / HTTP/1.0\r\nAuthorization: Bearer a\r\nTransfer-Encoding: chunked\r\n\r\n" => Err(Rejection::UnsupportedTransferEncoding);
        control_byte_in_value: with_auth("Bearer a\r\nX-A: a\x01b") => Err(Rejection::MalformedRequest);
        bare_cr_in_value: with_auth("Bearer a\r\nX-A: a\rb") => Err(Rejection::MalformedRequest);
        obs_fold: with_auth("Bearer a\r\nX-A: a\r\n b") => Err(Rejection::MalformedRequest);
        utf8_in_value_kept: with_auth("Bearer a\r\nX-A: \u{10d}\u{10a}") => Ok(b"a".to_vec());
        non_ascii_field_name: with_auth("Bearer a\r\nX-\u{10d}: 1") => Err(Rejection::MalformedRequest);
        token_filling_the_buffer_fits: with_auth(&std::format!("Bearer {}", "a".repeat(TOKEN_CAPACITY))) => Ok(std::vec![b'a'; TOKEN_CAPACITY]);
        token_one_byte_over: with_auth(&std::format!("Bearer {}", "a".repeat(TOKEN_CAPACITY + 1))) => Err(Rejection::TokenTooLong);
        joined_duplicates_are_malformed: with_auth(&std::format!("Bearer {0}, Bearer {0}", "a".repeat(TOKEN_CAPACITY * 3 / 4))) => Err(Rejection::MalformedAuthorization);
        truncated_head: "GET / HTTP/1.1\r\nAuthorization: Bearer a.b.c\r\n" => Err(Rejection::IncompleteRequest);
        truncated_request_line: "GET / HT" => Err(Rejection::IncompleteRequest);
        empty_head: "" => Err(Rejection::IncompleteRequest);
        garbage_head: "\x01\x02\x03 nonsense\r\n\r\n" => Err(Rejection::MalformedRequest);
        bad_header_name: "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n" => Err(Rejection::MalformedRequest);
        too_many_headers: std::format!("GET / HTTP/1.1\r\n{}\r\n", "X-A: 1\r\n".repeat(MAX_HEADERS + 1)) => Err(Rejection::TooManyHeaders);
    }
}
