//! The module's input rebuilt from what Envoy hands a filter: Envoy has
//! parsed the request already and keeps no raw head, so the head is written
//! back from the header map (`ABI.md`: "a host whose HTTP stack does not
//! keep the raw head rebuilds it from the parsed request, one line per
//! field, in order"), after the context line.

use std::net::IpAddr;

pub use contract::Scheme;

/// Why a head cannot be rebuilt from the header map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Envoy gave no `:method`; it always does for an HTTP request.
    #[error("the header map has no :method")]
    NoMethod,
    /// Neither `:path` nor `:authority`: there is no request target to write.
    #[error("the header map has neither :path nor :authority")]
    NoTarget,
}

/// The module's input: the context line, then an HTTP/1.1 request head with
/// the request line from `:method` and `:path` (`:authority` for a request
/// without a path, such as CONNECT), `Host` from `:authority`, and every
/// other field in Envoy's order. Pseudo-headers other than those are
/// Envoy's and not the client's, so they are left out.
pub fn request_input(
    scheme: Scheme,
    peer: Option<IpAddr>,
    headers: &[(String, Vec<u8>)],
) -> Result<Vec<u8>, InputError> {
    let pseudo = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice());
    let method = pseudo(":method").ok_or(InputError::NoMethod)?;
    let authority = pseudo(":authority");
    let target = pseudo(":path").or(authority).ok_or(InputError::NoTarget)?;
    let mut line = [0u8; contract::context::MAX_LINE];
    let line_len = contract::context::write_line(scheme, peer, &mut line);
    let line = &line[..line_len];
    let size = headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum::<usize>() + line.len() + 32;
    let mut input = Vec::with_capacity(size);
    for part in [line, method, b" ", target, b" HTTP/1.1\r\n"] {
        input.extend_from_slice(part);
    }
    if let Some(host) = authority {
        for part in [b"Host: ".as_slice(), host, b"\r\n"] {
            input.extend_from_slice(part);
        }
    }
    for (name, value) in headers.iter().filter(|(n, _)| !n.starts_with(':')) {
        for part in [name.as_bytes(), b": ", value, b"\r\n"] {
            input.extend_from_slice(part);
        }
    }
    input.extend_from_slice(b"\r\n");
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(fields: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
        fields.iter().map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())).collect()
    }

    #[test]
    fn writes_the_context_line_and_a_head_in_envoys_order() {
        let headers = map(&[
            (":authority", "gw.test"),
            (":path", "/a?b=1"),
            (":method", "GET"),
            (":scheme", "http"),
            ("authorization", "Bearer t"),
            ("x-note", "1"),
            ("x-note", "2"),
        ]);
        let input = request_input(Scheme::Http, "192.0.2.7".parse().ok(), &headers).expect("rebuilt");
        assert_eq!(
            input,
            b"http 192.0.2.7\nGET /a?b=1 HTTP/1.1\r\nHost: gw.test\r\nauthorization: Bearer t\r\n\
              x-note: 1\r\nx-note: 2\r\n\r\n"
        );
    }

    #[test]
    fn a_request_without_a_path_uses_the_authority_form() {
        let headers = map(&[(":method", "CONNECT"), (":authority", "evil.example:443")]);
        let input = request_input(Scheme::Https, None, &headers).expect("rebuilt");
        assert!(
            input.starts_with(
                b"https unknown\nCONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n"
            )
        );
        assert_eq!(request_input(Scheme::Http, None, &map(&[(":path", "/")])), Err(InputError::NoMethod));
        assert_eq!(request_input(Scheme::Http, None, &map(&[(":method", "GET")])), Err(InputError::NoTarget));
    }
}
