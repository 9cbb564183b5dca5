//! Token, where it is: the one token of a request, from the sources the
//! config names (`Authorization: Bearer` when it names none), at most
//! `max_token_bytes` long, read in place in the input buffer.
//!
//! - `Authorization: Bearer <token>`: exactly one `Authorization` field,
//!   scheme `Bearer` in any case, then spaces (RFC 6750 section 2.1,
//!   [`crate::http::request::bearer`]).
//! - A header: exactly one field of that name, its value the token after
//!   the configured prefix (compared ASCII case-insensitively).
//! - A cookie (RFC 6265 section 5.4): every `Cookie` field is read (HTTP/2
//!   splits them), pairs split on `;`, the name compared exactly, a value
//!   in double quotes unquoted. The same name twice with the same value is
//!   one token; with different values the request is refused. A pair that
//!   some server reads as the token cookie where the gateway does not (see
//!   [`reads_as_cookie`]) is refused too: the gateway would neither judge
//!   that token nor take it out of `Cookie`.
//!
//! Every token must be an RFC 6750 b64token. The same token in two places
//! is one token (a browser that sends the cookie and the header); two
//! different tokens are refused with 400, never chosen between. The query
//! string is never a source (RFC 6750 section 2.3 discourages it: it ends
//! up in logs).

// A module whose config does not use this policy compiles it out
// (`build.rs`); native builds keep it, and lint it whole.
#![cfg_attr(not(policy_sources), allow(dead_code, unused_imports))]

use crate::config::{Config, TokenSource};
use crate::http::request::{self, Head};
use crate::reject::Rejection;

/// The request's one token.
pub fn find<'b>(head: &Head<'b, '_>, config: &Config<'_>) -> Result<&'b [u8], Rejection> {
    #[cfg(policy_sources)]
    if !config.policy.token_sources.is_empty() {
        return from_sources(head, config.policy.token_sources, config.max_token_bytes);
    }
    request::bearer(head, config.max_token_bytes)
}

/// The one token among `sources`: the same token in several of them is one,
/// different ones are refused. With none found, the reason a bearer source
/// gave (another scheme) or "bearer token required".
#[cfg(policy_sources)]
fn from_sources<'b>(
    head: &Head<'b, '_>,
    sources: &[TokenSource<'_>],
    max_len: usize,
) -> Result<&'b [u8], Rejection> {
    let mut found: Option<&'b [u8]> = None;
    let mut missing = Rejection::MissingAuthorization;
    for source in sources {
        let candidate = match source {
            TokenSource::Bearer => match request::bearer(head, max_len) {
                Ok(token) => Some(token),
                Err(Rejection::MissingAuthorization) => None,
                Err(Rejection::UnsupportedScheme) => {
                    missing = Rejection::UnsupportedScheme;
                    None
                }
                Err(other) => return Err(other),
            },
            TokenSource::Header { name, prefix } => header_token(head, name, prefix)?,
            TokenSource::Cookie(name) => cookie_token(head, name)?,
        };
        if let Some(token) = candidate {
            if token.len() > max_len {
                return Err(Rejection::TokenTooLong);
            }
            match found {
                Some(first) if first != token => return Err(Rejection::ConflictingTokens),
                _ => found = Some(token),
            }
        }
    }
    found.ok_or(missing)
}

/// The token in the header `name` after `prefix`, if the request has one.
#[cfg(policy_sources)]
fn header_token<'b>(head: &Head<'b, '_>, name: &str, prefix: &str) -> Result<Option<&'b [u8]>, Rejection> {
    let mut values = head.named(name);
    let Some(value) = values.next() else { return Ok(None) };
    if values.next().is_some() {
        return Err(Rejection::ConflictingTokens);
    }
    let value = request::trim_ows(value);
    let token = match value.get(..prefix.len()) {
        Some(start) if start.eq_ignore_ascii_case(prefix.as_bytes()) => &value[prefix.len()..],
        _ => return Err(Rejection::MalformedTokenField),
    };
    match request::is_b64token(token) {
        true => Ok(Some(token)),
        false => Err(Rejection::MalformedTokenField),
    }
}

/// The token in the cookie `name`, if the request has one.
#[cfg(policy_sources)]
fn cookie_token<'b>(head: &Head<'b, '_>, name: &str) -> Result<Option<&'b [u8]>, Rejection> {
    let mut found: Option<&'b [u8]> = None;
    each_cookie(head, |cookie, value, pair| {
        if cookie != name.as_bytes() {
            return match reads_as_cookie(pair, name) {
                true => Err(Rejection::AmbiguousTokenCookie),
                false => Ok(()),
            };
        }
        if !request::is_b64token(value) {
            return Err(Rejection::MalformedTokenField);
        }
        match found {
            Some(first) if first != value => Err(Rejection::ConflictingTokens),
            _ => {
                found = Some(value);
                Ok(())
            }
        }
    })?;
    Ok(found)
}

/// True when some server reads the cookie `pair` (as written, split on
/// `;`) as one named `name`: a piece of it split on `,` (RFC 2109's
/// separator, which Java's and Python's parsers still accept) whose name,
/// percent-decoded (PHP), with `.`, space and `[` read as `_` (PHP), and
/// compared in any case (ASP.NET Core), is `name`.
pub fn reads_as_cookie(pair: &[u8], name: &str) -> bool {
    pair.split(|&b| b == b',').any(|piece| {
        let piece = request::trim_ows(piece);
        let cookie = piece.split(|&b| b == b'=').next().unwrap_or_default();
        loose_name_eq(request::trim_ows(cookie), name.as_bytes())
    })
}

/// `written` equals `name` once both are read loosely (see [`reads_as_cookie`]).
fn loose_name_eq(written: &[u8], name: &[u8]) -> bool {
    let fold = |b: u8| match b {
        b'.' | b' ' | b'[' | b'+' => b'_',
        other => other.to_ascii_lowercase(),
    };
    let (mut i, mut at) = (0, 0);
    while let Some(&b) = written.get(i) {
        let escaped = match written.get(i..i + 3) {
            Some([b'%', hi, lo]) => hex_value(*hi).zip(hex_value(*lo)).map(|(hi, lo)| hi << 4 | lo),
            _ => None,
        };
        i += if escaped.is_some() { 3 } else { 1 };
        match name.get(at) {
            Some(&expected) if fold(expected) == fold(escaped.unwrap_or(b)) => at += 1,
            _ => return false,
        }
    }
    at == name.len()
}

/// The value of a hex digit.
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' | b'A'..=b'F' => Some((b | 0x20) - b'a' + 10),
        _ => None,
    }
}

/// Calls `each` with every cookie pair of every `Cookie` field: its name,
/// its value unquoted, and the pair as written (trimmed). Pairs without `=`
/// get an empty name, as browsers never send them.
pub fn each_cookie<'b>(
    head: &Head<'b, '_>,
    mut each: impl FnMut(&'b [u8], &'b [u8], &'b [u8]) -> Result<(), Rejection>,
) -> Result<(), Rejection> {
    for field in head.named("cookie") {
        for pair in field.split(|&b| b == b';') {
            let pair = request::trim_ows(pair);
            let equals = pair.iter().position(|&b| b == b'=').unwrap_or(0);
            let (name, value) = (
                request::trim_ows(&pair[..equals]),
                request::trim_ows(pair.get(equals + 1..).unwrap_or_default()),
            );
            let value = match value {
                [b'"', inner @ .., b'"'] => inner,
                other => other,
            };
            each(name, value, pair)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Policy, TokenSource};
    use crate::http::request::{MAX_HEADERS, parse};

    const SOURCES: &[TokenSource<'static>] = &[
        TokenSource::Bearer,
        TokenSource::Cookie("__Host-at"),
        TokenSource::Header { name: "x-api-token", prefix: "Token " },
    ];

    fn config(sources: &'static [TokenSource<'static>]) -> Config<'static> {
        Config {
            realm: "gw",
            trusted_proxy_hops: 0,
            max_token_bytes: 16,
            issuers: &[],
            routes: &[],
            policy: Policy { token_sources: sources, ..Policy::NONE },
        }
    }

    fn token_of(fields: &str) -> Result<std::string::String, Rejection> {
        let head = std::format!("GET / HTTP/1.1\r\nHost: gw\r\n{fields}\r\n");
        let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
        find(&head, &config(SOURCES)).map(|t| std::string::String::from_utf8(t.to_vec()).expect("ASCII"))
    }

    crate::cases::cases! { token_of;
        bearer: "Authorization: Bearer abc\r\n" => Ok("abc".into());
        cookie: "Cookie: theme=dark; __Host-at=abc; x=1\r\n" => Ok("abc".into());
        cookie_quoted: "Cookie: __Host-at=\"abc\"\r\n" => Ok("abc".into());
        cookie_in_a_second_field: "Cookie: a=1\r\nCookie: __Host-at=abc\r\n" => Ok("abc".into());
        cookie_name_in_another_case: "Cookie: __host-at=abc\r\n" => Err(Rejection::AmbiguousTokenCookie);
        cookie_after_a_comma: "Cookie: a=1, __Host-at=abc\r\n" => Err(Rejection::AmbiguousTokenCookie);
        cookie_after_a_comma_beside_a_bearer: "Authorization: Bearer abc\r\nCookie: a=1, __Host-at=xyz\r\n" => Err(Rejection::AmbiguousTokenCookie);
        cookie_name_percent_encoded: "Cookie: __Host%2Dat=abc\r\n" => Err(Rejection::AmbiguousTokenCookie);
        cookie_name_with_dots_for_underscores: "Cookie: ..Host-at=abc\r\n" => Err(Rejection::AmbiguousTokenCookie);
        other_cookies_with_commas_pass: "Cookie: prefs=a,b; __Host-at=abc\r\n" => Ok("abc".into());
        a_longer_name_is_another_cookie: "Cookie: __Host-atx=1, x__Host-at=2\r\n" => Err(Rejection::MissingAuthorization);
        cookie_twice_same_value: "Cookie: __Host-at=abc; __Host-at=abc\r\n" => Ok("abc".into());
        cookie_twice_other_value: "Cookie: __Host-at=abc; __Host-at=abd\r\n" => Err(Rejection::ConflictingTokens);
        cookie_not_a_token: "Cookie: __Host-at=a,b\r\n" => Err(Rejection::MalformedTokenField);
        cookie_empty: "Cookie: __Host-at=\r\n" => Err(Rejection::MalformedTokenField);
        header_with_prefix: "X-Api-Token: token abc\r\n" => Ok("abc".into());
        header_without_prefix: "X-Api-Token: abc\r\n" => Err(Rejection::MalformedTokenField);
        header_twice: "X-Api-Token: Token abc\r\nx-api-token: Token abc\r\n" => Err(Rejection::ConflictingTokens);
        same_token_in_two_places: "Authorization: Bearer abc\r\nCookie: __Host-at=abc\r\n" => Ok("abc".into());
        different_tokens_in_two_places: "Authorization: Bearer abc\r\nCookie: __Host-at=xyz\r\n" => Err(Rejection::ConflictingTokens);
        none: "Accept: */*\r\n" => Err(Rejection::MissingAuthorization);
        basic_and_no_other: "Authorization: Basic YTpi\r\n" => Err(Rejection::UnsupportedScheme);
        basic_beside_a_cookie: "Authorization: Basic YTpi\r\nCookie: __Host-at=abc\r\n" => Ok("abc".into());
        two_authorizations: "Authorization: Bearer a\r\nAuthorization: Bearer a\r\n" => Err(Rejection::DuplicateAuthorization);
        too_long_in_a_cookie: "Cookie: __Host-at=aaaaaaaaaaaaaaaaa\r\n" => Err(Rejection::TokenTooLong);
        query_is_never_a_source: "X-Note: ?access_token=abc\r\n" => Err(Rejection::MissingAuthorization);
    }

    #[test]
    fn without_sources_only_bearer_counts() {
        let head = "GET / HTTP/1.1\r\nHost: gw\r\nCookie: __Host-at=abc\r\n\r\n";
        let mut parsed = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let head = parse(head.as_bytes(), &mut parsed).expect("valid head");
        assert_eq!(find(&head, &config(&[])), Err(Rejection::MissingAuthorization));
    }
}
