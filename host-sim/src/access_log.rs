//! The access log of `serve`: one line per request that a client cannot
//! forge, as text (the default) or as one JSON object (`--access-log
//! json`). In the text line everything that may come from a client
//! (method, target, and the note, which carries the token's subject and
//! upstream error text) is escaped: quote and backslash by a backslash,
//! control bytes and every byte outside ASCII as `\xNN`. So a field never
//! closes its quotes early and a line never breaks; the JSON line is
//! escaped by its encoder.
//!
//! Neither holds a credential: no field of the request is logged, and of
//! the query only the number of its parameters is ([`redacted_target`]):
//! a token may travel there as a value (RFC 6750 section 2.3) or as a
//! parameter's name (`/x?<token>`), so neither is written. The subject is
//! logged in the JSON line only when `--log-subject` asks for it.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

use serde_json::json;

/// The form of the access log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// `REMOTE "METHOD TARGET" STATUS MICROSus NOTE`.
    Text,
    /// One JSON object per request.
    Json,
}

/// What one JSON line says about a request.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// When the request came (its head was read).
    pub time: SystemTime,
    /// The client's address.
    pub peer: SocketAddr,
    /// The request's method.
    pub method: &'a str,
    /// The request target, its query left out but for its parameters' count.
    pub target: &'a str,
    /// The status the client got.
    pub status: u16,
    /// The outcome's name (`contract::outcome`).
    pub outcome: &'a str,
    /// The module's reason (an answer's second line), or the host's.
    pub reason: &'a str,
    /// The rule, route and issuer names (empty: none).
    pub rule: &'a str,
    /// See `rule`.
    pub route: &'a str,
    /// See `rule`.
    pub issuer: &'a str,
    /// The forwarded subject, only when asked for.
    pub subject: Option<&'a str>,
    /// The module's time, and the whole request's (to the response head).
    pub decision: Duration,
    /// See `decision`.
    pub total: Duration,
    /// The upstream's status, or the host's outcome when it gave none.
    pub upstream: Option<Result<u16, &'a str>>,
    /// The W3C trace id of the request's `traceparent`, when valid.
    pub trace_id: Option<&'a str>,
}

/// One JSON line, without its end.
pub fn json_line(entry: &Entry<'_>) -> String {
    let name = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let mut line = json!({
        "time": humantime::format_rfc3339_micros(entry.time).to_string(),
        "peer": entry.peer.ip().to_string(),
        "method": entry.method,
        "target": entry.target,
        "status": entry.status,
        "outcome": entry.outcome,
        "reason": entry.reason,
        "rule": name(entry.rule),
        "route": name(entry.route),
        "issuer": name(entry.issuer),
        "decision_us": micros(entry.decision),
        "duration_us": micros(entry.total),
        "upstream_status": entry.upstream.and_then(Result::ok),
        "upstream_failure": entry.upstream.and_then(Result::err),
        "trace_id": entry.trace_id,
    });
    if let (Some(subject), Some(object)) = (entry.subject, line.as_object_mut()) {
        object.insert("subject".to_owned(), subject.into());
    }
    line.to_string()
}

/// The target as the logs show it: the path, and of the query only how
/// many parameters it has, as `?<N>` (`/a?x=1&y` is `/a?<2>`, `/a?` is
/// `/a?<0>`). Neither a parameter's value nor its name is written: a
/// client may put a token in either. Every host that logs a target writes
/// it this way (the README's "Watching the gateway", "Log lines").
pub fn redacted_target(target: &str) -> String {
    let Some((path, query)) = target.split_once('?') else { return target.to_owned() };
    let parameters = query.split('&').filter(|parameter| !parameter.is_empty()).count();
    format!("{path}?<{parameters}>")
}

/// The trace id of a W3C `traceparent` value (`00-<32 hex>-<16 hex>-<2
/// hex>`), or `None` when it is not one: only a valid id is logged.
pub fn trace_id(traceparent: &str) -> Option<&str> {
    let mut parts = traceparent.split('-');
    let (version, trace, parent, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, len: usize| {
        s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let valid = hex(version, 2)
        && version != "ff"
        && hex(trace, 32)
        && trace.bytes().any(|b| b != b'0')
        && hex(parent, 16)
        && hex(flags, 2)
        && (parts.next().is_none() || version != "00");
    valid.then_some(trace)
}

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
    fn nothing_of_the_query_but_its_size_is_kept() {
        let token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln";
        for (query, parameters) in [
            (format!("access_token={token}"), 1),
            (token.to_owned(), 1),
            (format!("{token}=1"), 1),
            (format!("a=1&{token}"), 2),
            (format!("a=1&&{token}&b="), 3),
            (format!("{token}?x={token}"), 1),
            (String::new(), 0),
        ] {
            let target = redacted_target(&format!("/v1/items?{query}"));
            assert_eq!(target, format!("/v1/items?<{parameters}>"), "{query}");
        }
        assert_eq!(redacted_target("/plain"), "/plain");
    }

    #[test]
    fn only_a_valid_traceparent_gives_a_trace_id() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        assert_eq!(trace_id(&format!("00-{id}-00f067aa0ba902b7-01")), Some(id));
        assert_eq!(trace_id(&format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32))), None);
        assert_eq!(trace_id(&format!("00-{}-00f067aa0ba902b7-01", id.to_uppercase())), None);
        assert_eq!(trace_id(&format!("ff-{id}-00f067aa0ba902b7-01")), None);
        assert_eq!(trace_id("00-\"},\"x\":1-00f067aa0ba902b7-01"), None);
    }

    #[test]
    fn a_json_line_is_one_object_with_the_subject_only_when_asked() {
        let entry = Entry {
            time: SystemTime::UNIX_EPOCH,
            peer: "127.0.0.1:9".parse().unwrap_or_else(|_| unreachable!()),
            method: "GET",
            target: "/a\"\n",
            status: 401,
            outcome: "expired",
            reason: "token expired",
            rule: "",
            route: "orders",
            issuer: "0",
            subject: None,
            decision: Duration::from_micros(12),
            total: Duration::from_micros(30),
            upstream: None,
            trace_id: None,
        };
        let line = json_line(&entry);
        assert!(!line.contains('\n'));
        let value: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(value["target"], "/a\"\n");
        assert_eq!(
            (value["rule"].is_null(), &value["route"], value["decision_us"].as_u64()),
            (true, &"orders".into(), Some(12))
        );
        assert!(value.get("subject").is_none());
        let with_subject: serde_json::Value =
            serde_json::from_str(&json_line(&Entry { subject: Some("alice"), ..entry })).expect("JSON");
        assert_eq!(with_subject["subject"], "alice");
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
