//! Phase 0, context: what only the host knows about the connection, read
//! from the first line of the input (`ABI.md`): the scheme the client used
//! and the peer address, for `X-Forwarded-Proto` and `X-Forwarded-For`.

use crate::reject::Rejection;

/// The longest peer address: an IPv6 address with an embedded IPv4 one.
pub const MAX_PEER_LEN: usize = 45;

/// The connection a request arrived on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context<'i> {
    /// `http` or `https`.
    pub scheme: &'i str,
    /// The peer's IP address (IPv4 dotted or IPv6 without brackets), or
    /// `unknown` when the host cannot tell (RFC 7239 section 6).
    pub peer: &'i str,
}

/// Splits the input into the context line and the request head.
pub fn split(input: &[u8]) -> Result<(Context<'_>, &[u8]), Rejection> {
    let end = input.iter().position(|&b| b == b'\n').ok_or(Rejection::InvalidContext)?;
    let (line, head) = (&input[..end], &input[end + 1..]);
    let space = line.iter().position(|&b| b == b' ').ok_or(Rejection::InvalidContext)?;
    let (scheme, peer) = (&line[..space], &line[space + 1..]);
    let scheme = match scheme {
        b"http" => "http",
        b"https" => "https",
        _ => return Err(Rejection::InvalidContext),
    };
    let is_address = !peer.is_empty()
        && peer.len() <= MAX_PEER_LEN
        && peer.iter().all(|&b| b.is_ascii_hexdigit() || b == b'.' || b == b':');
    let peer = match peer {
        b"unknown" => "unknown",
        // Hex digits, '.' and ':' are ASCII, so the bytes are valid UTF-8.
        _ if is_address => core::str::from_utf8(peer).map_err(|_| Rejection::InvalidContext)?,
        _ => return Err(Rejection::InvalidContext),
    };
    Ok((Context { scheme, peer }, head))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_scheme_and_peer_and_leaves_the_head() {
        let (context, head) = split(b"https 192.0.2.7\nGET / HTTP/1.1\r\n\r\n").expect("valid");
        assert_eq!(context, Context { scheme: "https", peer: "192.0.2.7" });
        assert_eq!(head, b"GET / HTTP/1.1\r\n\r\n");
        let (context, _) = split(b"http 2001:db8::1\n").expect("valid");
        assert_eq!(context.peer, "2001:db8::1");
        assert_eq!(split(b"http unknown\n").map(|(c, _)| c.peer), Ok("unknown"));
    }

    #[test]
    fn refuses_anything_else() {
        for bad in [
            &b""[..],
            b"http 1.2.3.4",
            b"ftp 1.2.3.4\n",
            b"HTTP 1.2.3.4\n",
            b"http\n",
            b"http \n",
            b"http 1.2.3.4:80 \n",
            b"http [::1]\n",
            b"http 1.2.3.4, 5.6.7.8\n",
            b"http evil\r\nX: y\n",
            b"http 1111111111111111111111111111111111111111111111\n",
        ] {
            assert_eq!(split(bad).map(|_| ()), Err(Rejection::InvalidContext), "{:?}", bad);
        }
    }
}
