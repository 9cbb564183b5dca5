//! The context line: what only the host knows about the connection, written
//! before the request head (`ABI.md`, "Calling sequence"): the scheme the
//! client used, its IP address and, over TLS, the thumbprint of the client
//! certificate the handshake verified: `<scheme> <peer>[ <x5t#S256>]\n`. The
//! module reads it for `X-Forwarded-Proto`, `X-Forwarded-For` and
//! certificate-bound tokens (RFC 8705); a malformed line is the host's fault
//! and is answered 500.

use core::fmt::Write as _;
use core::net::{IpAddr, Ipv4Addr, SocketAddr};

/// The longest peer address: an IPv6 address with an embedded IPv4 one.
pub const MAX_PEER_LEN: usize = 45;

/// The length of a certificate thumbprint: 32 bytes of SHA-256 in unpadded
/// base64url (RFC 8705 section 3.1, `x5t#S256`).
pub const THUMBPRINT_LEN: usize = 43;

/// The longest context line: `https `, the longest peer, a space, a
/// thumbprint, `\n`.
pub const MAX_LINE: usize = 96;

/// The scheme the client used to reach the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme as the context line and `X-Forwarded-Proto` write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// The connection a request arrived on, as the module reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context<'i> {
    /// The scheme the client used.
    pub scheme: Scheme,
    /// The peer's IP address (IPv4 dotted or IPv6 without brackets), or
    /// `unknown` when the host cannot tell (RFC 7239 section 6).
    pub peer: &'i str,
    /// The SHA-256 thumbprint of the client certificate the TLS handshake
    /// verified, in base64url (`x5t#S256`); `None` without one.
    pub certificate: Option<&'i str>,
}

/// Why a context line was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextError {
    /// No `\n` ends the line.
    Unterminated,
    /// The scheme is not `http` or `https`.
    Scheme,
    /// The peer is neither an address's characters nor `unknown`.
    Peer,
    /// The certificate thumbprint is not 43 base64url characters, or comes
    /// without TLS.
    Certificate,
}

/// Splits the module's input into the context line and the request head.
pub fn split(input: &[u8]) -> Result<(Context<'_>, &[u8]), ContextError> {
    split_reading(input, true)
}

/// [`split`], reading the certificate thumbprint only when `certificate`
/// is true; otherwise it is skipped unread and the context has none (a
/// module that checks no certificate binding carries no code for it).
pub fn split_reading(input: &[u8], certificate: bool) -> Result<(Context<'_>, &[u8]), ContextError> {
    let end = input.iter().position(|&b| b == b'\n').ok_or(ContextError::Unterminated)?;
    let (line, head) = (&input[..end], &input[end + 1..]);
    let space = line.iter().position(|&b| b == b' ').ok_or(ContextError::Scheme)?;
    let scheme = match &line[..space] {
        b"http" => Scheme::Http,
        b"https" => Scheme::Https,
        _ => return Err(ContextError::Scheme),
    };
    let rest = &line[space + 1..];
    // A thumbprint has a fixed length, and a peer no space: the space
    // before a thumbprint is found without a search.
    let (peer, thumbprint) = match rest.len().checked_sub(THUMBPRINT_LEN + 1) {
        Some(at) if rest[at] == b' ' => (&rest[..at], Some(&rest[at + 1..])),
        _ => (rest, None),
    };
    let certificate = match thumbprint {
        Some(thumbprint) if certificate => Some(read_thumbprint(scheme, thumbprint)?),
        _ => None,
    };
    let is_address = !peer.is_empty()
        && peer.len() <= MAX_PEER_LEN
        && peer.iter().all(|&b| b.is_ascii_hexdigit() || b == b'.' || b == b':');
    let peer = match peer {
        b"unknown" => "unknown",
        // Hex digits, '.' and ':' are ASCII, so the bytes are valid UTF-8.
        _ if is_address => core::str::from_utf8(peer).map_err(|_| ContextError::Peer)?,
        _ => return Err(ContextError::Peer),
    };
    Ok((Context { scheme, peer, certificate }, head))
}

/// A certificate thumbprint: 43 base64url characters, over TLS only.
fn read_thumbprint(scheme: Scheme, thumbprint: &[u8]) -> Result<&str, ContextError> {
    let valid = scheme == Scheme::Https
        && thumbprint.len() == THUMBPRINT_LEN
        && thumbprint.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    match valid {
        // Base64url characters are ASCII, so the bytes are valid UTF-8.
        true => core::str::from_utf8(thumbprint).map_err(|_| ContextError::Certificate),
        false => Err(ContextError::Certificate),
    }
}

/// Writes the context line for a client that used `scheme` from `peer`
/// (`None` when the host cannot tell) into `out`, and returns its length.
/// An IPv4-mapped IPv6 address is written as IPv4.
pub fn write_line(scheme: Scheme, peer: Option<IpAddr>, out: &mut [u8; MAX_LINE]) -> usize {
    let mut cursor = Cursor { buf: out, len: 0 };
    // Fits: the longest scheme, address and separators are under 64 bytes.
    let _ = match peer.map(|peer| peer.to_canonical()) {
        // IPv4, the common case, without the formatting machinery (a host
        // writes this line for every request).
        Some(IpAddr::V4(peer)) => write_ipv4_line(&mut cursor, scheme, peer),
        Some(peer) => writeln!(cursor, "{} {}", scheme.as_str(), peer),
        None => writeln!(cursor, "{} unknown", scheme.as_str()),
    };
    cursor.len
}

/// Adds the thumbprint of the client certificate the TLS handshake verified
/// (its DER bytes' SHA-256) to the line of `len` bytes that [`write_line`]
/// wrote, and returns the new length. Only over TLS: a line for `http` is
/// left as it is, since no certificate comes without a handshake.
pub fn write_certificate(out: &mut [u8; MAX_LINE], len: usize, sha256: &[u8; 32]) -> usize {
    if !out.starts_with(b"https ") || len == 0 || len + 1 + THUMBPRINT_LEN > MAX_LINE {
        return len;
    }
    out[len - 1] = b' ';
    crate::base64url::encode(sha256, &mut out[len..len + THUMBPRINT_LEN]);
    out[len + THUMBPRINT_LEN] = b'\n';
    len + 1 + THUMBPRINT_LEN
}

/// `<scheme> <a.b.c.d>\n`, each octet in decimal as `Display` writes it.
fn write_ipv4_line(cursor: &mut Cursor<'_>, scheme: Scheme, peer: Ipv4Addr) -> core::fmt::Result {
    cursor.write_str(scheme.as_str())?;
    let mut separator = " ";
    for octet in peer.octets() {
        cursor.write_str(separator)?;
        let digits = [b'0' + octet / 100, b'0' + octet / 10 % 10, b'0' + octet % 10];
        let skip = usize::from(octet < 100) + usize::from(octet < 10);
        cursor.write_bytes(&digits[skip..])?;
        separator = ".";
    }
    cursor.write_str("\n")
}

/// The peer of a socket address written as text (`ip:port`, IPv6 in
/// brackets), as proxies such as Envoy report it; `None` for anything else
/// (a Unix socket path, garbage).
pub fn peer_of_socket_address(text: &[u8]) -> Option<IpAddr> {
    let text = core::str::from_utf8(text).ok()?;
    text.parse::<SocketAddr>().ok().map(|address| address.ip())
}

struct Cursor<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl Cursor<'_> {
    fn write_bytes(&mut self, bytes: &[u8]) -> core::fmt::Result {
        let end = self.len + bytes.len();
        self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }
}

impl core::fmt::Write for Cursor<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.write_bytes(s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_scheme_and_peer_and_leaves_the_head() {
        let (context, head) = split(b"https 192.0.2.7\nGET / HTTP/1.1\r\n\r\n").expect("valid");
        assert_eq!(context, Context { scheme: Scheme::Https, peer: "192.0.2.7", certificate: None });
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
            b"http 1.2.3.4 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
            b"https 1.2.3.4 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n",
            b"https 1.2.3.4 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
            b"https 1.2.3.4 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA+\n",
            b"https 1.2.3.4 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA \n",
            b"https 1.2.3.4 \n",
        ] {
            assert!(split(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn certificate_thumbprints_are_read_and_written() {
        use base64::Engine as _;
        for seed in 0..=255u8 {
            let digest: [u8; 32] = core::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8 * 7));
            let (mut out, len) = line(Scheme::Https, Some("203.0.113.9"));
            let len = write_certificate(&mut out, len, &digest);
            let (context, head) = split(&out[..len]).expect("valid");
            let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            assert_eq!(context.certificate, Some(expected.as_str()));
            assert_eq!((context.peer, head), ("203.0.113.9", &b""[..]));
        }
        let (mut out, len) = line(Scheme::Http, Some("127.0.0.1"));
        assert_eq!(write_certificate(&mut out, len, &[0; 32]), len, "no certificate without TLS");
        let (mut out, len) = line(Scheme::Https, Some("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff"));
        let len = write_certificate(&mut out, len, &[0xff; 32]);
        assert_eq!(split(&out[..len]).map(|(c, _)| c.certificate.is_some()), Ok(true));
    }

    fn line(scheme: Scheme, peer: Option<&str>) -> ([u8; MAX_LINE], usize) {
        let mut out = [0u8; MAX_LINE];
        let len = write_line(scheme, peer.map(|p| p.parse().expect("ip")), &mut out);
        (out, len)
    }

    #[test]
    fn writes_lines_the_reader_accepts() {
        let (out, len) = line(Scheme::Http, Some("127.0.0.1"));
        assert_eq!(&out[..len], b"http 127.0.0.1\n");
        let (out, len) = line(Scheme::Https, Some("::ffff:10.0.0.1"));
        assert_eq!(&out[..len], b"https 10.0.0.1\n");
        let (out, len) = line(Scheme::Https, None);
        assert_eq!(&out[..len], b"https unknown\n");
        let (out, len) = line(Scheme::Https, Some("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff"));
        assert_eq!(split(&out[..len]).map(|(c, _)| c.peer), Ok("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff"));
    }

    /// The IPv4 line as `Display` writes the address, for every value of
    /// each octet.
    #[test]
    fn ipv4_lines_are_those_of_display() {
        for value in 0..=255u8 {
            for octets in [[value, 0, 0, 1], [10, value, 7, 255], [1, 2, value, 99], [192, 168, 0, value]] {
                let peer = IpAddr::from(octets);
                let (out, len) = {
                    let mut out = [0u8; MAX_LINE];
                    let len = write_line(Scheme::Https, Some(peer), &mut out);
                    (out, len)
                };
                let mut expected = [0u8; MAX_LINE];
                let mut cursor = Cursor { buf: &mut expected, len: 0 };
                writeln!(cursor, "https {peer}").expect("fits");
                let expected_len = cursor.len;
                assert_eq!(&out[..len], &expected[..expected_len], "{peer}");
            }
        }
    }

    #[test]
    fn socket_addresses_give_their_ip() {
        let ip = |t: &[u8]| peer_of_socket_address(t);
        assert_eq!(ip(b"127.0.0.1:5123"), Some(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(ip(b"[2001:db8::1]:443"), "2001:db8::1".parse().ok());
        assert_eq!(ip(b"/run/envoy.sock"), None);
        assert_eq!(ip(b"\xff"), None);
    }
}
