//! What the config's text entries may hold: the characters each kind of
//! entry may carry into the module (it writes them into headers and JSON
//! bodies, and compares them with decoded token text), canonical upstream
//! URLs, and the encodings key material is written in.

use crate::MAX_TEXT_LEN;
use crate::error::ConfigErrorKind;

/// Which characters a text entry may hold.
#[derive(Clone, Copy)]
pub(crate) enum TextRule {
    /// Appears inside a quoted-string of a `WWW-Authenticate` header.
    QuotedString,
    /// Compared with an unescaped JSON string from a token, and echoed in headers.
    JsonPlain,
}

pub(crate) fn check_text(entry: &str, text: &str, rule: TextRule) -> Result<(), ConfigErrorKind> {
    let bad = |why| Err(ConfigErrorKind::BadText { entry: entry.to_owned(), why });
    if text.is_empty() {
        return bad("is empty");
    }
    if text.len() > MAX_TEXT_LEN {
        return bad("is longer than 200 bytes");
    }
    let allowed = |b: u8| match rule {
        TextRule::QuotedString => (0x20..=0x7e).contains(&b) && b != b'"' && b != b'\\',
        TextRule::JsonPlain => (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\',
    };
    if !text.bytes().all(allowed) {
        return bad(match rule {
            TextRule::QuotedString => "may hold only printable ASCII without '\"' or '\\'",
            TextRule::JsonPlain => "may hold only visible ASCII without '\"' or '\\'",
        });
    }
    Ok(())
}

/// `http://` or `https://`, a host (a DNS name, an IPv4 address, or an IPv6
/// address in brackets), an optional port, and an optional base path. No
/// user info, query or fragment: the request's normalized path and query are
/// appended to it. The base path is what confines forwarded requests, so it
/// must already be canonical: unreserved characters, sub-delimiters, `:` and
/// `@` only (no `%` escapes), no empty segments, no `.` or `..` segments,
/// with or without `;` parameters.
pub fn is_upstream_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")) else {
        return false;
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path_ok = path.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b))
        && path.split('/').skip(1).all(|segment| {
            let name = segment.split(';').next().unwrap_or(segment);
            !name.is_empty() && name != "." && name != ".."
        });
    url.len() <= MAX_TEXT_LEN && is_authority(authority) && path_ok
}

/// A URL's `host[:port]`: a DNS name or IPv4 address (letters, digits, `-`
/// and `.`, not starting with either), or an IPv6 address in brackets, and
/// a port of 1 to 65535 when given. No user information.
pub(crate) fn is_authority(authority: &str) -> bool {
    // The port follows the last ':' outside an IPv6 address's brackets.
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => (&authority[..i], Some(&authority[i + 1..])),
        _ => (authority, None),
    };
    let host_ok = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.')
    } else {
        !host.is_empty()
            && host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && !host.starts_with(['.', '-'])
    };
    host_ok && port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok_and(|n| n > 0))
}

/// Base64url without padding. Written out here (twelve lines) rather than
/// pulling a second base64 dependency into the build script's graph.
pub fn decode_base64url(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'-' => Some(62),
        b'_' => Some(63),
        _ => None,
    };
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}
