//! The module's input rebuilt from what Envoy hands a filter: Envoy has
//! parsed the request already and keeps no raw head, so the head is written
//! back from the header map (`ABI.md`: "a host whose HTTP stack does not
//! keep the raw head rebuilds it from the parsed request, one line per
//! field, in order"), after the context line.

use std::net::{IpAddr, SocketAddr};

/// What the client used to reach Envoy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

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

/// The peer as the context line writes it: the client's IP address from
/// Envoy's `source.address` (`ip:port`, IPv6 in brackets), an IPv4-mapped
/// IPv6 address as IPv4, or `unknown` when it is not an IP socket address.
pub fn peer_of(source_address: &[u8]) -> String {
    std::str::from_utf8(source_address)
        .ok()
        .and_then(|text| text.parse::<SocketAddr>().ok())
        .map_or_else(|| "unknown".to_owned(), |address| canonical(address.ip()).to_string())
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The module's input: the context line, then an HTTP/1.1 request head with
/// the request line from `:method` and `:path` (`:authority` for a request
/// without a path, such as CONNECT), `Host` from `:authority`, and every
/// other field in Envoy's order. Pseudo-headers other than those are
/// Envoy's and not the client's, so they are left out.
pub fn request_input(
    scheme: Scheme,
    peer: &str,
    headers: &[(String, Vec<u8>)],
) -> Result<Vec<u8>, InputError> {
    let pseudo = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice());
    let method = pseudo(":method").ok_or(InputError::NoMethod)?;
    let authority = pseudo(":authority");
    let target = pseudo(":path").or(authority).ok_or(InputError::NoTarget)?;
    let scheme = match scheme {
        Scheme::Http => "http",
        Scheme::Https => "https",
    };
    let size = headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum::<usize>() + peer.len() + 32;
    let mut input = Vec::with_capacity(size);
    for part in [scheme.as_bytes(), b" ", peer.as_bytes(), b"\n", method, b" ", target, b" HTTP/1.1\r\n"] {
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
        let input = request_input(Scheme::Http, "192.0.2.7", &headers).expect("rebuilt");
        assert_eq!(
            input,
            b"http 192.0.2.7\nGET /a?b=1 HTTP/1.1\r\nHost: gw.test\r\nauthorization: Bearer t\r\n\
              x-note: 1\r\nx-note: 2\r\n\r\n"
        );
    }

    #[test]
    fn a_request_without_a_path_uses_the_authority_form() {
        let headers = map(&[(":method", "CONNECT"), (":authority", "evil.example:443")]);
        let input = request_input(Scheme::Https, "unknown", &headers).expect("rebuilt");
        assert!(
            input.starts_with(
                b"https unknown\nCONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n"
            )
        );
        assert_eq!(
            request_input(Scheme::Http, "unknown", &map(&[(":path", "/")])),
            Err(InputError::NoMethod)
        );
        assert_eq!(
            request_input(Scheme::Http, "unknown", &map(&[(":method", "GET")])),
            Err(InputError::NoTarget)
        );
    }

    #[test]
    fn the_peer_is_the_address_without_its_port() {
        assert_eq!(peer_of(b"127.0.0.1:5123"), "127.0.0.1");
        assert_eq!(peer_of(b"[2001:db8::1]:443"), "2001:db8::1");
        assert_eq!(peer_of(b"[::ffff:192.0.2.7]:80"), "192.0.2.7");
        assert_eq!(peer_of(b"/run/envoy.sock"), "unknown");
        assert_eq!(peer_of(b"\xff"), "unknown");
    }
}
