//! The module's input rebuilt from what Envoy hands a filter: Envoy has
//! parsed the request already and keeps no raw head, so the head is written
//! back from the header map (`ABI.md`: "a host whose HTTP stack does not
//! keep the raw head rebuilds it from the parsed request, one line per
//! field, in order"), after the context line.
//!
//! The header map is read as Envoy serializes it for a filter (one buffer,
//! see [`HeaderMap`]) and the input is written straight into the core's
//! input buffer: no field is copied on its way.

use std::net::IpAddr;

pub use contract::Scheme;

/// Why a head cannot be rebuilt from the header map.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The serialized header map is shorter than its own sizes say.
    #[error("the header map Envoy returned is malformed")]
    Malformed,
    /// Envoy gave no `:method`; it always does for an HTTP request.
    #[error("the header map has no :method")]
    NoMethod,
    /// Neither `:path` nor `:authority`: there is no request target to write.
    #[error("the header map has neither :path nor :authority")]
    NoTarget,
}

/// The connection a request came on, from Envoy's attributes, never from
/// the client's fields: TLS on the downstream connection, the peer address
/// (with `use_remote_address`, Envoy does not take it from
/// `X-Forwarded-For`), and the SHA-256 of the client certificate Envoy
/// verified in the handshake (certificate-bound tokens, RFC 8705).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connection {
    /// `https` when the downstream connection is TLS.
    pub scheme: Scheme,
    /// The peer's address, when Envoy gives one.
    pub peer: Option<IpAddr>,
    /// The client certificate's SHA-256, when one was verified.
    pub client_certificate: Option<[u8; 32]>,
}

impl Connection {
    /// The connection Envoy describes with `connection.tls_version`,
    /// `source.address` and `connection.sha256_peer_certificate_digest`
    /// (hex), each absent when Envoy has none.
    pub fn of(
        tls_version: Option<&[u8]>,
        source_address: Option<&[u8]>,
        certificate_digest: Option<&[u8]>,
    ) -> Self {
        let scheme = if tls_version.is_some_and(|v| !v.is_empty()) { Scheme::Https } else { Scheme::Http };
        let peer = source_address.and_then(contract::context::peer_of_socket_address);
        let client_certificate =
            certificate_digest.filter(|_| scheme == Scheme::Https).and_then(digest_of_hex);
        Connection { scheme, peer, client_certificate }
    }

    /// Writes the context line into `line` and returns its length.
    fn write_line(&self, line: &mut [u8; contract::context::MAX_LINE]) -> usize {
        let len = contract::context::write_line(self.scheme, self.peer, line);
        match &self.client_certificate {
            Some(sha256) => contract::context::write_certificate(line, len, sha256),
            None => len,
        }
    }
}

/// 64 hex digits as the 32 bytes they spell; `None` for anything else.
fn digest_of_hex(hex: &[u8]) -> Option<[u8; 32]> {
    let digit = |b: u8| (b as char).to_digit(16);
    let mut digest = [0u8; 32];
    if hex.len() != 64 {
        return None;
    }
    for (byte, pair) in digest.iter_mut().zip(hex.chunks(2)) {
        *byte = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(digest)
}

/// A header map in the proxy-wasm serialization: the number of fields (u32,
/// little-endian), each field's name and value sizes (two u32), then each
/// name and value, each followed by a NUL byte. Checked once when read, so
/// the fields are slices of the one buffer.
#[derive(Debug, Clone, Copy)]
pub struct HeaderMap<'a> {
    sizes: &'a [u8],
    data: &'a [u8],
}

/// A little-endian u32 at `at`, or `None` past the end.
fn u32_at(bytes: &[u8], at: usize) -> Option<usize> {
    let word = bytes.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([word[0], word[1], word[2], word[3]]) as usize)
}

impl<'a> HeaderMap<'a> {
    /// Reads a serialized map; an empty buffer is an empty map.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, InputError> {
        if bytes.is_empty() {
            return Ok(HeaderMap { sizes: &[], data: &[] });
        }
        let count = u32_at(bytes, 0).ok_or(InputError::Malformed)?;
        let table_end = count.checked_mul(8).and_then(|n| n.checked_add(4)).ok_or(InputError::Malformed)?;
        let sizes = bytes.get(4..table_end).ok_or(InputError::Malformed)?;
        let data = &bytes[table_end..];
        let mut need = 0usize;
        for i in 0..count {
            let name = u32_at(sizes, i * 8).ok_or(InputError::Malformed)?;
            let value = u32_at(sizes, i * 8 + 4).ok_or(InputError::Malformed)?;
            let field = name.checked_add(value).and_then(|n| n.checked_add(2));
            need = field.and_then(|n| need.checked_add(n)).ok_or(InputError::Malformed)?;
        }
        if need > data.len() {
            return Err(InputError::Malformed);
        }
        Ok(HeaderMap { sizes, data })
    }

    /// The fields as (name, value) byte slices, in Envoy's order.
    pub fn fields(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let (sizes, data) = (self.sizes, self.data);
        let mut at = 0usize;
        // `parse` checked every size and the total: the slices are in range.
        sizes.chunks_exact(8).map(move |pair| {
            let name_len = u32_at(pair, 0).unwrap_or(0);
            let value_len = u32_at(pair, 4).unwrap_or(0);
            let name = data.get(at..at + name_len).unwrap_or_default();
            let value_at = at + name_len + 1;
            let value = data.get(value_at..value_at + value_len).unwrap_or_default();
            at = value_at + value_len + 1;
            (name, value)
        })
    }

    /// The request's `:path`, as Envoy holds it now.
    pub fn path(&self) -> Option<&'a [u8]> {
        self.get(b":path")
    }

    /// The first value of `name`.
    fn get(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.fields().find(|(n, _)| *n == name).map(|(_, v)| v)
    }
}

/// Serializes `fields` as a header map ([`HeaderMap`]'s format): how the
/// filter hands Envoy a local reply's fields and a key fetch's request.
pub fn serialize_pairs(fields: &[(&str, &str)]) -> Vec<u8> {
    let data: usize = fields.iter().map(|(n, v)| n.len() + v.len() + 2).sum();
    let mut bytes = Vec::with_capacity(4 + fields.len() * 8 + data);
    // Envoy's maps and requests are far below 4 GiB, as the format needs.
    let size = |n: usize| (n as u32).to_le_bytes();
    bytes.extend_from_slice(&size(fields.len()));
    for (name, value) in fields {
        bytes.extend_from_slice(&size(name.len()));
        bytes.extend_from_slice(&size(value.len()));
    }
    for (name, value) in fields {
        for part in [name.as_bytes(), b"\0", value.as_bytes(), b"\0"] {
            bytes.extend_from_slice(part);
        }
    }
    bytes
}

/// Writes the module's input into `out`: the context line, then an HTTP/1.1
/// request head with the request line from `:method` and `:path`
/// (`:authority` for a request without a path, such as CONNECT), `Host` from
/// `:authority`, and every other field in Envoy's order. Pseudo-headers
/// other than those are Envoy's and not the client's, so they are left out.
///
/// `content_follows` is Envoy's word that the request has a body (its
/// headers did not end the stream). Envoy's HTTP/1 codec takes a chunked
/// body's `Transfer-Encoding` off the map, so a body without
/// `Content-Length` is written as the `Transfer-Encoding: chunked` the
/// client sent: the module judges the request's framing as it came.
///
/// Returns the input's length. An input longer than `out` is not written at
/// all (`ABI.md`: the true length is passed and the module answers 431).
pub fn write_input(
    connection: &Connection,
    headers: &HeaderMap<'_>,
    content_follows: bool,
    out: &mut [u8],
) -> Result<usize, InputError> {
    write_fields(connection, || headers.fields(), content_follows, out)
}

/// [`write_input`] for a header map given as its fields, in Envoy's order,
/// by `all` (called again for each pass over them): how the native module
/// (`crate::native`) reads the map Envoy hands a dynamic module.
pub fn write_fields<'a, I>(
    connection: &Connection,
    all: impl Fn() -> I,
    content_follows: bool,
    out: &mut [u8],
) -> Result<usize, InputError>
where
    I: Iterator<Item = (&'a [u8], &'a [u8])>,
{
    let get = |name: &[u8]| all().find(|(n, _)| *n == name).map(|(_, v)| v);
    let method = get(b":method").ok_or(InputError::NoMethod)?;
    let authority = get(b":authority");
    let target = get(b":path").or(authority).ok_or(InputError::NoTarget)?;
    let mut line = [0u8; contract::context::MAX_LINE];
    let line_len = connection.write_line(&mut line);
    let line = &line[..line_len];
    let fields = || all().filter(|(n, _)| !n.starts_with(b":"));
    // The map is searched for framing only when a body follows (rarely).
    let framed = || get(b"content-length").is_some() || get(b"transfer-encoding").is_some();
    let chunked: &[u8] = if content_follows && !framed() { b"transfer-encoding: chunked\r\n" } else { b"" };
    let len = line.len()
        + method.len()
        + target.len()
        + " ".len()
        + " HTTP/1.1\r\n".len()
        + authority.map_or(0, |host| host.len() + "Host: \r\n".len())
        + fields().map(|(n, v)| n.len() + v.len() + 4).sum::<usize>()
        + chunked.len()
        + 2;
    let Some(out) = out.get_mut(..len) else { return Ok(len) };
    let mut at = 0;
    let mut put = |part: &[u8]| {
        out[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    };
    for part in [line, method, b" ", target, b" HTTP/1.1\r\n"] {
        put(part);
    }
    if let Some(host) = authority {
        for part in [b"Host: ".as_slice(), host, b"\r\n"] {
            put(part);
        }
    }
    for (name, value) in fields() {
        for part in [name, b": ", value, b"\r\n"] {
            put(part);
        }
    }
    put(chunked);
    put(b"\r\n");
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A body Envoy announces without `Content-Length` is written as the
    /// chunked framing its codec took off the map; a framed one as it is.
    #[test]
    fn a_body_without_its_length_is_written_as_chunked() {
        let head = |fields: &[(&str, &str)], content_follows: bool| {
            let bytes = serialize_pairs(fields);
            let mut out = [0u8; 512];
            let len = write_input(
                &plain(Scheme::Http, None),
                &HeaderMap::parse(&bytes).expect("map"),
                content_follows,
                &mut out,
            )
            .expect("written");
            String::from_utf8(out[..len].to_vec()).expect("text")
        };
        let get = [(":method", "GET"), (":path", "/x"), (":authority", "gw")];
        assert_eq!(head(&get, false), "http unknown\nGET /x HTTP/1.1\r\nHost: gw\r\n\r\n");
        assert_eq!(
            head(&get, true),
            "http unknown\nGET /x HTTP/1.1\r\nHost: gw\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let post = [(":method", "POST"), (":path", "/x"), (":authority", "gw"), ("content-length", "5")];
        assert_eq!(
            head(&post, true),
            "http unknown\nPOST /x HTTP/1.1\r\nHost: gw\r\ncontent-length: 5\r\n\r\n"
        );
    }

    #[test]
    fn serialized_pairs_are_envoys_format_and_read_back() {
        let bytes = serialize_pairs(&[(":status", "401"), ("x-e", "")]);
        let expected: &[u8] =
            b"\x02\0\0\0\x07\0\0\0\x03\0\0\0\x03\0\0\0\0\0\0\0:status\x00401\x00x-e\x00\x00";
        assert_eq!(bytes, expected);
        let read: Vec<_> = HeaderMap::parse(&bytes).expect("map").fields().collect();
        assert_eq!(read, [(b":status".as_slice(), b"401".as_slice()), (b"x-e", b"")]);
        assert_eq!(serialize_pairs(&[]), [0, 0, 0, 0], "no fields: the count alone, as the SDK sends");
    }

    fn plain(scheme: Scheme, peer: Option<IpAddr>) -> Connection {
        Connection { scheme, peer, client_certificate: None }
    }

    fn input(scheme: Scheme, peer: Option<IpAddr>, fields: &[(&str, &str)]) -> Result<Vec<u8>, InputError> {
        let bytes = serialize_pairs(fields);
        let mut out = vec![0u8; 4096];
        let len = write_input(&plain(scheme, peer), &HeaderMap::parse(&bytes)?, false, &mut out)?;
        out.truncate(len);
        Ok(out)
    }

    #[test]
    fn writes_the_context_line_and_a_head_in_envoys_order() {
        let fields = [
            (":authority", "gw.test"),
            (":path", "/a?b=1"),
            (":method", "GET"),
            (":scheme", "http"),
            ("authorization", "Bearer t"),
            ("x-note", "1"),
            ("x-note", "2"),
        ];
        let input = input(Scheme::Http, "192.0.2.7".parse().ok(), &fields).expect("rebuilt");
        assert_eq!(
            input,
            b"http 192.0.2.7\nGET /a?b=1 HTTP/1.1\r\nHost: gw.test\r\nauthorization: Bearer t\r\n\
              x-note: 1\r\nx-note: 2\r\n\r\n"
        );
    }

    /// The connection from Envoy's attributes: the certificate's digest
    /// only over TLS, and only as 64 hex digits.
    #[test]
    fn the_connection_is_read_from_envoys_attributes() {
        let hex = b"af363dc85bc942a892d3cee9796190fdb36d89cd588a4f1cb17c74a943439714";
        let tls = Connection::of(Some(b"TLSv1.3"), Some(b"192.0.2.7:5000"), Some(hex));
        assert_eq!(tls.scheme, Scheme::Https);
        assert_eq!(tls.peer, "192.0.2.7".parse().ok());
        let digest = tls.client_certificate.expect("a digest");
        assert_eq!((digest[0], digest[31]), (0xaf, 0x14));
        let mut line = [0u8; contract::context::MAX_LINE];
        let len = tls.write_line(&mut line);
        assert_eq!(&line[..len], b"https 192.0.2.7 rzY9yFvJQqiS087peWGQ_bNtic1Yik8csXx0qUNDlxQ\n");
        for bad in [&hex[..63], b"zz363dc85bc942a892d3cee9796190fdb36d89cd588a4f1cb17c74a943439714", b""] {
            assert_eq!(Connection::of(Some(b"TLSv1.3"), None, Some(bad)).client_certificate, None);
        }
        let plain = Connection::of(Some(b""), None, Some(hex));
        assert_eq!((plain.scheme, plain.client_certificate), (Scheme::Http, None));
    }

    #[test]
    fn a_request_without_a_path_uses_the_authority_form() {
        let fields = [(":method", "CONNECT"), (":authority", "evil.example:443")];
        let input = input(Scheme::Https, None, &fields).expect("rebuilt");
        assert_eq!(
            input,
            b"https unknown\nCONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n"
        );
        assert_eq!(self::input(Scheme::Http, None, &[(":path", "/")]), Err(InputError::NoMethod));
        assert_eq!(self::input(Scheme::Http, None, &[(":method", "GET")]), Err(InputError::NoTarget));
    }

    #[test]
    fn an_input_longer_than_the_buffer_is_measured_and_not_written() {
        let fields = [(":method", "GET"), (":path", "/"), ("x-big", "aaaaaaaaaa")];
        let bytes = serialize_pairs(&fields);
        let whole = input(Scheme::Http, None, &fields).expect("rebuilt");
        let mut out = vec![b'z'; whole.len() - 1];
        let len =
            write_input(&plain(Scheme::Http, None), &HeaderMap::parse(&bytes).expect("map"), false, &mut out);
        assert_eq!(len, Ok(whole.len()));
        assert!(out.iter().all(|&b| b == b'z'), "nothing written");
    }

    #[test]
    fn a_map_shorter_than_its_sizes_is_refused() {
        let bytes = serialize_pairs(&[(":method", "GET"), (":path", "/")]);
        for cut in [1, 3, 5, 12, bytes.len() - 1] {
            assert_eq!(HeaderMap::parse(&bytes[..cut]).err(), Some(InputError::Malformed), "cut at {cut}");
        }
        let mut huge = bytes.clone();
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(HeaderMap::parse(&huge).err(), Some(InputError::Malformed));
        assert_eq!(HeaderMap::parse(&[]).map(|m| m.fields().count()), Ok(0));
    }
}
