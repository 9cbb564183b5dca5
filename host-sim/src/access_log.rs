//! The access log of `serve`: one line per request that a client cannot
//! forge. Everything that may come from a client (method, target, and the
//! note, which carries the token's subject and upstream error text) is
//! escaped: quote and backslash by a backslash, control bytes and every
//! byte outside ASCII as `\xNN`. So a field never closes its quotes early
//! and a line never breaks.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

/// One line: `REMOTE "METHOD TARGET" STATUS MICROSus NOTE`, without its end.
pub fn line(
    remote: SocketAddr,
    method: &str,
    target: &str,
    status: u16,
    took: Duration,
    note: &str,
) -> String {
    let mut line = String::with_capacity(64 + target.len() + note.len());
    let _ = write!(line, "{remote} \"");
    escape(method, &mut line);
    line.push(' ');
    escape(target, &mut line);
    let _ = write!(line, "\" {status} {}us ", took.as_micros());
    escape(note, &mut line);
    line
}

/// Appends `text` to `out` with `"` and `\` escaped by a backslash and every
/// byte below 0x20, 0x7f and above as `\xNN`.
pub fn escape(text: &str, out: &mut String) {
    for &byte in text.as_bytes() {
        match byte {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(char::from(byte));
            }
            0x20..0x7f => out.push(char::from(byte)),
            _ => {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(text: &str) -> String {
        let mut out = String::new();
        escape(text, &mut out);
        out
    }

    #[test]
    fn plain_fields_are_unchanged() {
        assert_eq!(escaped("/v1/items/42?color=red&size=2"), "/v1/items/42?color=red&size=2");
    }

    #[test]
    fn quotes_backslashes_controls_and_non_ascii_are_escaped() {
        assert_eq!(escaped("/a\"b"), "/a\\\"b");
        assert_eq!(escaped("a\\b"), "a\\\\b");
        assert_eq!(escaped("a\r\nb\t\0\x7f"), "a\\x0d\\x0ab\\x09\\x00\\x7f");
        assert_eq!(escaped("é"), "\\xc3\\xa9");
    }

    #[test]
    fn a_forged_target_stays_inside_its_field_on_one_line() {
        let remote: SocketAddr = "127.0.0.1:9".parse().unwrap_or_else(|_| unreachable!());
        let target = "/a\" 200 1us forged\n127.0.0.1:1 \"GET /";
        let line = line(remote, "GET", target, 401, Duration::from_micros(12), "reject: x\ny");
        assert_eq!(
            line,
            "127.0.0.1:9 \"GET /a\\\" 200 1us forged\\x0a127.0.0.1:1 \\\"GET /\" 401 12us reject: x\\x0ay"
        );
        assert!(!line.contains('\n'));
        // Exactly two unescaped quotes: the request field's.
        let bare_quotes = line.match_indices('"').filter(|(i, _)| !line[..*i].ends_with('\\')).count();
        assert_eq!(bare_quotes, 2);
    }
}
