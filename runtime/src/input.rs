//! What the host writes into the module for one request (`worker/ABI.md`):
//! the connection facts only the host knows, as the context line, the
//! request head, and the time. What it reads back is a decision of the
//! `contract` crate.

use std::net::IpAddr;

pub use contract::Scheme;
pub use contract::context::MAX_LINE as MAX_CONTEXT_LINE;

/// One request as the module reads it: the connection facts only the host
/// knows, and the request head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input<'a> {
    /// The scheme the client used, for `X-Forwarded-Proto`.
    pub scheme: Scheme,
    /// The peer's address, for `X-Forwarded-For`; None when unknown.
    pub peer: Option<IpAddr>,
    /// The request head: request line, fields, blank line.
    pub head: &'a [u8],
    /// Over TLS, the SHA-256 of the client certificate the handshake
    /// verified: certificate-bound tokens (RFC 8705) are checked against it.
    pub client_certificate: Option<[u8; 32]>,
}

impl<'a> From<&'a [u8]> for Input<'a> {
    /// A head from a loopback client over plain HTTP: what `host-sim eval`,
    /// the benches and the examples send.
    fn from(head: &'a [u8]) -> Input<'a> {
        Input {
            scheme: Scheme::Http,
            peer: Some(IpAddr::from([127, 0, 0, 1])),
            head,
            client_certificate: None,
        }
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for Input<'a> {
    fn from(head: &'a [u8; N]) -> Input<'a> {
        Input::from(head.as_slice())
    }
}

impl<'a> From<&'a Vec<u8>> for Input<'a> {
    fn from(head: &'a Vec<u8>) -> Input<'a> {
        Input::from(head.as_slice())
    }
}

impl Input<'_> {
    /// The context line the module reads before the head:
    /// `<scheme> <peer>[ <certificate thumbprint>]\n`.
    pub fn context_line(&self) -> String {
        let mut line = [0u8; MAX_CONTEXT_LINE];
        let len = self.write_context_line(&mut line);
        String::from_utf8_lossy(&line[..len]).into_owned()
    }

    /// Writes the context line into `out` and returns its length: the
    /// request path's form, without an allocation per request.
    pub fn write_context_line(&self, out: &mut [u8; MAX_CONTEXT_LINE]) -> usize {
        let len = contract::context::write_line(self.scheme, self.peer, out);
        match &self.client_certificate {
            Some(sha256) => contract::context::write_certificate(out, len, sha256),
            None => len,
        }
    }
}

/// The current Unix time in seconds, as the contract passes it (see
/// [`unix_seconds`] for a clock that cannot be read).
pub fn unix_now() -> f64 {
    unix_seconds(std::time::SystemTime::now())
}

/// `time` as Unix seconds. A time before the epoch (a clock that cannot be
/// read) is NaN, which the module refuses with 500 "host clock invalid":
/// the gateway fails closed, where 0 would pass every token's `exp` check.
pub fn unix_seconds(time: std::time::SystemTime) -> f64 {
    time.duration_since(std::time::UNIX_EPOCH).map_or(f64::NAN, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_lines() {
        let head: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
        assert_eq!(Input::from(head).context_line(), "http 127.0.0.1\n");
        let v6 = Input {
            scheme: Scheme::Https,
            peer: Some("::ffff:10.0.0.1".parse().expect("ip")),
            head,
            client_certificate: None,
        };
        assert_eq!(v6.context_line(), "https 10.0.0.1\n");
        let unknown = Input { peer: None, ..v6 };
        assert_eq!(unknown.context_line(), "https unknown\n");
    }

    #[test]
    fn a_clock_before_the_epoch_is_nan_never_zero() {
        use std::time::{Duration, UNIX_EPOCH};
        assert!(unix_seconds(UNIX_EPOCH - Duration::from_secs(1)).is_nan());
        assert_eq!(unix_seconds(UNIX_EPOCH + Duration::from_millis(1_800_000_000_500)), 1_800_000_000.5);
    }
}
