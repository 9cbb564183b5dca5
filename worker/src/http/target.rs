//! Target: the request target, reduced to the one path and query
//! the upstream receives, or refused.
//!
//! What reaches an upstream must mean the same to every server behind the
//! gateway, so the target is normalized here, once, and the host forwards
//! the result literally:
//!
//! - The method must be upper case (RFC 9110 section 9.1 makes methods
//!   case-sensitive, and Flask, Django and ASP.NET Core fold `delete` into
//!   `DELETE`, so a lower-case method would meet another rule there).
//! - origin-form (`/path?query`) is forwarded; absolute-form
//!   (`http://host/path?query`) as its path and query, its authority taking
//!   the place of `Host`; authority-form (`CONNECT`) and asterisk-form
//!   (`OPTIONS *`) are refused.
//! - Percent-encoded unreserved characters (`%2E`, `%7e`, ...) are decoded
//!   (RFC 3986 section 6.2.2.2), so `%2e%2e` is a dot segment like `..`;
//!   other escapes are kept, with upper-case hex digits.
//! - `%2F`, `%5C` and a raw `\` are refused: some servers read them as
//!   separators, some do not. So is `%25` followed by two hex digits
//!   (`%2561`, `%252e`, `%25252F`, in the path as forwarded): an upstream,
//!   or a proxy or framework before it, that decodes twice would read
//!   another byte there (RFC 3986 section 2.4: never decode twice).
//! - Encoded whitespace (`%20`, `%A0`, `%85`, or a UTF-8 space such as
//!   `%C2%A0`) at the start or end of a segment, or of a part of one
//!   between `;` parameters, is refused in a module with rules: a server,
//!   or a proxy before it, that decodes the path and trims it (nginx
//!   handing its decoded `$uri` on, `strip()`, `trim()`) reads another
//!   path there, `/account/export%20` as `/account/export`, which may be
//!   another rule's. Inside a segment (`/my%20file`) it stays.
//! - Empty segments merge (`//internal` is `/internal`), as nginx, Tomcat
//!   and Go read them, so the rule that matches is the rule of the path
//!   the upstream serves; a trailing slash stays.
//! - Dot segments are removed (RFC 3986 section 5.2.4); a `..` that would
//!   climb above the root is refused, not clamped, and so is a `.` or `..`
//!   segment with `;` parameters (`/..;/`, which Tomcat reads as `/../`).
//! - Control bytes and non-ASCII bytes are refused anywhere in the target,
//!   raw or (controls) percent-encoded. A fragment (`#...`, which a client
//!   should not send) is cut off, as HTTP stacks do: it never travels.
//! - Characters that RFC 3986 does not allow raw (`"`, `<`, `>`, `{`, ...,
//!   and `'` in the query, which WHATWG URL parsers encode) are
//!   percent-encoded, so every host's URL parser leaves the result as it is.
//!
//! The route's base path is prepended by [`crate::forward`]; since the
//! result never climbs above its root, it never leaves the base path.

use crate::arena::Arena;
use crate::http::request::is_authority;
use crate::reject::Rejection;

/// The longest normalized path and query the gateway forwards (a common
/// server limit; longer is answered 414).
pub const MAX_TARGET_LEN: usize = 8 << 10; // 8 KiB

/// The normalized target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a, 'b> {
    /// The normalized path and query: starts with `/`, at most
    /// [`MAX_TARGET_LEN`] bytes, RFC 3986 characters only.
    pub path_and_query: &'a [u8],
    /// The authority of an absolute-form target, which replaces `Host`.
    pub authority: Option<&'b [u8]>,
}

/// Normalizes the target of a `method` request into the arena.
pub fn normalize<'a, 'b>(
    method: &str,
    target: &'b [u8],
    arena: &mut Arena<'a>,
) -> Result<Target<'a, 'b>, Rejection> {
    if method.bytes().any(|b| b.is_ascii_lowercase()) {
        return Err(Rejection::MethodNotUpperCase);
    }
    if method == "CONNECT" {
        return Err(Rejection::ConnectNotAllowed);
    }
    if target == b"*" {
        return Err(Rejection::AsteriskForm);
    }
    if let Some(b) = target.iter().find(|&&b| !(0x21..0x7f).contains(&b)) {
        return Err(if *b == b' ' { Rejection::MalformedTarget } else { Rejection::ControlInTarget });
    }
    let target = &target[..target.iter().position(|&b| b == b'#').unwrap_or(target.len())];
    let (authority, rest) = split_absolute_form(target)?;
    let (path, query) = match rest.iter().position(|&b| b == b'?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    // Each byte is written as at most three (an escape), plus a "/" for an
    // empty path: a short target takes a short piece of the arena.
    let room = MAX_TARGET_LEN.min(3 * target.len() + 1);
    let mut out = Writer { buf: arena.alloc(room)?, len: 0 };
    write_path(path, &mut out)?;
    if let Some(query) = query {
        out.push(b'?')?;
        write_query(query, &mut out)?;
    }
    let Writer { buf, len } = out;
    Ok(Target { path_and_query: &buf[..len], authority })
}

impl<'a> Target<'a, '_> {
    /// The normalized path without the query: what rules match.
    pub fn path(&self) -> &'a [u8] {
        let end = self.path_and_query.iter().position(|&b| b == b'?').unwrap_or(self.path_and_query.len());
        &self.path_and_query[..end]
    }
}

/// Splits an absolute-form target into its authority and the rest; an
/// origin-form target has no authority. Anything else is refused.
fn split_absolute_form(target: &[u8]) -> Result<(Option<&[u8]>, &[u8]), Rejection> {
    if target.first() == Some(&b'/') {
        return Ok((None, target));
    }
    let scheme_len = if starts_with_ignore_case(target, b"http://") {
        7
    } else if starts_with_ignore_case(target, b"https://") {
        8
    } else {
        return Err(Rejection::MalformedTarget);
    };
    let rest = &target[scheme_len..];
    let end = rest.iter().position(|&b| b == b'/' || b == b'?').unwrap_or(rest.len());
    let (authority, rest) = rest.split_at(end);
    if authority.is_empty() || !is_authority(authority) {
        return Err(Rejection::MalformedTarget);
    }
    // An empty path (`http://gw` or `http://gw?q`) is written as "/".
    Ok((Some(authority), rest))
}

fn starts_with_ignore_case(text: &[u8], prefix: &[u8]) -> bool {
    text.get(..prefix.len()).is_some_and(|start| start.eq_ignore_ascii_case(prefix))
}

/// Writes the normalized `path` (empty or starting with `/`).
fn write_path(path: &[u8], out: &mut Writer<'_>) -> Result<(), Rejection> {
    let mut ends_in_directory = false;
    // Each segment is what follows a '/' up to the next one.
    let mut rest = path;
    while let [b'/', after @ ..] = rest {
        let end = after.iter().position(|&b| b == b'/').unwrap_or(after.len());
        let segment = &after[..end];
        rest = &after[end..];
        // Empty segments merge (`//a` is `/a`), as nginx, Tomcat and Go
        // read them; a last one is the trailing slash.
        if segment.is_empty() && !rest.is_empty() {
            continue;
        }
        let start = out.len;
        out.push(b'/')?;
        write_segment(segment, out)?;
        let written = &out.buf[start + 1..out.len];
        if double_encoded(written) {
            return Err(Rejection::DoubleEncodedPath);
        }
        #[cfg(policy_rules)]
        if whitespace_at_edge(written) {
            return Err(Rejection::WhitespaceAtSegmentEdge);
        }
        let (is_dot, is_dot_dot) = (written == b".", written == b"..");
        if !is_dot && !is_dot_dot && matches!(dot_segment_name(written), b"." | b"..") {
            return Err(Rejection::DotSegmentParameters);
        }
        ends_in_directory = is_dot || is_dot_dot;
        if is_dot {
            out.len = start;
        } else if is_dot_dot {
            // Drop this segment and the one before it.
            out.len = out.buf[..start].iter().rposition(|&b| b == b'/').ok_or(Rejection::PathAboveRoot)?;
        }
    }
    if out.len == 0 || ends_in_directory {
        out.push(b'/')?;
    }
    Ok(())
}

/// True when the normalized `segment` holds `%25` followed by two hex
/// digits in any case (`%2561`, `%252e`, `%25252F`): decoded twice (or
/// more), another byte, a letter of a rule's path or a separator.
fn double_encoded(segment: &[u8]) -> bool {
    segment.windows(5).any(|w| w[..3] == *b"%25" && w[3].is_ascii_hexdigit() && w[4].is_ascii_hexdigit())
}

/// Encoded whitespace as the normalized path writes it (upper-case hex):
/// the bytes a Latin-1 decoder reads as space, NEL or no-break space, and
/// the UTF-8 of every Unicode space that `trim()` in JavaScript, `strip()`
/// in Python or `Trim()` in .NET removes (controls are refused before).
#[cfg(policy_rules)]
const ENCODED_SPACES: [&[u8]; 23] = [
    b"%20",
    b"%85",
    b"%A0",
    b"%C2%85",
    b"%C2%A0",
    b"%E1%9A%80",
    b"%E2%80%80",
    b"%E2%80%81",
    b"%E2%80%82",
    b"%E2%80%83",
    b"%E2%80%84",
    b"%E2%80%85",
    b"%E2%80%86",
    b"%E2%80%87",
    b"%E2%80%88",
    b"%E2%80%89",
    b"%E2%80%8A",
    b"%E2%80%A8",
    b"%E2%80%A9",
    b"%E2%80%AF",
    b"%E2%81%9F",
    b"%E3%80%80",
    b"%EF%BB%BF",
];

/// True when encoded whitespace starts or ends the normalized `segment`,
/// or a part of it between `;` parameters (raw or encoded).
#[cfg(policy_rules)]
fn whitespace_at_edge(segment: &[u8]) -> bool {
    let at_edge =
        |part: &[u8]| ENCODED_SPACES.iter().any(|space| part.starts_with(space) || part.ends_with(space));
    let mut part = 0;
    for at in 0..segment.len() {
        if parameters_start(segment, at) {
            if at_edge(&segment[part..at]) {
                return true;
            }
            part = at + if segment[at] == b';' { 1 } else { 3 };
        }
    }
    at_edge(segment.get(part..).unwrap_or_default())
}

/// True when `;` parameters start at `at` in the normalized `path`: a raw
/// `;`, or `%3B`, which a server that decodes before it strips parameters
/// reads as `;` (the normalized path writes hex digits in upper case, and a
/// double encoding, `%253B`, never gets this far).
pub fn parameters_start(path: &[u8], at: usize) -> bool {
    matches!(path.get(at..).unwrap_or_default(), [b';', ..] | [b'%', b'3', b'B', ..])
}

/// The part of a normalized segment before its `;` parameters (raw or
/// encoded), which is what a server that strips parameters compares.
fn dot_segment_name(segment: &[u8]) -> &[u8] {
    let semicolon = segment.iter().position(|&b| b == b';').unwrap_or(segment.len());
    let encoded = segment.windows(3).position(|w| w.eq_ignore_ascii_case(b"%3B")).unwrap_or(segment.len());
    &segment[..semicolon.min(encoded)]
}

/// Writes one path segment: unreserved escapes decoded, other escapes kept
/// in upper case, characters RFC 3986 does not allow raw encoded.
fn write_segment(segment: &[u8], out: &mut Writer<'_>) -> Result<(), Rejection> {
    let mut i = 0;
    while let Some(&b) = segment.get(i) {
        match b {
            b'%' => {
                let byte = escaped_byte(segment, i)?;
                if byte == b'/' || byte == b'\\' {
                    return Err(Rejection::EncodedSlash);
                }
                if byte < 0x20 || byte == 0x7f {
                    return Err(Rejection::ControlInTarget);
                }
                if is_unreserved(byte) {
                    out.push(byte)?;
                } else {
                    out.push_escaped(byte)?;
                }
                i += 3;
                continue;
            }
            b'\\' => return Err(Rejection::EncodedSlash),
            _ if is_unreserved(b) || is_sub_delim(b) || b == b':' || b == b'@' => out.push(b)?,
            _ => out.push_escaped(b)?,
        }
        i += 1;
    }
    Ok(())
}

/// Writes the query: escapes kept as sent (queries are the application's),
/// characters RFC 3986 does not allow raw, and `'`, encoded.
fn write_query(query: &[u8], out: &mut Writer<'_>) -> Result<(), Rejection> {
    for &b in query {
        let raw = b != b'\''
            && (is_unreserved(b) || is_sub_delim(b) || matches!(b, b'%' | b':' | b'@' | b'/' | b'?'));
        if raw { out.push(b)? } else { out.push_escaped(b)? }
    }
    Ok(())
}

/// The byte of the escape `%XY` at `at`; a broken escape is refused.
fn escaped_byte(text: &[u8], at: usize) -> Result<u8, Rejection> {
    let hex = |i: usize| text.get(i).and_then(|&d| (d as char).to_digit(16));
    match (hex(at + 1), hex(at + 2)) {
        (Some(hi), Some(lo)) => Ok((hi * 16 + lo) as u8),
        _ => Err(Rejection::MalformedTarget),
    }
}

/// RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 sub-delims: "!" / "$" / "&" / "'" / "(" / ")" / "*" / "+" / "," / ";" / "=".
fn is_sub_delim(b: u8) -> bool {
    matches!(b, b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'=')
}

/// Appends to the normalized target's fixed buffer; overflowing it is a 414.
struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Writer<'_> {
    fn push(&mut self, b: u8) -> Result<(), Rejection> {
        *self.buf.get_mut(self.len).ok_or(Rejection::TargetTooLong)? = b;
        self.len += 1;
        Ok(())
    }

    fn push_escaped(&mut self, b: u8) -> Result<(), Rejection> {
        const HEX: &[u8; 16] = b"0123456789ABCDEF";
        self.push(b'%')?;
        self.push(HEX[usize::from(b >> 4)])?;
        self.push(HEX[usize::from(b & 0xf)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_expansion_fits_the_piece_a_target_takes() {
        // Every byte escaped, and "/" for an empty path: 3 per byte plus 1.
        assert_eq!(normalized("GET", "/\"\"").as_deref(), Ok("/%22%22"));
        assert_eq!(normalized("GET", "/?\"'").as_deref(), Ok("/?%22%27"));
        assert_eq!(normalized("GET", "http://gw").as_deref(), Ok("/"));
        let long = std::format!("/a{}", "\"".repeat((MAX_TARGET_LEN - 2) / 3));
        assert_eq!(normalized("GET", &long).map(|t| t.len()), Ok(MAX_TARGET_LEN));
        assert_eq!(normalized("GET", &std::format!("{long}\"")), Err(Rejection::TargetTooLong));
    }

    fn normalized(method: &str, target: &str) -> Result<std::string::String, Rejection> {
        let mut region = std::vec![0u8; MAX_TARGET_LEN];
        let mut arena = Arena::new(&mut region);
        let target = normalize(method, target.as_bytes(), &mut arena)?;
        Ok(std::string::String::from_utf8(target.path_and_query.to_vec()).expect("ASCII"))
    }

    /// A GET of `target`, normalized (leaked: tables compare it with literals).
    fn normalized_get(target: &impl AsRef<str>) -> Result<&'static str, Rejection> {
        normalized("GET", target.as_ref()).map(|path| &*std::boxed::Box::leak(path.into_boxed_str()))
    }

    crate::cases::cases! { normalized_get;
        plain_path: "/orders/42" => Ok("/orders/42");
        root: "/" => Ok("/");
        query_kept: "/a?x=1&y=%2F&z" => Ok("/a?x=1&y=%2F&z");
        empty_query_kept: "/a?" => Ok("/a?");
        trailing_slash_kept: "/a/b/" => Ok("/a/b/");
        empty_segments_merged: "/a//b" => Ok("/a/b");
        leading_empty_segments_merged: "//internal/metrics" => Ok("/internal/metrics");
        many_empty_segments_merged: "///a////b" => Ok("/a/b");
        trailing_empty_segments_merged: "/a//" => Ok("/a/");
        only_slashes: "//" => Ok("/");
        empty_segment_before_dot_dot: "/a//../b" => Ok("/b");
        absolute_form_empty_segments_merged: "http://gw//internal//x" => Ok("/internal/x");
        empty_segments_in_the_query_kept: "/a?next=//b" => Ok("/a?next=//b");
        dot_segment_removed: "/a/./b" => Ok("/a/b");
        dot_dot_pops: "/a/b/../c" => Ok("/a/c");
        trailing_dot_dot_is_a_directory: "/a/b/.." => Ok("/a/");
        trailing_dot_is_a_directory: "/a/." => Ok("/a/");
        dot_dot_to_root: "/a/.." => Ok("/");
        climb_above_root: "/../billing-svc/invoices" => Err(Rejection::PathAboveRoot);
        climb_after_descent: "/a/../../billing-svc/x" => Err(Rejection::PathAboveRoot);
        dot_then_climb: "/./../billing-svc" => Err(Rejection::PathAboveRoot);
        encoded_dots_lower: "/%2e%2e/billing-svc/x" => Err(Rejection::PathAboveRoot);
        encoded_dots_mixed_case: "/%2E%2e/billing-svc/x" => Err(Rejection::PathAboveRoot);
        half_encoded_dots: "/.%2e/x" => Err(Rejection::PathAboveRoot);
        encoded_dot_segment_removed: "/a/%2e/b" => Ok("/a/b");
        encoded_slash: "/..%2fbilling-svc/x" => Err(Rejection::EncodedSlash);
        encoded_slash_upper: "/a%2Fb" => Err(Rejection::EncodedSlash);
        encoded_backslash: "/..%5cbilling-svc/x" => Err(Rejection::EncodedSlash);
        raw_backslash: "/a\\..\\b" => Err(Rejection::EncodedSlash);
        dot_dot_with_parameters: "/..;/billing-svc" => Err(Rejection::DotSegmentParameters);
        dot_with_parameters: "/a/.;x/b" => Err(Rejection::DotSegmentParameters);
        dot_dot_with_encoded_semicolon: "/..%3b/x" => Err(Rejection::DotSegmentParameters);
        parameters_elsewhere_kept: "/a;v=1/b" => Ok("/a;v=1/b");
        dots_in_names_kept: "/a/..b/.c/b.." => Ok("/a/..b/.c/b..");
        // `%25` then an encoded dot, slash or backslash: decoded twice, a
        // dot segment or a separator. Refused in any case, however deep.
        space_ends_a_segment: "/account/export%20" => Err(Rejection::WhitespaceAtSegmentEdge);
        space_starts_a_segment: "/account/%20export" => Err(Rejection::WhitespaceAtSegmentEdge);
        space_is_a_segment: "/account/export/%20" => Err(Rejection::WhitespaceAtSegmentEdge);
        no_break_space_latin1: "/account/export%a0" => Err(Rejection::WhitespaceAtSegmentEdge);
        next_line_latin1: "/account/export%85/x" => Err(Rejection::WhitespaceAtSegmentEdge);
        no_break_space_utf8: "/account/export%c2%a0" => Err(Rejection::WhitespaceAtSegmentEdge);
        ideographic_space: "/account/export%E3%80%80" => Err(Rejection::WhitespaceAtSegmentEdge);
        em_space: "/account/export%E2%80%83" => Err(Rejection::WhitespaceAtSegmentEdge);
        byte_order_mark: "/%EF%BB%BFaccount/export" => Err(Rejection::WhitespaceAtSegmentEdge);
        space_before_parameters: "/account/export%20;x" => Err(Rejection::WhitespaceAtSegmentEdge);
        space_before_encoded_parameters: "/account/export%20%3bx" => Err(Rejection::WhitespaceAtSegmentEdge);
        space_after_parameters: "/account/export;%20x" => Err(Rejection::WhitespaceAtSegmentEdge);
        space_two_ways: "/account/export%20%20" => Err(Rejection::WhitespaceAtSegmentEdge);
        tab_is_a_control: "/account/export%09" => Err(Rejection::ControlInTarget);
        vertical_tab_is_a_control: "/account/export%0B" => Err(Rejection::ControlInTarget);
        form_feed_is_a_control: "/account/export%0c" => Err(Rejection::ControlInTarget);
        space_inside_a_segment: "/files/my%20file" => Ok("/files/my%20file");
        no_break_space_inside_a_segment: "/files/a%C2%A0b" => Ok("/files/a%C2%A0b");
        zero_width_space_is_no_whitespace_to_trim: "/files/a%E2%80%8B" => Ok("/files/a%E2%80%8B");
        space_in_the_query: "/a?q=%20" => Ok("/a?q=%20");
        double_encoded_dots: "/%252e%252e/billing-svc/x" => Err(Rejection::DoubleEncodedPath);
        double_encoded_dot_upper: "/a/%252E" => Err(Rejection::DoubleEncodedPath);
        double_encoded_slash: "/a%252fb" => Err(Rejection::DoubleEncodedPath);
        double_encoded_slash_upper: "/..%252F..%252Fbilling-svc" => Err(Rejection::DoubleEncodedPath);
        double_encoded_backslash: "/..%255cbilling-svc" => Err(Rejection::DoubleEncodedPath);
        double_encoded_backslash_upper: "/a%255C" => Err(Rejection::DoubleEncodedPath);
        triple_encoded_dot: "/%25252e%25252e/x" => Err(Rejection::DoubleEncodedPath);
        double_encoded_dot_spelled_with_unreserved_escapes: "/%25%32%65%25%32%45/x" => Err(Rejection::DoubleEncodedPath);
        double_encoded_in_the_last_segment: "/a/b%252e" => Err(Rejection::DoubleEncodedPath);
        encoded_percent_kept: "/100%25/%25/%252x/%25%41/50%25off" => Ok("/100%25/%25/%252x/%25A/50%25off");
        // Any byte decoded twice: a letter of a rule's path, a NUL.
        double_encoded_letter: "/%2561dmin/users" => Err(Rejection::DoubleEncodedPath);
        double_encoded_letter_lower_hex: "/%2561%2564min" => Err(Rejection::DoubleEncodedPath);
        double_encoded_nul: "/healthz%2500" => Err(Rejection::DoubleEncodedPath);
        double_encoded_space: "/a%2520b" => Err(Rejection::DoubleEncodedPath);
        double_encoded_letter_spelled_with_unreserved_escapes: "/%25%36%31dmin" => Err(Rejection::DoubleEncodedPath);
        triple_encoded_letter: "/%252561dmin" => Err(Rejection::DoubleEncodedPath);
        double_encoded_in_the_query_kept: "/a?next=%252e%252e%252fbilling" => Ok("/a?next=%252e%252e%252fbilling");
        unreserved_escapes_decoded: "/%41%7e%2D" => Ok("/A~-");
        other_escapes_upper_cased: "/a%20b%c3%a9" => Ok("/a%20b%C3%A9");
        encoded_nul: "/a%00b" => Err(Rejection::ControlInTarget);
        encoded_newline: "/a%0d%0ab" => Err(Rejection::ControlInTarget);
        encoded_del: "/a%7f" => Err(Rejection::ControlInTarget);
        broken_escape: "/a%2" => Err(Rejection::MalformedTarget);
        non_hex_escape: "/a%zz" => Err(Rejection::MalformedTarget);
        raw_non_ascii: "/caf\u{e9}" => Err(Rejection::ControlInTarget);
        raw_tab: "/a\tb" => Err(Rejection::ControlInTarget);
        fragment_cut_off: "/a?q#b/../../x" => Ok("/a?q");
        unsafe_characters_encoded: "/a\"b<c>{d}|^`" => Ok("/a%22b%3Cc%3E%7Bd%7D%7C%5E%60");
        brackets_encoded: "/[x]" => Ok("/%5Bx%5D");
        query_quote_encoded: "/a?q='x'&r=\"y\"" => Ok("/a?q=%27x%27&r=%22y%22");
        query_backslash_encoded: "/a?q=\\" => Ok("/a?q=%5C");
        query_dots_untouched: "/a?p=../../x" => Ok("/a?p=../../x");
        query_broken_escape_kept: "/a?q=100%" => Ok("/a?q=100%");
        absolute_form: "http://gw.example:8080/a/../b?q" => Ok("/b?q");
        absolute_form_https_any_case: "HTTPS://gw/x" => Ok("/x");
        absolute_form_empty_path: "http://gw" => Ok("/");
        absolute_form_query_only: "http://gw?q=1" => Ok("/?q=1");
        absolute_form_user_info: "http://u@gw/" => Err(Rejection::MalformedTarget);
        absolute_form_other_scheme: "ftp://gw/" => Err(Rejection::MalformedTarget);
        absolute_form_no_authority: "http:///a" => Err(Rejection::MalformedTarget);
        authority_form: "evil.example:443" => Err(Rejection::MalformedTarget);
        asterisk_form: "*" => Err(Rejection::AsteriskForm);
        relative_path: "a/b" => Err(Rejection::MalformedTarget);
        at_the_limit: &std::format!("/{}", "a".repeat(MAX_TARGET_LEN - 1)) => Ok(&*std::format!("/{}", "a".repeat(MAX_TARGET_LEN - 1)).leak());
        over_the_limit: &std::format!("/{}", "a".repeat(MAX_TARGET_LEN)) => Err(Rejection::TargetTooLong);
        encoding_grows_over_the_limit: &std::format!("/{}", "\"".repeat(MAX_TARGET_LEN / 3 + 1)) => Err(Rejection::TargetTooLong);
    }

    #[test]
    fn methods_must_be_upper_case() {
        for method in ["get", "Get", "delete", "DELETe", "options"] {
            assert_eq!(normalized(method, "/a"), Err(Rejection::MethodNotUpperCase), "{method}");
        }
        for method in ["GET", "DELETE", "M-SEARCH", "PROPFIND", "X1"] {
            assert_eq!(normalized(method, "/a"), Ok("/a".into()), "{method}");
        }
    }

    #[test]
    fn connect_is_refused_whatever_its_target() {
        assert_eq!(normalized("CONNECT", "evil.example:443"), Err(Rejection::ConnectNotAllowed));
        assert_eq!(normalized("CONNECT", "/"), Err(Rejection::ConnectNotAllowed));
        assert_eq!(normalized("OPTIONS", "*"), Err(Rejection::AsteriskForm));
        assert_eq!(normalized("OPTIONS", "/a"), Ok("/a".into()));
    }

    #[test]
    fn absolute_form_yields_its_authority() {
        let mut region = std::vec![0u8; MAX_TARGET_LEN];
        let mut arena = Arena::new(&mut region);
        let target = normalize("GET", b"http://gw.example:8080/a", &mut arena).expect("valid");
        assert_eq!(target.authority, Some(&b"gw.example:8080"[..]));
        let mut arena = Arena::new(&mut region);
        assert_eq!(normalize("GET", b"/a", &mut arena).expect("valid").authority, None);
    }

    #[test]
    fn no_output_climbs_or_keeps_a_dot_segment() {
        // A small exhaustive sweep: every path of up to four segments drawn
        // from a hostile alphabet either is refused or is normalized.
        let pieces = ["", ".", "..", "%2e", "%2E%2e", "a", "..;", "b%2f", ".a", "%252e", "%25"];
        let mut count = 0;
        let mut path = std::string::String::new();
        let mut stack = std::vec![(0usize, std::string::String::new())];
        while let Some((depth, prefix)) = stack.pop() {
            path.clone_from(&prefix);
            if let Ok(out) = normalized("GET", if path.is_empty() { "/" } else { &path }) {
                count += 1;
                assert!(out.starts_with('/'), "{path} -> {out}");
                for segment in out.split('/') {
                    assert!(!matches!(segment, "." | ".."), "{path} -> {out}");
                }
                assert!(!out.to_ascii_lowercase().contains("%252e"), "{path} -> {out}");
                assert!(!out.contains("//"), "{path} -> {out}");
            }
            if depth < 4 {
                for piece in pieces {
                    stack.push((depth + 1, std::format!("{prefix}/{piece}")));
                }
            }
        }
        assert!(count > 1000, "{count}");
    }
}
