//! The HTTP side of the request path: the head as the client sent it, the
//! target normalized, where the token is, a browser's CORS request, and
//! the request the upstream receives.

pub mod cors;
pub mod forward;
pub mod request;
pub mod target;
pub mod tokens;

/// True when `bytes` holds `byte`. A plain scan: `<[u8]>::contains` is
/// core's word-at-a-time `memchr`, about 300 bytes of module for the short
/// names and paths the gateway searches.
#[allow(clippy::manual_contains)] // the point of this function
pub fn has_byte(bytes: &[u8], byte: u8) -> bool {
    bytes.iter().any(|&b| b == byte)
}
