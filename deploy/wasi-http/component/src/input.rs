//! The module's input rebuilt from what wasi:http hands a component. The
//! runtime's HTTP stack has parsed the request and keeps no raw head, so the
//! head is written back from the request's parts (`ABI.md`: "a host whose
//! HTTP stack does not keep the raw head rebuilds it from the parsed
//! request, one line per field, in order"), after the context line.
//!
//! What wasi:http 0.2 does not show a component, and how it is written:
//!
//! - the client's address: there is none in the interface, so the context
//!   line's peer is `unknown` (the module then sets `X-Forwarded-For:
//!   unknown`);
//! - the fields the runtime keeps for itself (wasmtime's forbidden fields:
//!   `Host`, `Transfer-Encoding`, `Connection`, `Keep-Alive`, `Upgrade`,
//!   `Proxy-Authorization`, `Proxy-Authenticate`, `Proxy-Connection`,
//!   `HTTP2-Settings`): `Host` is written from the request's authority, and
//!   a body that came chunked as the `Transfer-Encoding: chunked` that
//!   carried it (as the Envoy filter does), so the module judges the framing
//!   the client used. The runtime's HTTP stack (hyper) keeps a
//!   `Content-Length` sent before `Transfer-Encoding: chunked` and reads the
//!   chunks; such a body is found out when its length contradicts the field,
//!   and the head is then written with both, which the module refuses.

pub use contract::Scheme;

/// The request line's parts and what the runtime took off the fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLine<'a> {
    /// The scheme the runtime says the client used.
    pub scheme: Scheme,
    /// The method as the client spelled it.
    pub method: &'a str,
    /// The path and query; `None` for an authority-form target (CONNECT).
    pub path_with_query: Option<&'a str>,
    /// The authority: the absolute-form target's, or the first `Host`.
    pub authority: Option<&'a str>,
    /// Whether the body came chunked: content that followed without
    /// `Content-Length`, or a body whose length contradicted its
    /// `Content-Length` (then both are written, and the module refuses them).
    pub chunked: bool,
}

/// The context line after its scheme: no peer address (`contract::context`
/// writes the same for a host that cannot tell, with the formatting
/// machinery this component does without).
const UNKNOWN_PEER: &[u8] = b" unknown\n";

/// Writes the module's input into `out`: the context line (peer
/// `unknown`), an HTTP/1.1 request line, `Host` from the authority, every
/// field in the runtime's order, and `transfer-encoding: chunked` for a
/// body that came chunked. A request with neither path nor
/// authority gets an empty target, which the module refuses.
///
/// Returns the input's length. An input longer than `out` is not written at
/// all (`ABI.md`: the true length is passed and the module answers 431).
pub fn write_input<N: AsRef<[u8]>, V: AsRef<[u8]>>(
    line: &RequestLine<'_>,
    fields: &[(N, V)],
    out: &mut [u8],
) -> usize {
    let target = line.path_with_query.or(line.authority).unwrap_or("");
    let chunked: &[u8] = if line.chunked { b"transfer-encoding: chunked\r\n" } else { b"" };
    let host = line.authority.map(str::as_bytes);
    let parts = [
        line.scheme.as_str().as_bytes(),
        UNKNOWN_PEER,
        line.method.as_bytes(),
        b" ",
        target.as_bytes(),
        b" HTTP/1.1\r\n",
        host.map_or(b"".as_slice(), |_| b"Host: "),
        host.unwrap_or_default(),
        host.map_or(b"".as_slice(), |_| b"\r\n"),
    ];
    let fields_len: usize = fields.iter().map(|(n, v)| n.as_ref().len() + v.as_ref().len() + 4).sum();
    let len = parts.iter().map(|p| p.len()).sum::<usize>() + fields_len + chunked.len() + 2;
    let Some(out) = out.get_mut(..len) else { return len };
    let mut at = 0;
    let mut put = |part: &[u8]| {
        out[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    };
    parts.iter().for_each(|part| put(part));
    for (name, value) in fields {
        for part in [name.as_ref(), b": ", value.as_ref(), b"\r\n"] {
            put(part);
        }
    }
    put(chunked);
    put(b"\r\n");
    len
}

/// Adds `transfer-encoding: chunked` to the head of `len` bytes that
/// [`write_input`] wrote into `out` (before its blank line), for a body
/// found to have come chunked beside its `Content-Length`. Returns the new
/// length; one longer than `out` is not written (as [`write_input`]).
pub fn add_chunked(out: &mut [u8], len: usize) -> usize {
    const FIELD: &[u8] = b"transfer-encoding: chunked\r\n\r\n";
    let at = len.saturating_sub(2);
    let new_len = at + FIELD.len();
    if let Some(tail) = out.get_mut(at..new_len) {
        tail.copy_from_slice(FIELD);
    }
    new_len
}

/// The method as the request line spells it.
#[cfg(target_arch = "wasm32")]
pub fn method_name(method: &crate::bindings::wasi::http::types::Method) -> &str {
    use crate::bindings::wasi::http::types::Method;
    match method {
        Method::Get => "GET",
        Method::Head => "HEAD",
        Method::Post => "POST",
        Method::Put => "PUT",
        Method::Delete => "DELETE",
        Method::Connect => "CONNECT",
        Method::Options => "OPTIONS",
        Method::Trace => "TRACE",
        Method::Patch => "PATCH",
        Method::Other(other) => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(line: &RequestLine<'_>, fields: &[(&str, &str)]) -> String {
        let mut out = [0u8; 512];
        let len = write_input(line, fields, &mut out);
        String::from_utf8(out[..len].to_vec()).expect("text")
    }

    const GET: RequestLine<'static> = RequestLine {
        scheme: Scheme::Http,
        method: "GET",
        path_with_query: Some("/a?b=1"),
        authority: Some("gw.test"),
        chunked: false,
    };

    #[test]
    fn writes_the_context_line_and_a_head_in_the_runtimes_order() {
        let fields = [("authorization", "Bearer t"), ("x-note", "1"), ("x-note", "2")];
        assert_eq!(
            input(&GET, &fields),
            "http unknown\nGET /a?b=1 HTTP/1.1\r\nHost: gw.test\r\nauthorization: Bearer t\r\n\
             x-note: 1\r\nx-note: 2\r\n\r\n"
        );
        let https = RequestLine { scheme: Scheme::Https, ..GET };
        assert!(input(&https, &[]).starts_with("https unknown\n"));
        // The contract's own line for a host that cannot tell the peer.
        for scheme in [Scheme::Http, Scheme::Https] {
            let mut line = [0u8; contract::context::MAX_LINE];
            let len = contract::context::write_line(scheme, None, &mut line);
            let head = input(&RequestLine { scheme, ..GET }, &[]);
            assert_eq!(head.as_bytes()[..len], line[..len]);
        }
    }

    /// A chunked body is written as the framing the runtime took off the
    /// fields; content with a length as it is; a body that came chunked
    /// beside a `Content-Length` with both, which the module refuses.
    #[test]
    fn a_chunked_body_is_written_as_chunked() {
        let post = RequestLine { method: "POST", chunked: true, ..GET };
        assert_eq!(
            input(&post, &[]),
            "http unknown\nPOST /a?b=1 HTTP/1.1\r\nHost: gw.test\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let with_length = RequestLine { method: "POST", ..GET };
        assert_eq!(
            input(&with_length, &[("Content-Length", "5")]),
            "http unknown\nPOST /a?b=1 HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 5\r\n\r\n"
        );
        assert_eq!(
            input(&post, &[("content-length", "4")]),
            "http unknown\nPOST /a?b=1 HTTP/1.1\r\nHost: gw.test\r\ncontent-length: 4\r\n\
             transfer-encoding: chunked\r\n\r\n"
        );
        let get_with_content = RequestLine { chunked: true, ..GET };
        assert!(input(&get_with_content, &[]).contains("\r\ntransfer-encoding: chunked\r\n"));
    }

    #[test]
    fn chunked_is_added_to_a_written_head_as_if_written_with_it() {
        let fields = [("content-length", "4")];
        let post = RequestLine { method: "POST", ..GET };
        let mut out = [0u8; 512];
        let len = write_input(&post, &fields, &mut out);
        let len = add_chunked(&mut out, len);
        assert_eq!(&out[..len], input(&RequestLine { chunked: true, ..post }, &fields).as_bytes());
        // No room: measured, not written.
        let mut small = [0u8; 80];
        let written = write_input(&post, &fields, &mut small);
        assert!(written <= small.len());
        let before = small;
        assert_eq!(add_chunked(&mut small, written), written + 28);
        assert_eq!(small, before);
    }

    #[test]
    fn a_request_without_a_path_uses_the_authority_form() {
        let connect = RequestLine {
            method: "CONNECT",
            path_with_query: None,
            authority: Some("evil.example:443"),
            ..GET
        };
        assert_eq!(
            input(&connect, &[]),
            "http unknown\nCONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"
        );
        let nothing = RequestLine { path_with_query: None, authority: None, ..GET };
        assert_eq!(input(&nothing, &[]), "http unknown\nGET  HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn an_input_longer_than_the_buffer_is_measured_and_not_written() {
        let fields = [("x-big", "aaaaaaaaaa")];
        let whole = input(&GET, &fields);
        let mut out = vec![b'z'; whole.len() - 1];
        assert_eq!(write_input(&GET, &fields, &mut out), whole.len());
        assert!(out.iter().all(|&b| b == b'z'), "nothing written");
    }
}
